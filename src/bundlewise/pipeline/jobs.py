"""The pipeline job: reads, routes, writes (besides it, only ``columnar``'s tasks touch paths).

``run_pipeline`` reads the input (``--format``: trace | topics-stats | load-report | prometheus, or
detected from the file names), runs the transforms and writes under ``out``:

    topic_samples/     the canonical samples with full topic, namespace and bundle
    bundle_load/       per (timestamp, bundle): NamespaceBundleStats + short/long-term averages
    broker_load/       per (timestamp, broker): totals + TimeAverageBrokerData
    split_candidates/  per (timestamp, bundle) meeting a split condition, with reasons
    rejects/           malformed records with their reason
    broker_reports/    (load reports only) the broker-level rows

and returns a ``Summary``.  An input path that does not exist or cannot be read is an ``InputError``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.pipeline import columnar, ingest, keyed, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries, parse_bundles_doc

FORMATS = ("trace", "topics-stats", "load-report", "prometheus")
TRACE_EXTENSIONS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
PROM_EXTENSIONS = (".prom", ".txt", ".metrics")
Progress = Callable[[str], None]
_OVERVIEW = " overview"
"""The overview's key among the concurrent jobs (no output is named so)."""


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
        }


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def _files(path: str) -> list[str]:
    p = _local(path)
    if os.path.isdir(p):
        out: list[str] = []
        for root, _dirs, names in os.walk(p):
            out.extend(os.path.join(root, n) for n in names if not n.startswith((".", "_")))
        return sorted(out)
    return [p]


def check_input(path: str) -> None:
    """An unreadable input path is bad input (exit 2)."""
    if not _is_local(path):
        return
    p = _local(path)
    if not os.path.exists(p):
        raise InputError("no such file or directory", source=path)
    if not os.access(p, os.R_OK) or (os.path.isdir(p) and not os.access(p, os.X_OK)):
        raise InputError("permission denied", source=path)
    files = _files(path)
    if not files:
        raise InputError("directory holds no input files", source=path)
    for f in files:
        if not os.access(f, os.R_OK):
            raise InputError("permission denied", source=f)


def detect_format(path: str) -> str:
    """``trace`` unless the files are ``.prom``/``.txt`` (Prometheus) or JSON dumps (sniffed)."""
    if not _is_local(path):
        return "trace"
    files = _files(path)
    ext = os.path.splitext(files[0])[1].lower()
    if ext in PROM_EXTENSIONS:
        return "prometheus"
    if ext == ".json":
        with open(files[0], encoding="utf-8", errors="replace") as fh:
            head = fh.read(1 << 16).lstrip()
        if head.startswith("{") and "\n{" not in head[:4096]:
            if '"lastStats"' in head or '"report"' in head or '"bandwidthIn"' in head:
                return "load-report"
            return "topics-stats"
    return "trace"


def read_bundles_file(path: str, default: Boundaries) -> Boundaries:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=path) from None
    except ValueError as e:
        raise InputError(f"not JSON: {e}", source=path) from None
    return parse_bundles_doc(doc, default, path)


def _read_trace(spark: Any, path: str) -> Any:
    exts = {os.path.splitext(f)[1].lower() for f in _files(path)} if _is_local(path) else {".parquet"}
    kinds = {TRACE_EXTENSIONS.get(e) for e in exts}
    if len(kinds) != 1 or None in kinds:
        raise InputError(
            f"trace files must all be .parquet, .csv or .jsonl (found {', '.join(sorted(exts))})", source=path
        )
    kind = kinds.pop()
    reader = spark.read
    if kind == "parquet":
        return reader.parquet(path)
    if kind == "csv":
        return reader.option("header", "true").option("mode", "PERMISSIVE").csv(path)
    return reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", ingest.CORRUPT).json(path)


def _is_parquet(path: str) -> bool:
    return not _is_local(path) or all(f.lower().endswith(".parquet") for f in _files(path))


