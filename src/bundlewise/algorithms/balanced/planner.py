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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from bundlewise.algorithms.balanced.edges import Edge, EdgeLimits, held_back
from bundlewise.algorithms.balanced.estimate import Limits, Vector, add, load_of
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


def _loads_after(usage: np.ndarray, lim: np.ndarray, floor: np.ndarray, weights: ResourceWeights) -> np.ndarray:
    """``estimate.load_of`` of many usage vectors at once (the last axis: CPU, NIC in, NIC out), each against
    its broker's limits ``lim`` (same shape; 0 = no limit) and direct-memory term ``floor`` (the fraction no
    move changes; -inf when it weighs 0): the same operations, so the same floats."""
    w = (weights.cpu, weights.bandwidth_in, weights.bandwidth_out)
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = [np.where(lim[..., k] > 0, usage[..., k] / lim[..., k] * w[k], 0.0) for k in range(3)]
    top = np.where(parts[0] > parts[1], parts[0], parts[1])
    top = np.where(top > parts[2], top, parts[2])
    out: np.ndarray = np.where(top > floor, top, floor)
    return out


def _pair_gains(before_s: np.ndarray, after_s: np.ndarray, before_d: np.ndarray, after_d: np.ndarray) -> np.ndarray:
    """``estimate.pair_gain`` elementwise (broadcast), with the same operations."""
    a_s, a_d = before_s - after_s, after_d - before_d
    drop_s, drop_d = before_s * before_s - after_s * after_s, before_d * before_d - after_d * after_d
    plain = (a_s <= 0) | (a_d <= 0) | (np.abs(a_s - a_d) <= 1e-9 * np.maximum(a_s, a_d))
    mean = (a_s + a_d) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        weighted = mean / a_s * drop_s + mean / a_d * drop_d
    out: np.ndarray = np.where(plain, drop_s + drop_d, weighted)
    return out


def _memory_term(limits: Limits, weights: ResourceWeights) -> float:
    if weights.direct_memory <= 0 or limits.memory <= 0:
        return -np.inf
    return limits.memory_used / limits.memory * weights.direct_memory


@dataclass(slots=True)
class _Block:
    """One source broker's movable bundles (asked once per plan) as arrays: usage vectors and topics, and
    each bundle's row."""

    candidates: list[Candidate]
    vectors: np.ndarray
    topics: np.ndarray
    row: dict[str, int]

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> _Block:
        listed = list(candidates)
        vectors = np.array([c.vector for c in listed], dtype=float).reshape(len(listed), 3)
        topics = np.array([c.topics for c in listed], dtype=float)
        return cls(listed, vectors, topics, {c.bundle: k for k, c in enumerate(listed)})

    def movable(self, moved: set[str]) -> np.ndarray:
        """The rows of the bundles not moved yet in this plan."""
        keep = np.ones(len(self.candidates), dtype=bool)
        for bundle in moved:
            k = self.row.get(bundle)
            if k is not None:
                keep[k] = False
        return np.flatnonzero(keep)


