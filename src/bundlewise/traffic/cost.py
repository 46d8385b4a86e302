"""A broker's capacity and the resource cost model: traffic -> CPU and NIC usage, in Pulsar's units.

For a broker with message rates ``r_in, r_out`` (msg/s) and throughput ``t_in, t_out`` (bytes/s):

* CPU cores used = ``cpu_base_cores + (r_in + r_out)·cpu_us_per_msg·10⁻⁶ + (t_in + t_out)/1024·cpu_us_per_kib·10⁻⁶``,
  optionally × ``max(0, 1 + cpu_jitter·N(0,1))`` (seeded); Pulsar reports CPU as percent-of-one-core
  (``SystemResourceUsage``), so ``cpu = {usage: cores_used·100, limit: cpu_cores·100}``;
* bandwidth in/out = ``t·8/1000`` kbit/s with limit ``nic_mbps·1000`` kbit/s (Pulsar's NIC usage), i.e. a
  fraction ``t·8 / (nic_mbps·10⁶)``;
* memory and direct memory are not modelled (``{0, 0}``; their weights default to 0 in Pulsar >= 3.0).

The *true load* of a broker is the weighted max of these fractions with the configured weights -- what
``SystemResources.weighted_max_usage`` computes from a report (there in 32-bit float percent, here in
double; they agree to float precision).  A broker that is down has no usage.

``BrokerSpec.resources`` is the rule for one broker (what a live broker reports); ``broker_usage`` and
``system_resources`` evaluate it for every broker slot at once with numpy (the simulator), and a test
proves the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bundlewise.model.resources import ResourceUsage, ResourceWeights, SystemResources

MICROS = 1e-6


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    """A broker's name, capacity and cost model (``[broker_defaults]`` / ``[[brokers]]`` of a scenario)."""

    name: str
    cpu_cores: float = 8.0
    nic_mbps: float = 10000.0
    cpu_base_cores: float = 0.2
    cpu_us_per_msg: float = 10.0
    cpu_us_per_kib: float = 2.0

    def traffic_cores(self, rate_in: float, rate_out: float, tput_in: float, tput_out: float) -> float:
        """CPU cores the traffic costs above the base (before jitter)."""
        per_msg = (rate_in + rate_out) * self.cpu_us_per_msg * MICROS
        per_kib = (tput_in + tput_out) / 1024.0 * self.cpu_us_per_kib * MICROS
        return per_msg + per_kib

    def cores_used(self, rate_in: float, rate_out: float, tput_in: float, tput_out: float) -> float:
        """CPU cores used with this traffic (before jitter)."""
        return self.cpu_base_cores + self.traffic_cores(rate_in, rate_out, tput_in, tput_out)

    def resources(
        self, rate_in: float, rate_out: float, tput_in: float, tput_out: float, cpu_factor: float = 1.0
    ) -> SystemResources:
        """The broker's ``SystemResources`` for this traffic (``cpu_factor``: the jitter drawn, if any)."""
        cores = self.cores_used(rate_in, rate_out, tput_in, tput_out) * cpu_factor
        nic_kbps = self.nic_mbps * 1000.0
        return SystemResources(
            cpu=ResourceUsage(cores * 100.0, self.cpu_cores * 100.0),
            bandwidth_in=ResourceUsage(tput_in * 8 / 1000.0, nic_kbps),
            bandwidth_out=ResourceUsage(tput_out * 8 / 1000.0, nic_kbps),
        )


BROKER_FIELDS = ("cpu_cores", "nic_mbps", "cpu_base_cores", "cpu_us_per_msg", "cpu_us_per_kib")
BROKER_BOUNDS: dict[str, tuple[float, float]] = {
    "cpu_cores": (0.1, 10_000.0),
    "nic_mbps": (1.0, 10_000_000.0),
    "cpu_base_cores": (0.0, 10_000.0),
    "cpu_us_per_msg": (0.0, 1_000_000.0),
    "cpu_us_per_kib": (0.0, 1_000_000.0),
}
"""Physical bounds of a broker's capacity and cost model (inclusive): a tenth of a core to 10,000 cores, a 1 Mbit/s
to 10 Tbit/s NIC, at most a second of CPU per message or KiB.  Outside them the loads computed are meaningless
(a 10⁻⁶-core broker is "230,000,000 % loaded")."""
BROKER_DEFAULTS: dict[str, float] = {k: float(getattr(BrokerSpec("defaults"), k)) for k in BROKER_FIELDS}


