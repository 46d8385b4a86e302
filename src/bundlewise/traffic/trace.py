"""A recorded topic-samples trace as a workload: a step function over sample groups.

The caller reads the file (``traffic.readers``: Parquet, CSV, JSON Lines, the pipeline's outputs; or Spark)
and hands over a table of samples: a ``pyarrow.Table`` or a pandas ``DataFrame``.  Columns: ``timestamp``
(ms), ``topic``, ``msgRateIn``, ``msgRateOut``, ``msgThroughputIn``, ``msgThroughputOut`` (required) and
``producerCount``, ``consumerCount`` (optional, 0 when absent or null).  A row with a null ``topic`` and a
``bundle`` (the pipeline's bundle-level rows: load reports, ``bundle_load/``) stands for that bundle's topics:
it becomes one entry named ``bundle:<bundle>`` placed at the bundle's lower hash boundary, counting ``topics``
topics (the ``topics`` column).

Semantics: samples are grouped by timestamp; trace time 0 is the first timestamp; at time ``t`` the latest
sample group at or before ``t`` holds — rates, producers and consumers alike (sample and hold), a topic absent
from that group being idle (no traffic, no sessions); a recorded bundle's topic count holds until its next
sample.  Rows are taken in timestamp order, input order within one timestamp, so of two rows naming the same
topic at one timestamp the later one holds.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bundlewise.model.bundles import Bundle
from bundlewise.model.epoch import check_trace_start
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName, bundle_namespace
from bundlewise.traffic.columns import COUNT_FIELDS, RATE_FIELDS
from bundlewise.traffic.workload import Counts, Rates, Topics

if TYPE_CHECKING:
    import pyarrow as pa

RATE_COLUMNS = RATE_FIELDS
COUNT_COLUMNS = COUNT_FIELDS
BUNDLE_PREFIX = "bundle:"
DIGEST_FORMAT = "bundlewise-trace-digest-1"


def _arrow(table: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(table, pa.Table):
        return table
    return pa.Table.from_pandas(table, preserve_index=False)


def _numbers(table: pa.Table, name: str, dtype: Any) -> np.ndarray:
    """A numeric column as numpy, absent columns and nulls as 0."""
    import pyarrow as pa

    if name not in table.column_names:
        return np.zeros(table.num_rows, dtype=dtype)
    col = table.column(name)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        col = col.cast(pa.float64())
    values: np.ndarray = col.fill_null(0).to_numpy()
    if np.issubdtype(values.dtype, np.floating):
        values = np.nan_to_num(values, nan=0.0)
    return values.astype(dtype, copy=False)


def _names(column: pa.ChunkedArray) -> tuple[list[str | None], np.ndarray]:
    """A string column dictionary-encoded: the distinct values and each row's index into them (-1: null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr.cast(pa.string()))
    dictionary = arr.dictionary.cast(pa.string()).to_pylist()
    indices: np.ndarray = arr.indices.fill_null(-1).to_numpy().astype(np.int64)
    return dictionary, indices


