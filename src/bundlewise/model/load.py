"""Pulsar's load data, with its JSON field names (``org.apache.pulsar.policies.data.loadbalancer``).

* ``NamespaceBundleStats``: one bundle's latest sample, as a broker reports it in ``lastStats``.
* ``TimeAverageMessageData``: ``numSamples = min(numSamples + 1, maxSamples)`` then
  ``avg = ((numSamples - 1) * avg + x) / numSamples`` for each of the four figures, so the first
  sample replaces the prior and the average turns exponential (weight ``1/maxSamples``) once full.
* ``BundleData``: a short-term (10 samples) and a long-term (1000 samples) average plus the topic count.
  A bundle the leader has never seen starts from ``DEFAULT_MESSAGE_RATE`` (50 msg/s) and
  ``DEFAULT_MESSAGE_THROUGHPUT`` (50000 B/s), in and out, with ``numSamples = 0``.
* ``TimeAverageBrokerData``: the eight sums of a broker's bundles' averages; a bundle without data
  contributes the defaults.
* ``LocalBrokerData``: what a broker writes (``/admin/v2/broker-stats/load-report``); the simulated and the
  live brokers report ``BROKER_VERSION`` as their ``brokerVersionString`` (and ``brokerVersion``).
* ``BrokerData`` / ``LoadData``: the leader's view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model import fields
from bundlewise.model.resources import ResourceWeights, SystemResources

NUM_SHORT_SAMPLES = 10
NUM_LONG_SAMPLES = 1000
DEFAULT_MESSAGE_RATE = 50.0
DEFAULT_MESSAGE_THROUGHPUT = 50000.0
BROKER_VERSION = "3.3.1"
"""The Pulsar release bundlewise's brokers (simulated and live) report: the first of the 3.3 line, whose
behaviour the specs follow — AvgShedder (shipped in 3.0.6, 3.2.4 and 3.3.1, absent from 3.2.0) and the
extensible manager's branch-3.3 rules — and the version of the live spec's wire examples."""


@dataclass(frozen=True, slots=True)
class NamespaceBundleStats:
    msgRateIn: float = 0.0
    msgThroughputIn: float = 0.0
    msgRateOut: float = 0.0
    msgThroughputOut: float = 0.0
    consumerCount: int = 0
    producerCount: int = 0
    topics: int = 0
    cacheSize: int = 0

    @property
    def total_rate(self) -> float:
        return self.msgRateIn + self.msgRateOut

    @property
    def total_throughput(self) -> float:
        return self.msgThroughputIn + self.msgThroughputOut

    @classmethod
    def from_json(cls, value: Any, where: str) -> NamespaceBundleStats:
        d = fields.obj(value, where)
        fast = fields.nonneg_numbers(d, _STATS_KEYS)
        if fast is not None and all(float(x).is_integer() for x in fast[4:]):
            r_in, t_in, r_out, t_out, consumers, producers, topics, cache = fast
            return cls(
                float(r_in),
                float(t_in),
                float(r_out),
                float(t_out),
                int(consumers),
                int(producers),
                int(topics),
                int(cache),
            )
        n, i = fields.num, fields.integer
        return cls(
            n(d, "msgRateIn", where),
            n(d, "msgThroughputIn", where),
            n(d, "msgRateOut", where),
            n(d, "msgThroughputOut", where),
            i(d, "consumerCount", where),
            i(d, "producerCount", where),
            i(d, "topics", where),
            i(d, "cacheSize", where),
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "msgRateIn": self.msgRateIn,
            "msgThroughputIn": self.msgThroughputIn,
            "msgRateOut": self.msgRateOut,
            "msgThroughputOut": self.msgThroughputOut,
            "consumerCount": self.consumerCount,
            "producerCount": self.producerCount,
            "topics": self.topics,
            "cacheSize": self.cacheSize,
        }


_STATS_KEYS = (
    "msgRateIn",
    "msgThroughputIn",
    "msgRateOut",
    "msgThroughputOut",
    "consumerCount",
    "producerCount",
    "topics",
    "cacheSize",
)

DEFAULT_STATS = NamespaceBundleStats(
    msgRateIn=DEFAULT_MESSAGE_RATE,
    msgThroughputIn=DEFAULT_MESSAGE_THROUGHPUT,
    msgRateOut=DEFAULT_MESSAGE_RATE,
    msgThroughputOut=DEFAULT_MESSAGE_THROUGHPUT,
)


def time_average_step(avg: float, num_samples: int, x: float) -> float:
    """One step of Pulsar's recurrence, where ``num_samples`` is the count *after* this sample."""
    return ((num_samples - 1) * avg + x) / num_samples


