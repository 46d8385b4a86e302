"""The pipeline's run: plan, scan, the general path for the rest, the small tables, the outputs.

``run_pipeline`` reads the input (``--format``: trace | topics-stats | load-report | prometheus, or detected),
runs the transforms and writes under ``out`` (atomically, ``outputs``):

    topic_samples/     the canonical samples with full topic, namespace and bundle
    bundle_load/       per (timestamp, bundle): NamespaceBundleStats + short/long-term averages
    broker_load/       per (timestamp, broker): totals + TimeAverageBrokerData
    split_candidates/  per (timestamp, bundle) meeting a split condition, with reasons
    namespaces/        per namespace: its bundle boundaries (configured, or carried by the input)
    rejects/           malformed records with their reason
    broker_reports/    (load reports only) the broker-level rows

A run is, in Spark jobs:

1. **Fast path** (``fragments.plan``: the input and, with ``topic_samples/``, ``out`` reachable through
   ``pyarrow.fs``): one job scans every fragment (``columnar.scan``; cached) and counts what came back by kind.
   Rows the scan did not take go through the general path (``general_sums``) — none for a clean input.
   **General path** otherwise: Spark's readers (``reading``), native validation and resolution
   (``ingest``, ``keyed``, ``transforms``), ``topic_samples/`` written by Spark.
2. **Small tables**: the partial sums are small (one row per (timestamp, broker, bundle) and fragment).  Up to
   ``DRIVER_ROWS`` they are collected once (Arrow) and finished on the driver by ``frames`` — no more Spark
   jobs, outputs written by pyarrow; above, the same ``frames`` functions run in Spark tasks
   (``transforms``) and Spark writes the outputs, its jobs submitted together so their fixed costs overlap.

Returns a ``Summary``.  An input path that does not exist or cannot be read is an ``InputError``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.epoch import check_trace_start
from bundlewise.model.errors import InputError
from bundlewise.model.textfiles import read_json
from bundlewise.pipeline import columnar, columns, fragments, frames, ingest, keyed, reading, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries, parse_bundles_doc
from bundlewise.pipeline.locations import Location
from bundlewise.pipeline.outputs import Outputs
from bundlewise.pipeline.reading import FORMATS, check_input, read_input

__all__ = ["FORMATS", "Summary", "check_input", "format_summary", "read_bundles_file", "read_input", "run_pipeline"]

DRIVER_ROWS = 2_000_000
"""Partial-sum rows up to which the small tables are finished on the driver (about 250 MB of Arrow)."""
DIRECT_ROWS = 16_000_000
"""Input rows up to which the fast path's scan is collected in the same job (``_fast_sums``)."""
Progress = Callable[[str], None]
_PARTIAL = ["timestamp", "bundle", "namespace", "broker", *frames.SUMMED]


@dataclass
class Summary:
    rows_in: int
    rows_rejected: int
    bundles: int
    brokers: int
    time_span: tuple[int | None, int | None]
    hottest: list[dict[str, Any]]
    split_candidates: int
    reject_reasons: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    time_fallback: str | None = None  # dumps: where the time of a file that carries none came from

    def to_json(self) -> dict[str, Any]:
        return {
            "rowsIn": self.rows_in,
            "rowsRejected": self.rows_rejected,
            "rejectReasons": self.reject_reasons,
            "bundles": self.bundles,
            "brokers": self.brokers,
            "timeSpan": {"from": self.time_span[0], "to": self.time_span[1]},
            "splitCandidates": self.split_candidates,
            "hottestBundles": self.hottest,
            "outputs": self.outputs,
            "seconds": round(self.seconds, 3),
            "timeFallback": self.time_fallback,
        }


def read_bundles_file(path: str, default: Boundaries) -> Boundaries:
    return parse_bundles_doc(read_json(path), default, path)


