"""The general path's reading: the input through Spark's own data sources and Hadoop file systems.

Used when the fast path cannot read an input (a file system pyarrow does not open here, a Parquet file with
other column types, a CSV trace whose files have different headers, ``--spark-reader``), and by the simulator
to read a workload.  A trace is read by Spark's Parquet reader, its CSV reader (header, every column a string)
or its JSON reader on the file's lines (every trace field as text; permissive: a malformed line becomes a
``_corrupt_record``).  Dump files are read whole — local ones by plain Python on the executors (Hadoop paths
cannot hold the ``:`` of ``host:port``), others with ``wholeTextFiles`` — and parsed by ``dumps`` there.

``read_fragments`` reads the fragments the fast path's scan hands over (``columnar.FRAGMENT``: a text block's
byte range, a Parquet row group, a dump file) in Spark tasks of their own, through the plan's ``pyarrow.fs``:
a block's lines go to the same Spark CSV/JSON reader whole files are read with (``read_lines``), a row group's
rows are read with the column types Spark's Parquet reader gives the input, a dump file goes to ``dumps`` as
above.  Nothing passes through the driver but the fragments' names.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from bundlewise.model.errors import InputError
from bundlewise.pipeline import fragments, ingest, locations
from bundlewise.pipeline.columns import TRACE_COLUMNS
from bundlewise.pipeline.locations import Location
from bundlewise.traffic.readers import block_lines, line_blocks, sniff, trace_kind

FORMATS = ("trace", "topics-stats", "load-report", "prometheus")


def check_input(path: str) -> None:
    """A local input that does not exist, cannot be read or holds no files is bad input (exit 2), and so is a
    ``.parquet`` file whose footer pyarrow cannot read (not Parquet, or cut short): caught here, on the driver,
    before Spark's reader fails in a task with a Java stack trace.  Other locations are checked once the
    session is up (``input_files``)."""
    location = Location.of(path)
    if location.path is None:
        return
    p = location.path
    if not os.path.exists(p):
        raise InputError("no such file or directory", source=path)
    if not os.access(p, os.R_OK) or (os.path.isdir(p) and not os.access(p, os.X_OK)):
        raise InputError("permission denied", source=path)
    files = fragments.input_files(location)
    assert files is not None
    for f in files:
        if not os.access(f, os.R_OK):
            raise InputError("permission denied", source=f)
        if f.lower().endswith(".parquet"):
            try:
                pq.read_metadata(f)
            except (pa.ArrowException, OSError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise InputError(f"not a readable Parquet file: {first}", source=f) from None


def input_files(spark: Any, location: Location) -> tuple[list[str], pafs.FileSystem | None]:
    """The input's files — paths inside its pyarrow file system (with it), or URIs through Hadoop (None)."""
    files = fragments.input_files(location)
    if files is not None:
        fs, _ = location.arrow_fs() or (None, None)
        return files, fs
    found = locations.hadoop_files(spark, location)
    if found is None:
        raise InputError("no such file or directory", source=location.uri)
    if not found:
        raise InputError("directory holds no input files", source=location.uri)
    return found, None


def detect_format(spark: Any, files: Sequence[str], fs: pafs.FileSystem | None) -> str:
    """``fragments.detect_format`` through pyarrow, or through Hadoop for the first bytes of a ``.json`` file
    (``traffic.readers.sniff`` decides)."""
    if fs is not None:
        return fragments.detect_format(fs, files)
    head = b""
    if os.path.splitext(files[0])[1].lower() == ".json":
        row = spark.read.text(files[0], wholetext=True).head()
        head = (row[0] if row is not None else "")[: 1 << 16].encode()
    return sniff(files[0], head)


