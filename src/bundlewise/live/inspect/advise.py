"""``live advise``: the load data a modular leader reads, taken from a store as a modular snapshot.

Read-only (``live.inspect.reader.StoreReader``).  What ``ModularLoadManagerImpl#updateAll`` reads becomes one
modular snapshot (docs/formats.md), which ``bundlewise shed``'s planning then runs through the chosen
strategy and the leader's cycle:

* ``brokers``: every ``/loadbalance/brokers/{id}`` report (``LocalBrokerData``, unknown fields ignored) with
  its ``/loadbalance/broker-time-average/{id}`` (``TimeAverageBrokerData``) as ``timeAverageData`` when the
  node exists;
* ``bundleData``: for every bundle a report lists, its ``/loadbalance/bundle-data/{bundle}`` node when the
  leader wrote one, else its legacy ``/loadbalance/resource-quota/{bundle}``, else the default prior -- then,
  as the leader does for a bundle it has not seen (``#updateBundleData``), one sample of the report's
  ``lastStats`` when it has them;
* ``timestamp``: now; ``recentlyUnloadedBundles``: empty (it lives only in the leader's memory).

An extensible cluster (every registration a ``BrokerLookupData``, no modular report) is read as one
extensible snapshot instead (``read_extensible``): ``brokers`` from each broker's entry of the broker-load
store, ``topBundles`` from the top-bundles store (``/loadbalance/extension/broker-load/{id}`` and
``…/top-bundles/{id}``: where bundlewise keeps them; Pulsar keeps them on non-persistent system topics, which
no store holds, so a Pulsar extensible cluster gives no load), ``availableBrokers`` and ``lookupData`` from the
registrations, ``splittingBundles`` from the channel's ``Splitting`` records.  ``is_extensible`` tells the
caller which snapshot it got.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from bundlewise.live.broker.modular.aggregate import bundle_data_from_quota
from bundlewise.live.inspect.reader import DEFAULT_TIMEOUT, StoreReader
from bundlewise.live.inspect.status import check_layout
from bundlewise.live.store import layout
from bundlewise.model.errors import InputError
from bundlewise.model.load import BundleData, NamespaceBundleStats


def _json(raw: tuple[bytes, int] | None) -> Any:
    if raw is None or not raw[0]:
        return None
    try:
        return json.loads(raw[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _bundle_data(reader: StoreReader, bundle: str, stats: NamespaceBundleStats | None) -> dict[str, Any]:
    value = _json(reader.get(layout.bundle_data(bundle)))
    if isinstance(value, dict):
        return value
    data = BundleData.default()
    quota = _json(reader.get(layout.resource_quota(bundle)))
    with contextlib.suppress(TypeError, ValueError):
        data = bundle_data_from_quota(quota) or data
    if stats is not None:
        data.update(stats)
    return data.to_json()


def is_extensible(snapshot: dict[str, Any]) -> bool:
    return "topBundles" in snapshot


def read_extensible(reader: StoreReader, registrations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The extensible snapshot of the module docstring."""
    brokers: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for broker_id in registrations:
        load = _json(reader.get(layout.extension_broker_load(broker_id)))
        if isinstance(load, dict):
            brokers[broker_id] = load
        bundles = _json(reader.get(layout.extension_top_bundles(broker_id)))
        if isinstance(bundles, dict):
            top[broker_id] = bundles
    splitting = [
        bundle
        for path in reader.walk(layout.SERVICE_UNIT_STATE_ROOT, 3) + reader.walk(layout.SERVICE_UNIT_STATE_ROOT, 4)
        if (bundle := layout.bundle_of(path, layout.SERVICE_UNIT_STATE_ROOT)) is not None
        and (record := _json(reader.get(path))) is not None
        and isinstance(record, dict)
        and record.get("state") == "Splitting"
    ]
    keep = ("brokerVersion", "loadManagerClassName", "persistentTopicsEnabled", "nonPersistentTopicsEnabled",
            "startTimestamp")  # fmt: skip
    return {
        "timestamp": int(time.time() * 1000),
        "brokers": brokers,
        "topBundles": {b: t for b, t in top.items() if b in brokers},
        "availableBrokers": sorted(b for b in registrations if b in brokers),
        "lookupData": {b: {k: v[k] for k in keep if k in v} for b, v in registrations.items() if b in brokers},
        "splittingBundles": sorted(splitting),
    }


def read_snapshot(url: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    brokers: dict[str, Any] = {}
    bundle_data: dict[str, Any] = {}
    with StoreReader(url, timeout) as reader:
        check_layout(reader, url)
        registrations = {b: _json(reader.get(layout.broker(b))) for b in reader.children(layout.BROKERS_ROOT)}
        lookup_only = {b: v for b, v in registrations.items() if isinstance(v, dict) and "cpu" not in v}
        if lookup_only and len(lookup_only) == len(registrations):
            return read_extensible(reader, lookup_only)
        for broker_id in registrations:
            report = registrations[broker_id]
            if not isinstance(report, dict) or "cpu" not in report:
                continue  # not a modular report (an extensible broker's BrokerLookupData)
            average = _json(reader.get(layout.broker_time_average(broker_id)))
            if isinstance(average, dict):
                report = {**report, "timeAverageData": average}
            brokers[broker_id] = report
            found = report.get("lastStats")
            last: dict[str, Any] = found if isinstance(found, dict) else {}
            for bundle in report.get("bundles") or []:
                raw = last.get(bundle)
                try:
                    stats = NamespaceBundleStats.from_json(raw, bundle) if raw is not None else None
                except InputError:
                    stats = None
                bundle_data[str(bundle)] = _bundle_data(reader, str(bundle), stats)
    return {
        "timestamp": int(time.time() * 1000),
        "brokers": brokers,
        "bundleData": bundle_data,
        "recentlyUnloadedBundles": {},
    }
