"""``bundlewise sweep``: one scenario across a grid of settings, simulated as Spark tasks.

``bundlewise sweep [--cluster CLUSTER.toml] [--workload TRACE] [--grid KEY=V1,V2 …] [--strategy NAME …]
[--seed N] [--out FILE.parquet [--overwrite]] [--format json|table] [--master URL]``

Without ``--grid`` the grid is ``loadBalancerBrokerThresholdShedderPercentage=5,10,20`` ×
``loadBalancerHistoryResourcePercentage=0.5,0.9``; the strategy axis is ``--strategy`` (``all``: every one; default: the
scenario's strategies, else Pulsar's) unless a ``strategy=…`` axis is given.
stdout: ``{"scenario": …, "rows": [{settings…, METRICS…}, …]}`` (json) or the table (table).
``--out`` writes the same rows as one Parquet file: staged beside it and renamed into place when complete
(``files.atomic``); an existing non-empty file is refused before the sweep starts unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from bundlewise.algorithms.registry import default_shedding_names, expand_all
from bundlewise.cli.common import SEED, add_out_options, add_quiet, check_range, needs_extra
from bundlewise.cli.simulate import resolve_scenario
from bundlewise.cli.traces import check_trace, load_workload, needs_spark, spark_session
from bundlewise.files import atomic
from bundlewise.sim.layout import replay_scenario
from bundlewise.sim.sweep import DEFAULT_GRID, format_rows, parse_grid, rows_table, run_sweep, validate_points


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "sweep",
        help="simulate one scenario across a grid of settings (Spark tasks)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cluster", metavar="CLUSTER.toml", help="scenario file or bundled name; default: default")
    p.add_argument(
        "--workload",
        metavar="TRACE",
        help="topic-samples trace or the pipeline's --out (a replay), as simulate reads it",
    )
    p.add_argument("--spark", action="store_true", help="read --workload through Spark's readers")
    p.add_argument(
        "--grid",
        metavar="KEY=V1,V2",
        action="append",
        default=None,
        help="one axis of the grid (repeatable): a configuration key or 'strategy'",
    )
    p.add_argument("--strategy", metavar="NAME", action="append", nargs="+", default=None)
    p.add_argument("--seed", type=int)
    add_out_options(p, "the table as one Parquet file", "FILE.parquet")
    p.add_argument("--format", choices=("json", "table"), default="json")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_range(args.seed, "--seed", *SEED)
    scenario = resolve_scenario(args.cluster).with_seed(args.seed)
    strategies = expand_all(
        [s for g in args.strategy for s in g]
        if args.strategy
        else list(scenario.strategies or default_shedding_names())
    )
    points = parse_grid(args.grid if args.grid is not None else list(DEFAULT_GRID), strategies)
    validate_points(scenario, points)
    if args.workload and (args.spark or needs_spark(args.workload)):
        check_trace(args.workload)  # before Spark starts
    staging = atomic.stage(args.out, args.overwrite, directory=False) if args.out is not None else None
    with staging if staging is not None else contextlib.nullcontext():
        spark = spark_session(args.master)  # the session of --master, also for a trace Spark reads
        with needs_extra("spark", "sweeping on Spark"):
            from bundlewise.pipeline.interrupts import quiet_interrupts
            from bundlewise.pipeline.progress import SparkProgress
        with quiet_interrupts(spark):  # Ctrl-C from here on: the jobs cancelled, one line, exit 130
            trace, layout = None, None
            if args.workload:
                workload = load_workload(args.workload, spark=spark, use_spark=args.spark)
                workload.report(args.workload)
                trace, layout = workload.trace, workload.layout
                if layout is not None:
                    scenario = replay_scenario(scenario, layout)
            master = spark.sparkContext.master
            sys.stderr.write(f"sweep: {len(points)} simulations of {scenario.name} as Spark tasks on {master}\n")
            with SparkProgress(spark, "sweep", quiet=args.quiet) as progress:
                progress.note = f"{len(points)} simulations"
                rows = run_sweep(spark, scenario, points, trace, layout)
        if staging is not None:
            import pyarrow.parquet as pq

            table = rows_table(rows)
            marked = {**(table.schema.metadata or {}), atomic.FILE_MARK: b"true"}  # --overwrite may replace it
            pq.write_table(table.replace_schema_metadata(marked), staging.path)
    if args.format == "table":
        sys.stdout.write(f"scenario: {scenario.name}\n" + format_rows(rows))
    else:
        sys.stdout.write(json.dumps({"scenario": scenario.name, "rows": rows}) + "\n")
    return 0
