"""What a route hands to its finish, and the general path's resolution that every route shares.

* ``ArrowSums``: the partial sums, rejects and broker reports as Arrow tables on the driver (a driver finish);
* ``SparkSums``: the same as Spark DataFrames (a Spark finish), ``collect``ed once for a driver finish;
* ``resolved_sums``: samples Spark read (the whole input, or the fragments a scan handed over) resolved by
  ``transforms.resolve`` (a bundle the input carries wins, else the topic's CRC-32 picks it) — canonical names
  by ``keyed``'s numeric bundle keys when the boundaries are uniform —, written to (or appended to)
  ``topic_samples/``, summed per (timestamp, bundle, broker), with the rejects of both the reading and the
  resolution.

The partial sums are one row per (timestamp, bundle, broker) and scan task or Spark partition: ``frames``
(driver) or ``transforms`` (Spark) add them up per (timestamp, bundle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from bundlewise.pipeline import frames, ingest, keyed, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.columns import COUNT_FIELDS
from bundlewise.pipeline.outputs import Outputs

PARTIAL = ["timestamp", "bundle", "namespace", "broker", *frames.SUMMED]
"""The columns of the partial sums."""
REJECTS_ARROW = to_arrow_schema(schemas.REJECTS)
REPORTS_ARROW = to_arrow_schema(schemas.BROKER_REPORTS)


def arrow_partial(table: pa.Table) -> pa.Table:
    """Partial sums in Arrow, counts as int64 (the scan returns every number as a double)."""
    table = table.select(PARTIAL)
    return table.cast(pa.schema([f.with_type(pa.int64()) if f.name in COUNT_FIELDS else f for f in table.schema]))


@dataclass
class ArrowSums:
    """Partial sums, rejects and broker reports on the driver."""

    partial: pa.Table
    rejects: pa.Table
    reports: pa.Table | None = None

    def add(self, other: ArrowSums) -> ArrowSums:
        reports = [r for r in (self.reports, other.reports) if r is not None]
        return ArrowSums(
            pa.concat_tables([self.partial, other.partial.cast(self.partial.schema)]),
            pa.concat_tables([self.rejects, other.rejects]),
            pa.concat_tables(reports) if reports else None,
        )


@dataclass
class SparkSums:
    """Partial sums, rejects and broker reports in Spark, and the cached tables to release at the end."""

    partial: DataFrame
    rejects: DataFrame | None  # None: known to hold none
    reports: DataFrame | None = None
    input_rows: DataFrame | None = None  # a Parquet input: its row count says whether it held rejects
    cached: list[DataFrame] = field(default_factory=list)

    def clean(self) -> bool:
        """A Parquet input whose metadata row count equals the rows aggregated held no rejects."""
        if self.input_rows is None:
            return False
        aggregated = self.partial.agg(F.sum("rows")).first()
        return aggregated is not None and self.input_rows.count() == int(aggregated[0] or 0)

    def known_rejects(self) -> DataFrame | None:
        """The rejects, None when there are none (known without reading them: ``clean``)."""
        return None if self.rejects is None or self.clean() else self.rejects

    def collect(self) -> ArrowSums:
        """Everything on the driver, each table collected once (Arrow); the cached tables released."""
        rejects = self.known_rejects()
        collected = ArrowSums(
            arrow_partial(self.partial.select(*PARTIAL).toArrow()),
            REJECTS_ARROW.empty_table() if rejects is None else rejects.toArrow().cast(REJECTS_ARROW),
            None if self.reports is None else self.reports.toArrow().cast(REPORTS_ARROW),
        )
        for df in self.cached:
            df.unpersist()
        return collected

    def add(self, other: SparkSums) -> SparkSums:
        found = [r for r in (self.rejects, other.rejects) if r is not None]
        reports = [r for r in (self.reports, other.reports) if r is not None]
        return SparkSums(
            self.partial.select(*PARTIAL).unionByName(other.partial.select(*PARTIAL)),
            _union(found),
            _union(reports),
            cached=self.cached + other.cached,
        )


def _union(frames_: list[DataFrame]) -> DataFrame | None:
    if not frames_:
        return None
    out = frames_[0]
    for f in frames_[1:]:
        out = out.unionByName(f)
    return out


def resolved_sums(
    data: ingest.Ingested, boundaries: Boundaries, name: str, samples: Outputs | None, append: bool = False
) -> SparkSums:
    """Samples read by Spark → their partial sums and rejects (module docstring).

    With ``topic_samples/``: the resolved rows are written first and, when they are the whole dataset, the sums
    read back from that Parquet (no second resolution); ``append`` adds them beside the files a scan wrote.
    Canonical names take ``keyed``'s numeric bundle keys when the boundaries are uniform (not for ``append``:
    the few fragments a scan hands over go through ``transforms.resolve`` alone).
    """
    bounds = None if append else keyed.uniform_bounds(boundaries)
    if bounds is not None:
        return _keyed_sums(data, boundaries, name, samples, bounds)
    resolved, unresolved = transforms.resolve(data.samples, boundaries, name)
    rejects = data.rejects.unionByName(unresolved)
    if samples is None:
        return SparkSums(transforms.partial_bundle_sums(resolved), rejects, data.broker_reports, data.input_rows)
    if append:
        samples.write_frame("topic_samples", resolved, mode="append")
        return SparkSums(transforms.partial_bundle_sums(resolved), rejects, data.broker_reports)
    written = samples.write_frame("topic_samples", resolved)
    read_back = resolved.sparkSession.read.parquet(written.uri)
    return SparkSums(transforms.partial_bundle_sums(read_back), rejects, data.broker_reports, data.input_rows)


def _keyed_sums(
    data: ingest.Ingested, boundaries: Boundaries, name: str, samples: Outputs | None, bounds: tuple[int, ...]
) -> SparkSums:
    """``resolved_sums`` with ``keyed``'s fast path for canonical names (numeric bundle keys, names attached
    after the aggregation); the other rows through ``transforms.resolve``, read only when there are some."""
    tagged = keyed.tag(data.samples, bounds)
    reports = data.broker_reports
    if samples is None:
        sums = keyed.keyed_sums(tagged).cache()
        fast, other_rows = keyed.split_sums(sums, bounds)
        if other_rows == 0:  # every row canonical: no second pass over the input
            return SparkSums(fast, data.rejects, reports, data.input_rows, cached=[sums])
        resolved, unresolved = transforms.resolve(keyed.others(tagged), boundaries, name)
        partial = fast.select(*PARTIAL).unionByName(transforms.partial_bundle_sums(resolved).select(*PARTIAL))
        return SparkSums(partial, data.rejects.unionByName(unresolved), reports, data.input_rows, cached=[sums])
    fast_rows, others = keyed.rows_split(tagged, bounds)
    written = samples.write_frame("topic_samples", fast_rows)
    spark = fast_rows.sparkSession
    partial = transforms.partial_bundle_sums(spark.read.parquet(written.uri))
    if data.input_rows is not None and spark.read.parquet(written.uri).count() == data.input_rows.count():
        return SparkSums(partial, None, reports)  # every row canonical and valid (Parquet metadata)
    resolved, unresolved = transforms.resolve(others, boundaries, name)
    samples.write_frame("topic_samples", resolved.select(*fast_rows.columns), mode="append")
    partial = transforms.partial_bundle_sums(spark.read.parquet(written.uri))
    return SparkSums(partial, data.rejects.unionByName(unresolved), reports, data.input_rows)


def schema_only_samples(spark: Any, boundaries: Boundaries, samples: Outputs) -> None:
    """A ``topic_samples/`` no task wrote a row to still gets a (row-less) file with its schema."""
    empty, _ = transforms.resolve(spark.createDataFrame([], schemas.TOPIC_SAMPLES), boundaries)
    samples.write_frame("topic_samples", empty, mode="append", coalesce=True)
