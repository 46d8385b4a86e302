"""Route *fast path, Spark finish* (``routes``): the scan stays in Spark (cached), the small tables in Spark tasks.

1. ``columnar.scan`` (as in ``fast_driver``), cached and counted by kind in one job;
2. the fragments the scan handed over (only their names reach the driver) are read by Spark's readers and
   resolved on the general path (``reading.read_fragments``, ``sums.resolved_sums``; their rows appended to
   ``topic_samples/`` by Spark); their sums and rejects join the scan's in Spark;
3. ``finish.on_spark``.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from bundlewise.pipeline import columnar, finish, handover
from bundlewise.pipeline.columns import COUNT_FIELDS
from bundlewise.pipeline.routes import Job
from bundlewise.pipeline.summary import Summary
from bundlewise.pipeline.sums import PARTIAL, SparkSums, schema_only_samples


def run(job: Job) -> tuple[Summary, list[str]]:
    plan, scan = handover.scan(job)
    scanned = scan.cache()
    counted = scanned.groupBy("kind").agg(F.count(F.lit(1)).alias("n")).collect()
    kinds = {int(r["kind"]): int(r["n"]) for r in counted}
    partial = columnar.of_kind(scanned, columnar.SUMS).select(
        *[F.col(c).cast("long") if c in COUNT_FIELDS else F.col(c) for c in PARTIAL]
    )
    rejects = None
    if kinds.get(columnar.REJECT):
        rejects = columnar.of_kind(scanned, columnar.REJECT).select("source", "record", "reason")
    reports = columnar.reports_frame(scanned) if kinds.get(columnar.REPORT) else None
    sums = SparkSums(partial, rejects, reports, cached=[scanned])
    if job.samples is not None and not kinds.get(columnar.SUMS):
        schema_only_samples(job.spark, job.boundaries, job.samples)
    if kinds.get(columnar.FRAGMENT):
        records = columnar.of_kind(scanned, columnar.FRAGMENT).select("record").collect()
        sums = sums.add(handover.general_sums(job, plan, [r["record"] for r in records]))
    job.step("bundle load, time averages, broker load and split candidates (Spark)")
    return finish.on_spark(job.spark, sums, job.config, job.counts, job.outputs)
