"""A recorded topic-samples trace as a workload: a step function over sample groups.

The caller reads the file (Parquet, CSV or JSON Lines; docs/formats.md) and hands over a table: a
``pyarrow.Table`` or a pandas ``DataFrame`` (anything with those column accessors).  Columns:
``timestamp`` (ms), ``topic``, ``msgRateIn``, ``msgRateOut``, ``msgThroughputIn``, ``msgThroughputOut``
(required) and ``producerCount``, ``consumerCount`` (optional, 0 when absent or null).

Semantics: samples are grouped by timestamp; trace time 0 is the first timestamp; at time ``t`` the
latest sample group at or before ``t`` holds, and a topic absent from that group is idle.  Rows are
taken in (timestamp, topic) order, so of two rows naming the same topic at one timestamp the later
one holds.  A topic's producers and consumers are its largest counts over the trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName, full_topic_name
from bundlewise.traffic.workload import Rates, Topics

RATE_COLUMNS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")
COUNT_COLUMNS = ("producerCount", "consumerCount")
TRACE_COLUMNS = ("timestamp", "topic", *RATE_COLUMNS, *COUNT_COLUMNS, "broker")
"""The columns of a topic-samples trace; ``broker`` (the owner when recorded) is optional."""


def _column(table: Any, name: str) -> np.ndarray | None:
    """A column of an Arrow table or a pandas frame as a numpy array (None when absent)."""
    names = table.column_names if hasattr(table, "column_names") else list(table.columns)
    if name not in names:
        return None
    if hasattr(table, "column_names"):
        values: np.ndarray = table.column(name).to_numpy(zero_copy_only=False)
    else:
        values = table[name].to_numpy()
    return values


def _numbers(values: np.ndarray | None, n: int, dtype: Any) -> np.ndarray:
    """Numbers with absent columns and nulls as 0."""
    if values is None:
        return np.zeros(n, dtype=dtype)
    as_float = np.array([np.nan if v is None else v for v in values], dtype=float) if values.dtype == object else values
    out: np.ndarray = np.nan_to_num(np.asarray(as_float, dtype=float), nan=0.0).astype(dtype)
    return out


class TraceWorkload:
    """A recorded trace as a step function over its sample groups."""

    COLUMNS = RATE_COLUMNS

    def __init__(self, table: Any, source: str) -> None:
        n = table.num_rows if hasattr(table, "num_rows") else len(table)
        if n == 0:
            raise InputError("the trace has no valid samples", source=source)
        for col in ("timestamp", "topic", *RATE_COLUMNS):
            if _column(table, col) is None:
                raise InputError(f"missing column {col!r}", source=source)
        raw_ts = _column(table, "timestamp")
        raw_topics = _column(table, "topic")
        assert raw_ts is not None and raw_topics is not None
        ts = np.asarray(raw_ts, dtype=np.int64)
        topics_raw = np.array([str(t) for t in raw_topics], dtype=object)
        _, topic_rank = np.unique(topics_raw, return_inverse=True)
        order = np.lexsort((topic_rank, ts))  # stable: (timestamp, topic) order, ties keep input order
        ts = ts[order]
        topic_names = [full_topic_name(t) for t in topics_raw[order]]
        names = sorted(set(topic_names))
        index = {name: i for i, name in enumerate(names)}
        namespaces: list[str] = []
        ns_of: dict[str, int] = {}
        topic_ns = np.zeros(len(names), dtype=np.int64)
        for i, name in enumerate(names):
            ns = str(TopicName.parse(name).namespace)
            topic_ns[i] = ns_of.setdefault(ns, len(ns_of))
            if ns_of[ns] == len(namespaces):
                namespaces.append(ns)
        self.namespaces = namespaces
        tidx = np.array([index[name] for name in topic_names], dtype=np.int64)
        self.t0 = int(ts[0])
        self.times, starts = np.unique(ts - self.t0, return_index=True)
        self.bounds = np.append(starts, len(ts))
        self.tidx = tidx
        self.values = np.stack([_numbers(_column(table, c), n, float)[order] for c in RATE_COLUMNS])
        prod = np.zeros(len(names), dtype=np.int64)
        cons = np.zeros(len(names), dtype=np.int64)
        for col, arr in zip(COUNT_COLUMNS, (prod, cons), strict=True):
            np.maximum.at(arr, tidx, _numbers(_column(table, col), n, np.int64)[order])
        self.topics = Topics(names, topic_ns, prod, cons)
        self._cache: tuple[int, Rates] | None = None

    def rates(self, now: int) -> Rates:
        g = int(np.searchsorted(self.times, now, side="right")) - 1
        if self._cache is not None and self._cache[0] == g:
            return self._cache[1]
        n = len(self.topics.names)
        out = [np.zeros(n) for _ in RATE_COLUMNS]
        if g >= 0:
            lo, hi = self.bounds[g], self.bounds[g + 1]
            for k in range(4):
                out[k][self.tidx[lo:hi]] = self.values[k, lo:hi]
        rates: Rates = (out[0], out[1], out[2], out[3])
        self._cache = (g, rates)
        return rates
