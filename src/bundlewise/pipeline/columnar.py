"""The columnar scan of Parquet traces: Spark tasks that sum their share of the input with Arrow.

A Parquet trace whose columns already have usable types (integer ``timestamp``; string ``topic`` and
``broker``; numeric rates and counts) is read by the Spark tasks themselves, one *fragment* (a file or a run
of its row groups) per task, with pyarrow's vectorised reader.  Per fragment:

* the task reads its row groups one at a time (memory stays at a row group's size, which matters on a VM
  where first-touching fresh memory is slow); the ``topic`` column is dictionary-encoded per row group and
  each *distinct* topic name is resolved by the model itself — ``TopicName.parse`` and
  ``NamespaceBundles.bundle_for_hash`` of ``crc32_hash`` — cached per worker process
  across fragments; a row group repeating the previous one's topics in the same order reuses its ids;
* a row is **clean** when its timestamp is present and a usable number of ms (as ``ingest.validate_trace``
  reads it), every rate and count is present, finite and ≥ 0 (counts whole), and its topic is already its
  own full name (``str(TopicName.parse(t)) == t``) and falls in a bundle;
* clean rows are hash-aggregated per (timestamp, broker, bundle) in Arrow (``Table.group_by``) and only
  those sums leave the task; with ``samples_dir`` the clean rows, with their namespace and bundle
  (dictionary columns), are written to ``topic_samples/`` by the task (pyarrow, one file per fragment,
  written under a temporary name and renamed, so a retried task leaves one file);
* every other row leaves the task as it is (``rows`` null): ``jobs`` sends those through the general path
  (``ingest.validate_trace`` + ``transforms.resolve``), which gives them their bundle or their reject
  reason — so a row is never judged by two implementations, and the conservative clean test only decides
  which path takes it.  ``tests/test_pipeline_columnar.py`` proves both paths give the same outputs.

Everything else (other formats, CSV/JSON traces, a Parquet file with other column types, paths that are not
local files, or ``--spark-reader``) takes the general path.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName
from bundlewise.pipeline import schemas
from bundlewise.pipeline.boundaries import Boundaries

MAX_FRAGMENT_ROWS = 4_000_000
"""At most this many rows (whole row groups) per fragment, so a large file is shared between tasks."""
TIMESTAMP_LIMIT = 9.2e18
"""``ingest._timestamp_expr``: a numeric timestamp is usable when ``0 <= ts < 9.2e18`` (as a double)."""

SCAN = T.StructType(
    [
        T.StructField("timestamp", T.LongType(), True),
        T.StructField("broker", T.StringType(), True),
        T.StructField("topic", T.StringType(), True),
        T.StructField("bundle", T.StringType(), True),
        T.StructField("namespace", T.StringType(), True),
        *[T.StructField(f, T.DoubleType(), True) for f in schemas.NUMBER_FIELDS],
        T.StructField("topics", T.LongType(), True),
        T.StructField("rows", T.LongType(), True),
    ]
)
"""What a task returns: per (timestamp, broker, bundle) sums with their ``rows``; other rows raw, ``rows`` null."""
_SCAN_ARROW = to_arrow_schema(SCAN)


@dataclass(frozen=True)
class Fragment:
    """One task's share: a Parquet file, all of it (``row_groups`` None) or some of its row groups."""

    path: str
    row_groups: tuple[int, ...] | None = None


def _usable(schema: pa.Schema) -> bool:
    """Column types the scan reads as they are (anything else: general path)."""

    def kind(name: str) -> pa.DataType | None:
        i = schema.get_field_index(name)
        if i < 0:
            return None
        t = schema.field(i).type
        return t.value_type if pa.types.is_dictionary(t) else t

    def is_string(t: pa.DataType | None) -> bool:
        return t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t))

    ts, topic, broker = kind("timestamp"), kind("topic"), kind("broker")
    if ts is None or not pa.types.is_integer(ts) or ts == pa.uint64() or not is_string(topic):
        return False
    if broker is not None and not is_string(broker):
        return False
    numeric = (kind(f) for f in schemas.NUMBER_FIELDS)
    return all(t is None or pa.types.is_integer(t) or pa.types.is_floating(t) for t in numeric)


