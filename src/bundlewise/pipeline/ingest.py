"""Ingest: every input format into ONE canonical topic-samples table plus a rejects table.

* ``validate_trace(raw, source)``: a canonical trace read as a DataFrame (Parquet, CSV or JSON
  Lines; docs/pipeline.md) → typed samples + rejects.  The rules are ``traffic.rules`` (the one set, which the
  simulator applies without a JVM): here native expressions stand in for them (no Python per row), proven
  equal row by row in ``tests/test_trace_rules.py`` — Spark's cast of a text number is the JVM's reading the
  rules follow, and ISO-8601 texts pass the rules' pattern before Spark's timestamp cast.
* ``samples_from_dumps(spark, files, fmt)``: ``(name, text, fallback time)`` items of dump files (broker-stats/topics,
  load reports, Prometheus text) parsed by ``dumps`` on the executors.

Each reject is ``(source, record, reason)``.  Reading paths is ``reading``'s business: functions here
take DataFrames or RDDs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bundlewise.model.errors import InputError
from bundlewise.pipeline import columns, dumps, schemas
from bundlewise.traffic import rules

REQUIRED_COLUMNS = ("timestamp", "topic")
CORRUPT = "_corrupt_record"
COUNT_LIMIT = rules.LONG_LIMIT
"""Counts are longs: a whole number at or above this is rejected (as a timestamp is)."""
ISO_GATE = rules.ISO_PATTERN.removesuffix("$") + "\\z"
"""The rules' ISO-8601 pattern for Java's regex (``\\z``: Java's ``$`` also matches before a final line break)."""


@dataclass(frozen=True)
class Ingested:
    """The canonical samples, the rejects, and (load reports only) the broker-level rows."""

    samples: DataFrame
    rejects: DataFrame
    broker_reports: DataFrame | None = None
    input_rows: DataFrame | None = None
    """The raw input when counting it is cheap (Parquet metadata): lets the job skip a clean input's rejects."""


def _numeric_types() -> tuple[type, ...]:
    return (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)


def _timestamp_expr(raw: DataFrame) -> Column:
    dtype = raw.schema["timestamp"].dataType
    c = F.col("timestamp")
    limit = rules.LONG_LIMIT
    if isinstance(dtype, T.TimestampType | T.TimestampNTZType):
        ms = F.unix_millis(c)
        return F.when(ms >= 0, ms)
    if isinstance(dtype, _numeric_types()):
        d = c.cast("double")
        return F.when(~F.isnan(d) & (d >= 0) & (d < limit), d.cast("long"))
    s = F.trim(c.cast("string"))
    as_num = s.try_cast("double")
    iso = F.when(s.rlike(ISO_GATE), F.unix_millis(s.try_cast("timestamp")))
    return F.when(
        as_num.isNotNull() & ~F.isnan(as_num) & (as_num >= 0) & (as_num < limit), as_num.cast("long")
    ).otherwise(F.when((iso >= 0) & (iso < limit), iso))


def _number_expr(raw: DataFrame, name: str) -> Column:
    if name not in raw.columns:
        return F.lit(0.0)
    dtype = raw.schema[name].dataType
    c = F.col(name)
    if isinstance(dtype, T.DoubleType):
        return c
    if isinstance(dtype, _numeric_types()):
        return c.cast("double")
    return F.trim(c.cast("string")).try_cast("double")


def _reason_expr(raw: DataFrame, ts: Column, values: dict[str, Column]) -> Column:
    """The first reason a row is malformed, or null."""
    checks: list[tuple[Column, str]] = []
    if CORRUPT in raw.columns:
        checks.append((F.col(CORRUPT).isNotNull(), rules.MALFORMED))
    checks.append((F.col("timestamp").isNull(), rules.TIMESTAMP_MISSING))
    checks.append((ts.isNull(), rules.TIMESTAMP_INVALID))
    checks.append((F.col("topic").isNull() | (F.trim(F.col("topic").cast("string")) == ""), rules.TOPIC_MISSING))
    for name, v in values.items():
        present = F.col(name).isNotNull() if name in raw.columns else F.lit(False)
        checks.append((present & v.isNull(), rules.not_number(name)))
        checks.append((v.isNotNull() & (F.isnan(v) | (F.abs(v) == float("inf"))), rules.not_finite(name)))
        checks.append((v.isNotNull() & (v < 0), rules.negative(name)))
        if name in columns.COUNT_FIELDS:  # rint, not floor: floor gives a long, which a huge double overflows
            checks.append((v.isNotNull() & (F.rint(v) != v), rules.not_whole(name)))
            checks.append((v.isNotNull() & (v >= COUNT_LIMIT), rules.too_big(name)))
    expr = F.when(checks[0][0], F.lit(checks[0][1]))
    for cond, text in checks[1:]:
        expr = expr.when(cond, F.lit(text))
    return expr


def validate_trace(raw: DataFrame, source: str) -> tuple[DataFrame, DataFrame]:
    """A raw canonical trace → (samples in ``TOPIC_SAMPLES`` shape, rejects)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise InputError(
            f"trace has no {', '.join(missing)} column (need timestamp, topic, msgRateIn, ...)", source=source
        )
    ts = _timestamp_expr(raw)
    values = {name: _number_expr(raw, name) for name in (*columns.RATE_FIELDS, *columns.COUNT_FIELDS)}
    reason = _reason_expr(raw, ts, values)
    broker = F.col("broker").cast("string") if "broker" in raw.columns else F.lit(None).cast("string")
    tagged = raw.withColumn("_reason", reason)
    good = tagged.where(F.col("_reason").isNull()).select(
        ts.alias("timestamp"),
        broker.alias("broker"),
        F.trim(F.col("topic").cast("string")).alias("topic"),
        F.lit(None).cast("string").alias("bundle"),
        *[F.coalesce(values[n], F.lit(0.0)).alias(n) for n in columns.RATE_FIELDS],
        *[F.coalesce(values[n], F.lit(0.0)).cast("long").alias(n) for n in columns.COUNT_FIELDS],
        F.lit(1).cast("long").alias("topics"),
    )
    record_cols = [c for c in raw.columns if c != CORRUPT]
    record = F.to_json(F.struct(*[F.col(c) for c in record_cols]))
    if CORRUPT in raw.columns:
        record = F.coalesce(F.col(CORRUPT), record)
    bad = tagged.where(F.col("_reason").isNotNull()).select(
        F.lit(source).alias("source"), F.substring(record, 1, 500).alias("record"), F.col("_reason").alias("reason")
    )
    return good, bad


def samples_from_dumps(spark: Any, files: Any, fmt: str) -> Ingested:
    """``files``: an RDD of ``(name, text, fallback time or None)``; each parsed by ``dumps`` into rows and
    rejects."""
    parse = dumps.PARSERS[fmt]

    def tagged(item: tuple[str, str, int | None]) -> list[tuple[str, tuple[Any, ...]]]:
        rows, rejects = parse(item[0], item[1], item[2])
        out: list[tuple[str, tuple[Any, ...]]] = [("S", r) for r in rows]
        out.extend(("R", r) for r in rejects)
        if fmt == "load-report":
            brows, brejects = dumps.parse_load_report_broker(item[0], item[1], item[2])
            out.extend(("B", r) for r in brows)
            out.extend(("R", r) for r in brejects)
        return out

    parsed = files.flatMap(tagged).cache()
    samples = spark.createDataFrame(parsed.filter(lambda t: t[0] == "S").map(lambda t: t[1]), schemas.TOPIC_SAMPLES)
    rejects = spark.createDataFrame(parsed.filter(lambda t: t[0] == "R").map(lambda t: t[1]), schemas.REJECTS)
    reports = None
    if fmt == "load-report":
        reports = spark.createDataFrame(
            parsed.filter(lambda t: t[0] == "B").map(lambda t: t[1]), schemas.BROKER_REPORTS
        )
    return Ingested(samples, rejects, reports)