@dataclass(slots=True)
class TimeAverageMessageData:
    maxSamples: int
    numSamples: int = 0
    msgThroughputIn: float = 0.0
    msgThroughputOut: float = 0.0
    msgRateIn: float = 0.0
    msgRateOut: float = 0.0

    @classmethod
    def with_prior(cls, max_samples: int, prior: NamespaceBundleStats = DEFAULT_STATS) -> TimeAverageMessageData:
        return cls(max_samples, 0, prior.msgThroughputIn, prior.msgThroughputOut, prior.msgRateIn, prior.msgRateOut)

    def update(self, s: NamespaceBundleStats) -> None:
        n = min(self.numSamples + 1, self.maxSamples)
        self.numSamples = n
        self.msgThroughputIn = time_average_step(self.msgThroughputIn, n, s.msgThroughputIn)
        self.msgThroughputOut = time_average_step(self.msgThroughputOut, n, s.msgThroughputOut)
        self.msgRateIn = time_average_step(self.msgRateIn, n, s.msgRateIn)
        self.msgRateOut = time_average_step(self.msgRateOut, n, s.msgRateOut)

    @property
    def total_msg_rate(self) -> float:
        return self.msgRateIn + self.msgRateOut

    @property
    def total_msg_throughput(self) -> float:
        return self.msgThroughputIn + self.msgThroughputOut

    def copy(self) -> TimeAverageMessageData:
        return TimeAverageMessageData(
            self.maxSamples,
            self.numSamples,
            self.msgThroughputIn,
            self.msgThroughputOut,
            self.msgRateIn,
            self.msgRateOut,
        )

    @classmethod
    def from_json(cls, value: Any, where: str, max_samples: int) -> TimeAverageMessageData:
        d = fields.obj(value, where)
        n = fields.num
        return cls(
            fields.integer(d, "maxSamples", where, max_samples),
            fields.integer(d, "numSamples", where, 0),
            n(d, "msgThroughputIn", where),
            n(d, "msgThroughputOut", where),
            n(d, "msgRateIn", where),
            n(d, "msgRateOut", where),
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "maxSamples": self.maxSamples,
            "numSamples": self.numSamples,
            "msgThroughputIn": self.msgThroughputIn,
            "msgThroughputOut": self.msgThroughputOut,
            "msgRateIn": self.msgRateIn,
            "msgRateOut": self.msgRateOut,
        }


