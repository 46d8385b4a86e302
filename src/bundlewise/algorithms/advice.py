"""The advisor checks its own plan: what ``shed`` says beside each planned move.

Pulsar's leader chooses an unloaded bundle's destination with the placement flow as it stands before the
move (``ModularLoadManagerImpl#doLoadShedding`` -> ``#selectBroker``): its overload re-check reads the
destination's CURRENT load, so a large bundle can be sent to a broker that it then overloads.  ``shed``
keeps reporting what Pulsar would do, and adds, per move:

* **overload** -- the destination's load after the move, with the cost model of the projection table
  (``algorithms.projection``; the moves of the step applied in order, so a second move to the same broker
  sees the first), when it is strictly above ``loadBalancerBrokerOverloadedThresholdPercentage`` ("overloaded"
  as the placement flow's own re-check of its pick compares, ``ModularLoadManagerImpl#selectBroker``);
* **placement** -- for a destination the placement flow chose, every broker each candidate filter removed
  and why (``placement.assignment.candidate_trace``), with its load, e.g. a 10 % broker that
  distribute-bundles-evenly left out because it owns more bundles of the namespace;
* **split** -- a moved bundle that meets the split conditions and that its namespace has room to split
  (``splitting.detector``, what ``split-check`` reports): splitting it is the better action, as moving it
  whole moves the hot spot; the ``pulsar-admin namespaces split-bundle`` command is given.

Pure data; the command line renders it (``cli.explain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.placement.assignment import CandidateTrace, candidate_trace
from bundlewise.algorithms.projection import Projection
from bundlewise.algorithms.splitting.detector import count_bundles, split_candidates, within_cap
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.admin import split_command
from bundlewise.model.decisions import SplitDecision, Unload
from bundlewise.model.load import LoadData
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies

OVERLOAD_KEY = "loadBalancerBrokerOverloadedThresholdPercentage"


def _pct(x: float) -> str:
    return f"{x * 100:.2f}%"


@dataclass(frozen=True, slots=True)
class Overload:
    """The destination's projected load before and after the move, over the threshold."""

    destination: str
    before: float
    after: float
    threshold: float

    def message(self) -> str:
        return (
            f"WARNING: this move takes {self.destination} from {_pct(self.before)} to {_pct(self.after)}, over "
            f"{OVERLOAD_KEY} {self.threshold * 100:g}%"
        )


@dataclass(frozen=True, slots=True)
class MoveAdvice:
    """What is said beside one planned move."""

    unload: Unload
    overload: Overload | None = None
    trace: CandidateTrace | None = None  # when the placement flow chose the destination
    loads: tuple[tuple[str, float], ...] = ()  # every broker's load before the cycle, for the placement lines
    split: SplitDecision | None = None

    def placement_lines(self) -> list[str]:
        """One line per filter that removed a candidate, and the reset if one happened."""
        if self.trace is None:
            return []
        load = dict(self.loads)
        out = []
        for step in self.trace.steps:
            left = "; ".join(
                f"{b} ({_pct(load[b]) if b in load else 'no load data'}): {why}" for b, why in step.removed
            )
            out.append(f"placement: {step.name} ({step.setting}) left out {left}")
        if self.trace.reset:
            out.append(f"placement: {self.trace.reset}")
        if self.unload.destination not in self.trace.candidates:
            out.append(
                "placement: the destination is not among the filtered candidates (the strategy's own planned "
                "destination, or the overload re-check's pick among every broker)"
            )
        return out

    def split_line(self) -> str | None:
        if self.split is None:
            return None
        command = split_command(self.split.bundle, True)
        how = f": {command}" if command is not None else ""
        return f"split-check would split this bundle ({self.split.detail}); splitting it is the better action{how}"

    def lines(self) -> list[str]:
        """Everything said about the move, the warning first."""
        out = [self.overload.message()] if self.overload is not None else []
        out += self.placement_lines()
        split = self.split_line()
        return out + ([split] if split is not None else [])

    def warnings_json(self) -> list[dict[str, Any]]:
        """The warnings of the JSON output: an overloading move (with what the filters left out), a split."""
        out: list[dict[str, Any]] = []
        u = self.unload
        if self.overload is not None:
            o = self.overload
            out.append(
                {
                    "kind": "overload",
                    "bundle": u.bundle,
                    "broker": u.broker,
                    "destination": o.destination,
                    "loadBefore": round(o.before, 6),
                    "loadAfter": round(o.after, 6),
                    "threshold": o.threshold,
                    "placement": self.placement_lines(),
                    "message": o.message(),
                }
            )
        line = self.split_line()
        if self.split is not None and line is not None:
            out.append(
                {
                    "kind": "split",
                    "bundle": u.bundle,
                    "broker": u.broker,
                    "reasons": [str(r) for r in self.split.reasons],
                    "command": split_command(self.split.bundle, True),
                    "message": line,
                }
            )
        return out


def advise(
    load: LoadData,
    unloads: Sequence[Unload],
    config: Config,
    *,
    placed: bool,
    policies: PlacementPolicies = NO_POLICIES,
) -> list[MoveAdvice]:
    """The advice of each move of ``unloads`` (same order).  ``placed``: the destinations came from the
    placement flow (the leader's cycle), so the filters' exclusions are explained (with the placement
    constraints ``policies`` the flow applied)."""
    threshold = config.view(PlacementSettings).overload_threshold
    projection = Projection(load, config)
    loads = tuple((b, v) for b in load.brokers if (v := projection.load_before(b)) is not None)
    splits = {d.bundle: d for d in within_cap(split_candidates(load, config), config, count_bundles(load))}
    out = []
    for u in unloads:
        dest = u.destination
        before = projection.load_of(dest) if dest is not None else None
        projection.apply(u)
        after = projection.load_of(dest) if dest is not None else None
        overload = None
        if dest is not None and before is not None and after is not None and after > threshold:
            overload = Overload(dest, before, after, threshold)
        trace = candidate_trace(u.bundle, load, config, policies=policies) if placed and dest is not None else None
        out.append(MoveAdvice(u, overload, trace, loads, splits.get(u.bundle)))
    return out
