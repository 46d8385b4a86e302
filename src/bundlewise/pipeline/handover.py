"""What the two fast routes share: the scan job, and the general path for the fragments it hands over.

``scan`` starts ``columnar.scan`` over the plan's fragments (its tasks write their clean pieces to
``topic_samples/``); ``general_sums`` reads the fragments the scan handed over with Spark's readers
(``reading.read_fragments``: only their names come through the driver) and resolves them on the general path
(``sums.resolved_sums``), their rows appended to ``topic_samples/`` by Spark.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from bundlewise.pipeline import columnar, reading
from bundlewise.pipeline.fragments import Fragment, Plan
from bundlewise.pipeline.routes import Job
from bundlewise.pipeline.sums import SparkSums, resolved_sums


def scan(job: Job) -> tuple[Plan, DataFrame]:
    """The route's plan and its scan (``columnar.SCAN`` rows, not yet run)."""
    plan = job.route.plan
    assert plan is not None
    folder = job.samples.folder("topic_samples") if job.samples is not None else None
    job.step(f"scanning {len(plan.fragments)} fragments ({plan.kind})")
    return plan, columnar.scan(job.spark, plan, job.boundaries, folder)


def general_sums(job: Job, plan: Plan, records: Sequence[str]) -> SparkSums:
    """The handed-over fragments (``FRAGMENT`` rows' records) through the general path."""
    handed = [Fragment.decode(r) for r in records]
    job.step(f"reading {len(handed)} fragments on the general path")
    data = reading.read_fragments(job.spark, plan, handed)
    return resolved_sums(data, job.boundaries, job.name, job.samples, append=True)