def plan(files: Sequence[str], slots: int) -> list[Fragment] | None:
    """Fragments of the trace, about two per task slot (whole row groups, at most ``MAX_FRAGMENT_ROWS``);
    None when some file is not a Parquet trace the scan reads (the general path then reads, or rejects, it)."""
    sizes: list[tuple[str, list[int]]] = []
    for path in files:
        try:
            meta = pq.read_metadata(path)
            schema = meta.schema.to_arrow_schema()
        except (OSError, pa.ArrowException):
            return None
        if not _usable(schema):
            return None
        sizes.append((path, [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]))
    total = sum(sum(groups) for _p, groups in sizes)
    target = min(MAX_FRAGMENT_ROWS, max(1, math.ceil(total / max(1, 2 * slots))))
    fragments: list[Fragment] = []
    for path, groups in sizes:
        if sum(groups) <= target:
            fragments.append(Fragment(path))
            continue
        run: list[int] = []
        rows = 0
        for i, n in enumerate(groups):
            if run and rows + n > target:
                fragments.append(Fragment(path, tuple(run)))
                run, rows = [], 0
            run.append(i)
            rows += n
        if run:
            fragments.append(Fragment(path, tuple(run)))
    return fragments


class _Resolver:
    """Topic names → bundle ids (-1: the general path takes the row), and the bundles behind the ids.

    The model decides: ``TopicName.parse`` (the name must be its own full name) and
    ``NamespaceBundles.bundle_for_hash`` of its CRC-32.  Each distinct name is resolved once per worker
    process and boundaries (the cache outlives a fragment: fragments share their topics); bundle ids number
    the bundles met by this worker."""

    current: _Resolver | None = None

    def __init__(self, boundaries: Boundaries) -> None:
        self.boundaries = boundaries
        self.cache: dict[str, int] = {}
        self.bundle_ids: dict[str, int] = {}
        self.namespace_ids: dict[str, int] = {}
        self.namespace_of: list[int] = []
        self.namespaces: dict[str, NamespaceBundles] = {}
        self._last: tuple[pa.Array, np.ndarray, pa.DictionaryArray] | None = None

    @classmethod
    def for_boundaries(cls, boundaries: Boundaries) -> _Resolver:
        if cls.current is None or cls.current.boundaries != boundaries:
            cls.current = cls(boundaries)
        return cls.current

    def _resolve(self, name: str) -> int:
        try:
            topic = TopicName.parse(name)
        except InputError:
            return -1
        if str(topic) != name:
            return -1
        ns = str(topic.namespace)
        bundles = self.namespaces.get(ns)
        if bundles is None:
            bundles = self.namespaces[ns] = NamespaceBundles.of(ns, self.boundaries.for_namespace(ns))
        try:
            bundle = bundles.bundle_for_hash(crc32_hash(name)).name
        except InputError:  # HashOutOfRange
            return -1
        bid = self.bundle_ids.setdefault(bundle, len(self.bundle_ids))
        if bid == len(self.namespace_of):
            self.namespace_of.append(self.namespace_ids.setdefault(ns, len(self.namespace_ids)))
        return bid

    def _id(self, name: str) -> int:
        bid = self.cache.get(name)
        if bid is None:
            bid = self.cache[name] = self._resolve(name)
        return bid

    def row_ids(self, topics: pa.Array) -> tuple[np.ndarray, pa.DictionaryArray]:
        """Per row, the bundle id of its topic (-1: null or not a clean full name), and the topics
        dictionary-encoded.

        Each distinct name is looked up once per call (``dictionary_encode``); a row group listing the same
        topics in the same order as the previous one (periodic stats of one cluster) reuses both — so
        ``topic_samples/`` can keep one Parquet dictionary for them."""
        if self._last is not None and self._last[0].equals(topics):
            return self._last[1], self._last[2]
        encoded = topics if pa.types.is_dictionary(topics.type) else pc.dictionary_encode(topics)
        ids = np.fromiter(
            (self._id(n) for n in encoded.dictionary.to_pylist()), dtype=np.int32, count=len(encoded.dictionary)
        )
        rows: np.ndarray = np.append(ids, np.int32(-1))[encoded.indices.fill_null(-1).to_numpy()]  # -1: null slot
        self._last = (topics, rows, encoded)
        return rows, encoded

    def bundles(self) -> pa.Array:
        return pa.array(list(self.bundle_ids), pa.string())

    def namespace_names(self) -> pa.Array:
        return pa.array(list(self.namespace_ids), pa.string())

    def namespace_index(self) -> pa.Array:
        return pa.array(self.namespace_of, pa.int32())


def _topic_ids(column: pa.ChunkedArray, resolver: _Resolver) -> tuple[np.ndarray, pa.ChunkedArray]:
    """Per row, the bundle id of its topic (-1: null or not a clean full name); the column dictionary-encoded."""
    if pa.types.is_dictionary(column.type) and column.num_chunks > 1:
        column = column.unify_dictionaries()
    parts = [resolver.row_ids(c) for c in column.chunks]
    if not parts:
        return np.zeros(0, dtype=np.int32), pa.chunked_array([], pa.dictionary(pa.int32(), pa.string()))
    ids = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
    return ids, pa.chunked_array([p[1] for p in parts])


