"""``bundlewise shed`` (contract §4): shedding strategies on recorded load.

Modular strategies (``OverloadShedder``, ``ThresholdShedder``, ``UniformLoadShedder``, ``AvgShedder``) run
on modular snapshots (contract §5); ``TransferShedder`` is handed to ``bundlewise.cli.shed_extensible``.

* ONE strategy instance sees every step in order, so histories and hit counters carry over.
* Per-step ``config`` overrides accumulate (``cli.inputs.iterate_steps``); each step's clock is its
  ``timestamp`` or the previous one plus ``loadBalancerSheddingIntervalMinutes``.
* A snapshot without ``bundleData`` gets the leader's bookkeeping (``algorithms.leader.LeaderBundleData``).
* ``--plan-only``: exactly what the strategy returns (Pulsar's ``findBundlesForUnloading``), with the
  strategy's own planned destination (AvgShedder) or ``null``; the snapshot's ``recentlyUnloadedBundles``
  are passed as given.
* Default: the leader's cycle (``algorithms.leader_cycle``) on top — grace period, excluded namespaces,
  destination from the configured placement flow (``ModularPlacement`` without preallocation, random
  tie-breaks from ``--seed``), a bundle whose destination is its owner skipped, unloads remembered as
  recently unloaded for later steps.  When ``loadBalancerLoadPlacementStrategy`` is AvgShedder too, the
  shedding instance also serves placement (as Pulsar's load manager does), so its planned destinations
  are used.

Output, JSON Lines: ``{"step", "timestamp", "unload": [{"broker", "bundle", "destination", "reason"}]}``
plus ``"skipped"`` (planned unloads the leader did not carry out, with why) when there are any.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from typing import Any

from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.leader_cycle import LeaderSheddingCycle, Skipped
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import PlacementStrategy
from bundlewise.algorithms.placement.registry import canonical_placement_name, make_placement_strategy
from bundlewise.algorithms.shedding.base import SheddingStrategy, Unload
from bundlewise.algorithms.shedding.registry import EXTENSIBLE_SHEDDERS, MODULAR_SHEDDERS, make_shedding_strategy
from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.cli.inputs import emit, iterate_steps, read_documents
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.model.errors import InputError
from bundlewise.model.load import LoadData
from bundlewise.model.snapshot import parse_modular_snapshot

DESCRIPTION = f"""\
Which bundles Pulsar's leader would unload, with one of its shedding strategies.
Strategies: {", ".join([*MODULAR_SHEDDERS, *EXTENSIBLE_SHEDDERS])} (short or Pulsar class names).
INPUT: a snapshot (contract §5; §6 for TransferShedder), {{"steps": [...]}} or JSON Lines.
One line per step: {{"step": i, "timestamp": ms|null, "unload": [{{"broker", "bundle", "destination", "reason"}}]}}.
--plan-only prints the strategy's raw plan; otherwise the leader's cycle (grace period, excluded
namespaces, destination by the placement strategy, recently-unloaded memory) is applied."""


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


def _run_extensible(args: argparse.Namespace, config: Config, docs: list[Any], source: str) -> int:
    try:
        module = importlib.import_module("bundlewise.cli.shed_extensible")
    except ModuleNotFoundError:
        raise InputError(
            "TransferShedder (extensible load manager) is not available in this build", field="--strategy"
        ) from None
    return int(module.run_extensible(args, config, docs, source))


def placement_for(strategy: SheddingStrategy, config: Config) -> PlacementStrategy:
    """The placement strategy of ``config``; the shedding instance itself when both are AvgShedder."""
    placement_name = canonical_placement_name(config["loadBalancerLoadPlacementStrategy"])
    if placement_name == "AvgShedder":
        if strategy.name != "AvgShedder":
            raise InputError(
                "loadBalancerLoadPlacementStrategy AvgShedder is also a shedding strategy, so Pulsar requires "
                f"loadBalancerLoadSheddingStrategy to be AvgShedder too (got {strategy.name})",
                field="loadBalancerLoadPlacementStrategy",
            )
        shared: PlacementStrategy = strategy  # type: ignore[assignment]
        return shared
    if strategy.name == "AvgShedder":
        sys.stderr.write(
            "warning: AvgShedder's planned destinations are used only when loadBalancerLoadPlacementStrategy is "
            f"AvgShedder too; destinations come from {placement_name}\n"
        )
    return make_placement_strategy(placement_name)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if short_class_name(args.strategy) in EXTENSIBLE_SHEDDERS:
        source = "<stdin>" if args.input == "-" else args.input
        return _run_extensible(args, config, read_documents(args.input), source)
    strategy = make_shedding_strategy(args.strategy)
    source = "<stdin>" if args.input == "-" else args.input
    docs = read_documents(args.input)
    leader = LeaderBundleData()
    rng = random.Random(args.seed)
    cycle: LeaderSheddingCycle | None = None
    rows: list[tuple[int, int | None, list[Unload], list[Skipped]]] = []
    for step in iterate_steps(docs, config, source):
        where = f"steps[{step.index}]" if len(docs) > 1 else "snapshot"
        try:
            load = leader.apply(parse_modular_snapshot(step.doc, where))
            if args.plan_only:
                unloads, skipped = strategy.find_bundles_for_unloading(load, step.config, step.now), []
            else:
                if cycle is None:
                    placement = ModularPlacement(placement_for(strategy, step.config))

                    def choose(bundle: str, view: LoadData, cfg: Config, p: ModularPlacement = placement) -> str | None:
                        return p.select_broker(bundle, view, cfg, rng, preallocate=False).selected

                    cycle = LeaderSheddingCycle(strategy, choose)
                result = cycle.run(load, step.config, step.now)
                unloads, skipped = list(result.unloaded), list(result.skipped)
        except InputError as e:
            raise e.within(source) from None
        rows.append((step.index, step.timestamp, unloads, skipped))
    # printed only once every step is known good: bad input yields the one-line error and no partial output
    if args.format == "table":
        write_table(rows)
        return 0
    for index, timestamp, unloads, skipped in rows:
        out: dict[str, Any] = {"step": index, "timestamp": timestamp, "unload": [u.to_json() for u in unloads]}
        if skipped:
            out["skipped"] = [s.to_json() for s in skipped]
        emit(out)
    return 0


def write_table(rows: list[tuple[int, int | None, list[Unload], list[Skipped]]]) -> None:
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