class _Ticker:
    """Prints the running Spark stage's task progress every ``every`` seconds (stderr via ``progress``)."""

    def __init__(self, spark: Any, progress: Progress, every: float = 5.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.progress = progress
        self.every = every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info is not None:
                    self.progress(f"  stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")

    def __enter__(self) -> _Ticker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()


@dataclass
class _Sums:
    """What the reading phase hands to the small tables: partial sums, rejects, broker reports — Spark
    DataFrames, or Arrow tables already on the driver — and the cached tables to release at the end."""

    partial: DataFrame | pa.Table
    rejects: DataFrame | pa.Table | None  # None: known to hold none
    reports: DataFrame | pa.Table | None = None
    cached: list[DataFrame] = field(default_factory=list)
    clean_check: DataFrame | None = None  # a Parquet input: its row count says whether it held rejects
    rows: int | None = None  # the number of partial-sum rows, when known


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
) -> Summary:
    """Read, transform, write; returns the run's summary.

    ``write_topic_samples=False`` skips the one output as large as the input; ``columnar=False`` reads with
    Spark's readers (the general path, which the fast path is tested against); ``finish`` is ``auto``,
    ``driver`` or ``spark`` (where the small tables are computed; ``auto``: by their size); ``overwrite``
    replaces an existing non-empty ``out`` (else refused, ``outputs``); ``timestamp`` is the time of dump files
    that carry none (else their modification time).  An input without one valid record is an ``InputError``
    naming the most frequent reject reasons, and nothing is written.
    """
    t0 = time.perf_counter()

    def step(msg: str) -> None:
        progress(f"[{time.perf_counter() - t0:6.1f}s] {msg}")

    source = Location.of(input_path)
    outputs = Outputs(spark, Location.of(out), overwrite) if out is not None else None
    try:
        with _Ticker(spark, progress):
            step(f"reading {source.path or source.uri}")
            files, fs = reading.input_files(spark, source)
            fmt = fmt or reading.detect_format(spark, files, fs)
            if fmt not in FORMATS:
                raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
            samples = outputs if outputs is not None and write_topic_samples else None
            plan = None
            if columnar and fs is not None and (samples is None or samples.via_arrow):
                plan = fragments.plan(source, fmt, files, spark.sparkContext.defaultParallelism, timestamp)
            if plan is not None:
                sums = _fast_sums(spark, plan, boundaries, samples, step)
            else:
                sums = _general_sums(read_input(spark, source, fmt, timestamp), boundaries, source, samples, step)
            counts = boundaries if bundle_counts_known else None
            summary, bundles = _finish(spark, sums, config, counts, outputs, finish, step)
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
            for df in sums.cached:
                df.unpersist()
        summary.outputs = outputs.publish() if outputs is not None else {}
    except BaseException:
        if outputs is not None:
            outputs.discard()
        raise
    summary.outputs = {k: v.removeprefix("file://") for k, v in summary.outputs.items()}
    summary.seconds = time.perf_counter() - t0
    step("done")
    return summary


def _fast_sums(
    spark: Any, plan: fragments.Plan, boundaries: Boundaries, samples: Outputs | None, step: Progress
) -> _Sums:
    """``columnar.scan`` of every fragment; the rows it did not take through the general path.

    An input of up to ``DIRECT_ROWS`` rows is scanned and collected in one job (its partial sums have at
    most as many rows, in practice a few percent); a larger one is cached and counted by kind first, and its
    sums stay in Spark until their size is known.
    """
    folder = samples.folder("topic_samples") if samples is not None else None
    step(f"scanning {len(plan.fragments)} fragments ({plan.kind})")
    scan = columnar.scan(spark, plan, boundaries, folder)
    if plan.rows <= DIRECT_ROWS:
        return _collected_sums(spark, plan, boundaries, samples, scan.toArrow(), step)
    scanned = scan.cache()
    kinds = {int(r["kind"]): int(r["n"]) for r in scanned.groupBy("kind").agg(F.count(F.lit(1)).alias("n")).collect()}
    partial = scanned.where(F.col("kind") == columnar.SUMS).select(
        *[F.col(c).cast("long") if c in columns.COUNT_FIELDS else F.col(c) for c in _PARTIAL]
    )
    rejects: DataFrame | None = None
    if kinds.get(columnar.REJECT):
        rejects = scanned.where(F.col("kind") == columnar.REJECT).select("source", "record", "reason")
    reports = None
    if kinds.get(columnar.REPORT):
        records = [r["record"] for r in scanned.where(F.col("kind") == columnar.REPORT).select("record").collect()]
        reports = spark.createDataFrame(columnar.broker_reports(records), schemas.BROKER_REPORTS)
    if samples is not None and not kinds.get(columnar.SUMS):
        _schema_only_samples(spark, boundaries, samples)
    if not kinds.get(columnar.ROW) and not kinds.get(columnar.LINE):
        return _Sums(partial, rejects, reports, [scanned], rows=kinds.get(columnar.SUMS, 0))
    general, invalid = _others(spark, plan, scanned, kinds, boundaries, samples, step)
    found = [r for r in (rejects, *invalid) if r is not None]
    return _Sums(partial.unionByName(general), _union(found), reports, [scanned])


