"""The two finishes of a run: the small tables from the partial sums, on the driver or in Spark.

Both make the same tables with the same ``frames`` functions — ``bundle_load/`` (one ``NamespaceBundleStats``
sample per (timestamp, bundle) with its time averages), ``broker_load/``, ``split_candidates/``, ``rejects/``,
``broker_reports/`` — and the summary's per-bundle overview:

* ``on_driver``: over Arrow tables on the driver, written by pyarrow (no Spark job);
* ``on_spark``: in Spark tasks after a shuffle by bundle (and by broker, by namespace; ``transforms``), the
  writes and the overview submitted together from driver threads so their fixed costs overlap; the tables
  the route cached are released at the end.

Each returns the run's summary and the bundles seen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.pipeline import frames, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.outputs import Outputs
from bundlewise.pipeline.summary import Summary, summarise
from bundlewise.pipeline.sums import PARTIAL, ArrowSums, SparkSums

_STAGE_ARROW = to_arrow_schema(schemas.BUNDLE_STAGE)
_LOAD_ARROW = to_arrow_schema(schemas.BUNDLE_LOAD)
_BROKER_ARROW = to_arrow_schema(schemas.BROKER_LOAD)
_SPLIT_ARROW = to_arrow_schema(schemas.SPLIT_CANDIDATES)


def on_driver(
    sums: ArrowSums, config: Config, counts: Boundaries | None, outputs: Outputs | None
) -> tuple[Summary, list[str]]:
    stage = frames.bundle_stage(sums.partial.select(PARTIAL), config.view(SplitSettings), _STAGE_ARROW)
    overview = frames.overview(stage)
    if outputs is not None:
        cap = config.view(SplitSettings).max_bundles
        outputs.write_table("bundle_load", stage.select(_LOAD_ARROW.names).cast(_LOAD_ARROW))
        outputs.write_table("broker_load", frames.broker_load(stage, _BROKER_ARROW))
        outputs.write_table("split_candidates", frames.split_candidates(stage, cap, counts, _SPLIT_ARROW))
        outputs.write_table("rejects", sums.rejects)
        if sums.reports is not None:
            outputs.write_table("broker_reports", sums.reports)
    reasons = sums.rejects.group_by("reason").aggregate([("reason", "count")]).to_pylist()
    rows = overview.to_pylist()
    return summarise(rows, {r["reason"]: r["reason_count"] for r in reasons}), [r["bundle"] for r in rows]


def on_spark(
    spark: Any, sums: SparkSums, config: Config, counts: Boundaries | None, outputs: Outputs | None
) -> tuple[Summary, list[str]]:
    bundle_load = transforms.bundle_load(sums.partial, config).cache()
    sums.cached.append(bundle_load)
    found = sums.known_rejects()
    rejects = spark.createDataFrame([], schemas.REJECTS) if found is None else found
    tables = {
        "bundle_load": bundle_load.drop("rows", "reasons"),
        "broker_load": transforms.broker_load(bundle_load),
        "split_candidates": transforms.split_candidates(bundle_load, config, counts),
        "rejects": rejects,
    }
    if sums.reports is not None:
        tables["broker_reports"] = sums.reports
    jobs: dict[str, Callable[[], Any]] = {"": transforms.bundle_overview(bundle_load).collect}
    if outputs is not None:
        for name, df in tables.items():
            jobs[name] = functools.partial(outputs.write_frame, name, df)
    done = _concurrently(jobs)
    reasons = {r["reason"]: r["n"] for r in rejects.groupBy("reason").agg(F.count(F.lit(1)).alias("n")).collect()}
    rows = [r.asDict() for r in done[""]]
    for df in sums.cached:
        df.unpersist()
    return summarise(rows, reasons), [r["bundle"] for r in rows]


def _concurrently(jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Runs Spark actions from one driver thread each: their fixed costs (scheduling, code generation)
    overlap, and actions over the same cached table compute it once (Spark shares the partitions)."""
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}
