"""The load estimate of ``BalancedPlanShedder``: capacity-normalised, per resource, from the latest reports.

Pulsar's strategies score a broker by one number -- ThresholdShedder by a history-weighted max usage
(``ThresholdShedder#updateAvgResourceUsage``, a 0.9 history that lags: PIP-364), UniformLoadShedder by
message rate or throughput alone -- and estimate a bundle's weight in message rate (``AvgShedder``,
``LeastLongTermMessageRate``), which on a mixed fleet says nothing of the CPU or NIC a bundle costs.
Here every broker and bundle is a vector of three absolute usages, in the units of the report's
``SystemResources`` (CPU in percent of one core, NIC in and out in kbit/s), so one vector can be added to
any broker and divided by THAT broker's limits:

* **Cost model** (``fit_cost_model``): over the brokers' latest ``LocalBrokerData``, the least-squares fit
  ``cpu.usage = base + a * (msgRateIn + msgRateOut) + b * (msgThroughputIn + msgThroughputOut)`` with
  ``a, b, base >= 0`` (a term whose coefficient comes out negative is dropped and the fit redone); NIC
  usage per byte/s is ``sum(bandwidthIn.usage) / sum(msgThroughputIn)`` (and out).  With fewer than three
  brokers carrying traffic the CPU falls back to one ratio per message.
* **A bundle** is ``(a * rate + b * tput, nic_in * tput_in, nic_out * tput_out)`` from its latest
  ``NamespaceBundleStats`` in its owner's report (no lagging history: the report rule already rewrites a
  report whose load moved by 10 points), or from the short-term average of its ``BundleData`` when it
  has no stats (a bundle preallocated but not yet reported).
* **A broker** is its reported usage, plus its preallocated bundles (assigned, not yet in a report),
  plus the moves still in flight (``InFlight``): a move is credited to its destination, and debited from
  its source, until the destination's report lists the bundle and the source's no longer does.  The shedder
  smooths the report-plus-in-flight part over time (``trend``); preallocations are added on top.
* **Headroom per resource** (``headroom``): each broker's limit less its usage, per resource -- CPU, NIC in,
  NIC out, and the direct memory it reports (no bundle has a direct-memory demand in the cost model, so a
  move never changes it: a broker bound by direct memory is bound whatever moves).  The **binding resource**
  is the one of highest weighted usage fraction, i.e. least weighted headroom.
* **Load** is the weighted max of the four fractions (``SystemResources#weighted_max_usage``'s weights,
  ``loadBalancer*ResourceWeight``; direct memory weighs 0 unless configured): the binding resource's fraction.
  A resource without a limit counts 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, NamespaceBundleStats
from bundlewise.model.resources import ResourceWeights

Vector = tuple[float, float, float]  # cpu (% of one core), bandwidth in, bandwidth out (kbit/s)
ZERO: Vector = (0.0, 0.0, 0.0)
DEFAULT_NIC_PER_BYTE = 8 / 1000.0  # bytes/s -> kbit/s, the report's unit when no broker has traffic


def add(a: Vector, b: Vector, sign: float = 1.0) -> Vector:
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2])


@dataclass(frozen=True, slots=True)
class CostModel:
    """What one message and one byte cost a broker, in the report's units."""

    cpu_per_msg: float
    cpu_per_byte: float
    nic_in_per_byte: float
    nic_out_per_byte: float

    def of_rates(self, rate_in: float, rate_out: float, tput_in: float, tput_out: float) -> Vector:
        cpu = self.cpu_per_msg * (rate_in + rate_out) + self.cpu_per_byte * (tput_in + tput_out)
        return (cpu, self.nic_in_per_byte * tput_in, self.nic_out_per_byte * tput_out)

    def of_stats(self, s: NamespaceBundleStats) -> Vector:
        return self.of_rates(s.msgRateIn, s.msgRateOut, s.msgThroughputIn, s.msgThroughputOut)

    def of_data(self, d: BundleData) -> Vector:
        st = d.shortTermData
        return self.of_rates(st.msgRateIn, st.msgRateOut, st.msgThroughputIn, st.msgThroughputOut)