def _collected_sums(
    spark: Any,
    plan: fragments.Plan,
    boundaries: Boundaries,
    samples: Outputs | None,
    scanned: pa.Table,
    step: Progress,
) -> _Sums:
    """The scan's rows, collected: the sums, rejects and broker reports stay Arrow tables on the driver."""
    kind = scanned.column("kind")

    def of(k: int) -> pa.Table:
        return scanned.filter(pc.equal(kind, k))

    partial = of(columnar.SUMS).select(_PARTIAL)
    partial = partial.cast(
        pa.schema([f.with_type(pa.int64()) if f.name in columns.COUNT_FIELDS else f for f in partial.schema])
    )
    found: list[Any] = []
    rejects = of(columnar.REJECT)
    if rejects.num_rows:
        found.append(rejects.select(["source", "record", "reason"]).cast(_REJECTS_ARROW))
    reports = None
    records = of(columnar.REPORT)
    if records.num_rows:
        rows = columnar.broker_reports(records.column("record").to_pylist())
        reports = pa.Table.from_pylist([dict(zip(_REPORTS_ARROW.names, r, strict=True)) for r in rows], _REPORTS_ARROW)
    if samples is not None and partial.num_rows == 0:
        _schema_only_samples(spark, boundaries, samples)
    kinds = {k: of(k).num_rows for k in (columnar.ROW, columnar.LINE)}
    if not any(kinds.values()):
        return _Sums(partial, found[0] if found else None, reports, rows=partial.num_rows)
    rest = spark.createDataFrame(scanned.filter(pc.is_in(kind, pa.array([columnar.ROW, columnar.LINE], pa.int8()))))
    general, invalid = _others(spark, plan, rest, kinds, boundaries, samples, step)
    found += [r.toArrow().cast(_REJECTS_ARROW) for r in invalid]
    partial = pa.concat_tables([partial, general.select(*_PARTIAL).toArrow().cast(partial.schema)])
    return _Sums(partial, pa.concat_tables(found) if found else None, reports, rows=partial.num_rows)


def _others(
    spark: Any,
    plan: fragments.Plan,
    scanned: DataFrame,
    kinds: dict[int, int],
    boundaries: Boundaries,
    samples: Outputs | None,
    step: Progress,
) -> tuple[DataFrame, list[DataFrame]]:
    """The rows the scan left to the general path → (their partial sums, their rejects); their resolved rows
    are appended to ``topic_samples/`` by Spark."""
    step(f"resolving {kinds.get(columnar.ROW, 0) + kinds.get(columnar.LINE, 0):,} rows on the general path")
    name = plan.location.path or plan.location.uri
    rows = _other_rows(spark, plan, scanned, kinds)
    invalid: list[DataFrame] = []
    if plan.kind not in fragments.DUMP_FORMATS:
        rows, bad = ingest.validate_trace(rows, name)
        invalid.append(bad)
    resolved, unresolved = transforms.resolve(rows, boundaries, name)
    invalid.append(unresolved)
    if samples is not None:
        samples.write_frame("topic_samples", resolved, mode="append")
    return transforms.partial_bundle_sums(resolved), invalid