def read_input(spark: Any, path: str | Location, fmt: str | None, timestamp: int | None = None) -> ingest.Ingested:
    """The input as canonical samples and rejects, read by Spark (the general path).  ``timestamp``: the time of
    dump files that carry none (else a local file's modification time)."""
    location = path if isinstance(path, Location) else Location.of(path)
    files, fs = input_files(spark, location)
    fmt = fmt or detect_format(spark, files, fs)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    source = location.path or location.uri
    try:
        if fmt == "trace":
            kind = trace_kind(files, source)
            raw = read_trace(spark, location.uri, kind)
            samples, rejects = ingest.validate_trace(raw, source)
            return ingest.Ingested(samples, rejects, input_rows=raw if kind == "parquet" else None)
        sc = spark.sparkContext
        if location.is_local:
            names = list(files)
            read = functools.partial(_read_text, timestamp=timestamp)
            texts = sc.parallelize(names, max(1, min(len(names), sc.defaultParallelism * 4))).map(read)
        else:
            texts = sc.wholeTextFiles(location.uri, minPartitions=sc.defaultParallelism).map(
                lambda item: (item[0], item[1], timestamp)
            )
        return ingest.samples_from_dumps(spark, texts, fmt)
    except AnalysisException as e:
        raise InputError(f"cannot read as {fmt}: {str(e).splitlines()[0]}", source=source) from None


def _json_schema() -> Any:
    """JSON Lines are read with every trace field as text (a number's literal, as written): each value is then
    judged alone by ``ingest.validate_trace``, never by a type inferred from other lines."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([StructField(c, StringType(), True) for c in (*TRACE_COLUMNS, ingest.CORRUPT)])


def read_trace(spark: Any, uri: str, kind: str) -> Any:
    """A trace's files read by Spark's reader of ``kind`` (``parquet``, ``csv``, ``json``), not yet validated."""
    reader = spark.read
    if kind == "parquet":
        return reader.parquet(uri)
    if kind == "csv":
        return reader.option("header", "true").option("mode", "PERMISSIVE").csv(uri)
    # lines first, then Spark's JSON reader on them: the very code that reads lines the fast path hands over
    return read_lines(spark, reader.text(uri), "json", ())


def read_lines(spark: Any, lines: Any, kind: str, header: Sequence[str]) -> Any:
    """Raw lines of a CSV/JSON trace (a one-column DataFrame) parsed by Spark's own reader, with the options
    ``read_trace`` reads whole files with (the CSV header given, every column a string)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StringType, StructField, StructType

    jvm = spark.sparkContext._jvm
    text = getattr(lines._jdf, "as")(jvm.org.apache.spark.sql.Encoders.STRING())  # a Dataset[String]
    if kind == "csv":
        schema = StructType([StructField(c, StringType(), True) for c in header])
        jdf = spark.read.schema(schema).option("header", "false").option("mode", "PERMISSIVE")._jreader.csv(text)
    else:
        jdf = spark.read.schema(_json_schema()).option("mode", "PERMISSIVE")._jreader.json(text)
    return DataFrame(jdf, spark)


def read_fragments(spark: Any, plan: fragments.Plan, handed: Sequence[fragments.Fragment]) -> ingest.Ingested:
    """The fragments a scan handed over, read by Spark's readers as the whole input would be: validated samples
    and rejects (and, for load reports, the broker rows).  Rejects name the input, as ``read_input``'s do."""
    source = plan.location.path or plan.location.uri
    parts = max(1, min(len(handed), spark.sparkContext.defaultParallelism * 4))
    if plan.kind in fragments.DUMP_FORMATS:
        read = functools.partial(_read_dump, plan)
        texts = spark.sparkContext.parallelize([f.files[0] for f in handed], parts).map(read)
        return ingest.samples_from_dumps(spark, texts, plan.kind)
    tasks = spark.range(0, len(handed), 1, numPartitions=parts)
    if plan.kind == "parquet":
        raw = read_trace(spark, plan.location.uri, "parquet").schema
        typed = StructType([f for f in raw.fields if f.name in TRACE_COLUMNS])
        rows = tasks.mapInArrow(functools.partial(_row_groups, plan, list(handed), to_arrow_schema(typed)), typed)
        samples, rejects = ingest.validate_trace(rows, source)
        return ingest.Ingested(samples, rejects)
    lines = tasks.mapInArrow(functools.partial(_block_lines, plan, list(handed)), "value string")
    samples, rejects = ingest.validate_trace(read_lines(spark, lines, plan.kind, plan.header), source)
    return ingest.Ingested(samples, rejects)