def _nonnegative_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares of ``y`` on the columns of ``x`` with every coefficient >= 0 (drop, refit)."""
    keep = list(range(x.shape[1]))
    while keep:
        coef = np.linalg.lstsq(x[:, keep], y, rcond=None)[0]
        if (coef >= 0).all():
            out = np.zeros(x.shape[1])
            out[keep] = coef
            return out
        keep.pop(int(np.argmin(coef)))
    return np.zeros(x.shape[1])


# The last result of each function of the fleet's reports alone, with the reports it was computed from: a
# placement burst (hundreds of lookups between two reports) asks again and again for the same answer.  A report
# (``LocalBrokerData``) is replaced, never edited, when a broker reports again; the key holds each report's id
# and ``lastUpdate``, and the entry keeps the reports alive so no id is reused while it is cached.
ReportsKey = tuple[tuple[str, int, int], ...]
_LAST_MODEL: list[tuple[ReportsKey, list[LocalBrokerData], CostModel]] = []
_LAST_LIMITS: list[tuple[ReportsKey, list[LocalBrokerData], Mapping[str, Limits]]] = []


def _reports_key(names: Iterable[str], brokers: Iterable[BrokerData]) -> tuple[list[LocalBrokerData], ReportsKey]:
    reports = [b.localData for b in brokers]
    return reports, tuple((n, id(r), r.lastUpdate) for n, r in zip(names, reports, strict=True))


def fit_cost_model(brokers: Iterable[BrokerData]) -> CostModel:
    """The fleet's cost model from the brokers' latest reports (module docstring)."""
    listed = list(brokers)
    reports, key = _reports_key(("",) * len(listed), listed)
    if _LAST_MODEL and _LAST_MODEL[0][0] == key:
        return _LAST_MODEL[0][2]
    model = _fit_cost_model(listed)
    _LAST_MODEL[:] = [(key, reports, model)]
    return model


def _fit_cost_model(brokers: list[BrokerData]) -> CostModel:
    rows = [(b.localData.total_rate, b.localData.total_throughput, b.localData.resources, b.localData) for b in brokers]
    busy = [r for r in rows if r[0] > 0 or r[1] > 0]
    tin = sum(r[3].msgThroughputIn for r in busy)
    tout = sum(r[3].msgThroughputOut for r in busy)
    nic_in = sum(r[2].bandwidth_in.usage for r in busy) / tin if tin > 0 else DEFAULT_NIC_PER_BYTE
    nic_out = sum(r[2].bandwidth_out.usage for r in busy) / tout if tout > 0 else DEFAULT_NIC_PER_BYTE
    per_msg = per_byte = 0.0
    if len(busy) >= 3:
        x = np.array([[1.0, r[0], r[1]] for r in rows])
        y = np.array([r[2].cpu.usage for r in rows])
        _, per_msg, per_byte = (float(c) for c in _nonnegative_fit(x, y))
    if per_msg == 0.0 and per_byte == 0.0:
        rate = sum(r[0] for r in busy)
        per_msg = sum(r[2].cpu.usage for r in busy) / rate if rate > 0 else 0.0
    return CostModel(per_msg, per_byte, nic_in, nic_out)


@dataclass(frozen=True, slots=True)
class Limits:
    """A broker's limits in the report's units; direct memory with its usage, which no move changes."""

    cpu: float
    nic_in: float
    nic_out: float
    memory: float = 0.0  # direct memory limit (MB)
    memory_used: float = 0.0  # direct memory in use (MB)


def limits_of(broker: BrokerData) -> Limits:
    r = broker.localData.resources
    return Limits(
        r.cpu.limit, r.bandwidth_in.limit, r.bandwidth_out.limit, r.direct_memory.limit, r.direct_memory.usage
    )


def fleet_limits(brokers: Mapping[str, BrokerData]) -> Mapping[str, Limits]:
    """Each broker's limits; a resource a broker reports no limit for (an empty first report, a NIC whose
    speed is unknown) takes the mean limit of the brokers that report one, so an unknown broker counts as an
    average one -- never as a broker of infinite capacity.  Read-only (shared by the calls on the same reports)."""
    reports, key = _reports_key(brokers.keys(), brokers.values())
    if _LAST_LIMITS and _LAST_LIMITS[0][0] == key:
        return _LAST_LIMITS[0][2]
    limits = MappingProxyType(_fleet_limits(brokers))
    _LAST_LIMITS[:] = [(key, reports, limits)]
    return limits


def _fleet_limits(brokers: Mapping[str, BrokerData]) -> dict[str, Limits]:
    own = {b: limits_of(bd) for b, bd in brokers.items()}

    def mean(values: list[float]) -> float:
        known = [v for v in values if v > 0]
        return sum(known) / len(known) if known else 0.0

    cpu = mean([lim.cpu for lim in own.values()])
    nin = mean([lim.nic_in for lim in own.values()])
    nout = mean([lim.nic_out for lim in own.values()])
    return {
        b: Limits(
            lim.cpu if lim.cpu > 0 else cpu,
            lim.nic_in if lim.nic_in > 0 else nin,
            lim.nic_out if lim.nic_out > 0 else nout,
            lim.memory,
            lim.memory_used,
        )
        for b, lim in own.items()
    }


RESOURCES = ("cpu", "bandwidthIn", "bandwidthOut", "directMemory")


def fractions(usage: Vector, limits: Limits, w: ResourceWeights) -> tuple[float, float, float, float]:
    """The weighted usage fraction of each resource, in ``RESOURCES`` order (0 for a resource without a
    limit)."""
    return (
        usage[0] / limits.cpu * w.cpu if limits.cpu > 0 else 0.0,
        usage[1] / limits.nic_in * w.bandwidth_in if limits.nic_in > 0 else 0.0,
        usage[2] / limits.nic_out * w.bandwidth_out if limits.nic_out > 0 else 0.0,
        limits.memory_used / limits.memory * w.direct_memory if limits.memory > 0 else 0.0,
    )


def load_of(usage: Vector, limits: Limits, w: ResourceWeights) -> float:
    """The weighted max of the four fractions: the binding resource's (module docstring).  The planner calls
    this for every candidate move: ``fractions`` spelled out without building a tuple, and the memory fraction
    (no move changes it) skipped when it weighs 0, Pulsar's default."""
    cpu = usage[0] / limits.cpu * w.cpu if limits.cpu > 0 else 0.0
    nin = usage[1] / limits.nic_in * w.bandwidth_in if limits.nic_in > 0 else 0.0
    nout = usage[2] / limits.nic_out * w.bandwidth_out if limits.nic_out > 0 else 0.0
    top = cpu if cpu > nin else nin
    top = top if top > nout else nout
    if w.direct_memory <= 0 or limits.memory <= 0:
        return top
    mem = limits.memory_used / limits.memory * w.direct_memory
    return top if top > mem else mem