def read_input(spark: Any, path: str, fmt: str | None) -> ingest.Ingested:
    check_input(path)
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    try:
        if fmt == "trace":
            raw = _read_trace(spark, path)
            samples, rejects = ingest.validate_trace(raw, path)
            counted = raw if _is_parquet(path) else None
            return ingest.Ingested(samples, rejects, input_rows=counted)
        sc = spark.sparkContext
        if _is_local(path):
            # read on the executors by plain Python: Hadoop paths cannot hold the ':' of BROKER:PORT@TS names
            names = _files(path)
            files = sc.parallelize(names, max(1, min(len(names), sc.defaultParallelism * 4))).map(_read_text)
        else:
            files = sc.wholeTextFiles(path, minPartitions=sc.defaultParallelism)
        return ingest.samples_from_dumps(spark, files, fmt)
    except AnalysisException as e:
        raise InputError(f"cannot read as {fmt}: {str(e).splitlines()[0]}", source=path) from None


def _read_text(name: str) -> tuple[str, str]:
    with open(name, encoding="utf-8", errors="replace") as fh:
        return name, fh.read()


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
) -> Summary:
    """Read, transform, write; returns the run's summary.

    ``write_topic_samples=False`` skips the one output as large as the input (fleet-scale runs);
    ``columnar=False`` reads a local Parquet trace with Spark's reader instead of ``columnar.scan`` (the
    general path, which the columnar scan is tested against).
    """
    t0 = time.perf_counter()

    def step(msg: str) -> None:
        progress(f"[{time.perf_counter() - t0:6.1f}s] {msg}")

    outputs: dict[str, str] = {}
    with _Ticker(spark, progress):
        step(f"reading {input_path}")
        samples_out = out if write_topic_samples else None
        fragments = _columnar_plan(spark, input_path, fmt) if columnar else None
        broker_reports: DataFrame | None = None
        input_rows: DataFrame | None = None
        if fragments is not None:
            partial, rejects, cached = _columnar_sums(
                spark, fragments, boundaries, input_path, samples_out, outputs, step
            )
        else:
            data = read_input(spark, input_path, fmt)
            broker_reports, input_rows = data.broker_reports, data.input_rows
            partial, rejects, cached = _bundle_sums(data, boundaries, input_path, samples_out, outputs, step)
        bundle_load = transforms.bundle_load(partial, config).cache()
        counts = boundaries if bundle_counts_known else None

        def tables(rejects: DataFrame) -> dict[str, DataFrame]:
            found = {
                "bundle_load": bundle_load.drop("rows", "reasons"),
                "broker_load": transforms.broker_load(bundle_load),
                "split_candidates": transforms.split_candidates(bundle_load, config, counts),
                "rejects": rejects,
            }
            if broker_reports is not None:
                found["broker_reports"] = broker_reports
            return found

        def overview() -> list[Any]:
            return transforms.bundle_overview(bundle_load).collect()

        if rejects is None:  # known clean: the summary and every output at once (their jobs' fixed costs overlap)
            step("aggregating bundle load and time averages; writing the outputs")
            done = _concurrently({_OVERVIEW: overview, **_writes(tables(_no_rejects(spark)), out)})
            rows = done.pop(_OVERVIEW)
            outputs.update(done)
            reasons: dict[str, int] = {}
        else:
            step("aggregating bundle load and time averages")
            rows = overview()
            # a Parquet input counts its rows from metadata: a clean input needs no scan for rejects
            clean = input_rows is not None and input_rows.count() == sum(r["rows"] for r in rows)
            step("writing the outputs")
            outputs.update(_concurrently(_writes(tables(_no_rejects(spark) if clean else rejects), out)))
            reasons = {} if clean else _reasons(spark.read.parquet(outputs["rejects"]) if out is not None else rejects)
        step("summarising")
        summary = _summarise(rows, reasons)
        bundle_load.unpersist()
        if cached is not None:
            cached.unpersist()
    summary.outputs = outputs
    summary.seconds = time.perf_counter() - t0
    step("done")
    return summary


