"""The extensible load manager's load data (PIP-192) and its snapshot (docs/formats.md).

``BrokerLoadData`` (Pulsar ``extensions/data/BrokerLoadData``):

* ``maxResourceUsage = max(cpu%, directMemory%, bandwidthIn%, bandwidthOut%) / 100`` -- unweighted,
  without memory: the model's ``SystemResources.max_usage``.
* ``weightedMax = max(cpu%*w_cpu, memory%*w_mem, directMemory%*w_dm, bwIn%*w_in, bwOut%*w_out) / 100``.
  Unlike the modular weighted max, memory takes part (with ``loadBalancerMemoryResourceWeight``,
  default 0); the other four terms are the model's ``SystemResources.weighted_max_usage``.
* EMAs with ``h = loadBalancerHistoryResourcePercentage``: the first update after construction or
  ``clear`` (``updatedAt == 0``) takes the sample as is, later ones ``h*prev + (1-h)*sample``, for
  ``weightedMaxEMA`` and for ``msgThroughputEMA`` (over ``msgThroughputIn + msgThroughputOut``).
* A fresh or cleared object has all usages ``(0, 0)``, ``maxResourceUsage = weightedMaxEMA = 1.0``,
  ``msgThroughputEMA = 0`` and ``updatedAt = reportedAt = 0``.

``TopBundlesLoadData`` is a broker's top-k bundle list (ascending, smallest first, ``TopKBundles``);
``BrokerLookupData`` the registry record the placement filters read (``extensions/data/BrokerLookupData``).

``parse_extensible_snapshot`` reads an extensible snapshot and rejects modular-only shapes (a ``bundleData``
map, or ``lastStats``/``bundles``/``timeAverageData`` inside a broker) as a mixed input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bundlewise.model import fields
from bundlewise.model.brokers import check_distinct, spelled_as
from bundlewise.model.errors import InputError
from bundlewise.model.javamath import java_fixed
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import ResourceWeights, SystemResources, history_average
from bundlewise.model.snapshot import parse_timestamp, shared_bundles

MODULAR_BROKER_FIELDS = ("lastStats", "bundles", "timeAverageData", "preallocatedBundleData")
MODULAR_TOP_FIELDS = ("bundleData",)


def weighted_max(resources: SystemResources, weights: ResourceWeights) -> float:
    """The extensible weighted max usage: the modular four-resource max, plus memory with its weight."""
    return max(resources.weighted_max_usage(weights), resources.memory.percent_usage() * weights.memory / 100.0)


@dataclass(frozen=True, slots=True)
class BrokerLoadData:
    """One broker's load record as it sits in the broker-load store (immutable; ``updated`` derives)."""

    resources: SystemResources = field(default_factory=SystemResources)
    msgThroughputIn: float = 0.0
    msgThroughputOut: float = 0.0
    msgRateIn: float = 0.0
    msgRateOut: float = 0.0
    bundleCount: int = 0
    topics: int = 0
    maxResourceUsage: float = 1.0
    weightedMaxEMA: float = 1.0
    msgThroughputEMA: float = 0.0
    updatedAt: int = 0
    reportedAt: int = 0

    @property
    def msg_throughput(self) -> float:
        return self.msgThroughputIn + self.msgThroughputOut

    @property
    def msg_rate(self) -> float:
        return self.msgRateIn + self.msgRateOut

    def updated(
        self,
        resources: SystemResources,
        msg_throughput_in: float,
        msg_throughput_out: float,
        msg_rate_in: float,
        msg_rate_out: float,
        bundle_count: int,
        topics: int,
        weights: ResourceWeights,
        history: float,
        now: int,
    ) -> BrokerLoadData:
        """Pulsar ``BrokerLoadData#update(SystemResourceUsage, ...)``: new sample, features, ``updatedAt = now``."""
        first = self.updatedAt == 0
        return replace(
            self,
            resources=resources,
            msgThroughputIn=msg_throughput_in,
            msgThroughputOut=msg_throughput_out,
            msgRateIn=msg_rate_in,
            msgRateOut=msg_rate_out,
            bundleCount=bundle_count,
            topics=topics,
            maxResourceUsage=resources.max_usage(),
            weightedMaxEMA=history_average(
                None if first else self.weightedMaxEMA, weighted_max(resources, weights), history
            ),
            msgThroughputEMA=history_average(
                None if first else self.msgThroughputEMA, msg_throughput_in + msg_throughput_out, history
            ),
            updatedAt=now,
        )

    def update(self, other: BrokerLoadData) -> BrokerLoadData:
        """Pulsar ``BrokerLoadData#update(BrokerLoadData)``: every field taken from ``other`` (the records
        are immutable, so the result is a copy of ``other``)."""
        return replace(other)

    def to_string(self, weights: ResourceWeights) -> str:
        """Pulsar ``BrokerLoadData#toString(conf)``: usages in percent, the weights, the figures."""
        r = self.resources

        def pct(x: float) -> str:
            return f"{java_fixed(x, 2)}%"

        def w(x: float) -> str:
            return java_fixed(x, 6)

        return ", ".join(
            [
                f"cpu= {pct(r.cpu.percent_usage())}",
                f"memory= {pct(r.memory.percent_usage())}",
                f"directMemory= {pct(r.direct_memory.percent_usage())}",
                f"bandwidthIn= {pct(r.bandwidth_in.percent_usage())}",
                f"bandwidthOut= {pct(r.bandwidth_out.percent_usage())}",
                f"cpuWeight= {w(weights.cpu)}",
                f"memoryWeight= {w(weights.memory)}",
                f"directMemoryWeight= {w(weights.direct_memory)}",
                f"bandwidthInResourceWeight= {w(weights.bandwidth_in)}",
                f"bandwidthOutResourceWeight= {w(weights.bandwidth_out)}",
                f"msgThroughputIn= {java_fixed(self.msgThroughputIn, 2)}",
                f"msgThroughputOut= {java_fixed(self.msgThroughputOut, 2)}",
                f"msgRateIn= {java_fixed(self.msgRateIn, 2)}",
                f"msgRateOut= {java_fixed(self.msgRateOut, 2)}",
                f"bundleCount= {self.bundleCount}",
                f"maxResourceUsage= {pct(self.maxResourceUsage * 100)}",
                f"weightedMaxEMA= {pct(self.weightedMaxEMA * 100)}",
                f"msgThroughputEMA= {java_fixed(self.msgThroughputEMA, 2)}",
                f"updatedAt= {self.updatedAt}",
                f"reportedAt= {self.reportedAt}",
            ]
        )

    def cleared(self) -> BrokerLoadData:
        """Pulsar ``#clear``: back to the defaults, so the next update restarts both EMAs."""
        return BrokerLoadData()

    @classmethod
    def from_json(
        cls, value: Any, where: str, weights: ResourceWeights | None = None, default_updated_at: int = 0
    ) -> BrokerLoadData:
        """Read a broker's record; absent derived figures are computed as a first update would.

        ``weightedMaxEMA``/``msgThroughputEMA``/``maxResourceUsage`` given are used as is (the brokers
        reported them);
        absent, they are the instantaneous values with ``weights``.  ``updatedAt`` absent is
        ``default_updated_at`` (the step's clock: data as fresh as the snapshot).
        """
        d = fields.obj(value, where)
        for k in MODULAR_BROKER_FIELDS:
            if k in d:
                raise InputError(
                    f"mixed modular/extensible snapshot: '{k}' is a modular LocalBrokerData field, "
                    "an extensible broker carries BrokerLoadData",
                    field=where,
                )
        res = SystemResources.from_json(d, where)
        n, i = fields.num, fields.integer
        tin, tout = n(d, "msgThroughputIn", where), n(d, "msgThroughputOut", where)
        w = weights or ResourceWeights()
        return cls(
            resources=res,
            msgThroughputIn=tin,
            msgThroughputOut=tout,
            msgRateIn=n(d, "msgRateIn", where),
            msgRateOut=n(d, "msgRateOut", where),
            bundleCount=i(d, "bundleCount", where),
            topics=i(d, "topics", where),
            maxResourceUsage=n(d, "maxResourceUsage", where, res.max_usage()),
            weightedMaxEMA=n(d, "weightedMaxEMA", where, weighted_max(res, w)),
            msgThroughputEMA=n(d, "msgThroughputEMA", where, tin + tout),
            updatedAt=i(d, "updatedAt", where, default_updated_at),
            reportedAt=i(d, "reportedAt", where),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **self.resources.to_json(),
            "msgThroughputIn": self.msgThroughputIn,
            "msgThroughputOut": self.msgThroughputOut,
            "msgRateIn": self.msgRateIn,
            "msgRateOut": self.msgRateOut,
            "bundleCount": self.bundleCount,
            "topics": self.topics,
            "maxResourceUsage": self.maxResourceUsage,
            "weightedMaxEMA": self.weightedMaxEMA,
            "msgThroughputEMA": self.msgThroughputEMA,
            "updatedAt": self.updatedAt,
            "reportedAt": self.reportedAt,
        }