@dataclass(frozen=True, slots=True)
class Capacities:
    """The ``BrokerSpec`` fields of every broker slot, as arrays."""

    cpu_cores: np.ndarray
    nic_mbps: np.ndarray
    cpu_base: np.ndarray
    us_per_msg: np.ndarray
    us_per_kib: np.ndarray

    @classmethod
    def of(cls, brokers: Sequence[BrokerSpec]) -> Capacities:
        def col(attr: str) -> np.ndarray:
            return np.array([getattr(b, attr) for b in brokers], dtype=float)

        return cls(
            col("cpu_cores"), col("nic_mbps"), col("cpu_base_cores"), col("cpu_us_per_msg"), col("cpu_us_per_kib")
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Per broker slot: CPU cores used and the three usage fractions."""

    cpu_cores: np.ndarray
    cpu: np.ndarray
    bandwidth_in: np.ndarray
    bandwidth_out: np.ndarray

    def weighted_max(self, w: ResourceWeights) -> np.ndarray:
        return np.maximum(
            np.maximum(self.cpu * w.cpu, self.bandwidth_in * w.bandwidth_in), self.bandwidth_out * w.bandwidth_out
        )


def broker_usage(
    capacity: Capacities,
    up: np.ndarray,
    rate_in: np.ndarray,
    rate_out: np.ndarray,
    tput_in: np.ndarray,
    tput_out: np.ndarray,
    jitter: float = 0.0,
    rng: np.random.Generator | None = None,
    factor: np.ndarray | None = None,
) -> Usage:
    """Usage of every broker slot from its summed traffic (arrays over slots; ``up`` masks running ones).
    CPU is multiplied by ``factor`` when given (a jitter drawn by ``jitter_factors``), else by a fresh draw
    from ``rng`` when ``jitter > 0``."""
    cores = capacity.cpu_base + traffic_cores(capacity, rate_in, rate_out, tput_in, tput_out)
    if factor is None and jitter > 0 and rng is not None:
        factor = jitter_factors(len(cores), jitter, rng)
    if factor is not None:
        cores = cores * factor
    cores = np.where(up, cores, 0.0)
    nic = capacity.nic_mbps * 1e6
    return Usage(
        cores, cores / capacity.cpu_cores, np.where(up, tput_in * 8 / nic, 0.0), np.where(up, tput_out * 8 / nic, 0.0)
    )


def traffic_cores(
    capacity: Capacities, rate_in: np.ndarray, rate_out: np.ndarray, tput_in: np.ndarray, tput_out: np.ndarray
) -> np.ndarray:
    """``BrokerSpec.traffic_cores`` for every broker slot."""
    per_msg = (rate_in + rate_out) * capacity.us_per_msg * MICROS
    per_kib = (tput_in + tput_out) / 1024.0 * capacity.us_per_kib * MICROS
    total: np.ndarray = per_msg + per_kib
    return total


def jitter_factors(n: int, jitter: float, rng: np.random.Generator) -> np.ndarray:
    """Per broker slot, the measured CPU's multiplier ``max(0, 1 + jitter·N(0,1))`` (one draw per slot)."""
    factors: np.ndarray = np.maximum(0.0, 1.0 + jitter * rng.standard_normal(n))
    return factors


def system_resources(
    capacity: Capacities, usage: Usage, broker: int, tput_in: float, tput_out: float
) -> SystemResources:
    """One slot's ``SystemResources`` as its load report carries them (``BrokerSpec.resources``'s units)."""
    nic_kbps = float(capacity.nic_mbps[broker]) * 1000.0
    return SystemResources(
        cpu=ResourceUsage(float(usage.cpu_cores[broker]) * 100.0, float(capacity.cpu_cores[broker]) * 100.0),
        bandwidth_in=ResourceUsage(tput_in * 8 / 1000.0, nic_kbps),
        bandwidth_out=ResourceUsage(tput_out * 8 / 1000.0, nic_kbps),
    )
