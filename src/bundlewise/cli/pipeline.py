"""``bundlewise pipeline``: raw topic statistics → bundle and broker load on Spark (docs/pipeline.md).

Prints the run's summary as one JSON document on stdout; the one-screen human summary and the
progress lines go to stderr.  PySpark is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys

from bundlewise.cli.common import add_config_options, config_from_args, needs_extra
from bundlewise.config.views import SplitSettings
from bundlewise.model.errors import InputError

FORMATS = ("trace", "topics-stats", "load-report", "prometheus")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pipeline",
        help="turn topic statistics into bundle/broker load data on Apache Spark",
        description="Read topic samples (a canonical trace in Parquet/CSV/JSON Lines, Pulsar broker-stats/topics "
        "dumps, load-report dumps or Prometheus text dumps), map topics to bundles (CRC-32), and write "
        "topic_samples/, bundle_load/ (with Pulsar's short/long-term averages), broker_load/, split_candidates/ "
        "and rejects/ as Parquet under --out. Runs in Spark local mode unless --master is given.",
    )
    p.add_argument("--input", required=True, metavar="PATH", help="a file or a directory of files")
    p.add_argument("--format", choices=FORMATS, help="input format (default: detected from the file names)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--bundles",
        type=int,
        metavar="N",
        help="every namespace has N equal bundles (default: defaultNumberOfNamespaceBundles)",
    )
    g.add_argument(
        "--bundles-file",
        metavar="F",
        help='JSON {"boundaries": [...]} for every namespace, or {"tenant/ns": {"boundaries": [...]}}',
    )
    p.add_argument("--out", metavar="DIR", help="write the Parquet datasets here (default: summary only)")
    p.add_argument(
        "--no-topic-samples",
        action="store_true",
        help="do not write topic_samples/ (the one output as large as the input)",
    )
    p.add_argument(
        "--spark-reader",
        action="store_true",
        help="read a local Parquet trace with Spark's own reader instead of the columnar scan "
        "(Arrow in the Spark tasks; the default, several times faster)",
    )
    p.add_argument(
        "--master",
        metavar="URL",
        help="Spark master (default: spark-submit's --master or spark-defaults.conf, else local[*])",
    )
    add_config_options(p)
    p.set_defaults(func=run)


def _progress(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    with needs_extra("spark", "the pipeline"):
        from bundlewise.pipeline import jobs
        from bundlewise.pipeline.boundaries import Boundaries
        from bundlewise.pipeline.session import run_session

    n = args.bundles if args.bundles is not None else config.view(SplitSettings).default_bundles
    try:
        boundaries = Boundaries.of_count(n)
    except InputError as e:
        raise InputError(str(e), field="--bundles") from None
    if args.bundles_file:
        boundaries = jobs.read_bundles_file(args.bundles_file, boundaries)
    jobs.check_input(args.input)
    with run_session(args.master) as spark:
        summary = jobs.run_pipeline(
            spark,
            args.input,
            args.format,
            boundaries,
            config,
            args.out,
            _progress,
            bundle_counts_known=args.bundles is not None or args.bundles_file is not None,
            write_topic_samples=not args.no_topic_samples,
            columnar=not args.spark_reader,
        )
    sys.stderr.write(jobs.format_summary(summary) + "\n")
    sys.stdout.write(json.dumps(summary.to_json()) + "\n")
    return 0
