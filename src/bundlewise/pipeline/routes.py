"""The route of a run: chosen once per input, before a row is read, and printed with its reason.

A route is a way of reading × a place to finish:

* **fast** reading (``fragments``, ``columnar``): Spark tasks read the input themselves through ``pyarrow.fs``
  and sum its clean pieces in Arrow; a piece they do not take whole is handed to the general path as a
  fragment (its path and byte range, row group or file), which Spark's readers read (``reading.read_fragments``).
  Taken whenever the input can be planned (``fragments.plan``) and, with ``topic_samples/``, ``--out`` is
  reachable through ``pyarrow.fs`` too;
* **general** reading (``reading.read_input``, ``ingest``, ``transforms``): Spark's readers and native
  expressions, for what the fast path cannot read (``--spark-reader``, a file system pyarrow does not open
  here, Parquet columns of other types, CSV files with different headers);
* **driver** finish: the partial sums (and rejects, broker reports) collected once as Arrow, the small tables
  made by ``frames`` and written by pyarrow — for an input of up to ``DRIVER_ROWS`` rows (its partial sums have
  at most as many rows, in practice a few percent);
* **Spark** finish: the same ``frames`` functions in Spark tasks (``transforms``), Spark writes the tables.

``choose`` decides once; each of the four routes is one module (``fast_driver``, ``fast_spark``,
``general_driver``, ``general_spark``) and no route hands rows to another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from bundlewise.config import Config
from bundlewise.pipeline import fragments, locations
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.locations import Location
from bundlewise.pipeline.outputs import Outputs

FAST, GENERAL = "fast", "general"
DRIVER, SPARK = "driver", "spark"
DRIVER_ROWS = 16_000_000
"""Input rows up to which a run finishes on the driver (about 2 GB of Arrow for partial sums as many as rows)."""
FINISHES = ("auto", DRIVER, SPARK)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Route:
    """How one run reads and finishes, and why."""

    reading: str  # FAST | GENERAL
    finish: str  # DRIVER | SPARK
    reason: str
    plan: fragments.Plan | None = None  # the fast path's fragments

    @property
    def name(self) -> str:
        return f"{self.reading} path, {self.finish} finish"

    def describe(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True)
class Job:
    """What every route is given: the session, the input, the rules, where outputs go, progress."""

    spark: Any
    route: Route
    source: Location
    fmt: str
    boundaries: Boundaries
    config: Config
    counts: Boundaries | None  # the boundaries bundles were cut by, when known (split candidates' counts)
    outputs: Outputs | None
    samples: Outputs | None  # ``outputs`` when ``topic_samples/`` is written
    timestamp: int | None
    step: Progress

    @property
    def name(self) -> str:
        """The input as rejects name it."""
        return self.source.path or self.source.uri


def choose(
    spark: Any,
    source: Location,
    fmt: str,
    files: Sequence[str],
    fs: pafs.FileSystem | None,
    *,
    columnar: bool,
    samples: Outputs | None,
    finish: str,
    timestamp: int | None,
) -> Route:
    """The route for this input (module docstring).  ``columnar=False`` (``--spark-reader``) asks for the general
    path; ``finish`` is ``auto`` (by the input's rows), ``driver`` or ``spark``."""
    if finish not in FINISHES:
        raise ValueError(f"finish must be one of {', '.join(FINISHES)}, got {finish!r}")
    plan: fragments.Plan | None = None
    if not columnar:
        why = "--spark-reader asks for Spark's own readers"
    elif fs is None:
        why = "pyarrow cannot open the input here (Spark's file systems read it)"
    elif samples is not None and not samples.via_arrow:
        why = "pyarrow cannot write topic_samples/ under --out here"
    else:
        planned = fragments.plan(source, fmt, files, spark.sparkContext.defaultParallelism, timestamp)
        if isinstance(planned, str):
            why = planned
        else:
            plan = planned
            why = f"pyarrow reads the input ({len(plan.fragments)} fragments of {plan.kind})"
    reading = FAST if plan is not None else GENERAL
    if finish != "auto":
        return Route(reading, finish, f"{why}; {finish} finish asked for", plan)
    rows, how = _rows(spark, source, files, fs, plan)
    if rows <= DRIVER_ROWS:
        done = f"about {rows:,} rows ({how}), at most {DRIVER_ROWS:,}: the partial sums are collected once"
        return Route(reading, DRIVER, f"{why}; {done}", plan)
    done = f"about {rows:,} rows ({how}), more than {DRIVER_ROWS:,}: the small tables are made in Spark tasks"
    return Route(reading, SPARK, f"{why}; {done}", plan)


def _rows(
    spark: Any, source: Location, files: Sequence[str], fs: pafs.FileSystem | None, plan: fragments.Plan | None
) -> tuple[int, str]:
    """The input's rows: the plan's, else from the files through pyarrow, else from their bytes through Hadoop."""
    if plan is not None:
        how = "Parquet metadata" if plan.kind == "parquet" else f"{fragments.BYTES_PER_ROW} bytes a row"
        return plan.rows, how
    if fs is not None:
        return fragments.estimate_rows(fs, files)
    return locations.hadoop_bytes(spark, source) // fragments.BYTES_PER_ROW, f"{fragments.BYTES_PER_ROW} bytes a row"
