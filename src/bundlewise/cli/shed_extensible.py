"""The extensible side of ``bundlewise shed``: a strategy of the extensible family on extensible snapshots.

ONE ``ExtensibleFamily`` sees every step in order, so the strategy's consecutive hit count carries
over; without ``--plan-only`` the leader's ``UnloadScheduler`` wraps it (grace period,
enabled/broker-count gate, recently unloaded bundles and brokers remembered for later steps, so
cool-downs carry over too).  Per step::

    {"step": i, "timestamp": ms|null, "unload": [{"broker", "bundle", "destination", "reason"}],
     "stats": {"avg", "std", "finalStd"} | null, "counters": {"Label.Reason": n}}

``stats`` is ``null`` (and ``counters`` empty) when the leader's cycle did not run; a NaN of Java's
arithmetic prints as ``null``.  ``destination`` is the pre-assigned broker of a transfer, ``null``
for a plain unload (``loadBalancerTransferEnabled=false``: the next lookup assigns the bundle).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from bundlewise.algorithms.extensible.transfer_shedder import ShedResult
from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.registry import SheddingEntry, make_family, shedding_entry
from bundlewise.cli.inputs import SharedBundles, emit, iterate_steps, step_where
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot


def _num(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else x


def step_json(index: int, timestamp: int | None, result: ShedResult | None) -> dict[str, Any]:
    if result is None:
        return {"step": index, "timestamp": timestamp, "unload": [], "stats": None, "counters": {}}
    return {
        "step": index,
        "timestamp": timestamp,
        "unload": [d.to_json() for d in result.decisions],
        "stats": {"avg": _num(result.avg), "std": _num(result.std), "finalStd": _num(result.final_std)},
        "counters": dict(result.counters),
    }


def extensible_rows(
    entry: SheddingEntry, plan_only: bool, config: Config, docs: list[Any], source: str
) -> list[dict[str, Any]]:
    """Every step's output; an ``InputError`` in any step is raised before anything is printed."""
    family = make_family(entry, config)
    assert isinstance(family, ExtensibleFamily)
    rows = []
    shared = SharedBundles(source)
    for step in iterate_steps(docs, config, source):
        try:
            snap = parse_extensible_snapshot(step.doc, step_where(step, docs), step.config.weights(), step.now)
        except InputError as e:
            raise e.within(source) from None
        shared.note(step_where(step, docs), snap.shared)
        if plan_only:
            result: ShedResult | None = family.plan(snap, step.config, step.now)
        else:
            result = family.shed(snap, step.config, step.now)
        rows.append(step_json(step.index, step.timestamp, result))
    shared.tell()
    return rows


def run_extensible(args: argparse.Namespace, config: Config, docs: list[Any], source: str) -> int:
    """``shed`` of an extensible strategy: every step computed, then printed (JSON Lines or a table)."""
    rows = extensible_rows(shedding_entry(args.strategy), bool(args.plan_only), config, docs, source)
    for out in rows:
        if getattr(args, "format", "json") == "table":
            write_step_table(out)
        else:
            emit(out)
    return 0


def _fmt(v: float | None) -> str:
    return "nan" if v is None else f"{v:.4f}"


def write_step_table(out: dict[str, Any]) -> None:
    ts = out["timestamp"]
    sys.stdout.write(f"step {out['step']}" + (f" (timestamp {ts})" if ts is not None else "") + "\n")
    stats = out["stats"]
    if stats is None:
        sys.stdout.write("  cycle not run (shedding disabled or at most one broker)\n")
        return
    avg, std, final = (_fmt(stats[k]) for k in ("avg", "std", "finalStd"))
    sys.stdout.write(f"  load avg {avg}  std {std}  final std {final}\n")
    sys.stdout.write("  " + ", ".join(f"{k}={v}" for k, v in out["counters"].items()) + "\n")
    rows = [("broker", "bundle", "destination", "reason")] + [
        (u["broker"], u["bundle"], u["destination"] or "-", u["reason"]) for u in out["unload"]
    ]
    if len(rows) > 1:
        widths = [max(len(r[k]) for r in rows) for k in range(4)]
        for r in rows:
            sys.stdout.write("  " + "  ".join(r[k].ljust(widths[k]) for k in range(4)).rstrip() + "\n")
