"""A modular snapshot (docs/formats.md): Pulsar's ``LoadData`` as JSON, one step of an input.

``parse_modular_snapshot`` turns the JSON into ``LoadData`` and records what the input gave
explicitly (``bundleData``, each broker's ``timeAverageData``) so the leader's bookkeeping can fill in
the rest (see ``algorithms.leader``).  Checked here: ``brokers`` present and no extensible-only fields
(those belong to extensible snapshots).

A bundle listed by two brokers' reports is accepted: real load reports are not taken at one instant, so
a bundle that moves between two reports is listed by its old owner (until that broker writes again) and
by its new one.  Pulsar's leader goes on with the data it has, each broker's report read as reported
(``ModularLoadManagerImpl#updateBundleData``); so does bundlewise, and ``shared`` names such bundles so the
commands can say so once (``shared_bundles``, ``shared_warning``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model import fields
from bundlewise.model.brokers import check_distinct
from bundlewise.model.epoch import check_epoch_ms
from bundlewise.model.errors import InputError
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageBrokerData

EXTENSIBLE_BROKER_FIELDS = ("weightedMaxEMA", "msgThroughputEMA", "bundleCount", "reportedAt")
EXTENSIBLE_TOP_FIELDS = ("topBundles", "availableBrokers", "lookupData", "recentlyUnloadedBrokers")


@dataclass(slots=True)
class ModularSnapshot:
    timestamp: int | None
    load: LoadData
    bundle_data_given: bool
    time_average_given: set[str] = field(default_factory=set)
    config: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # bundle -> the brokers listing it (> 1)


def shared_bundles(listings: Iterable[tuple[str, Iterable[str]]]) -> dict[str, tuple[str, ...]]:
    """The bundles more than one broker lists, with those brokers in input order."""
    owners: dict[str, list[str]] = {}
    for broker, bundles in listings:
        for b in bundles:
            names = owners.setdefault(b, [])
            if broker not in names:
                names.append(broker)
    return {b: tuple(names) for b, names in owners.items() if len(names) > 1}


def shared_warning(source: str, where: str, shared: Mapping[str, tuple[str, ...]], more: int = 0) -> str:
    """The one warning line about bundles listed by several brokers (the first one named, ``more`` others)."""
    bundle, brokers = next(iter(shared.items()))
    others = f" (and {more} more listed by several brokers)" if more else ""
    return (
        f"warning: {source}: {where}: bundle {bundle} is listed by {' and '.join(brokers)}{others}; reports are not"
        " taken at one instant, so each broker's report is read as reported, as Pulsar's leader reads it"
    )


def parse_timestamp(value: Any, where: str) -> int | None:
    """Milliseconds since the epoch, or an ISO-8601 string; a plausible time or a relative clock
    (``model.epoch``)."""
    ms = _timestamp(value, where)
    return None if ms is None else check_epoch_ms(ms, where)


def _timestamp(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"expected ms since the epoch or ISO-8601, got {value!r}", field=where)
    if isinstance(value, int | float):
        if value != value or value < 0:
            raise InputError(f"expected ms since the epoch >= 0, got {value!r}", field=where)
        return int(value)
    if isinstance(value, str):
        from datetime import UTC, datetime

        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"expected ms since the epoch or ISO-8601, got {value!r}", field=where) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    raise InputError(f"expected ms since the epoch or ISO-8601, got {value!r}", field=where)


def parse_modular_snapshot(doc: Any, where: str = "snapshot") -> ModularSnapshot:
    d = fields.obj(doc, where)
    if "brokers" not in d:
        raise InputError("missing 'brokers' (a map of broker -> LocalBrokerData)", field=where)
    for k in EXTENSIBLE_TOP_FIELDS:
        if k in d:
            raise InputError(f"'{k}' belongs to an extensible snapshot, not a modular one", field=where)
    brokers_raw = fields.obj(d["brokers"], f"{where}.brokers")
    check_distinct(brokers_raw, f"{where}.brokers")
    brokers: dict[str, BrokerData] = {}
    ta_given: set[str] = set()
    for name, raw in brokers_raw.items():
        bw = f"{where}.brokers.{name}"
        rb = fields.obj(raw, bw)
        for k in EXTENSIBLE_BROKER_FIELDS:
            if k in rb:
                raise InputError(f"'{k}' is a BrokerLoadData field of the extensible load manager", field=bw)
        local = LocalBrokerData.from_json(rb, bw)
        ta = TimeAverageBrokerData()
        if rb.get("timeAverageData") is not None:
            ta = TimeAverageBrokerData.from_json(rb["timeAverageData"], f"{bw}.timeAverageData")
            ta_given.add(name)
        pre_raw = fields.obj(rb.get("preallocatedBundleData") or {}, f"{bw}.preallocatedBundleData")
        pre = {b: BundleData.from_json(v, f"{bw}.preallocatedBundleData.{b}") for b, v in pre_raw.items()}
        brokers[name] = BrokerData(local, ta, pre)
    bundle_data: dict[str, BundleData] = {}
    given = "bundleData" in d and d["bundleData"] is not None
    if given:
        raw_bd = fields.obj(d["bundleData"], f"{where}.bundleData")
        bundle_data = {b: BundleData.from_json(v, f"{where}.bundleData.{b}") for b, v in raw_bd.items()}
    recent_raw: Mapping[str, Any] = fields.obj(
        d.get("recentlyUnloadedBundles") or {}, f"{where}.recentlyUnloadedBundles"
    )
    recent = {b: fields.integer(recent_raw, b, f"{where}.recentlyUnloadedBundles") for b in recent_raw}
    config = fields.obj(d.get("config") or {}, f"{where}.config")
    known = {"timestamp", "brokers", "bundleData", "recentlyUnloadedBundles", "config"}
    return ModularSnapshot(
        timestamp=parse_timestamp(d.get("timestamp"), f"{where}.timestamp"),
        load=LoadData(brokers, bundle_data, recent),
        bundle_data_given=given,
        time_average_given=ta_given,
        config=dict(config),
        extra={k: v for k, v in d.items() if k not in known},
        shared=shared_bundles((name, b.localData.bundles) for name, b in brokers.items()),
    )