def _numbers(table: pa.Table, name: str) -> tuple[pa.ChunkedArray, np.ndarray]:
    """(the column as float64 for rates, int64 for counts; mask of usable values: present, finite, >= 0 and, for
    counts, whole — the values of the other rows are meaningless)."""
    n = table.num_rows
    count = name in schemas.COUNT_FIELDS
    if name not in table.column_names:
        return pa.chunked_array([pa.array(np.zeros(n, dtype=np.int64 if count else np.float64))]), np.ones(n, bool)
    col = table.column(name)
    if count and pa.types.is_integer(col.type) and col.type != pa.uint64():  # uint64 may not fit: float path
        values = col.fill_null(-1).to_numpy()
        return col.cast(pa.int64()), values >= 0
    col = col.cast(pa.float64())
    values = col.to_numpy()  # nulls become NaN
    ok = np.isfinite(values) & (values >= 0)
    if col.null_count:
        ok &= ~col.is_null().to_numpy()
    if count:
        ok &= values == np.floor(values)
        return pa.chunked_array([pa.array(np.where(ok, values, 0).astype(np.int64))]), ok
    return col, ok


def _scan_piece(table: pa.Table, resolver: _Resolver) -> tuple[pa.Table, pa.Table | None, pa.Table]:
    """One row group → (its sums per (timestamp, broker, bundle id), its other rows or None, its clean rows)."""
    n = table.num_rows
    ts = table.column("timestamp").cast(pa.int64())
    ts_values = ts.fill_null(-1).to_numpy()
    ok = (ts_values >= 0) & (ts_values.astype(np.float64) < TIMESTAMP_LIMIT)
    numbers: dict[str, pa.ChunkedArray] = {}
    for name in schemas.NUMBER_FIELDS:
        numbers[name], usable = _numbers(table, name)
        ok &= usable
    row_bundle, topics = _topic_ids(table.column("topic"), resolver)
    ok &= row_bundle >= 0
    broker = table.column("broker") if "broker" in table.column_names else pa.chunked_array([pa.nulls(n, pa.string())])
    clean = pa.table(
        {
            "timestamp": ts,
            "broker": broker,
            "topic": topics,
            "_bundle": pa.array(row_bundle),
            **{name: numbers[name] for name in schemas.NUMBER_FIELDS},
        }
    )
    if not ok.all():
        clean = clean.filter(pa.array(ok))
    sums = _sum(clean.drop_columns(["topic"]), "sum", "count")
    rest = np.flatnonzero(~ok)
    if len(rest) == 0:
        return sums, None, clean
    idx = pa.array(rest)
    others = pa.table(
        {
            "timestamp": ts.take(idx),
            "broker": broker.take(idx).cast(pa.string()),
            "topic": table.column("topic").take(idx).cast(pa.string()),
            **{
                name: (
                    table.column(name).take(idx).cast(pa.float64())
                    if name in table.column_names
                    else pa.nulls(len(rest), pa.float64())
                )
                for name in schemas.NUMBER_FIELDS
            },
        }
    )
    return sums, others, clean


def _sum(table: pa.Table, numbers: str, rows: str) -> pa.Table:
    """Per (timestamp, broker, _bundle): ``numbers`` ("sum") of each number, ``rows`` ("count" or "sum")."""
    counted = "timestamp" if rows == "count" else "rows"
    done = table.group_by(["timestamp", "broker", "_bundle"], use_threads=False).aggregate(
        [(name, numbers) for name in schemas.NUMBER_FIELDS] + [(counted, rows)]
    )
    done = done.rename_columns(
        ["timestamp", "broker", "_bundle", *schemas.NUMBER_FIELDS, "rows"]
        if done.column_names[0] == "timestamp"
        else [*schemas.NUMBER_FIELDS, "rows", "timestamp", "broker", "_bundle"]
    )
    i = done.schema.get_field_index("broker")
    return done.set_column(i, "broker", done.column(i).cast(pa.string()))  # pieces' dictionaries differ