@dataclass(slots=True)
class BundleData:
    shortTermData: TimeAverageMessageData
    longTermData: TimeAverageMessageData
    topics: int = 0

    @classmethod
    def default(cls, prior: NamespaceBundleStats = DEFAULT_STATS) -> BundleData:
        """What the leader uses for a bundle it has no data for."""
        return cls(
            TimeAverageMessageData.with_prior(NUM_SHORT_SAMPLES, prior),
            TimeAverageMessageData.with_prior(NUM_LONG_SAMPLES, prior),
        )

    def update(self, s: NamespaceBundleStats) -> None:
        self.shortTermData.update(s)
        self.longTermData.update(s)
        self.topics = s.topics

    def copy(self) -> BundleData:
        return BundleData(self.shortTermData.copy(), self.longTermData.copy(), self.topics)

    @classmethod
    def from_json(cls, value: Any, where: str) -> BundleData:
        d = fields.obj(value, where)
        short = d.get("shortTermData")
        long = d.get("longTermData")
        default = cls.default()
        return cls(
            TimeAverageMessageData.from_json(short, f"{where}.shortTermData", NUM_SHORT_SAMPLES)
            if short is not None
            else default.shortTermData,
            TimeAverageMessageData.from_json(long, f"{where}.longTermData", NUM_LONG_SAMPLES)
            if long is not None
            else default.longTermData,
            fields.integer(d, "topics", where),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "shortTermData": self.shortTermData.to_json(),
            "longTermData": self.longTermData.to_json(),
            "topics": self.topics,
        }


