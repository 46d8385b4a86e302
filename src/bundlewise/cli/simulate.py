"""``bundlewise simulate``: run a cluster scenario with each shedding strategy (docs/simulator.md).

``bundlewise simulate [--cluster CLUSTER.toml] [--workload TRACE] [--strategy NAME …] [--out DIR [--overwrite]]
[--seed N] [--format json|table] [--config FILE] [--set KEY=VALUE]``

* No ``--cluster``: the bundled ``default`` scenario (``--cluster NAME`` also accepts a bundled
  scenario's name, e.g. ``idle-broker``).  No ``--strategy``: the scenario's ``strategies`` list, else
  every shedding strategy of the registry.  Every strategy is resolved (and its family's configuration
  checked) before the first run starts.
* ``--workload``: a trace replaces the built-in generator: a local Parquet, CSV or JSON Lines trace is read
  without a JVM; the pipeline's outputs (``--out`` of ``bundlewise pipeline``, its ``topic_samples/`` or
  ``bundle_load/``) are replayed from the layout they recorded; remote paths, raw Pulsar dumps and ``--spark``
  go through Spark (``cli/traces.py``).
* ``--config``/``--set`` override the scenario's ``[balancer]`` keys.
* ``--out DIR``: the four files are written into a staging folder beside DIR and moved into place when
  all are complete (``files.atomic``); an existing non-empty DIR is refused before the run unless
  ``--overwrite``; Ctrl-C leaves DIR as it was.
* stdout: ``summary.json``'s document (``--format json``, default) or the comparison table
  (``--format table``).  stderr: a progress bar per strategy, then (json format) the table too.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

from bundlewise.algorithms.registry import (
    SheddingEntry,
    default_shedding_names,
    expand_all,
    make_family,
    shedding_entry,
)
from bundlewise.cli.common import SEED, add_config_options, add_out_options, check_range, config_over
from bundlewise.cli.traces import load_workload
from bundlewise.config import Config
from bundlewise.files import atomic
from bundlewise.report.html import render_report
from bundlewise.results.catalogue import comparison_table
from bundlewise.results.write import summary_json, write_run
from bundlewise.sim.layout import layout_notes, replay_scenario
from bundlewise.sim.run import run_info, simulate, summary
from bundlewise.sim.scenario import Scenario, bundled_names, bundled_scenario, load_scenario


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "simulate",
        help="simulate a cluster under each shedding strategy and compare them",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--cluster",
        metavar="CLUSTER.toml",
        help=f"scenario file or bundled name ({', '.join(bundled_names())}); default: default",
    )
    p.add_argument(
        "--workload",
        metavar="TRACE",
        help="topic-samples trace (Parquet, CSV or JSON Lines: timestamp, topic, rates, throughputs) "
        "or the pipeline's --out (a replay)",
    )
    p.add_argument("--spark", action="store_true", help="read --workload through Spark's readers (local[2])")
    p.add_argument(
        "--strategy",
        metavar="NAME",
        action="append",
        nargs="+",
        default=None,
        help="shedding strategy (repeatable), or all (bundlewise's own included); default: Pulsar's five",
    )
    add_out_options(p, "summary.json, timeline.parquet, decisions.jsonl and report.html into this folder")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--format", choices=("json", "table"), default="json")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    add_config_options(p)
    p.set_defaults(func=run)


def resolve_scenario(arg: str | None) -> Scenario:
    if arg is None:
        return bundled_scenario("default")
    if arg != "-" and not Path(arg).exists() and not arg.endswith(".toml") and arg in bundled_names():
        return bundled_scenario(arg)
    return load_scenario(arg)


def progress_bar(name: str) -> Callable[[int, int], None]:
    """``name [#####.....] 50%`` redrawn in place on a terminal; one final line otherwise."""
    last = [-1]
    tty = sys.stderr.isatty()

    def update(done: int, total: int) -> None:
        pct = done * 100 // max(1, total)
        if pct == last[0] or (not tty and done < total):
            return
        last[0] = pct
        filled = pct * 30 // 100
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{name:<20} [{'#' * filled}{'.' * (30 - filled)}] {pct:3d}%{end}")
        sys.stderr.flush()

    return update


def resolve_strategies(names: list[str] | None, scenario: Scenario, config: Config) -> list[SheddingEntry]:
    """The runs' strategies (``--strategy``, ``all`` standing for every registered one; else the scenario's;
    else every registered one but bundlewise's own), each
    resolved and its family made once with ``config`` so a bad name or a configuration Pulsar refuses
    fails before any run; the families' warnings go to stderr."""
    entries = [shedding_entry(n) for n in expand_all(names or scenario.strategies or default_shedding_names())]
    for entry in entries:
        for note in make_family(entry, config).notes:
            sys.stderr.write(note + "\n")
    return entries


def run(args: argparse.Namespace) -> int:
    check_range(args.seed, "--seed", *SEED)
    scenario = resolve_scenario(args.cluster).with_seed(args.seed)
    for w in scenario.warnings:
        sys.stderr.write(w + "\n")
    config = config_over(scenario.config, args)
    names = [s for group in args.strategy for s in group] if args.strategy else None
    strategies = resolve_strategies(names, scenario, config)
    trace, layout = None, None
    staging = atomic.stage(args.out, args.overwrite) if args.out is not None else None  # refused before any work
    with staging if staging is not None else contextlib.nullcontext():
        if args.workload:
            workload = load_workload(args.workload, use_spark=args.spark)
            workload.report(args.workload)
            trace, layout = workload.trace, workload.layout
            for note in layout_notes(scenario, trace, config, layout):
                sys.stderr.write(note + "\n")
            if layout is not None:
                scenario = replay_scenario(scenario, layout)
        progress = None if args.no_progress else progress_bar
        results = simulate(scenario, strategies, trace, progress, config, layout)
        doc = summary(scenario, results)
        table = comparison_table(doc)
        if staging is not None:
            write_run(staging.path, doc, results, render_report(run_info(scenario), results, doc))
    if args.format == "table":
        sys.stdout.write(table)
    else:
        sys.stdout.write(summary_json(doc))
        sys.stderr.write(table)
    return 0
