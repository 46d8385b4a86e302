"""Pulsar time for a broker run with ``--time-scale K``.

Pulsar time runs K times faster than the wall clock from a cluster-wide origin (epoch ms): at wall time
``w`` it is ``origin + (w - origin) * K``.  Every broker of a cluster started with the same origin and K
agrees on it (they share the wall clock), so report timestamps, grace periods and the workload's
position line up across processes.  K = 1 is the wall clock itself.  Balancer intervals, which Pulsar
states in Pulsar time, last ``interval / K`` real seconds (``real_seconds``); metadata session timeouts
are never scaled.  Everything that waits measures with ``time.monotonic`` (``elapsed``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PulsarClock:
    origin_ms: int
    scale: float = 1.0

    @classmethod
    def starting_now(cls, scale: float = 1.0, origin_ms: int | None = None) -> PulsarClock:
        return cls(int(time.time() * 1000) if origin_ms is None else origin_ms, scale)

    def now_ms(self) -> int:
        """Pulsar time now, epoch ms."""
        wall = time.time() * 1000.0
        return int(self.origin_ms + (wall - self.origin_ms) * self.scale)

    def elapsed_ms(self) -> int:
        """Pulsar milliseconds since the origin (the workload's position)."""
        return self.now_ms() - self.origin_ms

    def real_seconds(self, pulsar_ms: float) -> float:
        """How many real seconds a Pulsar interval lasts."""
        return pulsar_ms / 1000.0 / self.scale
