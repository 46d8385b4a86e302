"""``bundlewise pipeline``: raw topic statistics → bundle and broker load on Spark (docs/pipeline.md).

Prints the run's summary as one JSON document on stdout (``--format table``: the one-screen human summary
instead); progress lines go to stderr.  PySpark is imported only when the command runs.

``--input-format`` names what the input is; ``--format`` chooses the output, as in every command.  The old
spelling ``--format trace|topics-stats|load-report|prometheus`` still works for this release, with a warning.
``--out`` follows the policy of every command (``files.atomic``): refused when it exists and is not empty
unless ``--overwrite``, checked before Spark starts; Ctrl-C cancels the Spark jobs and leaves it as it was.
"""

from __future__ import annotations

import argparse
import json
import sys

from bundlewise.cli.common import (
    add_config_options,
    add_out_options,
    add_quiet,
    check_bundle_count,
    config_from_args,
    needs_extra,
    start_session,
)
from bundlewise.config.views import SplitSettings
from bundlewise.files import atomic
from bundlewise.model.errors import InputError
from bundlewise.model.snapshot import parse_timestamp

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
    p.add_argument(
        "--input-format", choices=FORMATS, help="what the input is (default: detected from the file names and content)"
    )
    p.add_argument(
        "--format",
        choices=("json", "table", *FORMATS),
        default=None,
        help="output: the summary as JSON (default) or a table for people "
        f"({', '.join(FORMATS)} here are the old spelling of --input-format)",
    )
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
    add_out_options(p, "the Parquet datasets into this folder (default: the summary only)")
    p.add_argument(
        "--timestamp",
        metavar="MS|ISO-8601",
        help="the time of dump files that carry none (no wrapper, no BROKER@MS file name, no lastUpdate or "
        "sample timestamps); default: each such file's modification time",
    )
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
    add_quiet(p)
    add_config_options(p)
    p.set_defaults(func=run)


def _progress(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def _input_format(args: argparse.Namespace) -> str | None:
    """``--input-format``, or the old spelling ``--format INPUT_FORMAT`` (with a warning)."""
    if args.format in FORMATS:
        if args.input_format is not None and args.input_format != args.format:
            raise InputError(
                f"names the input format {args.format!r} while --input-format says {args.input_format!r}",
                field="--format",
            )
        sys.stderr.write(
            f"warning: --format {args.format} is the old spelling of --input-format {args.format}; "
            "--format now chooses the output (json or table) and will refuse input formats in the next release\n"
        )
        return str(args.format)
    return None if args.input_format is None else str(args.input_format)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    fmt = _input_format(args)
    timestamp = parse_timestamp(args.timestamp, "--timestamp") if args.timestamp is not None else None
    with needs_extra("spark", "the pipeline"):
        from bundlewise.pipeline import jobs
        from bundlewise.pipeline.boundaries import Boundaries
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.locations import Location
        from bundlewise.pipeline.session import run_session

    n = args.bundles if args.bundles is not None else config.view(SplitSettings).default_bundles
    check_bundle_count(n, config)
    boundaries = Boundaries.of_count(n)
    if args.bundles_file:
        boundaries = jobs.read_bundles_file(args.bundles_file, boundaries)
    jobs.check_input(args.input)
    if args.out is not None and (not args.out or Location.of(args.out).path is not None):
        atomic.check(args.out, args.overwrite)  # refused before Spark starts
    try:
        with start_session(run_session, args.master) as spark, quiet_interrupts(spark):
            summary = jobs.run_pipeline(
                spark,
                args.input,
                fmt,
                boundaries,
                config,
                args.out,
                _progress,
                bundle_counts_known=args.bundles is not None or args.bundles_file is not None,
                write_topic_samples=not args.no_topic_samples,
                columnar=not args.spark_reader,
                overwrite=args.overwrite,
                timestamp=timestamp,
                quiet=args.quiet,
            )
    except KeyboardInterrupt:
        raise atomic.Interrupted(args.out) from None
    if args.format == "table":
        sys.stdout.write(jobs.format_summary(summary) + "\n")
    else:
        sys.stderr.write(jobs.format_summary(summary) + "\n")
        sys.stdout.write(json.dumps(summary.to_json()) + "\n")
    return 0
