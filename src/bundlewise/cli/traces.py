"""Reading a workload trace for ``simulate`` and ``sweep`` (the composition root owns the I/O).

A trace (Parquet, CSV or JSON Lines; docs/formats.md), or any dump format the pipeline detects, is
read through the Spark pipeline's reader (``pipeline.jobs.read_input``: validation, rejects) and
handed to the simulator as an Arrow table of the canonical samples (``traffic.trace.TraceWorkload``).
"""

from __future__ import annotations

from typing import Any

from bundlewise.cli.common import check_master, needs_extra
from bundlewise.files.atomic import held_interrupts
from bundlewise.model.errors import InputError
from bundlewise.traffic.trace import COUNT_COLUMNS, RATE_COLUMNS, TraceWorkload


def spark_session(master: str) -> Any:
    """The one SparkSession of this process, on ``master`` (Ctrl-C while it starts prints one line)."""
    check_master(master)
    with needs_extra("spark", "reading a trace or sweeping on Spark"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.session import get_session

        with quiet_interrupts(), held_interrupts():  # a JVM interrupted while it starts would outlive us
            return get_session(master)


def check_trace(path: str) -> None:
    """The trace exists and its Parquet files are readable, checked before Spark starts."""
    with needs_extra("spark", "reading a trace"):
        from bundlewise.pipeline.jobs import check_input

        check_input(path)


def read_trace(spark: Any, path: str) -> TraceWorkload:
    """The trace at ``path`` as a workload (read on ``spark``)."""
    with needs_extra("spark", "reading a trace"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.jobs import read_input

        check_trace(path)
        with quiet_interrupts(spark):
            ingested = read_input(spark, path, None)
            table = ingested.samples.select("timestamp", "topic", *RATE_COLUMNS, *COUNT_COLUMNS).toArrow()
            if table.num_rows == 0:
                reasons = ingested.rejects.groupBy("reason").count().orderBy("count", ascending=False).take(3)
                if not reasons:
                    raise InputError("no valid record: the trace holds no rows", source=path)
                top = "; ".join(f"{r['reason']} ({r['count']:,})" for r in reasons)
                raise InputError(f"no valid record: every row rejected; most frequent reasons: {top}", source=path)
    return TraceWorkload(table, path)