def binding_resource(usage: Vector, limits: Limits, w: ResourceWeights) -> str:
    """The resource that sets the load: ``cpu``, ``bandwidthIn``, ``bandwidthOut`` or ``directMemory`` (the
    first in that order on a tie)."""
    f = fractions(usage, limits, w)
    return RESOURCES[f.index(max(f))]


def pair_gain(before_s: float, after_s: float, before_d: float, after_d: float) -> float:
    """The drop of the capacity-weighted sum of squared binding loads of a move's two brokers (``planner``'s
    docstring), before any cost.  Brokers on which the bundle weighs the same share (one size, one binding
    resource) weigh 1 each; a broker whose binding resource the bundle does not touch weighs 1 too (its term is
    0)."""
    a_s, a_d = before_s - after_s, after_d - before_d
    drop_s, drop_d = before_s * before_s - after_s * after_s, before_d * before_d - after_d * after_d
    if a_s <= 0 or a_d <= 0 or abs(a_s - a_d) <= 1e-9 * max(a_s, a_d):
        return drop_s + drop_d
    mean = (a_s + a_d) / 2
    return mean / a_s * drop_s + mean / a_d * drop_d


@dataclass(frozen=True, slots=True)
class Headroom:
    """What a broker has left of each resource, in the report's units (CPU in percent of one core, NIC in
    kbit/s, direct memory in MB), its binding resource and the load (weighted fraction) that resource sets."""

    cpu: float
    bandwidth_in: float
    bandwidth_out: float
    direct_memory: float
    binding: str
    load: float


def headroom(usage: Vector, limits: Limits, w: ResourceWeights) -> Headroom:
    """A broker's headroom per resource (module docstring): limit less usage, never below 0."""
    return Headroom(
        max(0.0, limits.cpu - usage[0]),
        max(0.0, limits.nic_in - usage[1]),
        max(0.0, limits.nic_out - usage[2]),
        max(0.0, limits.memory - limits.memory_used),
        binding_resource(usage, limits, w),
        load_of(usage, limits, w),
    )


@dataclass(frozen=True, slots=True)
class InFlight:
    """A move whose load the reports may not show yet."""

    bundle: str
    source: str
    destination: str
    vector: Vector
    at: int  # ms


def reported_usage(load: LoadData, in_flight: Iterable[InFlight]) -> dict[str, Vector]:
    """Every broker's usage as its report shows it, plus the moves in flight (module docstring)."""
    usage: dict[str, Vector] = {}
    for name, b in load.brokers.items():
        r = b.localData.resources
        usage[name] = (r.cpu.usage, r.bandwidth_in.usage, r.bandwidth_out.usage)
    for m in in_flight:
        dest, src = load.brokers.get(m.destination), load.brokers.get(m.source)
        if dest is not None and dest.localData.lastUpdate <= m.at:
            usage[m.destination] = add(usage[m.destination], m.vector)
        if src is not None and src.localData.lastUpdate <= m.at and m.bundle in src.localData.lastStats:
            usage[m.source] = add(usage[m.source], m.vector, -1.0)
    return usage


def preallocated_usage(
    load: LoadData, model: CostModel, assumed: Mapping[str, Vector] | None = None
) -> dict[str, Vector]:
    """Every broker's preallocated bundles not yet in its report, each at the usage ``assumed`` for it when
    placed, else its short-term data."""
    assumed = assumed or {}
    usage: dict[str, Vector] = {}
    for name, b in load.brokers.items():
        u: Vector = ZERO
        listed = b.localData.lastStats
        for bundle, data in b.preallocatedBundleData.items():
            if bundle not in listed:
                u = add(u, assumed.get(bundle) or model.of_data(data))
        usage[name] = u
    return usage


def broker_usage(
    load: LoadData, model: CostModel, in_flight: Iterable[InFlight], assumed: Mapping[str, Vector] | None = None
) -> dict[str, Vector]:
    """Every broker's estimated usage: its report, its preallocations and the moves in flight."""
    reported = reported_usage(load, in_flight)
    pre = preallocated_usage(load, model, assumed)
    return {b: add(u, pre[b]) for b, u in reported.items()}
