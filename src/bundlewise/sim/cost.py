"""The resource cost model of contract §8: broker traffic → CPU and NIC usage, in Pulsar's units.

For broker ``b`` with message rates ``r_in, r_out`` (msg/s) and throughput ``t_in, t_out`` (bytes/s):

* CPU cores used = ``cpu_base_cores + (r_in + r_out)·cpu_us_per_msg·10⁻⁶ + (t_in + t_out)/1024·cpu_us_per_kib·10⁻⁶``,
  optionally × ``max(0, 1 + cpu_jitter·N(0,1))`` (seeded); Pulsar reports CPU as percent-of-one-core, so
  ``cpu = {usage: cores_used·100, limit: cpu_cores·100}`` (spec §3.1);
* bandwidth in/out usage = ``t·8/1000`` kbit/s with limit ``nic_mbps·1000`` kbit/s, i.e. a fraction
  ``t·8 / (nic_mbps·10⁶)`` (spec §3.1: NIC byte rate × 8 / 1000);
* memory and direct memory are not modelled (``{0, 0}``; their weights default to 0 in Pulsar ≥ 3.0).

The *true load* of a broker is the weighted max of these fractions with the configured weights — what
``SystemResources.weighted_max_usage`` computes from a report (there in 32-bit float percent, here in
double over all brokers at once; they agree to float precision).  A broker that is down has no usage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bundlewise.model.resources import ResourceUsage, ResourceWeights, SystemResources
from bundlewise.sim.cluster import Cluster


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
    cluster: Cluster,
    rate_in: np.ndarray,
    rate_out: np.ndarray,
    tput_in: np.ndarray,
    tput_out: np.ndarray,
    jitter: float = 0.0,
    rng: np.random.Generator | None = None,
) -> Usage:
    """Usage of every broker slot from its summed traffic (arrays over slots)."""
    cores = (
        cluster.cpu_base
        + (rate_in + rate_out) * cluster.us_per_msg * 1e-6
        + (tput_in + tput_out) / 1024.0 * cluster.us_per_kib * 1e-6
    )
    if jitter > 0 and rng is not None:
        cores = cores * np.maximum(0.0, 1.0 + jitter * rng.standard_normal(len(cores)))
    up = cluster.up
    cores = np.where(up, cores, 0.0)
    nic = cluster.nic_mbps * 1e6
    return Usage(
        cores, cores / cluster.cpu_cores, np.where(up, tput_in * 8 / nic, 0.0), np.where(up, tput_out * 8 / nic, 0.0)
    )


def system_resources(cluster: Cluster, usage: Usage, broker: int, tput_in: float, tput_out: float) -> SystemResources:
    """One broker's ``SystemResources`` as its load report carries them (Pulsar units, spec §3.1)."""
    nic_kbps = float(cluster.nic_mbps[broker]) * 1000.0
    return SystemResources(
        cpu=ResourceUsage(float(usage.cpu_cores[broker]) * 100.0, float(cluster.cpu_cores[broker]) * 100.0),
        bandwidth_in=ResourceUsage(tput_in * 8 / 1000.0, nic_kbps),
        bandwidth_out=ResourceUsage(tput_out * 8 / 1000.0, nic_kbps),
    )
