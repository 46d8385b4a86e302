"""``bundlewise place``: which broker a placement strategy picks, on recorded snapshots (docs/commands.md).

Each step is a snapshot that also carries ``"bundle"`` (the bundle to place) and optionally
``"candidates"`` (an ordered broker list) and ``"nonPersistent"`` (the bundle holds non-persistent
topics; default false).

* Modular (default): the strategy comes from the registry (``algorithms.registry``).  With ``candidates``
  only the strategy runs, on exactly that list (Pulsar's ``selectBroker(candidates, bundleData,
  loadData, conf)``); without them the load manager's full assignment flow runs (``ModularPlacement``:
  filters, overload re-check, preallocation into that step's snapshot).
* ``--extensible``: extensible snapshots and the extensible manager's ``LeastResourceUsageWithWeight``
  (the only strategy it has): with ``candidates`` the strategy alone, without them the assignment flow
  (available brokers, filter chain, then the strategy; round-robin for excluded namespaces).

ONE strategy instance and one ``random.Random(--seed)`` (default 0) serve every step, so round-robin
position and history carry over.  Output, JSON Lines, printed once every step is known good:
``{"step": i, "selected": broker|null, "best": [...]}``.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping
from typing import Any

from bundlewise.algorithms.extensible.placement import ExtensiblePlacement, FilterContext
from bundlewise.algorithms.families.extensible import PLACEMENT_NAME as EXTENSIBLE_PLACEMENT
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.registry import make_placement, placement_names
from bundlewise.cli.common import add_config_options, config_from_args, source_name
from bundlewise.cli.inputs import SharedBundles, Step, emit, iterate_steps, read_documents, step_where
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot
from bundlewise.model.load import BundleData
from bundlewise.model.snapshot import parse_modular_snapshot

STEP_KEYS = ("bundle", "candidates", "nonPersistent")

DESCRIPTION = f"""\
Choose a broker for a bundle as Pulsar's load manager would.
Strategies: {", ".join(placement_names())} (short or org.apache.pulsar.broker.loadbalance.impl.<name>);
with --extensible, the extensible load manager's {EXTENSIBLE_PLACEMENT}.
INPUT: a snapshot with "bundle" and optional "candidates", {{"steps": [...]}} or JSON Lines.
One line per step: {{"step": i, "selected": broker|null, "best": [brokers picked from at random]}}."""

Row = tuple[int, str, Selection]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "place",
        help="choose a broker for a bundle (placement strategies)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="placement strategy")
    add_config_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the random tie-break (default 0: reproducible picks)")
    p.add_argument("--format", choices=("json", "table"), default="json", help="JSON Lines (default) or a table")
    p.add_argument(
        "--extensible",
        action="store_true",
        help=f"extensible load manager input (broker-load and top-bundles stores) and its {EXTENSIBLE_PLACEMENT}",
    )
    p.add_argument("input", metavar="INPUT", help="snapshot file (.json / .jsonl), - for stdin")
    p.set_defaults(func=run)


def parse_step_request(doc: Mapping[str, Any], where: str) -> tuple[str, list[str] | None, bool]:
    """The step's ``bundle``, ``candidates`` (or None) and ``nonPersistent`` flag."""
    bundle = doc.get("bundle")
    if not isinstance(bundle, str) or not bundle.strip():
        raise InputError("missing 'bundle' (the name of the bundle to place, a string)", field=f"{where}.bundle")
    raw = doc.get("candidates")
    candidates: list[str] | None = None
    if raw is not None:
        if not isinstance(raw, list) or not all(isinstance(c, str) and c for c in raw):
            raise InputError("expected an ordered list of broker names", field=f"{where}.candidates")
        if len(set(raw)) != len(raw):
            raise InputError("a broker is listed twice; candidates form a set", field=f"{where}.candidates")
        candidates = list(raw)
    non_persistent = doc.get("nonPersistent", False)
    if not isinstance(non_persistent, bool):
        raise InputError("expected true or false", field=f"{where}.nonPersistent")
    return bundle, candidates, non_persistent


def _modular_step(
    step: Step,
    where: str,
    placement: ModularPlacement,
    leader: LeaderBundleData,
    rng: random.Random,
    shared: SharedBundles,
) -> Row:
    bundle, candidates, non_persistent = parse_step_request(step.doc, where)
    snapshot_doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
    snapshot = parse_modular_snapshot(snapshot_doc, where)
    shared.note(where, snapshot.shared)
    load = leader.apply(snapshot)
    if candidates is not None:
        data = load.bundleData.get(bundle) or BundleData.default()
        return step.index, bundle, placement.strategy.select(candidates, bundle, data, load, step.config, rng)
    return step.index, bundle, placement.select_broker(bundle, load, step.config, rng, non_persistent=non_persistent)


def _extensible_step(
    step: Step, where: str, placement: ExtensiblePlacement, rng: random.Random, shared: SharedBundles
) -> Row:
    bundle, candidates, non_persistent = parse_step_request(step.doc, where)
    doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
    snap = parse_extensible_snapshot(doc, where, step.config.weights(), step.now)
    shared.note(where, snap.shared)
    ctx = FilterContext(snap.brokers, snap.lookup_data, step.config, non_persistent)
    return step.index, bundle, placement.select(bundle, snap.available_brokers, ctx, rng, candidates)


def place_rows(args: argparse.Namespace, config: Config, docs: list[Any], source: str) -> list[Row]:
    """Every step's selection; an ``InputError`` in any step is raised before anything is printed."""
    rng = random.Random(args.seed)
    rows: list[Row] = []
    shared = SharedBundles(source)
    if args.extensible:
        if short_class_name(args.strategy) != EXTENSIBLE_PLACEMENT:
            raise InputError(
                f"the extensible load manager places with {EXTENSIBLE_PLACEMENT} only, got {args.strategy!r}",
                field="--strategy",
            )
        extensible = ExtensiblePlacement()
        for step in iterate_steps(docs, config, source):
            try:
                rows.append(_extensible_step(step, step_where(step, docs), extensible, rng, shared))
            except InputError as e:
                raise e.within(source) from None
        shared.tell()
        return rows
    placement = ModularPlacement(make_placement(args.strategy))
    leader = LeaderBundleData()
    for step in iterate_steps(docs, config, source):
        try:
            rows.append(_modular_step(step, step_where(step, docs), placement, leader, rng, shared))
        except InputError as e:
            raise e.within(source) from None
    shared.tell()
    return rows


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    source = source_name(args.input)
    docs = read_documents(args.input)
    rows = place_rows(args, config, docs, source)
    if args.format == "table":
        write_table(rows)
        return 0
    for index, _, selection in rows:
        emit({"step": index, "selected": selection.selected, "best": list(selection.best)})
    return 0


def write_table(rows: list[Row]) -> None:
    header = ("step", "bundle", "selected", "best")
    lines = [(str(i), b, s.selected or "-", ", ".join(s.best) or "-") for i, b, s in rows]
    widths = [max(len(r[k]) for r in [header, *lines]) for k in range(3)]
    for r in [header, *lines]:
        sys.stdout.write("  ".join(r[k].ljust(widths[k]) for k in range(3)) + "  " + r[3] + "\n")