@dataclass(frozen=True, slots=True)
class BundleLoadData:
    """One entry of ``TopBundlesLoadData``: a bundle and its latest stats."""

    bundleName: str
    stats: NamespaceBundleStats

    @property
    def throughput(self) -> float:
        return self.stats.msgThroughputIn + self.stats.msgThroughputOut

    def to_json(self) -> dict[str, Any]:
        return {"bundleName": self.bundleName, "stats": self.stats.to_json()}


@dataclass(frozen=True, slots=True)
class TopBundlesLoadData:
    """A broker's top bundles, in the order reported (TopKBundles emits ascending: smallest first)."""

    topBundlesLoadData: tuple[BundleLoadData, ...] = ()

    def __len__(self) -> int:
        return len(self.topBundlesLoadData)

    def stats_by_bundle(self) -> dict[str, NamespaceBundleStats]:
        return {b.bundleName: b.stats for b in self.topBundlesLoadData}

    @classmethod
    def from_json(cls, value: Any, where: str) -> TopBundlesLoadData:
        """``{"topBundlesLoadData": [{"bundleName", "stats"}, ...]}``, or a ``lastStats``-shaped map
        ``{bundle: NamespaceBundleStats}`` (what ``split-check --extensible`` reads)."""
        d = fields.obj(value, where)
        if "topBundlesLoadData" in d:
            raw = d["topBundlesLoadData"]
            lw = f"{where}.topBundlesLoadData"
            if not isinstance(raw, list):
                raise InputError('expected a list of {"bundleName", "stats"}', field=lw)
            out = []
            for k, entry in enumerate(raw):
                ew = f"{lw}[{k}]"
                e = fields.obj(entry, ew)
                name = fields.text(e, "bundleName", ew)
                if not name:
                    raise InputError("missing 'bundleName'", field=ew)
                out.append(BundleLoadData(name, NamespaceBundleStats.from_json(e.get("stats") or {}, f"{ew}.stats")))
            return cls(tuple(out))
        return cls(tuple(BundleLoadData(b, NamespaceBundleStats.from_json(s, f"{where}.{b}")) for b, s in d.items()))

    def to_json(self) -> dict[str, Any]:
        return {"topBundlesLoadData": [b.to_json() for b in self.topBundlesLoadData]}


