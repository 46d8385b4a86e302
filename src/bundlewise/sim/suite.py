"""The failure-mode suite and its targets: bundlewise's own strategy against Pulsar's (docs/balanced.md).

* ``SUITE``: the scenarios under ``scenarios/suite/`` -- each a CLUSTER.toml whose workload is generated from
  its seed -- one per failure mode users of Pulsar's strategies report.
* ``targets(name, doc, floor)``: for bundlewise's own strategy in a run's ``summary.json`` document, each target
  with its figures and ``met`` / ``NOT met`` / ``n/a``:

  - ``std<=best``, ``p99<=best``: ``load_std_mean`` / ``max_load_p99`` no worse than the best Pulsar strategy's;
  - ``std~floor``, ``p99~floor``: within ``FLOOR_SLACK`` (0.02) of the static floor (``sim.floor``);
  - ``unloads<=half``: at most half the unloads of the reference, the Pulsar strategy with the fewest unloads
    among those whose ``load_std_mean`` is within ``REACH_SLACK`` (0.01) of the best Pulsar strategy's (the
    best one is always among them, so there is always a reference; one with 0 unloads demands 0);
  - ``0 repeats``: ``repeat_unloads == 0`` under jitter (the scenarios of ``JITTER``), ``n/a`` elsewhere;
  - ``refill<=30m``: every broker that starts (added, returned) reaches 80 % of the fleet-average load within
    30 minutes (``events[].reach_80_minutes``), ``n/a`` without such an event;
  - ``no avoidable overload``: ``overloaded_broker_minutes`` no more than the static floor's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundlewise.algorithms.registry import SHEDDING
from bundlewise.sim.floor import Floor
from bundlewise.sim.scenario import Scenario, load_scenario

SUITE_DIR = Path(__file__).resolve().parent.parent / "scenarios" / "suite"
SUITE = (
    "restart-empty",
    "drain-return-growth",
    "scale-out-several",
    "hot-partitioned-topic",
    "stationary-jitter",
    "mixed-generation",
    "tiny-bundles-at-cap",
    "hot-bundles-at-cap",
    "nic-bound-fleet",
    "heavy-topics-at-cap",
)
JITTER = frozenset({"stationary-jitter"})
FLOOR_SLACK = 0.02
REACH_SLACK = 0.01
REFILL_MINUTES = 30.0


def suite_scenario(name: str) -> Scenario:
    return load_scenario(SUITE_DIR / f"{name}.toml")


def own_names(doc: dict[str, Any]) -> list[str]:
    return [n for n in doc["strategies"] if n in SHEDDING and SHEDDING[n].own]


def pulsar_names(doc: dict[str, Any]) -> list[str]:
    return [n for n in doc["strategies"] if not (n in SHEDDING and SHEDDING[n].own)]


@dataclass(frozen=True, slots=True)
class Target:
    key: str
    status: str  # "met", "NOT met", "n/a"
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"target": self.key, "status": self.status, "detail": self.detail}


def _status(ok: bool) -> str:
    return "met" if ok else "NOT met"


def unloads_reference(pulsar: dict[str, dict[str, Any]]) -> tuple[str, float]:
    """The reference of ``unloads<=half`` and the most unloads it allows: among the Pulsar strategies whose
    ``load_std_mean`` is within ``REACH_SLACK`` of the best one's, the one with the fewest unloads (ties by
    name); the limit is half its unloads."""
    best_std = min(p["load_std_mean"] for p in pulsar.values())
    reach = {n: p for n, p in pulsar.items() if p["load_std_mean"] <= best_std + REACH_SLACK}
    ref = min(reach, key=lambda n: (reach[n]["unloads"], n))
    return ref, reach[ref]["unloads"] / 2


def targets(name: str, own: str, doc: dict[str, Any], floor: Floor) -> list[Target]:
    """The targets of ``own`` in ``doc`` (module docstring)."""
    m = doc["strategies"][own]
    pulsar = {n: doc["strategies"][n] for n in pulsar_names(doc)}
    best_std = min(p["load_std_mean"] for p in pulsar.values())
    best_p99 = min(p["max_load_p99"] for p in pulsar.values())
    out = [
        Target("std<=best", _status(m["load_std_mean"] <= best_std), f"{m['load_std_mean']:.4f} vs {best_std:.4f}"),
        Target("p99<=best", _status(m["max_load_p99"] <= best_p99), f"{m['max_load_p99']:.4f} vs {best_p99:.4f}"),
        Target(
            "std~floor",
            _status(m["load_std_mean"] <= floor.load_std_mean + FLOOR_SLACK),
            f"{m['load_std_mean']:.4f} vs floor {floor.load_std_mean:.4f}",
        ),
        Target(
            "p99~floor",
            _status(m["max_load_p99"] <= floor.max_load_p99 + FLOOR_SLACK),
            f"{m['max_load_p99']:.4f} vs floor {floor.max_load_p99:.4f}",
        ),
    ]
    ref, limit = unloads_reference(pulsar)
    out.append(
        Target(
            "unloads<=half",
            _status(m["unloads"] <= limit),
            f"{m['unloads']} vs {ref} {pulsar[ref]['unloads']} (fewest within {REACH_SLACK:g} of the best std)",
        )
    )
    if name in JITTER:
        out.append(Target("0 repeats", _status(m["repeat_unloads"] == 0), f"{m['repeat_unloads']} repeat unloads"))
    else:
        out.append(Target("0 repeats", "n/a", f"{m['repeat_unloads']} repeat unloads (not a jitter case)"))
    starts = [e for e in m["events"] if e["action"] in ("add", "return")]
    if starts:
        worst = [e["reach_80_minutes"] for e in starts]
        ok = all(w is not None and w <= REFILL_MINUTES for w in worst)
        shown = ", ".join("never" if w is None else f"{w:g}" for w in worst)
        out.append(Target("refill<=30m", _status(ok), f"80 % of fleet average after {shown} min"))
    else:
        out.append(Target("refill<=30m", "n/a", "no broker starts"))
    out.append(
        Target(
            "no avoidable overload",
            _status(m["overloaded_broker_minutes"] <= floor.overloaded_broker_minutes),
            f"{m['overloaded_broker_minutes']:g} vs floor {floor.overloaded_broker_minutes:g} broker-minutes",
        )
    )
    return out
