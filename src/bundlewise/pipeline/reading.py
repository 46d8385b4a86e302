"""The general path's reading: the input through Spark's own data sources and Hadoop file systems.

Used when the fast path cannot read an input (a file system pyarrow does not open here, a Parquet file with
other column types, a CSV trace whose files have different headers, ``--spark-reader``), and by the simulator
to read a workload.  A trace is read by Spark's Parquet reader, its CSV reader (header, every column a string)
or its JSON reader on the file's lines (every trace field as text; permissive: a malformed line becomes a
``_corrupt_record``) — the same reader that parses the lines the fast path hands over (``read_lines``).  Dump
files are read whole — local ones by plain Python on the executors (Hadoop paths cannot hold the ``:`` of
``host:port``), others with ``wholeTextFiles`` — and parsed by ``dumps`` there.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.errors import AnalysisException

from bundlewise.model.errors import InputError
from bundlewise.pipeline import fragments, ingest, locations
from bundlewise.pipeline.columns import TRACE_COLUMNS
from bundlewise.pipeline.locations import Location
from bundlewise.traffic.readers import sniff, trace_kind

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
            raw = _read_trace(spark, location.uri, kind)
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


def _read_trace(spark: Any, uri: str, kind: str) -> Any:
    reader = spark.read
    if kind == "parquet":
        return reader.parquet(uri)
    if kind == "csv":
        return reader.option("header", "true").option("mode", "PERMISSIVE").csv(uri)
    # lines first, then Spark's JSON reader on them: the very code that reads lines the fast path hands over
    return read_lines(spark, reader.text(uri), "json", ())


def read_lines(spark: Any, lines: Any, kind: str, header: Sequence[str]) -> Any:
    """Raw lines of a CSV/JSON trace (a one-column DataFrame) parsed by Spark's own reader, with the options
    ``_read_trace`` reads whole files with (the CSV header given, every column a string)."""
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
