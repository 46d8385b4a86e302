"""Route *fast path, driver finish* (``routes``): one scan job whose result is collected, the small tables on the
driver.

1. ``columnar.scan``: every fragment's task reads its share with pyarrow and returns the sums of its clean
   pieces, its rejects and broker reports, and the pieces it does not take whole as fragments (``FRAGMENT``);
   the result is collected as Arrow in the same job (the sums are a few percent of the rows);
2. the handed-over fragments, if any, are read by Spark's readers and resolved on the general path
   (``reading.read_fragments``, ``sums.resolved_sums``; their rows appended to ``topic_samples/`` by Spark),
   and only their partial sums and rejects are collected;
3. ``finish.on_driver``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from bundlewise.pipeline import columnar, finish, handover
from bundlewise.pipeline.routes import Job
from bundlewise.pipeline.summary import Summary
from bundlewise.pipeline.sums import REJECTS_ARROW, ArrowSums, arrow_partial, schema_only_samples


def run(job: Job) -> tuple[Summary, list[str]]:
    plan, scan = handover.scan(job)
    scanned: pa.Table = scan.toArrow()
    kind = scanned.column("kind")

    def of(k: int) -> pa.Table:
        return scanned.filter(pc.equal(kind, k))

    reports = columnar.reports_table(scanned)
    sums = ArrowSums(
        arrow_partial(of(columnar.SUMS)),
        of(columnar.REJECT).select(REJECTS_ARROW.names).cast(REJECTS_ARROW),
        reports if reports.num_rows else None,
    )
    if job.samples is not None and sums.partial.num_rows == 0:
        schema_only_samples(job.spark, job.boundaries, job.samples)
    handed = of(columnar.FRAGMENT).column("record").to_pylist()
    if handed:
        sums = sums.add(handover.general_sums(job, plan, handed).collect())
    job.step("bundle load, time averages, broker load and split candidates (driver)")
    return finish.on_driver(sums, job.config, job.counts, job.outputs)
