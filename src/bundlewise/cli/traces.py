"""Reading a workload trace for ``simulate`` and ``sweep`` (the composition root owns the I/O).

A trace (Parquet, CSV or JSON Lines; docs/formats.md), or any dump format the pipeline detects, is
read through the Spark pipeline's reader (``pipeline.jobs.read_input``: validation, rejects) and
handed to the simulator as an Arrow table of the canonical samples (``traffic.trace.TraceWorkload``).
"""

from __future__ import annotations

from typing import Any

from bundlewise.cli.common import check_master, needs_extra
from bundlewise.traffic.trace import COUNT_COLUMNS, RATE_COLUMNS, TraceWorkload


def spark_session(master: str) -> Any:
    """The one SparkSession of this process, on ``master`` (Ctrl-C while it starts prints one line)."""
    check_master(master)
    with needs_extra("spark", "reading a trace or sweeping on Spark"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.session import get_session

        with quiet_interrupts():
            return get_session(master)


def read_trace(spark: Any, path: str) -> TraceWorkload:
    """The trace at ``path`` as a workload (read on ``spark``)."""
    with needs_extra("spark", "reading a trace"):
        from bundlewise.pipeline.interrupts import quiet_interrupts
        from bundlewise.pipeline.jobs import read_input

        with quiet_interrupts(spark):
            ingested = read_input(spark, path, None)
            table = ingested.samples.select("timestamp", "topic", *RATE_COLUMNS, *COUNT_COLUMNS).toArrow()
    return TraceWorkload(table, path)
