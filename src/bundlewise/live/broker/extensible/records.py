"""The extensible load manager's node values and their codecs (``BrokerLookupData``, ``ServiceUnitStateData``,
``BrokerLoadData``, ``TopBundlesLoadData``), in Pulsar's JSON field names.

* ``broker_lookup_data`` -- P2, the registration lock's value (``BrokerRegistryImpl#register``): the URLs,
  the topic-kind flags, ``loadManagerClassName`` (the configured one, which the placement's class filter
  compares), ``startTimestamp``, ``brokerVersion`` and empty ``advertisedListeners``/``protocols``/
  ``properties``; lock values compare by URL only (``values.same_broker``), so a restarted broker
  replaces its leftover node.
* ``RECORDS`` -- P11 records (``model.channel.ServiceUnitStateData`` to and from Pulsar's JSON).  A node
  that does not hold a valid record reads as absent (and is logged), so one bad node cannot stop a
  broker from filling its view.
* ``BROKER_LOAD`` / ``TOP_BUNDLES`` -- the two load stores' values (``model.extensible``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Generic, TypeVar

from bundlewise.live.broker.values import BROKER_VERSION, BrokerIdentity
from bundlewise.model.channel import ServiceUnitStateData
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import BrokerLoadData, TopBundlesLoadData

log = logging.getLogger(__name__)
T = TypeVar("T")


def broker_lookup_data(
    identity: BrokerIdentity,
    load_manager_class: str,
    start_ms: int,
    *,
    persistent: bool = True,
    non_persistent: bool = True,
) -> dict[str, Any]:
    """P2 ``BrokerLookupData`` (the record's twelve components, in order)."""
    return {
        "webServiceUrl": identity.web_url,
        "webServiceUrlTls": None,
        "pulsarServiceUrl": identity.pulsar_url,
        "pulsarServiceUrlTls": None,
        "advertisedListeners": {},
        "protocols": {},
        "persistentTopicsEnabled": persistent,
        "nonPersistentTopicsEnabled": non_persistent,
        "loadManagerClassName": load_manager_class,
        "startTimestamp": start_ms,
        "brokerVersion": BROKER_VERSION,
        "properties": {},
    }


class ModelCodec(Generic[T]):
    """Compact JSON of a model object; bytes that do not decode read as None (logged)."""

    def __init__(self, what: str, to_json: Any, from_json: Any) -> None:
        self.what = what
        self._to = to_json
        self._from = from_json

    def encode(self, value: T | None) -> bytes:
        if value is None:
            return b""
        return json.dumps(self._to(value), separators=(",", ":")).encode()

    def decode(self, data: bytes) -> T | None:
        if not data:
            return None
        try:
            value: T = self._from(json.loads(data))
        except (ValueError, InputError) as e:
            log.warning("ignoring a node that is not a valid %s: %s", self.what, e)
            return None
        return value


RECORDS: ModelCodec[ServiceUnitStateData] = ModelCodec(
    "ServiceUnitStateData", ServiceUnitStateData.to_json, ServiceUnitStateData.from_json
)
BROKER_LOAD: ModelCodec[BrokerLoadData] = ModelCodec(
    "BrokerLoadData", BrokerLoadData.to_json, lambda v: BrokerLoadData.from_json(v, "BrokerLoadData")
)
TOP_BUNDLES: ModelCodec[TopBundlesLoadData] = ModelCodec(
    "TopBundlesLoadData", TopBundlesLoadData.to_json, lambda v: TopBundlesLoadData.from_json(v, "TopBundlesLoadData")
)
