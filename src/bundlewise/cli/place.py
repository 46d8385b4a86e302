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
``{"step": i, "selected": broker|null, "best": [...]}``.  ``--bundle`` names the bundle of steps that do not
(load reports never do).  ``--format table`` adds the bundle and its owner; ``--format admin`` prints the
``pulsar-admin namespaces unload --destinationBroker`` command that moves an owned bundle to the chosen
broker, and every broker's load projected after it (``algorithms.projection``).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bundlewise.algorithms.extensible.placement import ExtensiblePlacement, FilterContext, owned_from_top_bundles
from bundlewise.algorithms.families.extensible import PLACEMENT_NAME as EXTENSIBLE_PLACEMENT
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.projection import project
from bundlewise.algorithms.registry import make_placement, placement_names
from bundlewise.cli.common import add_config_options, add_policies_option, config_from_args
from bundlewise.cli.explain import PROJECTION_NOTE, columns, projection_lines, when
from bundlewise.cli.inputs import Document, SharedBundles, Step, emit, iterate_steps, policies_from_args, read_inputs
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.model.admin import unload_command
from bundlewise.model.brokers import check_distinct
from bundlewise.model.decisions import Unload
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot
from bundlewise.model.load import BundleData, LoadData
from bundlewise.model.policies import PlacementPolicies
from bundlewise.model.snapshot import parse_modular_snapshot

STEP_KEYS = ("bundle", "candidates", "nonPersistent")

DESCRIPTION = f"""\
Choose a broker for a bundle as Pulsar's load manager would.
Strategies: {", ".join(placement_names())} (short or org.apache.pulsar.broker.loadbalance.impl.<name>);
with --extensible, the extensible load manager's {EXTENSIBLE_PLACEMENT}.
INPUT: a snapshot with "bundle" (or --bundle) and optional "candidates", {{"steps": [...]}} or JSON Lines,
or the load reports `pulsar-admin broker-stats load-report` prints (files, or a directory of them).
One line per step: {{"step": i, "selected": broker|null, "best": [brokers picked from at random]}}.
--format admin prints the pulsar-admin command that moves the bundle there and the projected load."""


@dataclass(frozen=True, slots=True)
class Row:
    index: int
    timestamp: int | None
    bundle: str
    selection: Selection
    owner: str | None  # the broker that owns the bundle in the snapshot, if one does
    load: LoadData | None  # modular steps: for the projection
    config: Config