class _Held:
    """Values of some entries sampled at some groups, each held from its sample to the next (before its first
    sample: the first), looked up for every entry at once."""

    def __init__(
        self, entries: np.ndarray, row_entry: np.ndarray, groups: np.ndarray, values: np.ndarray, n_groups: int
    ):
        self.entries = entries
        local = np.full(int(row_entry.max(initial=0)) + 1, -1, dtype=np.int64)
        local[entries] = np.arange(len(entries))
        span = n_groups + 1
        keys = local[row_entry] * span + groups
        order = np.argsort(keys, kind="stable")
        self.keys, self.values, self.span = keys[order], values[order], span
        first = np.searchsorted(self.keys, np.arange(len(entries)) * span)
        self.first = self.values[np.minimum(first, len(self.values) - 1)]

    def arrays(self) -> dict[str, np.ndarray]:
        """What ``restored`` rebuilds it from (a trace digest's ``held_*`` arrays)."""
        return {
            "entries": self.entries,
            "keys": self.keys,
            "values": self.values,
            "span": np.array(self.span),
            "first": self.first,
        }

    @classmethod
    def restored(cls, a: dict[str, np.ndarray]) -> _Held:
        held = cls.__new__(cls)
        held.entries, held.keys, held.values, held.first = a["entries"], a["keys"], a["values"], a["first"]
        held.span = int(a["span"])
        return held

    def fill(self, out: np.ndarray, group: int) -> None:
        local = np.arange(len(self.entries))
        at = np.searchsorted(self.keys, local * self.span + group, side="right") - 1
        ok = (at >= 0) & (self.keys[np.maximum(at, 0)] // self.span == local)
        out[self.entries] = np.where(ok, self.values[np.maximum(at, 0)], self.first)


class TraceWorkload:
    """A recorded trace as a step function over its sample groups."""

    COLUMNS = RATE_COLUMNS

    def __init__(self, samples: Any, source: str) -> None:
        table = _arrow(samples)
        n = table.num_rows
        if n == 0:
            raise InputError("no valid record: the input holds no rows", source=source)
        for col in ("timestamp", "topic", *RATE_COLUMNS):
            if col not in table.column_names:
                raise InputError(f"missing column {col!r}", source=source)
        ts = _numbers(table, "timestamp", np.int64)
        try:
            check_trace_start(int(ts.min()), "timestamp")
        except InputError as e:
            raise e.within(source) from None
        entry, names, hashes, namespaces = self._entries(table, source)
        order: np.ndarray | None = np.argsort(ts, kind="stable")
        if order is not None and np.all(order == np.arange(n)):
            order = None
        ts = ts if order is None else ts[order]
        self.t0 = int(ts[0])
        self.times, starts = np.unique(ts - self.t0, return_index=True)
        self.bounds = np.append(starts, n)
        self.tidx = entry if order is None else entry[order]

        def ordered(values: np.ndarray) -> np.ndarray:
            return values if order is None else values[order]

        self.values = [ordered(_numbers(table, c, float)) for c in RATE_COLUMNS]
        self.sessions = [ordered(_numbers(table, c, np.int64)) for c in COUNT_COLUMNS]
        self.namespaces = namespaces[1]
        self.topics = Topics(names, namespaces[0], hashes)
        self._weights = self._recorded_weights(table, order, len(names))
        self._cache: tuple[int, Rates] | None = None
        self._count_cache: tuple[int, Counts] | None = None

    def _entries(self, table: pa.Table, source: str) -> tuple[np.ndarray, list[str], Any, tuple[np.ndarray, list[str]]]:
        """Per row its entry (topic, or recorded bundle); the entries' names in sorted order, their hash
        positions (None when every entry is a topic) and namespaces."""
        raw, row_raw = _names(table.column("topic"))
        full: list[str | None] = []
        for name in raw:
            try:
                full.append(None if name is None else str(TopicName.parse(name)))
            except InputError as e:
                raise InputError(f"topic {name!r}: {e}", source=source) from None
        bundles: list[str | None] = []
        row_bundle = np.full(table.num_rows, -1, dtype=np.int64)
        if "bundle" in table.column_names:
            bundles, row_bundle = _names(table.column("bundle"))
        topic_null = row_raw < 0
        if topic_null.any() and (row_bundle[topic_null] < 0).any():
            raise InputError("a sample has neither topic nor bundle", source=source)
        keys = [f"{BUNDLE_PREFIX}{b}" for b in bundles]
        distinct = sorted({f for f in full if f is not None} | {keys[i] for i in np.unique(row_bundle[topic_null])})
        index = {name: i for i, name in enumerate(distinct)}
        raw_to_entry = np.array([-1 if f is None else index[f] for f in full] + [-1], dtype=np.int64)
        entry = raw_to_entry[row_raw]
        if topic_null.any():
            bundle_to_entry = np.array([index.get(k, -1) for k in keys] + [-1], dtype=np.int64)
            entry[topic_null] = bundle_to_entry[row_bundle[topic_null]]
        ns_of: dict[str, int] = {}
        topic_ns = np.zeros(len(distinct), dtype=np.int64)
        hashes = np.full(len(distinct), -1, dtype=np.int64)
        recorded = False
        for i, name in enumerate(distinct):
            if name.startswith(BUNDLE_PREFIX):
                bundle = name[len(BUNDLE_PREFIX) :]
                try:
                    hashes[i] = Bundle.parse(bundle).lower
                except InputError as e:
                    raise InputError(f"bundle {bundle!r}: {e}", source=source) from None
                ns = bundle_namespace(bundle)
                recorded = True
            else:
                ns = str(TopicName.parse(name).namespace)
            topic_ns[i] = ns_of.setdefault(ns, len(ns_of))
        if recorded:
            for i, name in enumerate(distinct):
                if hashes[i] < 0:
                    hashes[i] = crc32_hash(name)
        return entry, distinct, hashes if recorded else None, (topic_ns, list(ns_of))

    def _recorded_weights(self, table: pa.Table, order: np.ndarray | None, n: int) -> _Held | None:
        """The topic counts of recorded-bundle entries, per sample group (held between samples)."""
        if self.topics.hashes is None:
            return None
        is_bundle = np.array([name.startswith(BUNDLE_PREFIX) for name in self.topics.names], dtype=bool)
        rows = np.flatnonzero(is_bundle[self.tidx])
        counts = _numbers(table, "topics", np.int64) if "topics" in table.column_names else np.ones(len(self.tidx))
        counts = (counts if order is None else counts[order])[rows]
        groups = np.searchsorted(self.bounds, rows, side="right") - 1
        return _Held(np.flatnonzero(is_bundle), self.tidx[rows], groups, counts.astype(np.int64), len(self.times))

    def save(self, path: Path) -> None:
        """Write the trace as read (``DIGEST_FORMAT``, numpy's ``.npz``): what a broker process loads instead of
        the trace file, without Arrow (~50 MB resident) and without reading and checking it again."""
        arrays: dict[str, np.ndarray] = {
            "format": np.array(DIGEST_FORMAT),
            "t0": np.array(self.t0, dtype=np.int64),
            "times": self.times,
            "bounds": self.bounds,
            "tidx": self.tidx,
            "names": np.array(self.topics.names, dtype=str),
            "topic_namespace": self.topics.namespace,
            "namespaces": np.array(self.namespaces, dtype=str),
        }
        for k, values in enumerate(self.values):
            arrays[f"rate{k}"] = values
        for k, values in enumerate(self.sessions):
            arrays[f"sessions{k}"] = values
        if self.topics.hashes is not None:
            arrays["hashes"] = self.topics.hashes
        if self._weights is not None:
            arrays |= {f"held_{k}": v for k, v in self._weights.arrays().items()}
        with path.open("wb") as f:
            np.savez(f, allow_pickle=False, **arrays)

    @classmethod
    def load(cls, path: Path) -> TraceWorkload:
        """The trace ``save`` wrote to ``path``."""
        self = cls.__new__(cls)
        try:
            with np.load(path, allow_pickle=False) as z:
                if "format" not in z.files or str(z["format"]) != DIGEST_FORMAT:
                    raise ValueError("no format marker")
                a = {name: z[name] for name in z.files}
            self.t0 = int(a["t0"])
            self.times, self.bounds, self.tidx = a["times"], a["bounds"], a["tidx"]
            self.values = [a[f"rate{k}"] for k in range(len(RATE_COLUMNS))]
            self.sessions = [a[f"sessions{k}"] for k in range(len(COUNT_COLUMNS))]
            self.namespaces = [str(n) for n in a["namespaces"]]
            self.topics = Topics([str(n) for n in a["names"]], a["topic_namespace"], a.get("hashes"))
            held = {k.removeprefix("held_"): v for k, v in a.items() if k.startswith("held_")}
            self._weights = _Held.restored(held) if held else None
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            raise InputError(
                f"expected a trace digest ({DIGEST_FORMAT}) as live up writes: {e}", source=str(path)
            ) from None
        self._cache = None
        self._count_cache = None
        return self

    def _group(self, now: int) -> int:
        return int(np.searchsorted(self.times, now, side="right")) - 1

    def rates(self, now: int) -> Rates:
        g = self._group(now)
        if self._cache is not None and self._cache[0] == g:
            return self._cache[1]
        n = len(self.topics.names)
        out = [np.zeros(n) for _ in RATE_COLUMNS]
        if g >= 0:
            lo, hi = self.bounds[g], self.bounds[g + 1]
            for k in range(4):
                out[k][self.tidx[lo:hi]] = self.values[k][lo:hi]
        rates: Rates = (out[0], out[1], out[2], out[3])
        self._cache = (g, rates)
        return rates

    def counts(self, now: int) -> Counts:
        """Topics per entry (1, or a recorded bundle's held count), producers and consumers of the group."""
        g = self._group(now)
        if self._count_cache is not None and self._count_cache[0] == g:
            return self._count_cache[1]
        n = len(self.topics.names)
        weights = np.ones(n, dtype=np.int64)
        prod, cons = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        if g >= 0:
            lo, hi = self.bounds[g], self.bounds[g + 1]
            prod[self.tidx[lo:hi]] = self.sessions[0][lo:hi]
            cons[self.tidx[lo:hi]] = self.sessions[1][lo:hi]
        if self._weights is not None:
            self._weights.fill(weights, max(g, 0))
        counts: Counts = (weights, prod, cons)
        self._count_cache = (g, counts)
        return counts