def _best_move(
    sources: Sequence[str],
    destinations: Sequence[str],
    usage: Mapping[str, Vector],
    loads: Mapping[str, float],
    limits: Mapping[str, Limits],
    weights: ResourceWeights,
    lim: PlanLimits,
    moved: set[str],
    cache: dict[str, _Block],
    candidates: Callable[[str], Sequence[Candidate]],
    refill_line: float = -1.0,
    at_cap: Callable[[str], bool] | None = None,
) -> Move | None:
    """The move of largest gain from ``sources`` to ``destinations`` (first in (source, bundle, destination)
    order on a tie); a move pays ``cost_per_move`` unless it relieves a broker above ``lim.safe_line`` or
    refills one below ``refill_line``.  A move whose destination would go above ``lim.ceiling`` is never
    considered; one an edge rule holds back (``edges.held_back``) is not taken, and the best of those is
    remembered as the rejected alternative when it looked better, else the runner-up is.

    Every (source, bundle, destination) move is priced at once over arrays; only the moves that would beat
    the best so far are looked at one by one (the edge rules), in that order -- the result is the one a
    plain loop over every move, in that order, gives (``tests/test_balanced_planner_arrays.py``)."""
    if not destinations:
        return None
    picked: list[tuple[str, _Block, np.ndarray]] = []
    for s in sources:
        if s not in cache:
            cache[s] = _Block.of(candidates(s))
        rows = cache[s].movable(moved)
        if len(rows):
            picked.append((s, cache[s], rows))
    if not picked:
        return None
    counts = [len(rows) for _, _, rows in picked]
    vec = np.concatenate([block.vectors[rows] for _, block, rows in picked])
    topics = np.concatenate([block.topics[rows] for _, block, rows in picked])
    per_source = [s for s, _, _ in picked]
    src_usage = np.repeat(np.array([usage[s] for s in per_source], dtype=float), counts, axis=0)
    src_lim = np.repeat(np.array([_limit_row(limits[s]) for s in per_source], dtype=float), counts, axis=0)
    src_floor = np.repeat(np.array([_memory_term(limits[s], weights) for s in per_source]), counts)
    src_load = np.repeat(np.array([loads[s] for s in per_source]), counts)
    new_s = _loads_after(src_usage - vec, src_lim, src_floor, weights)
    dst_usage = np.array([usage[d] for d in destinations], dtype=float)
    dst_lim = np.array([_limit_row(limits[d]) for d in destinations], dtype=float)
    dst_floor = np.array([_memory_term(limits[d], weights) for d in destinations])
    dst_load = np.array([loads[d] for d in destinations])
    new_d = _loads_after(dst_usage[None, :, :] + vec[:, None, :], dst_lim[None, :, :], dst_floor[None, :], weights)
    raw = _pair_gains(src_load[:, None], new_s[:, None], dst_load[None, :], new_d)
    relieves = src_load > lim.safe_line
    refills = dst_load < refill_line
    waived = relieves[:, None] | refills[None, :]
    cost = lim.cost_per_topic * topics[:, None] + np.where(waived, 0.0, lim.cost_per_move)
    gain = raw - cost
    same = np.repeat(np.array([[s == d for d in destinations] for s in per_source]), counts, axis=0)
    gains = np.where(same | (new_d > lim.ceiling), -np.inf, gain).ravel()
    starts = np.cumsum([0, *counts])
    width = len(destinations)

    def entry(flat: int) -> tuple[int, str, Candidate, str]:
        i, j = divmod(flat, width)
        block = int(np.searchsorted(starts, i, side="right")) - 1
        s, b, rows = picked[block]
        return i, s, b.candidates[int(rows[i - starts[block]])], destinations[j]

    best: Move | None = None
    best_gain = -np.inf
    runner_up: tuple[float, str, str] | None = None  # the best valid move after ``best``: gain, bundle, destination
    held: tuple[float, str] | None = None  # the best move an edge rule held back
    edges = lim.edges()
    others = [(b, loads[b]) for b in destinations]
    pos, total = 0, len(gains)
    while pos < total:
        ahead = np.flatnonzero(gains[pos:] > best_gain)
        end = pos + int(ahead[0]) if len(ahead) else total
        if best is not None and end > pos:  # moves no better than the best: the runner-up among them
            k = pos + int(np.argmax(gains[pos:end]))
            if gains[k] > -np.inf and (runner_up is None or gains[k] > runner_up[0]):
                _, _, c, d = entry(k)
                runner_up = (float(gains[k]), c.bundle, d)
        if end == total:
            break
        i, s, c, d = entry(end)
        j = end % width
        ns, nd, g = float(new_s[i]), float(new_d[i, j]), float(gain[i, j])
        # a bundle of a namespace at its cap is indivisible too: asked only when the rule could apply
        indivisible = c.indivisible or (
            nd > ns and lim.indivisible_margin > 0 and at_cap is not None and at_cap(c.bundle)
        )
        edge = Edge(
            c.vector,
            c.topics,
            indivisible,
            c.recent,
            s,
            d,
            (loads[s], ns, loads[d], nd),
            float(raw[i, j]),
            g,
            bool(relieves[i]),
            bool(refills[j]),
        )
        why = held_back(edge, edges, [*others, (s, loads[s])], usage, limits, weights)
        if why:
            if held is None or g > held[0]:
                held = (g, f"{c.bundle} to {d} (gain {g:.4f}): {why}")
        else:
            if best is not None:
                runner_up = (best.gain, best.bundle, best.destination)
            best = Move(c.bundle, s, d, c.vector, g, (loads[s], loads[d]), (ns, nd), float(cost[i, j]))
            best_gain = g
        pos = end + 1
    if best is not None:
        if held is not None and held[0] > best.gain:
            alternative = f"held back {held[1]}"
        elif runner_up is not None:
            alternative = f"next best {runner_up[1]} to {runner_up[2]} (gain {runner_up[0]:.4f})"
        else:
            alternative = "no other move"
        best = replace(best, alternative=alternative)
    return best


def _limit_row(limits: Limits) -> tuple[float, float, float]:
    return (limits.cpu, limits.nic_in, limits.nic_out)


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
    cache: dict[str, _Block] = {}
    held = dict(held or {})
    # the brokers in name order and their loads: ranked by load, ties by name (a stable sort of that order)
    names = sorted(loads)
    at = {b: k for k, b in enumerate(names)}
    ranked = np.array([loads[b] for b in names])
    while len(plan) < lim.budget and len(loads) >= 2 and not settled(loads, lim, held):
        destinations = [names[k] for k in np.argsort(ranked, kind="stable")[:DESTINATIONS]]
        best = None
        mean = sum(loads.values()) / len(loads)
        refill_line = mean - lim.refill_margin
        refill = loads[destinations[0]] < refill_line
        if refill:  # large-first refill: the emptiest broker takes the best bundle of the wider set of sources
            destinations = destinations[:1]
        hottest = np.argsort(-ranked, kind="stable")
        # the wider look only when the first finds nothing worth it -- or at once to refill an empty broker
        for width in (WIDE_SOURCES,) if refill else (SOURCES, WIDE_SOURCES):
            sources = [names[k] for k in hottest[:width]]
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
        ranked[at[best.source]], ranked[at[best.destination]] = best.after
    return plan