class _SamplesWriter:
    """The clean rows of one fragment → one ``topic_samples/`` file, written under a temporary name and renamed
    (a retried task leaves one file).  Names stay dictionary columns; row groups of about ``ROW_GROUP`` rows."""

    ROW_GROUP = 1 << 20

    def __init__(self, samples_dir: str, index: int) -> None:
        self.final = os.path.join(samples_dir, f"part-{index:05d}-columnar.parquet")
        self.temp = os.path.join(samples_dir, f".{uuid.uuid4().hex}.tmp")
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.Table] = []
        self.rows = 0

    def add(self, clean: pa.Table, resolver: _Resolver) -> None:
        ids = clean.column("_bundle").combine_chunks()
        bundles, namespaces, namespace_of = resolver.bundles(), resolver.namespace_names(), resolver.namespace_index()
        self.pending.append(
            pa.table(
                {
                    "timestamp": clean.column("timestamp"),
                    "broker": clean.column("broker"),
                    "topic": clean.column("topic"),
                    "bundle": pa.DictionaryArray.from_arrays(ids, bundles),
                    "namespace": pa.DictionaryArray.from_arrays(pc.take(namespace_of, ids), namespaces),
                    **{name: clean.column(name) for name in schemas.RATE_FIELDS},
                    **{name: clean.column(name) for name in schemas.COUNT_FIELDS},
                    "topics": pa.array(np.ones(clean.num_rows, dtype=np.int64)),
                }
            )
        )
        self.rows += clean.num_rows
        if self.rows >= self.ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        table = pa.concat_tables(self.pending)
        if self.writer is None:
            self.writer = pq.ParquetWriter(
                self.temp,
                table.schema,
                use_dictionary=["broker", "topic", "bundle", "namespace"],
                write_statistics=["timestamp", "broker", "bundle", "namespace"],
                dictionary_pagesize_limit=16 << 20,
            )
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.pending, self.rows = [], 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
            os.replace(self.temp, self.final)


def scan_fragment(fragment: Fragment, boundaries: Boundaries, samples_dir: str | None, index: int) -> pa.Table:
    """One fragment → its ``SCAN`` rows (and its share of ``topic_samples/`` when ``samples_dir``), read one
    row group at a time (memory stays at a row group's size)."""
    present = pq.read_schema(fragment.path).names
    columns = [c for c in schemas.TRACE_COLUMNS if c in present]
    f = pq.ParquetFile(fragment.path, read_dictionary=["broker"] if "broker" in columns else None)
    groups = fragment.row_groups if fragment.row_groups is not None else tuple(range(f.num_row_groups))
    resolver = _Resolver.for_boundaries(boundaries)
    writer = _SamplesWriter(samples_dir, index) if samples_dir is not None else None
    sums: list[pa.Table] = []
    others: list[pa.Table] = []
    for group in groups:
        piece_sums, piece_others, clean = _scan_piece(
            f.read_row_group(group, columns=columns, use_threads=False), resolver
        )
        sums.append(piece_sums)
        if piece_others is not None:
            others.append(piece_others)
        if writer is not None:
            writer.add(clean, resolver)
    if writer is not None:
        writer.close()
    total = _sum(pa.concat_tables(sums), "sum", "sum") if sums else None
    return _scan_rows(total, others, resolver)


def _scan_rows(total: pa.Table | None, others: list[pa.Table], resolver: _Resolver) -> pa.Table:
    """The fragment's sums with bundle and namespace names, then its other rows (``rows`` null)."""
    parts: list[pa.Table] = []
    if total is not None and total.num_rows:
        ids = total.column("_bundle")
        parts.append(
            pa.table(
                {
                    "timestamp": total.column("timestamp"),
                    "broker": total.column("broker").cast(pa.string()),
                    "topic": pa.nulls(total.num_rows, pa.string()),
                    "bundle": pc.take(resolver.bundles(), ids),
                    "namespace": pc.take(resolver.namespace_names(), pc.take(resolver.namespace_index(), ids)),
                    **{name: total.column(name) for name in schemas.NUMBER_FIELDS},
                    "topics": total.column("rows"),
                    "rows": total.column("rows"),
                }
            ).cast(_SCAN_ARROW)
        )
    for o in others:
        n = o.num_rows
        parts.append(
            o.append_column("bundle", pa.nulls(n, pa.string()))
            .append_column("namespace", pa.nulls(n, pa.string()))
            .append_column("topics", pa.nulls(n, pa.int64()))
            .append_column("rows", pa.nulls(n, pa.int64()))
            .select(_SCAN_ARROW.names)
            .cast(_SCAN_ARROW)
        )
    return pa.concat_tables(parts) if parts else _SCAN_ARROW.empty_table()


def scan(spark: Any, fragments: list[Fragment], boundaries: Boundaries, samples_dir: str | None) -> DataFrame:
    """The ``SCAN`` rows of every fragment, one Spark task per fragment."""
    frags = list(fragments)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from scan_fragment(frags[i], boundaries, samples_dir, i).to_batches(max_chunksize=1 << 16)

    ids = spark.range(0, len(frags), 1, numPartitions=max(1, len(frags))).select(F.col("id").cast("int").alias("i"))
    scanned: DataFrame = ids.mapInArrow(run, SCAN)
    return scanned