def _other_rows(spark: Any, plan: fragments.Plan, scanned: DataFrame, kinds: dict[int, int]) -> DataFrame:
    """The rows the scan left to the general path, as Spark's reader reads them: typed rows cast back to the
    input's column types; raw lines parsed by Spark's CSV/JSON reader."""
    parts: list[DataFrame] = []
    if kinds.get(columnar.ROW):
        typed = scanned.where(F.col("kind") == columnar.ROW)
        if plan.kind in fragments.DUMP_FORMATS:
            parts.append(typed.select(*[F.col(f.name).cast(f.dataType) for f in schemas.TOPIC_SAMPLES.fields]))
        else:
            raw = reading._read_trace(spark, plan.location.uri, plan.kind).schema
            names = [f for f in raw.fields if f.name in columnar.SCAN.names]
            parts.append(typed.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in names]))
    if kinds.get(columnar.LINE):
        lines = scanned.where(F.col("kind") == columnar.LINE).select("record")
        parts.append(reading.read_lines(spark, lines, plan.kind, plan.header))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p, allowMissingColumns=True)
    return out


def _union(frames_: list[DataFrame]) -> DataFrame | None:
    if not frames_:
        return None
    out = frames_[0]
    for f in frames_[1:]:
        out = out.unionByName(f)
    return out


def _schema_only_samples(spark: Any, boundaries: Boundaries, samples: Outputs) -> None:
    """A ``topic_samples/`` no task wrote a row to still gets a (row-less) file with its schema."""
    empty, _ = transforms.resolve(spark.createDataFrame([], schemas.TOPIC_SAMPLES), boundaries)
    samples.write_frame("topic_samples", empty, mode="append", coalesce=True)


def _general_sums(
    data: ingest.Ingested, boundaries: Boundaries, source: Location, samples: Outputs | None, step: Progress
) -> _Sums:
    """The general path: partial sums of samples read by Spark.

    Canonical topic names take ``keyed``'s fast path (numeric bundle keys, named after the aggregation) when
    the boundaries are uniform; the rest ``transforms.resolve``.  With ``topic_samples/``, the resolved rows
    are written first and the sums read back from that Parquet.
    """
    name = source.path or source.uri
    bounds = keyed.uniform_bounds(boundaries)
    if bounds is None:
        resolved, unresolved = transforms.resolve(data.samples, boundaries, name)
        rejects = data.rejects.unionByName(unresolved)
        if samples is None:
            return _Sums(transforms.partial_bundle_sums(resolved), rejects, data.broker_reports)
        step("writing topic_samples")
        written = samples.write_frame("topic_samples", resolved)
        read_back = resolved.sparkSession.read.parquet(written.uri)
        return _Sums(transforms.partial_bundle_sums(read_back), rejects, data.broker_reports)
    tagged = keyed.tag(data.samples, bounds)
    if samples is not None:
        fast_rows, others = keyed.rows_split(tagged, bounds)
        step("writing topic_samples")
        written = samples.write_frame("topic_samples", fast_rows)
        spark = fast_rows.sparkSession
        sums = transforms.partial_bundle_sums(spark.read.parquet(written.uri))
        if data.input_rows is not None and spark.read.parquet(written.uri).count() == data.input_rows.count():
            return _Sums(sums, None, data.broker_reports)  # every row canonical and valid (Parquet metadata)
        step("writing the other rows of topic_samples")
        resolved, unresolved = transforms.resolve(others, boundaries, name)
        samples.write_frame("topic_samples", resolved.select(*fast_rows.columns), mode="append")
        sums = transforms.partial_bundle_sums(spark.read.parquet(written.uri))
        return _Sums(sums, data.rejects.unionByName(unresolved), data.broker_reports)
    keyed_sums = keyed.keyed_sums(tagged).cache()
    fast_sums, other_rows = keyed.split_sums(keyed_sums, bounds)
    if other_rows == 0:  # every row canonical: no second pass over the input
        return _Sums(fast_sums, data.rejects, data.broker_reports, [keyed_sums], clean_check=data.input_rows)
    resolved, unresolved = transforms.resolve(keyed.others(tagged), boundaries, name)
    partial = fast_sums.unionByName(transforms.partial_bundle_sums(resolved))
    return _Sums(partial, data.rejects.unionByName(unresolved), data.broker_reports, [keyed_sums])


