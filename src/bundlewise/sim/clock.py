"""The simulator's one explicit clock.

Time is kept in integer milliseconds; ``Clock.tick`` counts steps from 0 and ``Clock.now`` is
``tick * step_ms`` -- nothing in the simulator reads the wall clock.  Durations are parsed and
formatted by ``model.durations``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Clock:
    """Discrete time: ``tick`` steps of ``step_ms`` from 0 up to ``duration_ms``."""

    step_ms: int
    duration_ms: int
    tick: int = 0

    @property
    def now(self) -> int:
        return self.tick * self.step_ms

    @property
    def ticks(self) -> int:
        """Number of ticks in the run (the tick at ``duration_ms`` itself is not simulated)."""
        return max(1, -(-self.duration_ms // self.step_ms))

    def advance(self) -> None:
        self.tick += 1

    def every(self, interval_ms: int, last_ms: int | None) -> bool:
        """True when a periodic task last run at ``last_ms`` is due at ``now``."""
        return last_ms is None or self.now - last_ms >= interval_ms
