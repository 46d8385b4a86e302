"""The trend-aware estimate of ``BalancedPlanShedder``: per broker, a level and a slope (Holt's linear
smoothing) of its usage vector, and a forecast one cycle ahead.

Pulsar's strategies read either the latest report (UniformLoadShedder, OverloadShedder, TransferShedder: they
chase per-minute jitter) or a fixed 0.9 history (``ThresholdShedder#updateAvgResourceUsage``): a broker just
unloaded keeps looking hot for many cycles and is unloaded again (PIP-364).  Here the history is smoothed, but
never across a change the strategy knows of:

* **What is smoothed**: each broker's usage as the report shows it, plus the moves still in flight
  (``estimate.broker_usage`` without preallocations). That sum does not step when a move completes: the
  move is credited in flight until the report lists it.
* **Known steps**: a move the strategy plans shifts the source's level down and the destination's up by the
  bundle's vector at once (``shift``), so the smoothing never lags behind its own decisions.
* **Unknown steps reset**: a broker seen for the first time (added, returned after a restart or a drain) or one
  whose newest value is more than ``JUMP`` (in load) from the forecast (a burst, a restart's orphans placed on
  it) starts again from its newest value with no slope.  Only jitter and gradual change are smoothed.
* **Update**, once per new report (its ``lastUpdate``): ``level' = ALPHA * x + (1 - ALPHA) * (level + slope)``,
  ``slope' = BETA * (level' - level) + (1 - BETA) * slope``; the forecast is ``level' + HORIZON * slope'``
  (reports ahead), never below zero.  A report more than ``PAUSE_MS`` (10 minutes) after the last one folded
  in restarts the smoothing too: so old a history says nothing of now.

Everything is a function of the reports and of the strategy's own moves: the estimate is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bundlewise.algorithms.balanced.estimate import ZERO, Vector, add

ALPHA = 0.6  # weight of the newest value in the level
BETA = 0.2  # weight of the newest change in the slope
HORIZON = 1.0  # reports ahead of the forecast
PAUSE_MS = 10 * 60_000  # a report this long after the last one folded in restarts the smoothing
# a newest value this far (in load) from the forecast restarts the smoothing: the change that makes Pulsar's
# broker rewrite its report at once (``loadBalancerReportUpdateThresholdPercentage``, 10)
JUMP = 0.10


@dataclass(slots=True)
class Smoothed:
    level: Vector
    slope: Vector
    at: int  # the lastUpdate (ms) of the report last folded in


def _scale(v: Vector, k: float) -> Vector:
    return (v[0] * k, v[1] * k, v[2] * k)


def _forecast(s: Smoothed) -> Vector:
    f = add(s.level, _scale(s.slope, HORIZON))
    return (max(f[0], 0.0), max(f[1], 0.0), max(f[2], 0.0))


class Trend:
    """The smoothed usage of every broker (module docstring)."""

    def __init__(self) -> None:
        self.state: dict[str, Smoothed] = {}

    def observe(
        self, usage: Mapping[str, Vector], updates: Mapping[str, int], load: Callable[[str, Vector], float]
    ) -> dict[str, Vector]:
        """Folds each broker's newest ``usage`` (report + moves in flight) in once per report
        (``updates[b]``, its ``lastUpdate`` in ms); returns each broker's forecast.  ``load(b, v)`` is
        broker ``b``'s load of a usage vector.  Brokers absent from ``usage`` are forgotten (down)."""
        out: dict[str, Vector] = {}
        for b in [b for b in self.state if b not in usage]:
            del self.state[b]
        for b, x in usage.items():
            s = self.state.get(b)
            if s is None or updates[b] - s.at > PAUSE_MS or abs(load(b, x) - load(b, _forecast(s))) > JUMP:
                s = self.state[b] = Smoothed(x, ZERO, updates[b])
            elif updates[b] != s.at:
                previous = s.level
                s.level = add(_scale(x, ALPHA), _scale(add(s.level, s.slope), 1.0 - ALPHA))
                change = add(s.level, previous, -1.0)
                s.slope = add(_scale(change, BETA), _scale(s.slope, 1.0 - BETA))
                s.at = updates[b]
            out[b] = _forecast(s)
        return out

    def shift(self, broker: str, vector: Vector, sign: float) -> None:
        """A known step: a planned move of ``vector`` off (``sign`` -1) or onto (+1) ``broker``."""
        s = self.state.get(broker)
        if s is not None:
            s.level = add(s.level, vector, sign)
