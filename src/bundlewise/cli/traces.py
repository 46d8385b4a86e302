"""Reading a workload for ``simulate`` and ``sweep`` (the composition root owns the I/O).

Two roads to the same samples (docs/simulator.md, Workloads):

* **Without a JVM** (the default for a local trace): ``traffic.readers`` reads Parquet (a file or a dataset of
  many files), CSV and JSON Lines with pyarrow, and ``traffic.rules`` keeps the samples and rejects the rest —
  the rules the pipeline's Spark expressions stand in for.  The pipeline's outputs (the whole ``--out`` folder,
  ``topic_samples/``, ``bundle_load/``) are read this way too, with the layout the recording starts from
  (``traffic.recording``).
* **Spark** (``pipeline.reading.read_input``: validation, rejects, every dump format) for a remote path, a folder
  of raw Pulsar dumps (``broker-stats/topics``, load reports, Prometheus text) or ``--spark``; a recording's
  layout is then read through Spark as well.

Either way the simulator gets an Arrow table of samples (``traffic.trace.TraceWorkload``) and, for a recording,
its ``RecordedLayout``; it never touches a path or Spark.  Rejected rows are summed up on stderr.

The live brokers (``broker --workload``, ``live up --workload``) read a trace by the first road only
(``load_local_workload``): each broker process reads it itself, so it must be readable without a JVM; a
remote path or raw dumps are refused with a hint to convert them with ``bundlewise pipeline`` first.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from bundlewise.cli.common import check_master, needs_extra
from bundlewise.files.atomic import held_interrupts
from bundlewise.model.errors import InputError
from bundlewise.traffic import readers, recording, rules
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.trace import TraceWorkload


@dataclass
class Workload:
    """A trace read for the simulator, the layout it starts from (a recording), and what reading it found."""

    trace: TraceWorkload
    layout: RecordedLayout | None = None
    rows: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    spark: bool = False

    def report(self, source: str) -> None:
        """One line on stderr when rows were rejected (the ten most frequent reasons)."""
        if not self.rejected:
            return
        total = sum(self.rejected.values())
        top = ", ".join(f"{reason} ({n})" for reason, n in self.rejected.most_common(10))
        sys.stderr.write(f"warning: {source}: {total} of {self.rows} rows rejected: {top}\n")


def spark_session(master: str) -> Any:
    """The one SparkSession of this process, on ``master`` (Ctrl-C while it starts prints one line)."""
    check_master(master)
    with needs_extra("spark", "reading a trace or sweeping on Spark"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.session import get_session

        with quiet_interrupts(), held_interrupts():  # a JVM interrupted while it starts would outlive us
            return get_session(master)


def needs_spark(path: str) -> bool:
    """Whether ``path`` needs Spark's readers: a remote location, or raw Pulsar dumps."""
    if readers.is_remote(path):
        return True
    if recording.find_recording(readers.local_path(path)) is not None:
        return False
    files = readers.list_input(path)
    return readers.sniff(files[0], readers.head_bytes(files[0])) != "trace"


def load_workload(path: str, *, spark: Any = None, master: str = "local[2]", use_spark: bool = False) -> Workload:
    """The workload at ``path``: without a JVM when it can be, else through Spark (``spark`` or a session on
    ``master``; the input is checked before Spark starts)."""
    if use_spark or needs_spark(path):
        if spark is None:
            check_trace(path)
            spark = spark_session(master)
        return _through_spark(spark, path)
    return _without_jvm(path)


def load_local_workload(path: str, field: str = "--workload") -> Workload:
    """The workload at ``path`` read without a JVM, by the simulator's reader and rules; a trace that needs
    Spark (a remote path, raw Pulsar dumps) is bad input here."""
    if needs_spark(path):
        raise InputError(
            "expected a local topic-samples trace (Parquet, CSV or JSON Lines) or the pipeline's outputs; "
            "convert remote data or Pulsar dumps with `bundlewise pipeline` first",
            source=path,
            field=field,
        )
    return _without_jvm(path)


def check_trace(path: str) -> None:
    """The trace exists and its Parquet files are readable, checked before Spark starts."""
    with needs_extra("spark", "reading a trace"):
        from bundlewise.pipeline.jobs import check_input

        check_input(path)


def _without_jvm(path: str) -> Workload:
    local = readers.local_path(path)
    found = recording.find_recording(local)
    raw = readers.read_local(found.samples if found is not None else local)
    parts = []
    for p in raw.parts:
        table = p.table
        if "topic" not in table.column_names:  # bundle_load/: each bundle stands for its topics
            table = table.append_column("topic", pa.nulls(table.num_rows, pa.string()))
        parts.append((table, p.malformed, p.records))
    checked = rules.check_parts(parts, path)
    layout = None
    if found is not None:
        layout = recording.layout_of(checked.samples, recording.read_namespaces(found.namespaces), path)
    rows = sum(t.num_rows for t, _, _ in parts)
    rejected = _reasons(checked.rejects)
    _some_samples(checked.samples.num_rows, rows, rejected, path)
    return Workload(TraceWorkload(checked.samples, path), layout, rows, rejected)


def _some_samples(samples: int, rows: int, rejected: Counter[str], path: str) -> None:
    """A trace whose every row is rejected is bad input: one line naming the commonest reasons, worded as the
    pipeline words it (``pipeline.jobs.no_valid_record``)."""
    if samples == 0 and rejected:
        top = "; ".join(f"{reason} ({n:,})" for reason, n in rejected.most_common(3))
        raise InputError(f"no valid record: all {rows:,} rows rejected; most frequent reasons: {top}", source=path)


def _reasons(rejects: Any) -> Counter[str]:
    return Counter(rejects.column("reason").to_pylist()) if rejects.num_rows else Counter()


def _through_spark(spark: Any, path: str) -> Workload:
    with needs_extra("spark", "reading a trace through Spark"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.reading import simulation_samples

        found = recording.find_recording(readers.local_path(path)) if not readers.is_remote(path) else None
        source = found.samples if found is not None else path
        with quiet_interrupts(spark):
            table, reasons, firsts = simulation_samples(spark, source, found is not None)
    rejected = Counter(reasons)
    layout = None
    if firsts is not None:
        configured = recording.read_namespaces(found.namespaces) if found is not None else {}
        layout = recording.layout_of(firsts, configured, path)
    rows = table.num_rows + sum(rejected.values())
    table, unnamed = rules.check_topic_names(table)
    rejected.update(unnamed)
    _some_samples(table.num_rows, rows, rejected, path)
    return Workload(TraceWorkload(table, path), layout, rows, rejected, spark=True)


def read_trace(spark: Any, path: str) -> TraceWorkload:
    """The trace at ``path`` read through Spark (kept for callers that hold a session)."""
    return _through_spark(spark, path).trace
