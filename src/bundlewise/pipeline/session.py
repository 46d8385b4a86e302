"""The SparkSession of the pipeline: local mode by default, any cluster through ``master``.

``get_session`` builds (or returns the active) session with the Spark UI off, quiet logs, Arrow
enabled for pandas UDFs, and ``spark.sql.shuffle.partitions`` set from ``shuffle_partitions`` (default:
twice the default parallelism, which suits the small aggregated tables of this pipeline better than
Spark's 200).  ``PYSPARK_PYTHON`` defaults to the running interpreter so executors use the same venv.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def get_session(master: str = "local[*]", shuffle_partitions: int | None = None, app_name: str = "bundlewise") -> Any:
    """A SparkSession for the pipeline (returns ``pyspark.sql.SparkSession``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("BUNDLEWISE_DRIVER_MEMORY", "4g"))
        .config("spark.sql.adaptive.enabled", "true")
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if shuffle_partitions is None:
        parallelism = session.sparkContext.defaultParallelism
        session.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * parallelism)))
    return session
