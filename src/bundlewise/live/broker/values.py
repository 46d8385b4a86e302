"""A broker's identity and the JSON values it writes and serves, with Pulsar's field names.

* ``BrokerIdentity``: the broker id ``host:port`` (``PulsarService#createBrokerId``: the advertised
  address without a trailing dot, then the web port), its web and binary-protocol URLs and cluster.
* ``local_broker_data`` -- P1 ``LocalBrokerData`` (``ModularLoadManagerImpl#start``): the URLs, flags and
  version around the load report the model carries (``model.load.LocalBrokerData``).  Its ``equals``
  compares only the four URLs, which is what lets the report double as the registration lock's value
  (``same_broker``).
* ``leader_broker`` -- P3 ``LeaderBroker``; ``leader_id`` reads the id, or derives it from the
  ``serviceUrl`` of a value an older broker wrote (``LeaderBroker#getBrokerId``).
* ``namespace_ephemeral_data`` -- P8 ``NamespaceEphemeralData`` (``OwnershipCache`` constructor).
* ``lookup_data`` -- the 200 body of a lookup (``LookupData``): null fields omitted, as Pulsar's REST
  mapper does; ``nativeUrl`` repeats ``brokerUrl`` and ``brokerUrlSsl`` is ``""``.
* ``local_policies`` / ``bundles_data`` -- P9 ``LocalPolicies`` and its ``BundlesData``
  (``{"boundaries": ["0x00000000", …, "0xffffffff"], "numBundles": n}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bundlewise.model.bundles import parse_position
from bundlewise.model.load import BROKER_VERSION as BROKER_VERSION  # the one constant, re-exported
from bundlewise.model.load import LocalBrokerData


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    host: str
    web_port: int
    broker_port: int
    cluster: str

    @property
    def broker_id(self) -> str:
        return f"{self.host.rstrip('.')}:{self.web_port}"

    @property
    def web_url(self) -> str:
        return f"http://{self.host}:{self.web_port}"

    @property
    def pulsar_url(self) -> str:
        return f"pulsar://{self.host}:{self.broker_port}"


def local_broker_data(identity: BrokerIdentity, report: LocalBrokerData, start_ms: int = 0) -> dict[str, Any]:
    """P1: the report with the broker's URLs and Pulsar's other fields, in Pulsar's field order, as Pulsar's
    ``ObjectMapper`` writes it: null fields left out (``Include.NON_NULL``: no TLS URLs here), the
    ``maxResourceUsage`` getter (max of CPU, direct memory and bandwidth percent, /100) and the broker's
    ``startTimestamp``."""
    body = report.to_json()
    out: dict[str, Any] = {
        "webServiceUrl": identity.web_url,
        "pulsarServiceUrl": identity.pulsar_url,
        "persistentTopicsEnabled": body.pop("persistentTopicsEnabled"),
        "nonPersistentTopicsEnabled": body.pop("nonPersistentTopicsEnabled"),
    }
    out.update(body)
    out.update(lastBundleGains=[], lastBundleLosses=[], protocols={}, advertisedListeners={})
    out["maxResourceUsage"] = report.resources.max_usage()
    out["startTimestamp"] = start_ms
    out["loadReportType"] = "LocalBrokerData"
    return {k: v for k, v in out.items() if v is not None}


URL_FIELDS = ("webServiceUrl", "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls")


def same_broker(a: Any, b: Any) -> bool:
    """``LocalBrokerData#equals``: the four URLs only."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return bool(a == b)
    return all(a.get(k) == b.get(k) for k in URL_FIELDS)


def leader_broker(identity: BrokerIdentity) -> dict[str, str]:
    """P3 ``LeaderBroker``."""
    return {"brokerId": identity.broker_id, "serviceUrl": identity.web_url}


def leader_id(value: Any) -> str | None:
    """The leader's broker id (from ``serviceUrl``'s host:port for a value without ``brokerId``)."""
    if not isinstance(value, dict):
        return None
    if value.get("brokerId"):
        return str(value["brokerId"])
    url = value.get("serviceUrl")
    if not url:
        return None
    parts = urlsplit(str(url))
    return parts.netloc or None


def namespace_ephemeral_data(identity: BrokerIdentity, disabled: bool = False) -> dict[str, Any]:
    """P8 ``NamespaceEphemeralData``."""
    return {
        "nativeUrl": identity.pulsar_url,
        "nativeUrlTls": None,
        "httpUrl": identity.web_url,
        "httpUrlTls": None,
        "disabled": disabled,
        "advertisedListeners": {},
    }


def lookup_data(native_url: str, http_url: str) -> dict[str, str]:
    """``LookupData`` as Pulsar's REST mapper writes it (nulls omitted)."""
    return {"brokerUrl": native_url, "httpUrl": http_url, "nativeUrl": native_url, "brokerUrlSsl": ""}


def bundles_data(boundaries: list[int]) -> dict[str, Any]:
    """``BundlesData``: boundaries as ``0x%08x`` strings and their count minus one."""
    return {"boundaries": [f"0x{b:08x}" for b in boundaries], "numBundles": len(boundaries) - 1}


def local_policies(boundaries: list[int]) -> dict[str, Any]:
    """P9 ``LocalPolicies`` with these bundles."""
    return {
        "bundles": bundles_data(boundaries),
        "bookieAffinityGroup": None,
        "namespaceAntiAffinityGroup": None,
        "migrated": False,
        "migratedClusterUrl": None,
    }


def boundaries_of(policies: Any) -> list[int] | None:
    """The boundaries of a P9 / P10 value, or None when it has none."""
    if not isinstance(policies, dict):
        return None
    bundles = policies.get("bundles")
    if not isinstance(bundles, dict) or not isinstance(bundles.get("boundaries"), list):
        return None
    try:
        return [parse_position(str(b)) for b in bundles["boundaries"]]
    except ValueError:
        return None
