"""What a route hands to its finish, and the general path's resolution that every route shares.

* ``ArrowSums``: the partial sums, rejects and broker reports as Arrow tables on the driver (a driver finish);
* ``SparkSums``: the same as Spark DataFrames (a Spark finish), ``collect``ed once for a driver finish;
* ``resolved_sums``: samples Spark read (the whole input, or the fragments a scan handed over) resolved by
  ``transforms.resolve`` (a bundle the input carries wins, else the topic's CRC-32 picks it), written to (or
  appended to) ``topic_samples/``, summed per (timestamp, bundle, broker), with the rejects of both the reading
  and the resolution.

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

from bundlewise.pipeline import frames, ingest, schemas, transforms
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
        """Everything on the driver, each table collected once (Arrow)."""
        rejects = self.known_rejects()
        return ArrowSums(
            arrow_partial(self.partial.select(*PARTIAL).toArrow()),
            REJECTS_ARROW.empty_table() if rejects is None else rejects.toArrow().cast(REJECTS_ARROW),
            None if self.reports is None else self.reports.toArrow().cast(REPORTS_ARROW),
        )

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
    """
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


def schema_only_samples(spark: Any, boundaries: Boundaries, samples: Outputs) -> None:
    """A ``topic_samples/`` no task wrote a row to still gets a (row-less) file with its schema."""
    empty, _ = transforms.resolve(spark.createDataFrame([], schemas.TOPIC_SAMPLES), boundaries)
    samples.write_frame("topic_samples", empty, mode="append", coalesce=True)
