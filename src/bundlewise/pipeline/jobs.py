"""The pipeline's run: the input listed, its route chosen once, the route run, the outputs published.

``run_pipeline`` reads the input (``--format``: trace | topics-stats | load-report | prometheus, or detected),
runs the transforms and writes under ``out`` (atomically, ``outputs``):

    topic_samples/     the canonical samples with full topic, namespace and bundle
    bundle_load/       per (timestamp, bundle): NamespaceBundleStats + short/long-term averages
    broker_load/       per (timestamp, broker): totals + TimeAverageBrokerData
    split_candidates/  per (timestamp, bundle) meeting a split condition, with reasons
    namespaces/        per namespace: its bundle boundaries (configured, or carried by the input)
    rejects/           malformed records with their reason
    broker_reports/    (load reports only) the broker-level rows

The route — fast or general reading × driver or Spark finish — is chosen once, before a row is read
(``routes.choose``), printed with its reason (a progress line on stderr, and the human summary), and run by its
own module (``fast_driver``, ``fast_spark``, ``general_driver``, ``general_spark``).

Returns a ``Summary``.  An input path that does not exist or cannot be read is an ``InputError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark.sql.pandas.types import to_arrow_schema

from bundlewise.config import Config
from bundlewise.model.epoch import check_trace_start
from bundlewise.model.errors import InputError
from bundlewise.model.textfiles import read_json
from bundlewise.pipeline import (
    fast_driver,
    fast_spark,
    fragments,
    frames,
    general_driver,
    general_spark,
    reading,
    routes,
    schemas,
)
from bundlewise.pipeline.boundaries import Boundaries, parse_bundles_doc
from bundlewise.pipeline.locations import Location
from bundlewise.pipeline.outputs import Outputs
from bundlewise.pipeline.progress import SparkProgress
from bundlewise.pipeline.reading import FORMATS, check_input, read_input
from bundlewise.pipeline.routes import Job, Progress
from bundlewise.pipeline.summary import Summary, format_summary, no_valid_record

__all__ = [
    "FORMATS",
    "Summary",
    "check_input",
    "format_summary",
    "no_valid_record",
    "read_bundles_file",
    "read_input",
    "run_pipeline",
]

ROUTES: dict[tuple[str, str], Callable[[Job], tuple[Summary, list[str]]]] = {
    (routes.FAST, routes.DRIVER): fast_driver.run,
    (routes.FAST, routes.SPARK): fast_spark.run,
    (routes.GENERAL, routes.DRIVER): general_driver.run,
    (routes.GENERAL, routes.SPARK): general_spark.run,
}
"""Each route's module."""
_NAMESPACES_ARROW = to_arrow_schema(schemas.NAMESPACES)


def read_bundles_file(path: str, default: Boundaries) -> Boundaries:
    return parse_bundles_doc(read_json(path), default, path)


def run_pipeline(
    spark: Any,
    input_path: str,
    fmt: str | None,
    boundaries: Boundaries,
    config: Config,
    out: str | None,
    progress: Progress = lambda _msg: None,
    bundle_counts_known: bool = False,
    write_topic_samples: bool = True,
    columnar: bool = True,
    finish: str = "auto",
    overwrite: bool = False,
    timestamp: int | None = None,
    quiet: bool = False,
) -> Summary:
    """Read, transform, write; returns the run's summary.

    ``write_topic_samples=False`` skips the one output as large as the input; ``columnar=False`` reads with
    Spark's readers (the general path, which the fast path is tested against); ``finish`` is ``auto``,
    ``driver`` or ``spark`` (where the small tables are computed; ``auto``: by the input's rows, ``routes``);
    ``overwrite`` replaces an existing non-empty ``out`` (else refused, ``outputs``); ``timestamp`` is the time of
    dump files that carry none (else their modification time).  On a terminal a progress line shows the Spark tasks done
    of total and the time (``progress.SparkProgress``), unless ``quiet``.  An input without one valid record is an
    ``InputError`` naming the most frequent reject reasons, and nothing is written.
    """
    t0 = time.perf_counter()

    def step(msg: str) -> None:
        progress(f"[{time.perf_counter() - t0:6.1f}s] {msg}")

    source = Location.of(input_path)
    outputs = Outputs(spark, Location.of(out), overwrite) if out is not None else None
    try:
        with SparkProgress(spark, "pipeline", quiet=quiet):
            step(f"reading {source.path or source.uri}")
            files, fs = reading.input_files(spark, source)
            fmt = fmt or reading.detect_format(spark, files, fs)
            if fmt not in FORMATS:
                raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
            samples = outputs if outputs is not None and write_topic_samples else None
            route = routes.choose(
                spark, source, fmt, files, fs, columnar=columnar, samples=samples, finish=finish, timestamp=timestamp
            )
            step(f"route: {route.describe()}")
            counts = boundaries if bundle_counts_known else None
            job = Job(spark, route, source, fmt, boundaries, config, counts, outputs, samples, timestamp, step)
            summary, bundles = ROUTES[(route.reading, route.finish)](job)
            summary.route = route.describe()
            if summary.rows_in == summary.rows_rejected:
                raise InputError(no_valid_record(summary), source=source.path or source.uri)
            first = summary.time_span[0]
            if first is not None:  # seconds for ms, or a date no load data has
                try:
                    check_trace_start(first, "timestamp")
                except InputError as e:
                    raise e.within(source.path or source.uri) from None
            if fmt in fragments.DUMP_FORMATS:
                summary.time_fallback = (
                    f"--timestamp {timestamp}" if timestamp is not None else "the file's modification time"
                )
            if outputs is not None:
                outputs.write_table("namespaces", frames.namespaces(bundles, boundaries, _NAMESPACES_ARROW))
        summary.outputs = outputs.publish() if outputs is not None else {}
    except BaseException:
        if outputs is not None:
            outputs.discard()
        raise
    summary.outputs = {k: v.removeprefix("file://") for k, v in summary.outputs.items()}
    summary.seconds = time.perf_counter() - t0
    step("done")
    return summary