_STAGE_ARROW = to_arrow_schema(schemas.BUNDLE_STAGE)
_LOAD_ARROW = to_arrow_schema(schemas.BUNDLE_LOAD)
_BROKER_ARROW = to_arrow_schema(schemas.BROKER_LOAD)
_SPLIT_ARROW = to_arrow_schema(schemas.SPLIT_CANDIDATES)
_REJECTS_ARROW = to_arrow_schema(schemas.REJECTS)
_REPORTS_ARROW = to_arrow_schema(schemas.BROKER_REPORTS)
_NAMESPACES_ARROW = to_arrow_schema(schemas.NAMESPACES)


def _finish(
    spark: Any,
    sums: _Sums,
    config: Config,
    counts: Boundaries | None,
    outputs: Outputs | None,
    finish: str,
    step: Progress,
) -> tuple[Summary, list[str]]:
    """The small tables from the partial sums: on the driver (Arrow) when they are few, else in Spark.
    Returns the summary and the bundles seen."""
    partial, rows = sums.partial, sums.rows
    if isinstance(partial, DataFrame) and rows is None and finish == "auto":
        partial = partial.cache()
        sums.cached.append(partial)
        rows = partial.count()
    if finish == "driver" or (finish == "auto" and (rows or 0) <= DRIVER_ROWS):
        step("bundle load, time averages, broker load and split candidates (driver)")
        table = partial if isinstance(partial, pa.Table) else partial.toArrow()
        return _finish_on_driver(sums, table, config, counts, outputs)
    step("bundle load, time averages, broker load and split candidates (Spark)")
    frame = spark.createDataFrame(partial) if isinstance(partial, pa.Table) else partial
    return _finish_on_spark(spark, sums, frame, config, counts, outputs)


def _finish_on_driver(
    sums: _Sums, partial: pa.Table, config: Config, counts: Boundaries | None, outputs: Outputs | None
) -> tuple[Summary, list[str]]:
    stage = frames.bundle_stage(partial.select(_PARTIAL), config.view(SplitSettings), _STAGE_ARROW)
    overview = frames.overview(stage)
    rejects = _rejects_table(sums)
    if outputs is not None:
        cap = config.view(SplitSettings).max_bundles
        outputs.write_table("bundle_load", stage.select(_LOAD_ARROW.names).cast(_LOAD_ARROW))
        outputs.write_table("broker_load", frames.broker_load(stage, _BROKER_ARROW))
        outputs.write_table("split_candidates", frames.split_candidates(stage, cap, counts, _SPLIT_ARROW))
        outputs.write_table("rejects", rejects)
        if isinstance(sums.reports, pa.Table):
            outputs.write_table("broker_reports", sums.reports)
        elif sums.reports is not None:
            outputs.write_frame("broker_reports", sums.reports, coalesce=True)
    reasons = rejects.group_by("reason").aggregate([("reason", "count")]).to_pylist()
    rows = overview.to_pylist()
    return _summarise(rows, {r["reason"]: r["reason_count"] for r in reasons}), [r["bundle"] for r in rows]


def _rejects_table(sums: _Sums) -> pa.Table:
    if sums.rejects is None or _clean(sums):
        return _REJECTS_ARROW.empty_table()
    if isinstance(sums.rejects, pa.Table):
        return sums.rejects
    table: pa.Table = sums.rejects.toArrow()
    return table.cast(_REJECTS_ARROW)


def _clean(sums: _Sums) -> bool:
    """A Parquet input whose metadata row count equals the rows aggregated held no rejects."""
    if sums.clean_check is None or not isinstance(sums.partial, DataFrame):
        return False
    aggregated = sums.partial.agg(F.sum("rows")).first()
    return aggregated is not None and sums.clean_check.count() == int(aggregated[0] or 0)