@dataclass(frozen=True, slots=True)
class BrokerLookupData:
    """The registry record of a broker (the fields the placement filters read)."""

    brokerVersion: str | None = None
    loadManagerClassName: str | None = None
    persistentTopicsEnabled: bool = True
    nonPersistentTopicsEnabled: bool = True
    startTimestamp: int = 0

    @classmethod
    def from_json(cls, value: Any, where: str) -> BrokerLookupData:
        d = fields.obj(value, where)
        return cls(
            brokerVersion=fields.text(d, "brokerVersion", where),
            loadManagerClassName=fields.text(d, "loadManagerClassName", where),
            persistentTopicsEnabled=fields.flag(d, "persistentTopicsEnabled", where, True),
            nonPersistentTopicsEnabled=fields.flag(d, "nonPersistentTopicsEnabled", where, True),
            startTimestamp=fields.integer(d, "startTimestamp", where),
        )


@dataclass(slots=True)
class ExtensibleSnapshot:
    """One step of an extensible input (docs/formats.md), in input order."""

    timestamp: int | None
    brokers: dict[str, BrokerLoadData]
    top_bundles: dict[str, TopBundlesLoadData]
    available_brokers: tuple[str, ...]
    lookup_data: dict[str, BrokerLookupData] | None
    recently_unloaded_bundles: dict[str, int]
    recently_unloaded_brokers: dict[str, int]
    splitting_bundles: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # bundle -> the brokers listing it (> 1)


