"""No oscillation at the edges: the moves ``BalancedPlanShedder``'s planner holds back (docs/balanced.md).

A move that the planner's gain alone would take can still come back: the bundle is moved onto a broker it
makes the hottest, and once its cool-down ends the planner (or the next drift of the loads) moves it again.
Pulsar's shedders know this only as a grace period (``loadBalancerSheddingGracePeriodMinutes``) and, in
``AvgShedder``, as consecutive hits before acting (PIP-364); neither looks at the state a move creates.  Here a
candidate move ``x`` from ``s`` to ``d`` (``gain`` net of its own cost, ``raw`` before it) is held back when:

* **recent**: ``x`` (or any part of its hash range) moved within the cool-down plus
  ``bundlewiseBalancedRepeatGuardMinutes`` -- past the cool-down it moves again only to relieve a broker near
  the overload threshold;
* **indivisible**: ``x`` cannot split any further (a single topic, or its namespace at
  ``loadBalancerNamespaceMaximumBundles``), the move makes its destination the hotter of the two, and it
  lowers the higher of their loads by less than ``bundlewiseBalancedIndivisibleMargin``: moving it only moves
  the hot spot (a small bundle, which leaves its destination the cooler one, is not concerned);
* **small for its size**: ``raw`` is under ``bundlewiseBalancedMinGainPerLoad`` times the share of ``s``'s
  binding resource that ``x`` is (between brokers of one size, the source must stay that much over half of
  it above the destination's load before the move) -- a large bundle is not moved for a small gain;
* **no round trip**: ``gain`` less ``bundlewiseBalancedReturnCostShare`` of the cost of the move back
  (``costPerTopic · topics + costPerMove``, never waived) is under ``bundlewiseBalancedMinGain``: a move must
  pay for its return should the loads drift back (off by default: on the suite a share of 0.5 or 1 costs
  stationary-jitter and scale-out-several their balance for one or two unloads fewer);
* **moves again**: in the state the move creates, moving ``x`` on from ``d`` -- back to ``s`` or to any of the
  least loaded brokers -- would itself gain ``minGain`` net of its full cost: the planner would take it again
  as soon as the cool-down ends.

The first three and the round trip do not apply to a move that relieves a broker above the safe line (an
overload is dealt with whatever the churn), nor the round trip to a move that refills a broker below the refill
line (its way back would empty an underloaded broker again, which no plan does); the last two are the planner
evaluating the state it creates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bundlewise.algorithms.balanced.estimate import Limits, Vector, add, load_of, pair_gain
from bundlewise.model.resources import ResourceWeights


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    """The settings of the rules above (0 turns a rule off)."""

    min_gain: float
    cost_per_topic: float
    cost_per_move: float
    min_gain_per_load: float = 0.0
    indivisible_margin: float = 0.0
    return_cost_share: float = 0.0


@dataclass(frozen=True, slots=True)
class Edge:
    """One candidate move, as the planner has evaluated it."""

    vector: Vector
    topics: int
    indivisible: bool
    recent: bool
    source: str
    destination: str
    loads: tuple[float, float, float, float]  # source before, after; destination before, after
    raw: float  # pair gain before any cost
    gain: float  # net of the move's own cost
    relieves: bool  # the source is above the safe line
    refills: bool = False  # the destination is below the refill line


def held_back(
    e: Edge,
    lim: EdgeLimits,
    others: Iterable[tuple[str, float]],
    usage: Mapping[str, Vector],
    limits: Mapping[str, Limits],
    weights: ResourceWeights,
) -> str:
    """Why the move is held back (module docstring), or "" when it may go.  ``others``: the least loaded
    brokers and their loads, where the bundle could go next from its destination."""
    ls, ns, ld, nd = e.loads
    full_cost = lim.cost_per_topic * e.topics + lim.cost_per_move
    back_cost = full_cost * lim.return_cost_share
    if not e.relieves:
        if e.recent:
            return "moved within the cool-down and the repeat guard"
        share = ls - ns
        if share > 0 and e.raw < lim.min_gain_per_load * share:
            return f"gain {e.raw:.4f} under bundlewiseBalancedMinGainPerLoad for a {share:.1%} move"
        if not e.refills and e.gain - back_cost < lim.min_gain:
            return f"gain {e.gain:.4f} does not pay for a move back (cost {full_cost:.4f})"
    if e.indivisible and nd > ns and max(ls, ld) - max(ns, nd) < lim.indivisible_margin:
        return (
            f"indivisible, and the move lowers the higher load by {max(ls, ld) - max(ns, nd):.1%} "
            f"(bundlewiseBalancedIndivisibleMargin {lim.indivisible_margin:g})"
        )
    for other, load in others:
        if other == e.destination:
            continue
        # the created state: the source at ``ns``, the destination at ``nd``; off it again, it is back at ``ld``
        now, after = (
            (ns, ls) if other == e.source else (load, load_of(add(usage[other], e.vector), limits[other], weights))
        )
        again = pair_gain(nd, ld, now, after) - full_cost
        if again >= lim.min_gain:
            return f"would move again from {e.destination} to {other} (gain {again:.4f}) after its cool-down"
    return ""
