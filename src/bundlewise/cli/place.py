"""``bundlewise place`` (contract §4): placement strategies on recorded modular snapshots.

Each step is a modular snapshot (contract §5) that also carries ``"bundle"`` (the bundle to place)
and optionally ``"candidates"`` (an ordered broker list) and ``"nonPersistent"`` (the bundle holds
non-persistent topics; default false).  With ``candidates`` only the strategy runs, on exactly that
list (Pulsar's ``selectBroker(candidates, bundleData, loadData, conf)``); without it the load
manager's full assignment flow runs (``ModularPlacement``: filters, overload re-check, preallocation
into that step's snapshot).  ONE strategy instance and one ``random.Random(--seed)`` (default 0) serve every
step, so round-robin position and history carry over.  Output, JSON Lines:
``{"step": i, "selected": broker|null, "best": [...]}``.  ``--extensible`` hands §6 inputs to
``bundlewise.cli.place_extensible``.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from collections.abc import Mapping
from typing import Any

from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.placement.registry import PLACEMENT_NAMES, make_placement_strategy
from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.cli.inputs import Step, emit, iterate_steps, read_documents
from bundlewise.model.errors import InputError
from bundlewise.model.load import BundleData
from bundlewise.model.snapshot import parse_modular_snapshot

STEP_KEYS = ("bundle", "candidates", "nonPersistent")

DESCRIPTION = f"""\
Choose a broker for a bundle as Pulsar's modular load manager would.
Strategies: {", ".join(PLACEMENT_NAMES)} (short or org.apache.pulsar.broker.loadbalance.impl.<name>).
INPUT: a snapshot (contract §5) with "bundle" and optional "candidates", {{"steps": [...]}} or JSON Lines.
One line per step: {{"step": i, "selected": broker|null, "best": [brokers picked from at random]}}."""


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
        help="extensible load manager input (contract §6) and its LeastResourceUsageWithWeight",
    )
    p.add_argument("input", metavar="INPUT", help="snapshot file (.json / .jsonl), - for stdin")
    p.set_defaults(func=run)


def _where(step: Step, count: int) -> str:
    return f"steps[{step.index}]" if count > 1 else "snapshot"


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


def _run_extensible(args: argparse.Namespace, config: Any, docs: list[Any], source: str) -> int:
    try:
        module = importlib.import_module("bundlewise.cli.place_extensible")
    except ModuleNotFoundError as e:
        if e.name not in ("bundlewise.cli.place_extensible", None):
            raise
        raise InputError("--extensible placement is not available in this build", field="--extensible") from None
    return int(module.run_extensible(args, config, docs, source))


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    source = "<stdin>" if args.input == "-" else args.input
    docs = read_documents(args.input)
    if args.extensible:
        return _run_extensible(args, config, docs, source)
    strategy = make_placement_strategy(args.strategy)
    placement = ModularPlacement(strategy)
    rng = random.Random(args.seed)
    leader = LeaderBundleData()
    rows: list[tuple[int, str, Selection]] = []
    for step in iterate_steps(docs, config, source):
        where = _where(step, len(docs))
        try:
            bundle, candidates, non_persistent = parse_step_request(step.doc, where)
            snapshot_doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
            load = leader.apply(parse_modular_snapshot(snapshot_doc, where))
            if candidates is not None:
                data = load.bundleData.get(bundle) or BundleData.default()
                selection = strategy.select(candidates, bundle, data, load, step.config, rng)
            else:
                selection = placement.select_broker(bundle, load, step.config, rng, non_persistent=non_persistent)
        except InputError as e:
            raise e.within(source) from None
        if args.format == "json":
            emit({"step": step.index, "selected": selection.selected, "best": list(selection.best)})
        else:
            rows.append((step.index, bundle, selection))
    if args.format == "table":
        write_table(rows)
    return 0


def write_table(rows: list[tuple[int, str, Selection]]) -> None:
    header = ("step", "bundle", "selected", "best")
    lines = [(str(i), b, s.selected or "-", ", ".join(s.best) or "-") for i, b, s in rows]
    widths = [max(len(r[k]) for r in [header, *lines]) for k in range(3)]
    for r in [header, *lines]:
        sys.stdout.write("  ".join(r[k].ljust(widths[k]) for k in range(3)) + "  " + r[3] + "\n")