def _finish_on_spark(
    spark: Any,
    sums: _Sums,
    partial: DataFrame,
    config: Config,
    counts: Boundaries | None,
    outputs: Outputs | None,
) -> tuple[Summary, list[str]]:
    bundle_load = transforms.bundle_load(partial, config).cache()
    sums.cached.append(bundle_load)
    found = sums.rejects
    if found is None or _clean(sums):
        rejects = spark.createDataFrame([], schemas.REJECTS)
    else:
        rejects = spark.createDataFrame(found, schemas.REJECTS) if isinstance(found, pa.Table) else found
    tables = {
        "bundle_load": bundle_load.drop("rows", "reasons"),
        "broker_load": transforms.broker_load(bundle_load),
        "split_candidates": transforms.split_candidates(bundle_load, config, counts),
        "rejects": rejects,
    }
    if sums.reports is not None:
        reports = sums.reports
        tables["broker_reports"] = (
            spark.createDataFrame(reports, schemas.BROKER_REPORTS) if isinstance(reports, pa.Table) else reports
        )
    jobs: dict[str, Callable[[], Any]] = {"": transforms.bundle_overview(bundle_load).collect}
    if outputs is not None:
        for name, df in tables.items():
            jobs[name] = functools.partial(outputs.write_frame, name, df)
    done = _concurrently(jobs)
    reasons = {r["reason"]: r["n"] for r in rejects.groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()}
    rows = [r.asDict() for r in done[""]]
    return _summarise(rows, reasons), [r["bundle"] for r in rows]


def _concurrently(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Runs Spark actions from one driver thread each: their fixed costs (scheduling, code generation)
    overlap, and actions over the same cached table compute it once (Spark shares the partitions)."""
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def _summarise(overview: list[dict[str, Any]], reasons: dict[str, int]) -> Summary:
    """The summary from the per-bundle overview rows and the count of rejects per reason."""
    rejected = sum(reasons.values())
    hottest = sorted(overview, key=lambda r: (-r["peakThroughput"], r["bundle"]))[:5]
    return Summary(
        rows_in=sum(int(r["rows"]) for r in overview) + rejected,
        rows_rejected=rejected,
        bundles=len(overview),
        brokers=len({b for r in overview for b in r["brokers"] if b is not None}),
        time_span=(min((r["t0"] for r in overview), default=None), max((r["t1"] for r in overview), default=None)),
        hottest=[
            {"bundle": r["bundle"], "peakThroughput": r["peakThroughput"], "peakMsgRate": r["peakMsgRate"]}
            for r in hottest
        ],
        split_candidates=sum(int(r["candidates"]) for r in overview),
        reject_reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
    )


def no_valid_record(s: Summary) -> str:
    """Why a run found nothing to work with (the run stops with exit status 2)."""
    if s.rows_in == 0:
        return "no valid record: the input holds no rows"
    top = "; ".join(f"{reason} ({n:,})" for reason, n in list(s.reject_reasons.items())[:3])
    return f"no valid record: all {s.rows_in:,} rows rejected; most frequent reasons: {top}"


def format_summary(s: Summary) -> str:
    """The one-screen human summary (stderr)."""
    lines = [
        f"rows in        {s.rows_in:,}",
        f"rows rejected  {s.rows_rejected:,}",
    ]
    lines += [f"  {n:>10,}  {reason}" for reason, n in s.reject_reasons.items()]
    lines += [
        f"bundles        {s.bundles:,}",
        f"brokers        {s.brokers:,}",
        f"time span      {s.time_span[0]} .. {s.time_span[1]} ms",
        *([f"  a dump file without a time of its own is at {s.time_fallback}"] if s.time_fallback else []),
        f"split candidates {s.split_candidates:,}",
        "hottest bundles (peak throughput in+out, B/s; peak msg/s):",
    ]
    lines += [f"  {h['bundle']}  {h['peakThroughput']:,.0f}  {h['peakMsgRate']:,.1f}" for h in s.hottest]
    lines.append(f"took {s.seconds:.1f}s")
    return "\n".join(lines)