@dataclass(frozen=True, slots=True)
class TimeAverageBrokerData:
    shortTermMsgThroughputIn: float = 0.0
    shortTermMsgThroughputOut: float = 0.0
    shortTermMsgRateIn: float = 0.0
    shortTermMsgRateOut: float = 0.0
    longTermMsgThroughputIn: float = 0.0
    longTermMsgThroughputOut: float = 0.0
    longTermMsgRateIn: float = 0.0
    longTermMsgRateOut: float = 0.0

    @classmethod
    def of_bundles(
        cls, bundles: Iterable[str], bundle_data: Mapping[str, BundleData], prior: NamespaceBundleStats = DEFAULT_STATS
    ) -> TimeAverageBrokerData:
        """Pulsar's ``TimeAverageBrokerData#reset``: sums over the broker's bundles."""
        s = [0.0] * 8
        for name in bundles:
            data = bundle_data.get(name)
            if data is None:
                vals = [prior.msgThroughputIn, prior.msgThroughputOut, prior.msgRateIn, prior.msgRateOut] * 2
            else:
                st, lt = data.shortTermData, data.longTermData
                vals = [
                    st.msgThroughputIn,
                    st.msgThroughputOut,
                    st.msgRateIn,
                    st.msgRateOut,
                    lt.msgThroughputIn,
                    lt.msgThroughputOut,
                    lt.msgRateIn,
                    lt.msgRateOut,
                ]
            for k in range(8):
                s[k] += vals[k]
        return cls(*s)

    @classmethod
    def from_json(cls, value: Any, where: str) -> TimeAverageBrokerData:
        d = fields.obj(value, where)
        return cls(**{k: fields.num(d, k, where) for k in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(slots=True)
class LocalBrokerData:
    """A broker's load report; unknown fields of a real report are ignored."""

    resources: SystemResources = field(default_factory=SystemResources)
    msgThroughputIn: float = 0.0
    msgThroughputOut: float = 0.0
    msgRateIn: float = 0.0
    msgRateOut: float = 0.0
    lastUpdate: int = 0
    lastStats: dict[str, NamespaceBundleStats] = field(default_factory=dict)
    numTopics: int = 0
    numBundles: int = 0
    numConsumers: int = 0
    numProducers: int = 0
    bundles: list[str] = field(default_factory=list)
    brokerVersionString: str | None = None
    loadManagerClassName: str | None = None
    persistentTopicsEnabled: bool = True
    nonPersistentTopicsEnabled: bool = True

    @property
    def total_rate(self) -> float:
        return self.msgRateIn + self.msgRateOut

    @property
    def total_throughput(self) -> float:
        return self.msgThroughputIn + self.msgThroughputOut

    def max_usage(self) -> float:
        return self.resources.max_usage()

    def weighted_max_usage(self, w: ResourceWeights) -> float:
        return self.resources.weighted_max_usage(w)

    @classmethod
    def from_json(cls, value: Any, where: str) -> LocalBrokerData:
        d = fields.obj(value, where)
        stats_raw = fields.obj(d.get("lastStats") or {}, f"{where}.lastStats")
        last_stats = {b: NamespaceBundleStats.from_json(s, f"{where}.lastStats.{b}") for b, s in stats_raw.items()}
        bundles = fields.str_list(d, "bundles", where) if "bundles" in d else list(last_stats)
        n, i = fields.num, fields.integer
        return cls(
            resources=SystemResources.from_json(d, where),
            msgThroughputIn=n(d, "msgThroughputIn", where),
            msgThroughputOut=n(d, "msgThroughputOut", where),
            msgRateIn=n(d, "msgRateIn", where),
            msgRateOut=n(d, "msgRateOut", where),
            lastUpdate=i(d, "lastUpdate", where),
            lastStats=last_stats,
            numTopics=i(d, "numTopics", where),
            numBundles=i(d, "numBundles", where, len(bundles)),
            numConsumers=i(d, "numConsumers", where),
            numProducers=i(d, "numProducers", where),
            bundles=bundles,
            brokerVersionString=fields.text(d, "brokerVersionString", where),
            loadManagerClassName=fields.text(d, "loadManagerClassName", where),
            persistentTopicsEnabled=fields.flag(d, "persistentTopicsEnabled", where, True),
            nonPersistentTopicsEnabled=fields.flag(d, "nonPersistentTopicsEnabled", where, True),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = self.resources.to_json()
        out.update(
            msgThroughputIn=self.msgThroughputIn,
            msgThroughputOut=self.msgThroughputOut,
            msgRateIn=self.msgRateIn,
            msgRateOut=self.msgRateOut,
            lastUpdate=self.lastUpdate,
            lastStats={b: s.to_json() for b, s in self.lastStats.items()},
            numTopics=self.numTopics,
            numBundles=self.numBundles,
            numConsumers=self.numConsumers,
            numProducers=self.numProducers,
            bundles=list(self.bundles),
            brokerVersionString=self.brokerVersionString,
            loadManagerClassName=self.loadManagerClassName,
            persistentTopicsEnabled=self.persistentTopicsEnabled,
            nonPersistentTopicsEnabled=self.nonPersistentTopicsEnabled,
        )
        return out

    @classmethod
    def of_stats(
        cls, resources: SystemResources, stats: Mapping[str, NamespaceBundleStats], **extra: Any
    ) -> LocalBrokerData:
        """Pulsar's ``LocalBrokerData#update``: totals and counts recomputed from the bundle stats."""
        return cls(
            resources=resources,
            msgThroughputIn=sum(s.msgThroughputIn for s in stats.values()),
            msgThroughputOut=sum(s.msgThroughputOut for s in stats.values()),
            msgRateIn=sum(s.msgRateIn for s in stats.values()),
            msgRateOut=sum(s.msgRateOut for s in stats.values()),
            lastStats=dict(stats),
            numTopics=sum(s.topics for s in stats.values()),
            numBundles=len(stats),
            numConsumers=sum(s.consumerCount for s in stats.values()),
            numProducers=sum(s.producerCount for s in stats.values()),
            bundles=list(stats),
            **extra,
        )


@dataclass(slots=True)
class BrokerData:
    localData: LocalBrokerData
    timeAverageData: TimeAverageBrokerData = TimeAverageBrokerData()
    preallocatedBundleData: dict[str, BundleData] = field(default_factory=dict)


@dataclass(slots=True)
class LoadData:
    """The leader's view: brokers, bundle data and recently unloaded bundles (ms)."""

    brokers: dict[str, BrokerData] = field(default_factory=dict)
    bundleData: dict[str, BundleData] = field(default_factory=dict)
    recentlyUnloadedBundles: dict[str, int] = field(default_factory=dict)

    def owner_of(self) -> dict[str, str]:
        """bundle -> broker, from each broker's ``bundles``."""
        return {b: name for name, bd in self.brokers.items() for b in bd.localData.bundles}
