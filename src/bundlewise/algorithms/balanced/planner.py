"""The plan of one cycle of ``BalancedPlanShedder``: the fewest, largest-impact moves within a budget.

Pulsar's shedders pick bundles one rule at a time -- ThresholdShedder and OverloadShedder take the
largest bundles off each broker above a line until a fixed share is off (``ThresholdShedder
#findBundlesForUnloading``), UniformLoadShedder and AvgShedder move a share of the rate between the two
extreme brokers (``UniformLoadShedder#findBundlesForUnloading``, ``AvgShedder#findBundlesForUnloading``),
TransferShedder moves bundles until its std-dev target is met (``TransferShedder
#findBundlesForUnloading``) -- none of them weighs what a move costs against what it buys.  Here a move
is judged by its effect on the whole fleet:

* **gain** of moving bundle ``x`` (usage vector ``v``) from ``s`` to ``d``, on each broker's binding
  resource (``estimate.load_of``: the weighted max of that broker's capacity-normalised CPU, NIC in, NIC out
  and direct memory): with ``a(s) = load(s) - load(s - v)`` and ``a(d) = load(d + v) - load(d)`` the share of
  ``s``'s and ``d``'s binding resource that ``x`` is, ``pair_gain`` is
  ``k(s) * (load(s)^2 - load(s - v)^2) + k(d) * (load(d)^2 - load(d + v)^2)`` with ``k(b) = ā / a(b)``
  (``ā`` their mean), less ``costPerTopic * topics(x) + costPerMove``.  With brokers of one size
  (``a(s) = a(d)``) this is the drop of the sum of squared loads, i.e. of the std-dev at a constant total;
  between brokers of different sizes or binding resources a small move gains ``2 ā (load(s) - load(d))``, so
  the optimum is equal LOADS on each broker's own binding resource -- whether that is the CPU of an 8-core
  broker or the NIC of a 16-core one (an unweighted sum of squares is smallest when a large broker runs
  hotter than a small one, and a weight by CPU cores alone is wrong for a broker its NIC binds).  It prefers
  the move that closes the largest gap, and never a move that only makes a new hot spot (a bundle larger than
  the gap has a negative gain: it is left for the split detector, ``BundleSplitterTask``, to split).
* **per-move cost** (``costPerMove``): every move costs a fixed amount of gain -- its clients reconnect,
  whatever its size -- so the polishing moves of a nearly balanced fleet (a small bundle across a small gap)
  do not pay; a move that relieves a broker above the safe line (``safe_line``, under the overload
  threshold) or refills one below the refill line (``mean - refill_margin``) pays no fixed cost.
* **large-first refill**: when the least loaded broker is below the refill line (an empty, new or returned
  broker), the step plans for it alone and looks at the ``WIDE_SOURCES`` (12) most loaded brokers at once:
  the bundle of largest gain -- the largest that fits the gap -- goes first, wherever it is, so an empty
  broker is filled by a few large moves rather than by many small ones from the three hottest brokers.
* **greedy**: each step evaluates every movable bundle of the ``SOURCES`` (3) most loaded brokers towards
  the ``DESTINATIONS`` (3) least loaded ones -- of the ``WIDE_SOURCES`` (12) most loaded when those have
  nothing worth moving (their bundles cooling down, or each larger than the gap) -- takes the best move
  when its gain is at least ``minGain``, applies it to the estimate and repeats -- until the budget
  (``maxMovesPerCycle``) is spent, no move gains enough, or the fleet is *settled*: every broker within
  ``targetMargin`` of the mean (the stop line of the hysteresis) and none above the safe line.
* **pinned brokers** (``reachable``): a broker whose largest bundle is above the fleet mean can get no lower
  than that bundle -- no gap fits it, and moving it only moves the hot spot.  For the stop line it is
  within the margin when it is within it of that bundle, and the other brokers are judged against the level
  they can reach, the mean of the rest; so the plan does not shave small bundles off such a broker for ever.
* **ceiling**: no move takes its destination above ``ceiling`` (the shedder passes
  ``loadBalancerBrokerOverloadedThresholdPercentage``): a move that relieves one broker by overloading another
  is never planned, whatever its gain (Pulsar's leader can send a bundle to a broker it then overloads,
  because its placement's overload re-check reads the destination's load before the move).
* Ties (equal gains) go to the first candidate in (source, bundle, destination) order: brokers by load
  (then name), bundles as the caller lists them, so a plan is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from bundlewise.algorithms.balanced.edges import Edge, EdgeLimits, held_back
from bundlewise.algorithms.balanced.estimate import Limits, Vector, add, load_of, pair_gain
from bundlewise.model.resources import ResourceWeights

SOURCES = 3
WIDE_SOURCES = 12
DESTINATIONS = 3


@dataclass(frozen=True, slots=True)
class Candidate:
    """A bundle that may move: its name, its usage vector and its topics."""

    bundle: str
    vector: Vector
    topics: int
    indivisible: bool = False  # a single topic, or its namespace at its bundle cap (``edges``)
    recent: bool = False  # moved within the cool-down and the repeat guard (``edges``)


@dataclass(frozen=True, slots=True)
class Move:
    bundle: str
    source: str
    destination: str
    vector: Vector
    gain: float
    before: tuple[float, float]  # source, destination loads
    after: tuple[float, float]
    cost: float = 0.0  # what the gain already paid: topics and the fixed cost of a move
    alternative: str = ""  # the best move not taken: held back by an edge rule, else the runner-up


@dataclass(frozen=True, slots=True)
class PlanLimits:
    budget: int
    min_gain: float
    cost_per_topic: float
    target_margin: float
    cost_per_move: float = 0.0
    safe_line: float = float("inf")  # the plan goes on while a broker is above it, whatever the margin
    refill_margin: float = float("inf")  # a broker this far below the mean is refilled, large-first
    ceiling: float = float("inf")  # no move may take its destination above this (the overload threshold)
    min_gain_per_load: float = 0.0  # ``edges``: a move's raw gain per unit of the load it moves
    indivisible_margin: float = 0.0  # ``edges``: what an indivisible bundle's move must take off the higher load
    return_cost_share: float = 0.0  # ``edges``: the share of the way back's cost a move's gain must also pay

    def edges(self) -> EdgeLimits:
        return EdgeLimits(
            self.min_gain,
            self.cost_per_topic,
            self.cost_per_move,
            self.min_gain_per_load,
            self.indivisible_margin,
            self.return_cost_share,
        )


def settled(loads: Mapping[str, float], lim: PlanLimits, held: Mapping[str, float] | None = None) -> bool:
    """The stop line: every broker within the target margin of its reachable level (``reachable``) and none
    above the safe line."""
    return within_target(loads, lim.target_margin, held) and max(loads.values()) <= lim.safe_line


def reachable(loads: Mapping[str, float], held: Mapping[str, float] | None = None) -> tuple[float, set[str]]:
    """The level the brokers can reach and the brokers pinned above it.  ``held[b]`` is the load of a bundle
    of broker ``b`` that no move can take off (larger than any gap it would close).  A broker whose held
    bundle is above the fleet mean can get no lower than that bundle: it is pinned there, and the others
    share the rest of the load."""
    mean = sum(loads.values()) / len(loads)
    if not held:
        return mean, set()
    pinned = {b for b, h in held.items() if b in loads and h > mean and loads[b] >= h}
    if not pinned or len(pinned) == len(loads):
        return mean, set()
    rest = [v for b, v in loads.items() if b not in pinned]
    return sum(rest) / len(rest), pinned


def within_target(loads: Mapping[str, float], margin: float, held: Mapping[str, float] | None = None) -> bool:
    """Every broker within ``margin`` of its reachable level: a pinned broker of its held bundle, the others
    of the level the rest of the fleet can reach (the mean when nothing is pinned)."""
    level, pinned = reachable(loads, held)
    for b, v in loads.items():
        target = max(level, held[b]) if held and b in pinned else level
        if v - target > margin or (b not in pinned and level - v > margin):
            return False
    return True


def _best_move(
    sources: Sequence[str],
    destinations: Sequence[str],
    usage: Mapping[str, Vector],
    loads: Mapping[str, float],
    limits: Mapping[str, Limits],
    weights: ResourceWeights,
    lim: PlanLimits,
    moved: set[str],
    cache: dict[str, list[Candidate]],
    candidates: Callable[[str], Sequence[Candidate]],
    refill_line: float = -1.0,
    at_cap: Callable[[str], bool] | None = None,
) -> Move | None:
    """The move of largest gain from ``sources`` to ``destinations`` (first in order on a tie); a move pays
    ``cost_per_move`` unless it relieves a broker above ``lim.safe_line`` or refills one below
    ``refill_line``."""
    best: Move | None = None
    runner_up: tuple[float, str, str] | None = None  # the best valid move after ``best``: gain, bundle, destination
    held: tuple[float, str] | None = None  # the best move an edge rule held back
    edges = lim.edges()
    others = [(b, loads[b]) for b in destinations]
    for s in sources:
        relieves = loads[s] > lim.safe_line
        if s not in cache:
            cache[s] = list(candidates(s))
        for c in cache[s]:
            if c.bundle in moved:
                continue
            new_s = load_of(add(usage[s], c.vector, -1.0), limits[s], weights)
            for d in destinations:
                if d == s:
                    continue
                new_d = load_of(add(usage[d], c.vector), limits[d], weights)
                if new_d > lim.ceiling:
                    continue
                raw = pair_gain(loads[s], new_s, loads[d], new_d)
                refills = loads[d] < refill_line
                cost = lim.cost_per_topic * c.topics + (0.0 if relieves or refills else lim.cost_per_move)
                gain = raw - cost
                if best is not None and gain <= best.gain:
                    if runner_up is None or gain > runner_up[0]:
                        runner_up = (gain, c.bundle, d)
                    continue
                # a bundle of a namespace at its cap is indivisible too: asked only when the rule could apply
                indivisible = c.indivisible or (
                    new_d > new_s and lim.indivisible_margin > 0 and at_cap is not None and at_cap(c.bundle)
                )
                edge = Edge(
                    c.vector,
                    c.topics,
                    indivisible,
                    c.recent,
                    s,
                    d,
                    (loads[s], new_s, loads[d], new_d),
                    raw,
                    gain,
                    relieves,
                    refills,
                )
                why = held_back(edge, edges, [*others, (s, loads[s])], usage, limits, weights)
                if why:
                    if held is None or gain > held[0]:
                        held = (gain, f"{c.bundle} to {d} (gain {gain:.4f}): {why}")
                    continue
                if best is not None:
                    runner_up = (best.gain, best.bundle, best.destination)
                best = Move(c.bundle, s, d, c.vector, gain, (loads[s], loads[d]), (new_s, new_d), cost)
    if best is not None:
        if held is not None and held[0] > best.gain:
            alternative = f"held back {held[1]}"
        elif runner_up is not None:
            alternative = f"next best {runner_up[1]} to {runner_up[2]} (gain {runner_up[0]:.4f})"
        else:
            alternative = "no other move"
        best = replace(best, alternative=alternative)
    return best


def plan_moves(
    usage: Mapping[str, Vector],
    limits: Mapping[str, Limits],
    candidates: Callable[[str], Sequence[Candidate]],
    weights: ResourceWeights,
    lim: PlanLimits,
    held: Mapping[str, float] | None = None,
    at_cap: Callable[[str], bool] | None = None,
) -> list[Move]:
    """The greedy plan (module docstring); ``usage`` and ``limits`` cover every broker, ``candidates(b)``
    lists broker ``b``'s movable bundles (asked only for the brokers considered as sources), ``at_cap(x)``
    whether bundle ``x``'s namespace is at its bundle cap (``edges``: indivisible)."""
    usage = dict(usage)
    loads = {b: load_of(u, limits[b], weights) for b, u in usage.items()}
    moved: set[str] = set()
    plan: list[Move] = []
    cache: dict[str, list[Candidate]] = {}
    held = dict(held or {})
    while len(plan) < lim.budget and len(loads) >= 2 and not settled(loads, lim, held):
        destinations = heapq.nsmallest(DESTINATIONS, loads, key=lambda b: (loads[b], b))
        best = None
        mean = sum(loads.values()) / len(loads)
        refill_line = mean - lim.refill_margin
        refill = loads[destinations[0]] < refill_line
        if refill:  # large-first refill: the emptiest broker takes the best bundle of the wider set of sources
            destinations = destinations[:1]
        # the wider look only when the first finds nothing worth it -- or at once to refill an empty broker
        for width in (WIDE_SOURCES,) if refill else (SOURCES, WIDE_SOURCES):
            sources = heapq.nsmallest(min(width, len(loads)), loads, key=lambda b: (-loads[b], b))
            best = _best_move(
                sources, destinations, usage, loads, limits, weights, lim, moved, cache, candidates, refill_line, at_cap
            )
            if best is not None and best.gain >= lim.min_gain:
                break
        if best is None or best.gain < lim.min_gain:
            break
        plan.append(best)
        moved.add(best.bundle)
        usage[best.source] = add(usage[best.source], best.vector, -1.0)
        usage[best.destination] = add(usage[best.destination], best.vector)
        loads[best.source], loads[best.destination] = best.after
    return plan