def register(sub: Any) -> None:
    p = sub.add_parser(
        "place",
        help="choose a broker for a bundle (placement strategies)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="placement strategy")
    add_config_options(p)
    add_policies_option(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the random tie-break (default 0: reproducible picks)")
    p.add_argument(
        "--format",
        choices=("json", "table", "admin"),
        default="json",
        help="JSON Lines (default), a table, or the pulsar-admin command that moves the bundle",
    )
    p.add_argument(
        "--extensible",
        action="store_true",
        help=f"extensible load manager input (broker-load and top-bundles stores) and its {EXTENSIBLE_PLACEMENT}",
    )
    p.add_argument(
        "--bundle",
        metavar="TENANT/NS/0x…_0x…",
        help='the bundle to place, for steps that do not name one ("bundle"); needed for load reports',
    )
    p.add_argument(
        "input",
        nargs="+",
        metavar="INPUT",
        help="snapshot or load-report files (.json / .jsonl) or directories of them; - for stdin",
    )
    p.set_defaults(func=run)


def parse_step_request(
    doc: Mapping[str, Any], where: str, default_bundle: str | None = None
) -> tuple[str, list[str] | None, bool]:
    """The step's ``bundle`` (else ``--bundle``), ``candidates`` (or None) and ``nonPersistent`` flag."""
    bundle = doc.get("bundle", default_bundle)
    if bundle is None:
        raise InputError(
            "missing 'bundle' (the name of the bundle to place, a string); or give --bundle", field=f"{where}.bundle"
        )
    if not isinstance(bundle, str) or not bundle.strip():
        raise InputError("expected the name of the bundle to place, a string", field=f"{where}.bundle")
    raw = doc.get("candidates")
    candidates: list[str] | None = None
    if raw is not None:
        if not isinstance(raw, list) or not all(isinstance(c, str) and c for c in raw):
            raise InputError("expected an ordered list of broker names", field=f"{where}.candidates")
        if len(set(raw)) != len(raw):
            raise InputError("a broker is listed twice; candidates form a set", field=f"{where}.candidates")
        check_distinct(raw, f"{where}.candidates")
        candidates = list(raw)
    non_persistent = doc.get("nonPersistent", False)
    if not isinstance(non_persistent, bool):
        raise InputError("expected true or false", field=f"{where}.nonPersistent")
    return bundle, candidates, non_persistent


def _modular_step(
    step: Step,
    placement: ModularPlacement,
    leader: LeaderBundleData,
    rng: random.Random,
    default: str | None,
    shared: SharedBundles,
) -> Row:
    bundle, candidates, non_persistent = parse_step_request(step.doc, step.where, default)
    snapshot_doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
    snapshot = parse_modular_snapshot(snapshot_doc, step.where)
    shared.note(step, snapshot.shared)
    load = leader.apply(snapshot)
    owner = load.owner_of().get(bundle)
    if candidates is not None:
        data = load.bundleData.get(bundle) or BundleData.default()
        sel = placement.strategy.select(candidates, bundle, data, load, step.config, rng)
    else:
        sel = placement.select_broker(bundle, load, step.config, rng, non_persistent=non_persistent)
    return Row(step.index, step.timestamp, bundle, sel, owner, load, step.config)


def _extensible_step(
    step: Step,
    placement: ExtensiblePlacement,
    rng: random.Random,
    default: str | None,
    shared: SharedBundles,
    policies: PlacementPolicies,
) -> Row:
    bundle, candidates, non_persistent = parse_step_request(step.doc, step.where, default)
    doc = {k: v for k, v in step.doc.items() if k not in STEP_KEYS}
    snap = parse_extensible_snapshot(doc, step.where, step.config.weights(), step.now)
    shared.note(step, snap.shared)
    owned = owned_from_top_bundles(snap)
    ctx = FilterContext(snap.brokers, snap.lookup_data, step.config, non_persistent, policies, owned)
    sel = placement.select(bundle, snap.available_brokers, ctx, rng, candidates)
    owner = next(
        (b for b, top in snap.top_bundles.items() if any(t.bundleName == bundle for t in top.topBundlesLoadData)), None
    )
    return Row(step.index, step.timestamp, bundle, sel, owner, None, step.config)


def place_rows(args: argparse.Namespace, config: Config, documents: list[Document]) -> list[Row]:
    """Every step's selection; an ``InputError`` in any step is raised before anything is printed."""
    rng = random.Random(args.seed)
    rows: list[Row] = []
    default = getattr(args, "bundle", None)
    shared = SharedBundles()
    policies = policies_from_args(args)
    if args.extensible:
        if short_class_name(args.strategy) != EXTENSIBLE_PLACEMENT:
            raise InputError(
                f"the extensible load manager places with {EXTENSIBLE_PLACEMENT} only, got {args.strategy!r}",
                field="--strategy",
            )
        if any(d.from_reports for d in documents):
            raise InputError(
                "load reports are the modular load manager's LocalBrokerData; --extensible reads extensible "
                "snapshots (docs/formats.md)",
                source=documents[0].source,
            )
        extensible = ExtensiblePlacement()
        for step in iterate_steps(documents, config):
            try:
                rows.append(_extensible_step(step, extensible, rng, default, shared, policies))
            except InputError as e:
                raise e.within(step.source) from None
        shared.tell()
        return rows
    placement = ModularPlacement(make_placement(args.strategy), policies)
    leader = LeaderBundleData()
    for step in iterate_steps(documents, config):
        try:
            rows.append(_modular_step(step, placement, leader, rng, default, shared))
        except InputError as e:
            raise e.within(step.source) from None
    shared.tell()
    return rows


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    documents = read_inputs(args.input)
    rows = place_rows(args, config, documents)
    if args.format == "table":
        write_table(rows)
    elif args.format == "admin":
        write_admin(rows, short_class_name(args.strategy))
    else:
        for r in rows:
            emit({"step": r.index, "selected": r.selection.selected, "best": list(r.selection.best)})
    return 0


def write_table(rows: list[Row]) -> None:
    header = ("step", "bundle", "owner", "selected", "best")
    lines = [
        (str(r.index), r.bundle, r.owner or "-", r.selection.selected or "-", ", ".join(r.selection.best) or "-")
        for r in rows
    ]
    for line in columns([header, *lines], prefix=""):
        sys.stdout.write(line + "\n")


def _move(r: Row) -> Unload:
    return Unload(r.owner or "", r.bundle, "", r.selection.selected)


def write_admin(rows: list[Row], strategy: str) -> None:
    """Per step: the choice as a comment, the command that moves the bundle there, the projected load."""
    for r in rows:
        sel = r.selection.selected
        among = f" (among {len(r.selection.best)} equally good)" if len(r.selection.best) > 1 else ""
        head = f"# step {r.index}{when(r.timestamp)}: {strategy} "
        if sel is None:
            sys.stdout.write(f"{head}finds no broker for {r.bundle}: no candidate passed the filters\n")
            continue
        owned = f" (owned by {r.owner})" if r.owner is not None and r.owner != sel else ""
        sys.stdout.write(f"{head}places {r.bundle}{owned} on {sel}{among}\n")
        if r.owner == sel:
            sys.stdout.write(f"# {sel} owns it already: nothing to do\n")
            continue
        if r.owner is None:
            sys.stdout.write(
                "# no broker owns it now: the first lookup of one of its topics assigns it; "
                "to move it once it is owned:\n"
            )
        command = unload_command(r.bundle, sel)
        sys.stdout.write(
            (command if command is not None else f"# (no command: {r.bundle!r} is not a bundle name)") + "\n"
        )
        if r.load is not None:
            sys.stdout.write(f"# {PROJECTION_NOTE}:\n")
            for line in projection_lines(project(r.load, [_move(r)], r.config), "#   "):
                sys.stdout.write(line + "\n")