def _bundle_sums(
    data: ingest.Ingested,
    boundaries: Boundaries,
    source: str,
    samples_out: str | None,
    outputs: dict[str, str],
    step: Progress,
) -> tuple[DataFrame, DataFrame | None, DataFrame | None]:
    """``(partial sums per (timestamp, bundle, namespace, broker), rejects (None: none), table to unpersist)``.

    Canonical topic names take ``keyed``'s fast path (numeric bundle keys, named after the aggregation) when
    the boundaries are uniform; the rest ``transforms.resolve``.  With ``samples_out``, the resolved rows are
    first written to ``topic_samples/`` and the sums read back from that Parquet.  Without, one pass over the
    input builds the (small, cached) keyed sums, which also count the other rows: only when there are some
    does a second pass resolve them.
    """
    bounds = keyed.uniform_bounds(boundaries)
    if bounds is None:
        resolved, unresolved = transforms.resolve(data.samples, boundaries, source)
        if samples_out is None:
            return transforms.partial_bundle_sums(resolved), data.rejects.unionByName(unresolved), None
        return _written_sums(resolved, samples_out, outputs, step), data.rejects.unionByName(unresolved), None
    tagged = keyed.tag(data.samples, bounds)
    if samples_out is not None:
        sums, unresolved, cached = _written_fast_sums(
            data, tagged, bounds, boundaries, source, samples_out, outputs, step
        )
        return sums, data.rejects.unionByName(unresolved), cached
    sums = keyed.keyed_sums(tagged).cache()
    fast_sums, other_rows = keyed.split_sums(sums, bounds)
    if other_rows == 0:  # every row canonical: no second pass over the input
        return fast_sums, data.rejects, sums
    resolved, unresolved = transforms.resolve(keyed.others(tagged), boundaries, source)
    return fast_sums.unionByName(transforms.partial_bundle_sums(resolved)), data.rejects.unionByName(unresolved), sums


def _columnar_plan(spark: Any, path: str, fmt: str | None) -> list[columnar.Fragment] | None:
    """The fragments of a local Parquet trace that ``columnar`` reads, else None (the general path)."""
    check_input(path)
    if (fmt or detect_format(path)) != "trace" or not _is_local(path) or not _is_parquet(path):
        return None
    return columnar.plan(_files(path), spark.sparkContext.defaultParallelism)


def _columnar_sums(
    spark: Any,
    fragments: list[columnar.Fragment],
    boundaries: Boundaries,
    source: str,
    samples_out: str | None,
    outputs: dict[str, str],
    step: Progress,
) -> tuple[DataFrame, DataFrame | None, DataFrame | None]:
    """``columnar.scan`` of a local Parquet trace: clean rows summed (and written to ``topic_samples/``) by the
    tasks; the other rows, if any, through the general path (validation, ``transforms.resolve``) with the
    column types the input has."""
    samples_dir = None
    if samples_out is not None:
        samples_dir = outputs["topic_samples"] = _fresh_dir(samples_out, "topic_samples")
    step(f"scanning {len(fragments)} fragments (columnar)")
    scanned = columnar.scan(spark, fragments, boundaries, samples_dir).cache()
    counted = scanned.agg(F.count(F.when(F.col("rows").isNull(), 1)).alias("others")).first()
    others = int(counted["others"]) if counted is not None else 0
    sums = scanned.where(F.col("rows").isNotNull()).select(
        "timestamp",
        "bundle",
        "broker",
        *[F.col(c).cast("long") if c in schemas.COUNT_FIELDS else F.col(c) for c in schemas.SUM_FIELDS],
        "rows",
        "namespace",
    )
    if others == 0:
        _ensure_schema(spark, samples_dir, boundaries)
        return sums, None, scanned
    step(f"resolving {others:,} rows on the general path")
    raw = _read_trace(spark, source).schema
    rows = scanned.where(F.col("rows").isNull()).select(
        *[F.col(f.name).cast(f.dataType).alias(f.name) for f in raw.fields if f.name in columnar.SCAN.names]
    )
    samples, invalid = ingest.validate_trace(rows, source)
    resolved, unresolved = transforms.resolve(samples, boundaries, source)
    if samples_dir is not None:
        _write(resolved, os.path.dirname(samples_dir), "topic_samples", mode="append")
    return (sums.unionByName(transforms.partial_bundle_sums(resolved)), invalid.unionByName(unresolved), scanned)


def _ensure_schema(spark: Any, samples_dir: str | None, boundaries: Boundaries) -> None:
    """A ``topic_samples/`` no task wrote a row to still gets a (row-less) file with its schema."""
    if samples_dir is None or any(f.endswith(".parquet") for f in os.listdir(samples_dir)):
        return
    empty, _ = transforms.resolve(spark.createDataFrame([], schemas.TOPIC_SAMPLES), boundaries)
    _write(empty, os.path.dirname(samples_dir), "topic_samples", mode="append")