def _time_map(d: Mapping[str, Any], key: str, where: str) -> dict[str, int]:
    raw = fields.obj(d.get(key) or {}, f"{where}.{key}")
    return {k: fields.integer(raw, k, f"{where}.{key}") for k in raw}


def parse_extensible_snapshot(
    doc: Any, where: str = "snapshot", weights: ResourceWeights | None = None, now: int | None = None
) -> ExtensibleSnapshot:
    """An extensible snapshot (docs/formats.md) -> ``ExtensibleSnapshot``.

    ``weights`` compute an absent ``weightedMaxEMA`` (default: Pulsar's default weights); a broker
    without ``updatedAt`` counts as updated at ``now`` (else the snapshot's timestamp, else 0).
    Optional ``splittingBundles`` lists bundles in channel state ``Splitting`` (split-check).
    """
    d = fields.obj(doc, where)
    if "brokers" not in d:
        raise InputError("missing 'brokers' (a map of broker -> BrokerLoadData)", field=where)
    for k in MODULAR_TOP_FIELDS:
        if k in d:
            raise InputError(
                f"mixed modular/extensible snapshot: '{k}' belongs to a modular snapshot, not an extensible one",
                field=where,
            )
    timestamp = parse_timestamp(d.get("timestamp"), f"{where}.timestamp")
    default_updated = now if now is not None else (timestamp or 0)
    raw_brokers = fields.obj(d["brokers"], f"{where}.brokers")
    check_distinct(raw_brokers, f"{where}.brokers")
    brokers = {
        name: BrokerLoadData.from_json(v, f"{where}.brokers.{name}", weights, default_updated)
        for name, v in raw_brokers.items()
    }
    raw_top = fields.obj(d.get("topBundles") or {}, f"{where}.topBundles")
    check_distinct(raw_top, f"{where}.topBundles")
    top = {
        spelled_as(name, brokers): TopBundlesLoadData.from_json(v, f"{where}.topBundles.{name}")
        for name, v in raw_top.items()
    }
    if d.get("availableBrokers") is None:
        available = tuple(brokers)
    else:
        listed = fields.str_list(d, "availableBrokers", where)
        check_distinct(listed, f"{where}.availableBrokers")
        available = tuple(spelled_as(name, brokers) for name in listed)
    lookup = None
    if d.get("lookupData") is not None:
        raw_lookup = fields.obj(d["lookupData"], f"{where}.lookupData")
        check_distinct(raw_lookup, f"{where}.lookupData")
        lookup = {
            spelled_as(n, brokers): BrokerLookupData.from_json(v, f"{where}.lookupData.{n}")
            for n, v in raw_lookup.items()
        }
    config = fields.obj(d.get("config") or {}, f"{where}.config")
    return ExtensibleSnapshot(
        timestamp=timestamp,
        brokers=brokers,
        top_bundles=top,
        available_brokers=available,
        lookup_data=lookup,
        recently_unloaded_bundles=_time_map(d, "recentlyUnloadedBundles", where),
        recently_unloaded_brokers=_time_map(d, "recentlyUnloadedBrokers", where),
        splitting_bundles=tuple(fields.str_list(d, "splittingBundles", where)),
        config=dict(config),
        shared=shared_bundles((name, t.stats_by_bundle()) for name, t in top.items()),
    )
