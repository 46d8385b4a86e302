"""``bundlewise shed``: what a shedding strategy unloads, step by step, on recorded load (docs/commands.md).

The strategy comes from the registry (``algorithms.registry``) with its family:

* a modular strategy (``ModularFamily``) reads modular snapshots: Pulsar's ``LoadData`` (docs/formats.md);
  a snapshot without ``bundleData`` gets the leader's bookkeeping (``algorithms.leader.LeaderBundleData``);
* an extensible one (``ExtensibleFamily``) reads extensible snapshots (the broker-load and top-bundles
  stores); its steps also report the load statistics and Pulsar's decision counters
  (``cli.shed_extensible``).

ONE family instance sees every step in order, so histories, hit counters and cool-downs carry over;
per-step ``config`` overrides accumulate and each step's clock is its ``timestamp`` or the previous one
plus ``loadBalancerSheddingIntervalMinutes`` (``cli.inputs``).

* ``--plan-only``: exactly what the strategy returns (``findBundlesForUnloading``), with the strategy's
  own planned destination where it plans one, or ``null``; the snapshot's recently unloaded
  bundles are passed as given.
* Default: the leader's cycle on top (``ModularLoadManagerImpl#doLoadShedding`` /
  ``UnloadScheduler#execute``): grace period, excluded namespaces, destinations from the placement
  strategy the registry's rule picks (random tie-breaks from ``--seed``), a bundle whose destination is
  its owner skipped, unloads remembered as recently unloaded for later steps.

Output, JSON Lines, printed once every step is known good: ``{"step", "timestamp", "unload": [{"broker",
"bundle", "destination", "reason"}]}`` plus ``"skipped"`` (planned unloads the leader did not carry out,
with why) when there are any.  ``--format table`` prints the same for people; ``--format admin`` prints the
``pulsar-admin namespaces unload`` commands that carry a step out (``cli.explain``).  Both add every
broker's load projected after the moves (``algorithms.projection``) and, when nothing is unloaded, why:
the leader's cycle did not run, every planned unload was skipped, or the strategy's own ``idle_reason``
(its figures against the settings that decided).

INPUT may also be load reports (``cli.inputs``): what ``pulsar-admin broker-stats load-report`` returns.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.advice import MoveAdvice, advise
from bundlewise.algorithms.families import ExtensibleFamily, ModularFamily
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.projection import project
from bundlewise.algorithms.registry import SHEDDING, make_family, shedding_entry, shedding_names
from bundlewise.cli.common import add_config_options, add_policies_option, config_from_args
from bundlewise.cli.explain import PROJECTION_NOTE, admin_unload_lines, columns, projection_lines, skipped_lines, when
from bundlewise.cli.inputs import Document, SharedBundles, emit, iterate_steps, policies_from_args, read_inputs
from bundlewise.cli.shed_extensible import run_extensible
from bundlewise.config import Config
from bundlewise.model.decisions import Unload
from bundlewise.model.errors import InputError
from bundlewise.model.load import LoadData
from bundlewise.model.snapshot import parse_modular_snapshot

EXTENSIBLE = [name for name, entry in SHEDDING.items() if entry.family is ExtensibleFamily]
DESCRIPTION = f"""\
Which bundles Pulsar's leader would unload, with one of its shedding strategies.
Strategies: {", ".join(shedding_names())} (short or Pulsar class names).
INPUT: modular snapshots ({", ".join(EXTENSIBLE)}: extensible ones), {{"steps": [...]}} or JSON Lines, or the
load reports `pulsar-admin broker-stats load-report` prints (files, or a directory of them).
One line per step: {{"step": i, "timestamp": ms|null, "unload": [{{"broker", "bundle", "destination", "reason"}}]}}.
--plan-only prints the strategy's raw plan; otherwise the leader's cycle (grace period, excluded
namespaces, destination by the placement strategy, recently-unloaded memory) is applied.
--format admin prints the pulsar-admin commands that carry the unloads out, the load of every broker
projected after them, and why nothing is unloaded when nothing is."""


@dataclass(frozen=True, slots=True)
class Row:
    """One step's outcome, and what the explanations need."""

    index: int
    timestamp: int | None
    unloads: list[Unload]
    skipped: list[Unload]
    load: LoadData
    config: Config
    idle: str  # why nothing was unloaded ("" when something was)
    advice: list[MoveAdvice]  # per unload: overload warning, placement filters, split (``algorithms.advice``)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "shed",
        help="which bundles to unload (shedding strategies)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="shedding strategy")
    add_config_options(p)
    add_policies_option(p)
    p.add_argument(
        "--plan-only",
        action="store_true",
        help="print the strategy's own output (findBundlesForUnloading), without the leader's cycle",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the placement strategy's random tie-breaks when choosing destinations (default 0)",
    )
    p.add_argument(
        "--format",
        choices=("json", "table", "admin"),
        default="json",
        help="JSON Lines (default), a table, or the pulsar-admin commands to run",
    )
    p.add_argument(
        "input",
        nargs="+",
        metavar="INPUT",
        help="snapshot or load-report files (.json / .jsonl) or directories of them; - for stdin",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return shed_documents(args, config_from_args(args), read_inputs(args.input))


def shed_documents(args: argparse.Namespace, config: Config, documents: list[Document]) -> int:
    """``shed`` on steps already read (also ``live advise``, on the snapshot it reads from a store)."""
    entry = shedding_entry(args.strategy)
    if entry.family is ExtensibleFamily:
        if any(d.from_reports for d in documents):
            raise InputError(
                f"load reports are the modular load manager's LocalBrokerData; {entry.name} reads extensible "
                "snapshots (docs/formats.md)",
                source=documents[0].source,
            )
        return run_extensible(args, config, documents)
    policies = policies_from_args(args)
    leader = LeaderBundleData()
    rng = random.Random(args.seed)
    family: ModularFamily | None = None
    rows: list[Row] = []
    shared = SharedBundles()
    for step in iterate_steps(documents, config):
        try:
            snapshot = parse_modular_snapshot(step.doc, step.where)
            shared.note(step, snapshot.shared)
            load = leader.apply(snapshot)
            if family is None:
                made = make_family(entry, step.config, placement=not args.plan_only)
                assert isinstance(made, ModularFamily)
                family = made
                family.set_policies(policies)
            if args.plan_only:
                unloads, skipped, note = family.plan(load, step.config, step.now), [], None
            else:
                result = family.shed(load, step.config, step.now, rng)
                unloads, skipped, note = list(result.unloaded), list(result.skipped), result.note
        except InputError as e:
            raise e.within(step.source) from None
        idle = "" if unloads else (note or family.shedder.idle_reason or "the strategy planned nothing")
        if not unloads and skipped and not note:
            idle = f"every planned unload was skipped ({len(skipped)})"
        advice = advise(load, unloads, step.config, placed=not args.plan_only, policies=policies)
        rows.append(Row(step.index, step.timestamp, unloads, skipped, load, step.config, idle, advice))
    for note_ in family.notes if family is not None else ():
        sys.stderr.write(note_ + "\n")
    shared.tell()
    name = entry.name
    if args.format == "table":
        write_table(rows)
    elif args.format == "admin":
        write_admin(rows, name)
    else:
        for r in rows:
            out: dict[str, Any] = {
                "step": r.index,
                "timestamp": r.timestamp,
                "unload": [u.to_json() for u in r.unloads],
            }
            if r.skipped:
                out["skipped"] = [s.to_json() for s in r.skipped]
            warnings = [w for a in r.advice for w in a.warnings_json()]
            if warnings:
                out["warnings"] = warnings
            emit(out)
    return 0


def write_table(rows: list[Row]) -> None:
    """One block per step: broker, bundle, destination, the reason on its own indented line; the projected
    load; or why nothing is unloaded."""
    for r in rows:
        sys.stdout.write(f"step {r.index}{when(r.timestamp)}\n")
        if not r.unloads:
            sys.stdout.write(f"  no unload: {r.idle}\n")
        table = [("broker", "bundle", "destination")] + [(u.broker, u.bundle, u.destination or "-") for u in r.unloads]
        if r.unloads:
            for n, line in enumerate(columns(table)):
                sys.stdout.write(line + "\n")
                if n > 0:
                    sys.stdout.write(f"      {r.unloads[n - 1].reason}\n")
                    for line in r.advice[n - 1].lines():
                        sys.stdout.write(f"      {line}\n")
        for line in skipped_lines(r.skipped, "  "):
            sys.stdout.write(line + "\n")
        if r.unloads:
            sys.stdout.write(f"  {PROJECTION_NOTE}:\n")
            for line in projection_lines(project(r.load, r.unloads, r.config), "    "):
                sys.stdout.write(line + "\n")


def write_admin(rows: list[Row], strategy: str) -> None:
    """The pulsar-admin commands of every step, with the reasons and the projection as comments."""
    for r in rows:
        count = f"{len(r.unloads)} bundle{'s' if len(r.unloads) != 1 else ''}"
        head = f"# step {r.index}{when(r.timestamp)}: {strategy} unloads "
        if not r.unloads:
            sys.stdout.write(f"{head}nothing: {r.idle}\n")
        else:
            sys.stdout.write(f"{head}{count}\n")
        for line in admin_unload_lines(r.unloads, r.advice):
            sys.stdout.write(line + "\n")
        for line in skipped_lines(r.skipped, "# "):
            sys.stdout.write(line + "\n")
        if r.unloads:
            sys.stdout.write(f"# {PROJECTION_NOTE}:\n")
            for line in projection_lines(project(r.load, r.unloads, r.config), "#   "):
                sys.stdout.write(line + "\n")
