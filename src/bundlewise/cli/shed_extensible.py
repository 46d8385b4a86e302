"""The extensible side of ``bundlewise shed``: a strategy of the extensible family on extensible snapshots.

ONE ``ExtensibleFamily`` sees every step in order, so the strategy's consecutive hit count carries
over; without ``--plan-only`` the leader's ``UnloadScheduler`` wraps it (grace period,
enabled/broker-count gate, recently unloaded bundles and brokers remembered for later steps, so
cool-downs carry over too).  Per step::

    {"step": i, "timestamp": ms|null, "unload": [{"broker", "bundle", "destination", "reason"}],
     "stats": {"avg", "std", "finalStd"} | null, "counters": {"Label.Reason": n}}

``stats`` is ``null`` (and ``counters`` empty) when the leader's cycle did not run; a NaN of Java's
arithmetic prints as ``null``.  ``--format table|admin`` add why a step unloaded nothing (from Pulsar's
``Skip.*`` counter and the settings behind it) and the load std-dev projected after the moves (``finalStd``).
``destination`` is the pre-assigned broker of a transfer, ``null`` for a plain unload
(``loadBalancerTransferEnabled=false``: the next lookup assigns the bundle).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any

from bundlewise.algorithms.extensible.transfer_shedder import ShedResult
from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.registry import SheddingEntry, make_family, shedding_entry
from bundlewise.cli.explain import admin_unload_lines, columns, when
from bundlewise.cli.inputs import Document, SharedBundles, emit, iterate_steps, policies_from_args
from bundlewise.config import Config
from bundlewise.config.views import TransferSettings
from bundlewise.model.decisions import Unload
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies


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
    entry: SheddingEntry,
    plan_only: bool,
    config: Config,
    documents: Sequence[Document],
    policies: PlacementPolicies = NO_POLICIES,
) -> list[tuple[dict[str, Any], Config]]:
    """Every step's output with the configuration in force; an ``InputError`` in any step is raised before
    anything is printed."""
    family = make_family(entry, config)
    assert isinstance(family, ExtensibleFamily)
    family.set_policies(policies)
    rows = []
    shared = SharedBundles()
    for step in iterate_steps(documents, config):
        try:
            snap = parse_extensible_snapshot(step.doc, step.where, step.config.weights(), step.now)
        except InputError as e:
            raise e.within(step.source) from None
        shared.note(step, snap.shared)
        if plan_only:
            result: ShedResult | None = family.plan(snap, step.config, step.now)
        else:
            result = family.shed(snap, step.config, step.now)
        rows.append((step_json(step.index, step.timestamp, result), step.config))
    shared.tell()
    return rows


def run_extensible(args: argparse.Namespace, config: Config, documents: Sequence[Document]) -> int:
    """``shed`` of an extensible strategy: every step computed, then printed (JSON Lines, a table or the
    pulsar-admin commands)."""
    entry = shedding_entry(args.strategy)
    rows = extensible_rows(entry, bool(args.plan_only), config, documents, policies_from_args(args))
    fmt = getattr(args, "format", "json")
    for out, step_config in rows:
        if fmt == "table":
            write_step_table(out, step_config)
        elif fmt == "admin":
            write_step_admin(out, step_config, entry.name)
        else:
            emit(out)
    return 0


def idle_reason(out: dict[str, Any], config: Config) -> str:
    """Why a step unloaded nothing, from Pulsar's decision counter and the load statistics."""
    stats = out["stats"]
    if stats is None:
        return "the leader's cycle did not run (loadBalancerEnabled/loadBalancerSheddingEnabled off, or one broker)"
    settings = config.view(TransferSettings)
    std = _fmt(stats["std"])
    counter = next(iter(out["counters"]), "")
    reasons = {
        "Skip.HitCount": f"load std {std} against loadBalancerBrokerLoadTargetStd {settings.target_std:g}: "
        f"TransferShedder acts after more than loadBalancerSheddingConditionHitCountThreshold "
        f"{settings.hit_count_threshold} consecutive cycles above the target (or with an under- or overloaded "
        "broker), and found nothing to move when it did",
        "Skip.CoolDown": "a broker was unloaded less than loadBalanceSheddingDelayInSeconds "
        f"{settings.shedding_delay_ms // 1000} s ago",
        "Skip.OutDatedData": "every broker's load data is older than loadBalancerBrokerLoadDataTTLInSeconds "
        f"{settings.data_ttl_ms // 1000} s",
        "Skip.NoBrokers": "no broker has load data",
        "Skip.NoLoadData": "a broker to shed has no load data or no top bundles",
        "Skip.NoBundles": "each broker to shed has at most one bundle it may move (the last is never moved)",
    }
    return f"{counter}: {reasons.get(counter, 'nothing to do')}" if counter else "nothing to do"


def _fmt(v: float | None) -> str:
    return "nan" if v is None else f"{v:.4f}"


def write_step_table(out: dict[str, Any], config: Config) -> None:
    sys.stdout.write(f"step {out['step']}{when(out['timestamp'])}\n")
    stats = out["stats"]
    if stats is not None:
        avg, std, final = (_fmt(stats[k]) for k in ("avg", "std", "finalStd"))
        sys.stdout.write(f"  load avg {avg}  std {std}  projected std after the moves {final}\n")
        sys.stdout.write("  " + ", ".join(f"{k}={v}" for k, v in out["counters"].items()) + "\n")
    if not out["unload"]:
        sys.stdout.write(f"  no unload: {idle_reason(out, config)}\n")
        return
    rows = [("broker", "bundle", "destination", "reason")] + [
        (u["broker"], u["bundle"], u["destination"] or "-", u["reason"]) for u in out["unload"]
    ]
    for line in columns(rows):
        sys.stdout.write(line + "\n")


def write_step_admin(out: dict[str, Any], config: Config, strategy: str) -> None:
    head = f"# step {out['step']}{when(out['timestamp'])}: {strategy} "
    if not out["unload"]:
        sys.stdout.write(f"{head}unloads nothing: {idle_reason(out, config)}\n")
        return
    n = len(out["unload"])
    sys.stdout.write(
        f"{head}{'transfers' if out['unload'][0]['destination'] else 'unloads'} {n} bundle{'s' * (n != 1)}\n"
    )
    unloads = [Unload(u["broker"], u["bundle"], u["reason"], u["destination"]) for u in out["unload"]]
    for line in admin_unload_lines(unloads):
        sys.stdout.write(line + "\n")
    stats = out["stats"]
    sys.stdout.write(
        f"# projected after these moves: load std {_fmt(stats['std'])} -> {_fmt(stats['finalStd'])} "
        f"(average {_fmt(stats['avg'])}; target loadBalancerBrokerLoadTargetStd "
        f"{config.view(TransferSettings).target_std:g})\n"
    )
