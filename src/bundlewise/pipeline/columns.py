"""Column names of the pipeline's tables: the shared layer's one list (``traffic.columns``), re-exported for the
Spark schemas (``schemas``) and the Arrow code in the tasks (``columnar``, ``fragments``, ``frames``)."""

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
    "COUNT_FIELDS",
    "NUMBER_FIELDS",
    "RATE_FIELDS",
    "SAMPLE_COLUMNS",
    "SUM_FIELDS",
    "TRACE_COLUMNS",
]
