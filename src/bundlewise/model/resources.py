"""Resource usage and the broker's (weighted) max usage.

* ``ResourceUsage.percent_usage`` is computed in 32-bit float exactly as Java's
  ``(float) usage / (float) limit * 100`` and is 0 when ``limit <= 0`` (``ResourceUsage#percentUsage``).
* The weighted max usage of a broker is ``max_k(percent_k * weight_k) / 100`` over cpu,
  directMemory, bandwidthIn and bandwidthOut; the product is a double of the float percent.
  Memory is no longer part of it (the 4-weight ``LocalBrokerData#getMaxResourceUsageWithWeight`` of the newest callers).
* The unweighted max (OverloadShedder) takes the same four resources, unweighted.
* No clamping: a usage above its limit counts above 1.0 (PR #18645 reverted the clamp).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model import fields
from bundlewise.model.javamath import f32

MIB = 1024 * 1024  # Pulsar's "MB" in load-balancer settings (LoadManagerShared.MIBI)


def history_average(previous: float | None, sample: float, history: float) -> float:
    """Pulsar's usage history: the sample on first sight, else ``previous * h + (1 - h) * sample``.

    Used by ThresholdShedder, LeastResourceUsageWithWeight and the extensible ``BrokerLoadData`` EMAs
    (``h = loadBalancerHistoryResourcePercentage``).
    """
    return sample if previous is None else previous * history + (1 - history) * sample


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """Pulsar's ``ResourceUsage {"usage", "limit"}``."""

    usage: float = 0.0
    limit: float = 0.0
    _percent: float = field(init=False, repr=False, compare=False, default=0.0)

    def __post_init__(self) -> None:
        # computed once: a placement reads every candidate's usage, a cycle thousands of times
        percent = 0.0 if self.limit <= 0 else f32(f32(f32(self.usage) / f32(self.limit)) * 100.0)
        object.__setattr__(self, "_percent", percent)

    def percent_usage(self) -> float:
        return self._percent

    @classmethod
    def from_json(cls, value: Any, where: str) -> ResourceUsage:
        if value is None:
            return cls()
        d = fields.obj(value, where)
        # Pulsar writes -1/-1 for a resource it cannot measure (e.g. an undetected NIC speed).
        return cls(fields.num(d, "usage", where, signed=True), fields.num(d, "limit", where, signed=True))

    def to_json(self) -> dict[str, float]:
        return {"usage": self.usage, "limit": self.limit}


@dataclass(frozen=True, slots=True)
class ResourceWeights:
    """The weights of the weighted max usage (``loadBalancer*ResourceWeight``)."""

    cpu: float = 1.0
    direct_memory: float = 0.0
    bandwidth_in: float = 1.0
    bandwidth_out: float = 1.0
    memory: float = 0.0  # deprecated since Pulsar 3.0.0; kept to read configs, not used in the max


@dataclass(frozen=True, slots=True)
class SystemResources:
    """The five resources a broker reports."""

    cpu: ResourceUsage = ResourceUsage()
    memory: ResourceUsage = ResourceUsage()
    direct_memory: ResourceUsage = ResourceUsage()
    bandwidth_in: ResourceUsage = ResourceUsage()
    bandwidth_out: ResourceUsage = ResourceUsage()
    # the last weighted max usage and its weights (frozen, so one object's value never changes): a placement
    # reads every candidate's, and a cycle places hundreds of bundles against the same reports
    _weighted: tuple[ResourceWeights, float] | None = field(init=False, repr=False, compare=False, default=None)

    def max_usage(self) -> float:
        """Unweighted max usage in 0..1 (``getMaxResourceUsage``)."""
        return (
            max(
                self.cpu.percent_usage(),
                self.direct_memory.percent_usage(),
                self.bandwidth_in.percent_usage(),
                self.bandwidth_out.percent_usage(),
            )
            / 100.0
        )

    def weighted_max_usage(self, w: ResourceWeights) -> float:
        """Weighted max usage in 0..1 (``getMaxResourceUsageWithWeight``)."""
        memo = self._weighted
        if memo is not None and memo[0] is w:
            return memo[1]
        value = (
            max(
                self.cpu._percent * w.cpu,
                self.direct_memory._percent * w.direct_memory,
                self.bandwidth_in._percent * w.bandwidth_in,
                self.bandwidth_out._percent * w.bandwidth_out,
            )
            / 100.0
        )
        object.__setattr__(self, "_weighted", (w, value))
        return value

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str) -> SystemResources:
        r = ResourceUsage.from_json
        return cls(
            r(d.get("cpu"), f"{where}.cpu"),
            r(d.get("memory"), f"{where}.memory"),
            r(d.get("directMemory"), f"{where}.directMemory"),
            r(d.get("bandwidthIn"), f"{where}.bandwidthIn"),
            r(d.get("bandwidthOut"), f"{where}.bandwidthOut"),
        )

    def to_json(self) -> dict[str, dict[str, float]]:
        return {
            "cpu": self.cpu.to_json(),
            "memory": self.memory.to_json(),
            "directMemory": self.direct_memory.to_json(),
            "bandwidthIn": self.bandwidth_in.to_json(),
            "bandwidthOut": self.bandwidth_out.to_json(),
        }