def _row_groups(
    plan: fragments.Plan, handed: list[fragments.Fragment], schema: pa.Schema, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The task's row groups, with the column types Spark's Parquet reader reads the input with."""
    fs, _ = plan.location.arrow_fs() or (pafs.LocalFileSystem(), "")
    for batch in batches:
        for i in batch.column(0).to_pylist():
            fragment = handed[i]
            with fs.open_input_file(fragment.files[0]) as handle:
                f = pq.ParquetFile(handle)
                present = [c for c in schema.names if c in f.schema_arrow.names]
                table = f.read_row_groups(list(fragment.row_groups or ()), columns=present, use_threads=False)
            n = table.num_rows
            columns = [
                table.column(c).cast(t) if c in present else pa.nulls(n, t)
                for c, t in zip(schema.names, schema.types, strict=True)
            ]
            yield from pa.Table.from_arrays(columns, schema=schema).to_batches()


def _block_lines(
    plan: fragments.Plan, handed: list[fragments.Fragment], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The task's text blocks as lines (blank lines dropped, as Spark's readers drop them)."""
    fs, _ = plan.location.arrow_fs() or (pafs.LocalFileSystem(), "")
    for batch in batches:
        for i in batch.column(0).to_pylist():
            fragment = handed[i]
            with fs.open_input_file(fragment.files[0]) as f:
                blocks = line_blocks(f, fragment.start, fragment.end, plan.kind == "csv", plan.block_bytes)
                lines = [line for _offset, block in blocks for line in block_lines(block)]
            yield pa.record_batch([pa.array(lines, pa.string())], names=["value"])


def _read_dump(plan: fragments.Plan, path: str) -> tuple[str, str, int | None]:
    """A dump file of a plan (through its ``pyarrow.fs``): its name, text and the time it takes when it carries
    none."""
    fs, _ = plan.location.arrow_fs() or (pafs.LocalFileSystem(), "")
    with fs.open_input_stream(path) as f:
        text = f.read().decode("utf-8", errors="replace")
    return path, text, fragments.dump_time(plan, fs, path)


def _read_text(name: str, timestamp: int | None = None) -> tuple[str, str, int | None]:
    with open(name, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    return name, text, timestamp if timestamp is not None else os.stat(name).st_mtime_ns // 1_000_000


def simulation_samples(spark: Any, path: str, recorded: bool) -> tuple[Any, dict[str, int], Any]:
    """What ``simulate --spark`` needs of an input, as Arrow on the driver: the samples (``timestamp``, ``topic``,
    ``broker``, ``bundle``, the rates and counts), the rejects per reason, and the (timestamp, bundle, broker)
    triples a replay's layout is read from — from the input's own ``bundle`` column when it is a pipeline output
    (``recorded``), else from the bundles dumps carry (None when there are none)."""
    from pyspark.sql import functions as F

    from bundlewise.pipeline.columns import COUNT_FIELDS, RATE_FIELDS

    ingested = read_input(spark, path, None)
    samples = ingested.samples
    table = samples.select("timestamp", "topic", "broker", "bundle", *RATE_FIELDS, *COUNT_FIELDS).toArrow()
    reasons = {
        r["reason"]: int(r["n"]) for r in ingested.rejects.groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    if recorded:
        raw = spark.read.parquet(Location.of(path).uri)
        if "topic" not in raw.columns:
            raise InputError("a bundle_load/ recording is read without a JVM only (drop --spark)", source=path)
        firsts = raw.select("timestamp", "bundle", "broker").distinct().toArrow()
    else:
        carried = samples.where(F.col("bundle").isNotNull()).select("timestamp", "bundle", "broker").distinct()
        firsts = carried.toArrow()
        firsts = firsts if firsts.num_rows else None
    return table, reasons, firsts
