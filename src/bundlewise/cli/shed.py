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
with why) when there are any.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from bundlewise.algorithms.families import ExtensibleFamily, ModularFamily
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.registry import SHEDDING, make_family, shedding_entry, shedding_names
from bundlewise.cli.common import add_config_options, config_from_args, source_name
from bundlewise.cli.inputs import SharedBundles, emit, iterate_steps, read_documents, step_where
from bundlewise.cli.shed_extensible import run_extensible
from bundlewise.config import Config
from bundlewise.model.decisions import Unload
from bundlewise.model.errors import InputError
from bundlewise.model.snapshot import parse_modular_snapshot

EXTENSIBLE = [name for name, entry in SHEDDING.items() if entry.family is ExtensibleFamily]
DESCRIPTION = f"""\
Which bundles Pulsar's leader would unload, with one of its shedding strategies.
Strategies: {", ".join(shedding_names())} (short or Pulsar class names).
INPUT: a modular snapshot (an extensible one for {", ".join(EXTENSIBLE)}), {{"steps": [...]}} or JSON Lines.
One line per step: {{"step": i, "timestamp": ms|null, "unload": [{{"broker", "bundle", "destination", "reason"}}]}}.
--plan-only prints the strategy's raw plan; otherwise the leader's cycle (grace period, excluded
namespaces, destination by the placement strategy, recently-unloaded memory) is applied."""

Row = tuple[int, int | None, list[Unload], list[Unload]]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "shed",
        help="which bundles to unload (shedding strategies)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="shedding strategy")
    add_config_options(p)
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
    p.add_argument("--format", choices=("json", "table"), default="json", help="JSON Lines (default) or a table")
    p.add_argument("input", metavar="INPUT", help="snapshot file (.json / .jsonl), - for stdin")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return shed_documents(args, config_from_args(args), read_documents(args.input), source_name(args.input))


def shed_documents(args: argparse.Namespace, config: Config, docs: Any, source: str) -> int:
    """``shed`` on snapshots already read (also ``live advise``, on the snapshot it reads from a store)."""
    entry = shedding_entry(args.strategy)
    if entry.family is ExtensibleFamily:
        return run_extensible(args, config, docs, source)
    leader = LeaderBundleData()
    rng = random.Random(args.seed)
    family: ModularFamily | None = None
    rows: list[Row] = []
    shared = SharedBundles(source)
    for step in iterate_steps(docs, config, source):
        try:
            snapshot = parse_modular_snapshot(step.doc, step_where(step, docs))
            shared.note(step_where(step, docs), snapshot.shared)
            load = leader.apply(snapshot)
            if family is None:
                made = make_family(entry, step.config, placement=not args.plan_only)
                assert isinstance(made, ModularFamily)
                family = made
            if args.plan_only:
                unloads, skipped = family.plan(load, step.config, step.now), []
            else:
                result = family.shed(load, step.config, step.now, rng)
                unloads, skipped = list(result.unloaded), list(result.skipped)
        except InputError as e:
            raise e.within(source) from None
        rows.append((step.index, step.timestamp, unloads, skipped))
    for note in family.notes if family is not None else ():
        sys.stderr.write(note + "\n")
    shared.tell()
    if args.format == "table":
        write_table(rows)
        return 0
    for index, timestamp, unloads, skipped in rows:
        out: dict[str, Any] = {"step": index, "timestamp": timestamp, "unload": [u.to_json() for u in unloads]}
        if skipped:
            out["skipped"] = [s.to_json() for s in skipped]
        emit(out)
    return 0


def write_table(rows: list[Row]) -> None:
    """One block per step: broker, bundle, destination, then the reason on its own indented line."""
    for index, timestamp, unloads, skipped in rows:
        sys.stdout.write(f"step {index}" + (f" (timestamp {timestamp})" if timestamp is not None else "") + "\n")
        if not unloads and not skipped:
            sys.stdout.write("  no unload\n")
        table = [("broker", "bundle", "destination")] + [(u.broker, u.bundle, u.destination or "-") for u in unloads]
        if unloads:
            widths = [max(len(r[k]) for r in table) for k in range(3)]
            for n, r in enumerate(table):
                sys.stdout.write("  " + "  ".join(r[k].ljust(widths[k]) for k in range(3)).rstrip() + "\n")
                if n > 0:
                    sys.stdout.write(f"      {unloads[n - 1].reason}\n")
        for s in skipped:
            sys.stdout.write(f"  skipped {s.bundle} on {s.broker}: {s.reason}\n")
