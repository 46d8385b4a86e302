"""Route *general path, Spark finish* (``routes``): Spark's readers, the small tables in Spark tasks.

1. ``reading.read_input``: the input through Spark's data sources, validated (``ingest``);
2. ``sums.resolved_sums``: names resolved, ``topic_samples/`` written by Spark, the partial sums read back from
   it; rejects (none to read when a Parquet input's row count equals the rows aggregated);
3. ``finish.on_spark``.
"""

from __future__ import annotations

from bundlewise.pipeline import finish, reading
from bundlewise.pipeline.routes import Job
from bundlewise.pipeline.summary import Summary
from bundlewise.pipeline.sums import resolved_sums


def run(job: Job) -> tuple[Summary, list[str]]:
    job.step("reading with Spark's readers")
    data = reading.read_input(job.spark, job.source, job.fmt, job.timestamp)
    sums = resolved_sums(data, job.boundaries, job.name, job.samples)
    job.step("bundle load, time averages, broker load and split candidates (Spark)")
    return finish.on_spark(job.spark, sums, job.config, job.counts, job.outputs)
