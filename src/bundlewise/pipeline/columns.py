"""Column names of the pipeline's tables: the shared layer's one list (``traffic.columns``), re-exported for the
Spark schemas (``schemas``) and the Arrow code in the tasks (``columnar``, ``fragments``, ``frames``); the columns of
a load report's broker row."""

from __future__ import annotations

from bundlewise.traffic.columns import (
    AVERAGE_FIELDS,
    COUNT_FIELDS,
    NUMBER_FIELDS,
    RATE_FIELDS,
    SAMPLE_COLUMNS,
    SUM_FIELDS,
    TRACE_COLUMNS,
)

__all__ = [
    "AVERAGE_FIELDS",
    "BROKER_REPORT_FIELDS",
    "COUNT_FIELDS",
    "NUMBER_FIELDS",
    "RATE_FIELDS",
    "RESOURCES",
    "SAMPLE_COLUMNS",
    "SUM_FIELDS",
    "TRACE_COLUMNS",
]

RESOURCES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")
BROKER_REPORT_FIELDS = (
    "timestamp",
    "broker",
    *[f"{r}{part}" for r in RESOURCES for part in ("Usage", "Limit")],
    "maxResourceUsage",
    *RATE_FIELDS,
    "numTopics",
    "numBundles",
)
"""A load report's broker row (``dumps.parse_load_report_broker``, ``schemas.BROKER_REPORTS``)."""