def _fresh_dir(out: str, name: str) -> str:
    """``out/name`` emptied for tasks that write their own files into it (Spark's overwrite, by hand)."""
    path = os.path.join(_local(out), name)
    try:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
        os.makedirs(path)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror}", source=path) from None
    return path


def _written_sums(resolved: DataFrame, out: str, outputs: dict[str, str], step: Progress) -> DataFrame:
    """Writes ``topic_samples/`` and returns the partial bundle sums read back from it."""
    step("writing topic_samples")
    outputs["topic_samples"] = _write(resolved, out, "topic_samples")
    return transforms.partial_bundle_sums(resolved.sparkSession.read.parquet(outputs["topic_samples"]))


def _written_fast_sums(
    data: ingest.Ingested,
    tagged: DataFrame,
    bounds: tuple[int, ...],
    boundaries: Boundaries,
    source: str,
    out: str,
    outputs: dict[str, str],
    step: Progress,
) -> tuple[DataFrame, DataFrame, None]:
    """``topic_samples/`` on the fast path: the canonical rows are written first (one pass over the input).

    When the input's row count is cheap (Parquet metadata) and equals the rows written (also metadata), every
    row was valid and canonical: no second pass.  Otherwise the other rows are resolved and appended, and
    their rejects returned.  Returns the partial bundle sums read back from ``topic_samples/``.
    """
    spark = tagged.sparkSession
    fast_rows, others = keyed.rows_split(tagged, bounds)
    step("writing topic_samples")
    path = outputs["topic_samples"] = _write(fast_rows, out, "topic_samples")
    if data.input_rows is not None and spark.read.parquet(path).count() == data.input_rows.count():
        unresolved = spark.createDataFrame([], schemas.REJECTS)
    else:
        step("writing the other rows of topic_samples")
        resolved, unresolved = transforms.resolve(others, boundaries, source)
        _write(resolved.select(*fast_rows.columns), out, "topic_samples", mode="append")
    return transforms.partial_bundle_sums(spark.read.parquet(path)), unresolved, None


def _write(df: DataFrame, out: str, name: str, mode: str = "overwrite") -> str:
    path = os.path.join(out, name)
    try:
        df.write.mode(mode).parquet(path)
    except AnalysisException as e:
        raise InputError(f"cannot write: {str(e).splitlines()[0]}", source=path) from None
    return path


def _writes(tables: dict[str, DataFrame], out: str | None) -> dict[str, Callable[[], Any]]:
    """One job per table writing it to ``out/<name>`` (none without ``out``)."""
    if out is None:
        return {}
    return {name: functools.partial(_write, df, out, name) for name, df in tables.items()}


def _concurrently(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Runs Spark actions from one driver thread each: their fixed costs (scheduling, code generation)
    overlap, and actions over the same cached table compute it once (Spark shares the partitions)."""
    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def _no_rejects(spark: Any) -> DataFrame:
    empty: DataFrame = spark.createDataFrame([], schemas.REJECTS)
    return empty


def _reasons(rejects: DataFrame) -> dict[str, int]:
    return {r["reason"]: r["n"] for r in rejects.groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()}


def _summarise(overview: list[Any], reasons: dict[str, int]) -> Summary:
    """The summary from the collected ``bundle_overview`` rows and the count of rejects per reason."""
    rejected = sum(reasons.values())
    hottest = sorted(overview, key=lambda r: (-r["peakThroughput"], r["bundle"]))[:5]
    return Summary(
        rows_in=sum(int(r["rows"]) for r in overview) + rejected,
        rows_rejected=rejected,
        bundles=len(overview),
        brokers=len({b for r in overview for b in r["brokers"]}),
        time_span=(min((r["t0"] for r in overview), default=None), max((r["t1"] for r in overview), default=None)),
        hottest=[
            {"bundle": r["bundle"], "peakThroughput": r["peakThroughput"], "peakMsgRate": r["peakMsgRate"]}
            for r in hottest
        ],
        split_candidates=sum(int(r["candidates"]) for r in overview),
        reject_reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
    )


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
        f"split candidates {s.split_candidates:,}",
        "hottest bundles (peak throughput in+out, B/s; peak msg/s):",
    ]
    lines += [f"  {h['bundle']}  {h['peakThroughput']:,.0f}  {h['peakMsgRate']:,.1f}" for h in s.hottest]
    lines.append(f"took {s.seconds:.1f}s")
    return "\n".join(lines)
