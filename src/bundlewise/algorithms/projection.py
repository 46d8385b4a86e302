"""Each broker's load projected after a cycle's unloads (what ``shed --format admin|table`` shows).

Pulsar's shedders reason in bundle traffic: a bundle is taken to carry its share of its broker's throughput
(``ThresholdShedder``/``OverloadShedder`` size what to offload as a share of ``msgThroughputIn + Out``).  The
projection applies that view to every resource a bundle takes with it, in the resource's own units so that
brokers of different sizes compare right:

* a bundle's traffic is its short-term average in the leader's bundle data (what the strategies rank by),
  else its ``lastStats`` sample;
* ``bandwidthIn`` usage moves with the bundle's share of the source's ``msgThroughputIn``, ``bandwidthOut`` with
  its share of ``msgThroughputOut``, ``cpu`` with its share of ``msgThroughputIn + Out``; memory and direct
  memory stay (they belong to the JVM, not to a bundle);
* the destination gains the same usage (KB/s, CPU percent of one core) and the message rates and throughput;
  an unload without a destination only takes load away (the next lookup places the bundle); a bundle no
  broker owns (placing it) costs its destination what that broker's own traffic costs it, pro rata;
* load is the weighted max usage of the configuration (``LocalBrokerData#getMaxResourceUsageWithWeight``).

An estimate for people, never an input to a decision; ``algorithms.advice`` checks each planned move against
it (``Projection.load_of`` after each move) to warn when a destination would end overloaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bundlewise.config import Config
from bundlewise.model.decisions import Unload
from bundlewise.model.load import LoadData, NamespaceBundleStats
from bundlewise.model.resources import ResourceUsage, SystemResources


@dataclass(frozen=True, slots=True)
class Projected:
    """One broker before and after: load (0–1), msg rate in + out (msg/s), throughput in + out (bytes/s)."""

    broker: str
    load: float
    load_after: float
    msg_rate: float
    msg_rate_after: float
    throughput: float
    throughput_after: float


@dataclass(slots=True)
class _Broker:
    resources: SystemResources
    rate: float
    tput_in: float
    tput_out: float


def _traffic(load: LoadData, broker: str, bundle: str) -> NamespaceBundleStats:
    data = load.bundleData.get(bundle)
    if data is not None:
        st = data.shortTermData
        return NamespaceBundleStats(st.msgRateIn, st.msgThroughputIn, st.msgRateOut, st.msgThroughputOut)
    local = load.brokers[broker].localData if broker in load.brokers else None
    found = local.lastStats.get(bundle) if local is not None else None
    return found if found is not None else NamespaceBundleStats()


def _moved(u: ResourceUsage, amount: float) -> ResourceUsage:
    return replace(u, usage=max(0.0, u.usage + amount))


class Projection:
    """The brokers of ``load`` as the moves apply one by one (module docstring); ``load_of`` reads a broker's
    projected load between moves, so a plan can be checked move by move with the figures the table prints."""

    def __init__(self, load: LoadData, config: Config) -> None:
        self._load = load
        self._weights = config.weights()
        self.now = {
            name: _Broker(
                d.localData.resources,
                d.localData.total_rate,
                d.localData.msgThroughputIn,
                d.localData.msgThroughputOut,
            )
            for name, d in load.brokers.items()
        }
        self.after = {name: _Broker(b.resources, b.rate, b.tput_in, b.tput_out) for name, b in self.now.items()}

    def apply(self, u: Unload) -> None:
        """Take ``u``'s bundle off its owner and onto its destination (if any)."""
        t = _traffic(self._load, u.broker, u.bundle)
        base = self.now.get(u.broker) or (self.now.get(u.destination) if u.destination is not None else None)
        if base is None:
            return
        share_in = t.msgThroughputIn / base.tput_in if base.tput_in > 0 else 0.0
        share_out = t.msgThroughputOut / base.tput_out if base.tput_out > 0 else 0.0
        total = base.tput_in + base.tput_out
        share = (t.msgThroughputIn + t.msgThroughputOut) / total if total > 0 else 0.0
        r = base.resources
        delta = (r.cpu.usage * share, r.bandwidth_in.usage * share_in, r.bandwidth_out.usage * share_out)
        for name, sign in ((u.broker, -1.0), (u.destination, 1.0)):
            b = self.after.get(name) if name is not None else None
            if b is None:
                continue
            b.resources = replace(
                b.resources,
                cpu=_moved(b.resources.cpu, sign * delta[0]),
                bandwidth_in=_moved(b.resources.bandwidth_in, sign * delta[1]),
                bandwidth_out=_moved(b.resources.bandwidth_out, sign * delta[2]),
            )
            b.rate = max(0.0, b.rate + sign * t.total_rate)
            b.tput_in = max(0.0, b.tput_in + sign * t.msgThroughputIn)
            b.tput_out = max(0.0, b.tput_out + sign * t.msgThroughputOut)

    def load_before(self, broker: str) -> float | None:
        b = self.now.get(broker)
        return None if b is None else b.resources.weighted_max_usage(self._weights)

    def load_of(self, broker: str) -> float | None:
        """The broker's load after the moves applied so far (``None`` for a broker without load data)."""
        b = self.after.get(broker)
        return None if b is None else b.resources.weighted_max_usage(self._weights)

    def table(self) -> list[Projected]:
        w = self._weights
        return [
            Projected(
                name,
                b.resources.weighted_max_usage(w),
                self.after[name].resources.weighted_max_usage(w),
                b.rate,
                self.after[name].rate,
                b.tput_in + b.tput_out,
                self.after[name].tput_in + self.after[name].tput_out,
            )
            for name, b in self.now.items()
        ]


def project(load: LoadData, unloads: Sequence[Unload], config: Config) -> list[Projected]:
    """Every broker of ``load`` (input order) before and after ``unloads``."""
    p = Projection(load, config)
    for u in unloads:
        p.apply(u)
    return p.table()
