"""The fast path: Spark tasks that read their fragment with pyarrow and sum its clean rows in Arrow.

Every input the fast path can read (``fragments.plan``: Parquet, CSV and JSON Lines traces, dump files, on any
file system ``pyarrow.fs`` opens) is scanned here, one Spark task per fragment.  Per piece (a row group, a text
block, a dump file):

* each *distinct* topic name is resolved by the model itself — ``TopicName.parse`` (the name must be its own
  full name) and ``NamespaceBundles.bundle_for_hash`` of ``crc32_hash`` (``NamespaceBundles#findBundle``) —
  cached per worker process across fragments and runs; a bundle the input carries (broker-stats/topics dumps,
  load reports) is taken as it is;
* a row is **clean** when its timestamp is a whole number of ms in ``[0, 2^53)``, every rate and count is absent
  (0, as the general path reads it) or a finite number ≥ 0 (counts whole, below 2^53), and its topic resolved —
  for text, read from the strict decimal forms on which pyarrow's and Spark's conversions agree;
* clean rows are hash-aggregated per (timestamp, broker, bundle) in Arrow; only those sums leave the task
  (kind ``SUMS``), and with ``samples`` the task writes the clean rows to ``topic_samples/`` itself (one Parquet
  file per fragment through ``pyarrow.fs``, under a temporary name renamed when complete; names kept
  dictionary-encoded);
* a piece with any other row (or one pyarrow could not read as Spark would) is not summed here: it leaves the
  task as a fragment of its own (``FRAGMENT``: its path and byte range, row group or file, ``Fragment.encode``)
  and the route reads it with Spark's readers and sends it through the general path (``reading.read_fragments``,
  ``ingest.validate_trace``, ``transforms.resolve``), which gives each of its rows its bundle or its reject
  reason: no row is judged by two implementations, the conservative clean test only picks the route, and no row
  travels through the driver.  Dump parsers' rejects (``REJECT``) and load reports' broker rows (``REPORT``, a
  JSON object each) leave the task too.

``tests/test_pipeline_columnar.py``, ``tests/test_pipeline_text.py`` and ``tests/test_pipeline_routes.py`` run
whole jobs on every route and compare every output.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
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
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.columns import COUNT_FIELDS, NUMBER_FIELDS, RATE_FIELDS
from bundlewise.pipeline.fragments import Fragment, Plan, pieces
from bundlewise.pipeline.locations import Location
from bundlewise.pipeline.schemas import BROKER_REPORTS

EXACT_LIMIT = 2**53
"""Timestamps and counts below this convert between long and double exactly (the general path goes through
double); anything at or above takes the general path."""
SUMS, FRAGMENT, REJECT, REPORT = 0, 1, 2, 3
"""The kinds of row a scan task returns."""
_DECIMAL = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_WHOLE = r"^[0-9]{1,15}$"

SCAN = T.StructType(
    [
        T.StructField("kind", T.ByteType(), False),
        T.StructField("timestamp", T.LongType(), True),
        T.StructField("broker", T.StringType(), True),
        T.StructField("bundle", T.StringType(), True),
        T.StructField("namespace", T.StringType(), True),
        *[T.StructField(f, T.DoubleType(), True) for f in NUMBER_FIELDS],
        T.StructField("topics", T.LongType(), True),
        T.StructField("rows", T.LongType(), True),
        T.StructField("source", T.StringType(), True),
        T.StructField("record", T.StringType(), True),
        T.StructField("reason", T.StringType(), True),
    ]
)
"""What a task returns, one ``kind`` per row: the sums per (timestamp, broker, bundle) with their ``rows``; the
fragments for the general path (``source`` the file, ``record`` the fragment); rejects; broker reports."""
_SCAN_ARROW = to_arrow_schema(SCAN)
_REPORTS_ARROW = to_arrow_schema(BROKER_REPORTS)


class _Resolver:
    """Topic names and carried bundle names → bundle ids (-1: the general path takes the row).

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
        self._names: list[str] = []  # every name resolved, in order, and its id: looked up in Arrow
        self._known: pa.Array = pa.array([], pa.string())
        self._known_ids = np.zeros(0, np.int32)

    @classmethod
    def for_boundaries(cls, boundaries: Boundaries) -> _Resolver:
        if cls.current is None or cls.current.boundaries != boundaries:
            cls.current = cls(boundaries)
        return cls.current

    def _bundle_id(self, bundle: str, namespace: str) -> int:
        bid = self.bundle_ids.setdefault(bundle, len(self.bundle_ids))
        if bid == len(self.namespace_of):
            self.namespace_of.append(self.namespace_ids.setdefault(namespace, len(self.namespace_ids)))
        return bid

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
        return self._bundle_id(bundle, ns)

    def _id(self, name: str) -> int:
        bid = self.cache.get(name)
        if bid is None:
            bid = self.cache[name] = self._resolve(name)
        return bid

    def row_ids(self, topics: pa.Array) -> tuple[np.ndarray, pa.DictionaryArray]:
        """Per row, the bundle id of its topic (-1: null or not a clean full name), and the topics
        dictionary-encoded.  A piece listing the same topics in the same order as the previous one (periodic
        stats of one cluster) reuses both."""
        if self._last is not None and self._last[0].equals(topics):
            return self._last[1], self._last[2]
        encoded = topics if pa.types.is_dictionary(topics.type) else pc.dictionary_encode(topics)
        ids = self._dictionary_ids(encoded.dictionary)
        rows: np.ndarray = np.append(ids, np.int32(-1))[encoded.indices.fill_null(-1).to_numpy()]  # -1: null slot
        self._last = (topics, rows, encoded)
        return rows, encoded

    def _dictionary_ids(self, names: pa.Array) -> np.ndarray:
        """The id of each (distinct) name: known names looked up in Arrow, new ones resolved by the model."""
        found = pc.index_in(names, value_set=self._known)
        missing = found.is_null()
        if missing.true_count:
            for name in names.filter(missing).to_pylist():
                self._names.append(name)
                self._known_ids = np.append(self._known_ids, np.int32(self._id(name)))
            self._known = pa.array(self._names, pa.string())
            found = pc.index_in(names, value_set=self._known)
        ids: np.ndarray = self._known_ids[found.to_numpy(zero_copy_only=False)]
        return ids

    def carried_ids(self, bundles: pa.Array) -> np.ndarray:
        """Per row, the id of the bundle the input carries (-1: none)."""
        encoded = pc.dictionary_encode(bundles)
        ids = np.fromiter(
            (self._bundle_id(b, b.rsplit("/", 1)[0]) for b in encoded.dictionary.to_pylist()),
            dtype=np.int32,
            count=len(encoded.dictionary),
        )
        rows: np.ndarray = np.append(ids, np.int32(-1))[encoded.indices.fill_null(-1).to_numpy()]
        return rows

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
    elif column.num_chunks > 1:  # one dictionary (one lookup) per piece, not per reader block
        column = pa.chunked_array([column.combine_chunks()])
    parts = [resolver.row_ids(c) for c in column.chunks]
    if not parts:
        return np.zeros(0, dtype=np.int32), pa.chunked_array([], pa.dictionary(pa.int32(), pa.string()))
    ids = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
    return ids, pa.chunked_array([p[1] for p in parts])


def _from_text(col: pa.ChunkedArray, target: pa.DataType, pattern: str) -> tuple[pa.ChunkedArray, np.ndarray]:
    """A text column → ``target`` and a mask of the values read (nulls stay null and count as read).

    Text that is not in ``pattern``'s strict form is not read here (the general path reads it)."""
    try:
        return col.cast(target), np.ones(len(col), bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        matched = pc.match_substring_regex(col, pattern)
        ok = matched.fill_null(True).to_numpy(zero_copy_only=False)
        try:
            return pc.if_else(matched, col, pa.scalar("0")).cast(target), ok
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # e.g. an exponent past the double range
            return pa.chunked_array([pa.nulls(len(col), target)]), col.is_null().to_numpy(zero_copy_only=False)


def _numbers(table: pa.Table, name: str) -> tuple[pa.ChunkedArray, np.ndarray]:
    """(the column as float64 for rates, int64 for counts; mask of clean values: absent or null (0, as the
    general path reads them), else finite and >= 0, counts whole and below 2^53)."""
    n = table.num_rows
    count = name in COUNT_FIELDS
    if name not in table.column_names:
        return pa.chunked_array([pa.array(np.zeros(n, dtype=np.int64 if count else np.float64))]), np.ones(n, bool)
    col = table.column(name)
    read = np.ones(n, bool)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        col, read = _from_text(col, pa.float64(), _DECIMAL)
    if count and pa.types.is_integer(col.type) and col.type != pa.uint64():  # uint64 may not fit: float path
        values = col.fill_null(0).cast(pa.int64()).to_numpy()
        return pa.chunked_array([pa.array(values)]), read & (values >= 0) & (values < EXACT_LIMIT)
    values = col.cast(pa.float64()).fill_null(0.0).to_numpy()
    ok = read & np.isfinite(values) & (values >= 0)
    if count:
        ok &= (values == np.floor(values)) & (values < EXACT_LIMIT)
        return pa.chunked_array([pa.array(np.where(ok, values, 0).astype(np.int64))]), ok
    return pa.chunked_array([pa.array(values)]), ok


def _timestamps(table: pa.Table) -> tuple[pa.ChunkedArray, np.ndarray]:
    """(timestamps as int64, mask of clean ones: present, whole ms in [0, 2^53))."""
    col = table.column("timestamp")
    read = np.ones(len(col), bool)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        col, read = _from_text(col, pa.int64(), _WHOLE)
    ts = col.cast(pa.int64())
    values = ts.fill_null(-1).to_numpy()
    return ts, read & (values >= 0) & (values < EXACT_LIMIT)


def _scan_piece(table: pa.Table, resolver: _Resolver) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """One piece → (its sums per (timestamp, broker, bundle id), its clean rows, the indices of the others)."""
    n = table.num_rows
    ts, ok = _timestamps(table)
    numbers: dict[str, pa.ChunkedArray] = {}
    for name in NUMBER_FIELDS:
        numbers[name], usable = _numbers(table, name)
        ok &= usable
    carried = table.column("bundle").combine_chunks() if "bundle" in table.column_names else None
    if "topic" in table.column_names:
        row_bundle, topics = _topic_ids(table.column("topic"), resolver)
    else:
        row_bundle, topics = np.full(n, -1, np.int32), pa.chunked_array([pa.nulls(n, pa.string())])
    if carried is not None and carried.null_count < n:
        row_bundle = np.where(
            carried.is_null().to_numpy(zero_copy_only=False), row_bundle, resolver.carried_ids(carried)
        )
    ok &= row_bundle >= 0
    broker = table.column("broker") if "broker" in table.column_names else pa.chunked_array([pa.nulls(n, pa.string())])
    counted = table.column("topics") if "topics" in table.column_names else pa.array(np.ones(n, dtype=np.int64))
    clean = pa.table(
        {
            "timestamp": ts,
            "broker": broker,
            "topic": topics,
            "_bundle": pa.array(row_bundle),
            **{name: numbers[name] for name in NUMBER_FIELDS},
            "topics": counted,
        }
    )
    if not ok.all():
        clean = clean.filter(pa.array(ok))
    return _sum(clean.drop_columns(["topic"]), "count"), clean, np.flatnonzero(~ok)


_SUMMED = (*NUMBER_FIELDS, "topics")


def _sum(table: pa.Table, rows: str) -> pa.Table:
    """Per (timestamp, broker, _bundle): the sum of each number and of ``topics``; ``rows`` by ``count`` (input
    rows) or ``sum`` (of partial sums' ``rows``)."""
    counted = "timestamp" if rows == "count" else "rows"
    done = table.group_by(["timestamp", "broker", "_bundle"], use_threads=False).aggregate(
        [(name, "sum") for name in _SUMMED] + [(counted, rows)]
    )
    names = {f"{c}_sum": c for c in _SUMMED} | {f"{counted}_{rows}": "rows"}
    done = done.rename_columns([names.get(c, c) for c in done.column_names])
    i = done.schema.get_field_index("broker")
    return done.set_column(i, "broker", done.column(i).cast(pa.string()))  # pieces' dictionaries differ


class _SamplesWriter:
    """The clean rows of one fragment → one ``topic_samples/`` file, written under a temporary name and renamed
    (a retried task leaves one file).  Names stay dictionary columns; row groups of about ``ROW_GROUP`` rows."""

    ROW_GROUP = 1 << 20

    def __init__(self, folder: Location, index: int) -> None:
        arrow = folder.arrow_fs()
        if arrow is None:
            raise OSError(f"pyarrow cannot write to {folder.uri}")
        self.fs, path = arrow
        self.final = f"{path}/part-{index:05d}-columnar.parquet"
        self.temp = f"{path}/.{uuid.uuid4().hex}.tmp"
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.Table] = []
        self.rows = 0

    def add(self, clean: pa.Table, resolver: _Resolver) -> None:
        ids = clean.column("_bundle").combine_chunks()
        bundles, namespaces, namespace_of = resolver.bundles(), resolver.namespace_names(), resolver.namespace_index()
        topic = clean.column("topic")
        if not pa.types.is_dictionary(topic.type):
            topic = topic.dictionary_encode()
        self.pending.append(
            pa.table(
                {
                    "timestamp": clean.column("timestamp"),
                    "broker": clean.column("broker").cast(pa.string()),
                    "topic": topic,
                    "bundle": pa.DictionaryArray.from_arrays(ids, bundles),
                    "namespace": pa.DictionaryArray.from_arrays(pc.take(namespace_of, ids), namespaces),
                    **{name: clean.column(name) for name in RATE_FIELDS},
                    **{name: clean.column(name) for name in COUNT_FIELDS},
                    "topics": clean.column("topics").cast(pa.int64()),
                }
            )
        )
        self.rows += clean.num_rows
        if self.rows >= self.ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        table = pa.concat_tables(self.pending, promote_options="permissive")
        if self.writer is None:
            self.writer = pq.ParquetWriter(
                self.temp,
                table.schema,
                filesystem=self.fs,
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
            self.fs.move(self.temp, self.final)


def scan_fragment(
    plan: Plan, fragment: Fragment, boundaries: Boundaries, samples: Location | None, index: int
) -> pa.Table:
    """One fragment → its ``SCAN`` rows (and its share of ``topic_samples/`` when ``samples``).  A piece the scan
    does not take whole becomes one ``FRAGMENT`` row and nothing else: the general path reads all of it."""
    resolver = _Resolver.for_boundaries(boundaries)
    writer = _SamplesWriter(samples, index) if samples is not None else None
    sums: list[pa.Table] = []
    extra: list[pa.Table] = []
    for piece in pieces(plan, fragment):
        if piece.table is not None and piece.table.num_rows:
            piece_sums, clean, rest = _scan_piece(piece.table, resolver)
            if len(rest):
                extra.append(_texts(FRAGMENT, piece.source, [piece.where.encode()]))
                continue
            sums.append(piece_sums)
            if writer is not None:
                writer.add(clean, resolver)
        elif piece.table is None:
            extra.append(_texts(FRAGMENT, piece.source, [piece.where.encode()]))
            continue
        if piece.rejects:
            extra.append(_rejects(piece.rejects))
        if piece.reports:
            extra.append(_texts(REPORT, piece.source, piece.reports))
    if writer is not None:
        writer.close()
    total = _sum(pa.concat_tables(sums), "sum") if sums else None
    return _scan_rows(total, extra, resolver)


def _texts(kind: int, source: str, records: list[str]) -> pa.Table:
    n = len(records)
    return _only(kind, n, source=pa.array([source] * n, pa.string()), record=pa.array(records, pa.string()))


def _rejects(rejects: list[tuple[str, str, str]]) -> pa.Table:
    source, record, reason = (list(c) for c in zip(*rejects, strict=True))
    return _only(
        REJECT,
        len(rejects),
        source=pa.array(source, pa.string()),
        record=pa.array(record, pa.string()),
        reason=pa.array(reason, pa.string()),
    )


def _only(kind: int, n: int, **columns: pa.Array) -> pa.Table:
    """``n`` rows of ``kind`` with the given columns, every other column null."""
    data = {
        f.name: columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in _SCAN_ARROW if f.name != "kind"
    }
    return pa.table({"kind": pa.array(np.full(n, kind, np.int8)), **data}).cast(_SCAN_ARROW)


def _scan_rows(total: pa.Table | None, extra: list[pa.Table], resolver: _Resolver) -> pa.Table:
    """The fragment's sums with bundle and namespace names, then its other rows."""
    parts: list[pa.Table] = []
    if total is not None and total.num_rows:
        ids = total.column("_bundle")
        n = total.num_rows
        parts.append(
            pa.table(
                {
                    "kind": pa.array(np.full(n, SUMS, np.int8)),
                    "timestamp": total.column("timestamp"),
                    "broker": total.column("broker").cast(pa.string()),
                    "bundle": pc.take(resolver.bundles(), ids),
                    "namespace": pc.take(resolver.namespace_names(), pc.take(resolver.namespace_index(), ids)),
                    **{name: total.column(name).cast(pa.float64()) for name in NUMBER_FIELDS},
                    "topics": total.column("topics"),
                    "rows": total.column("rows"),
                    "source": pa.nulls(n, pa.string()),
                    "record": pa.nulls(n, pa.string()),
                    "reason": pa.nulls(n, pa.string()),
                }
            ).cast(_SCAN_ARROW)
        )
    parts.extend(extra)
    return pa.concat_tables(parts) if parts else _SCAN_ARROW.empty_table()


def scan(spark: Any, plan: Plan, boundaries: Boundaries, samples: Location | None) -> DataFrame:
    """The ``SCAN`` rows of every fragment of ``plan``, one Spark task per fragment."""
    frags = list(plan.fragments)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield from scan_fragment(plan, frags[i], boundaries, samples, i).to_batches(max_chunksize=1 << 16)

    ids = spark.range(0, len(frags), 1, numPartitions=max(1, len(frags))).select(F.col("id").cast("int").alias("i"))
    scanned: DataFrame = ids.mapInArrow(run, SCAN)
    return scanned


def of_kind(scanned: DataFrame, k: int) -> DataFrame:
    """The scan's rows of one kind."""
    return scanned.where(F.col("kind") == k)


def reports_frame(scanned: DataFrame) -> DataFrame:
    """The ``REPORT`` rows as ``schemas.BROKER_REPORTS`` rows, in Spark (each record a JSON object)."""
    parsed = of_kind(scanned, REPORT).select(F.from_json(F.col("record"), BROKER_REPORTS).alias("r"))
    return parsed.select(*[F.col(f"r.{f.name}").alias(f.name) for f in BROKER_REPORTS.fields])


def reports_table(scanned: pa.Table) -> pa.Table:
    """The ``REPORT`` rows of a collected scan as ``schemas.BROKER_REPORTS`` rows, in Arrow."""
    records = scanned.filter(pc.equal(scanned.column("kind"), REPORT)).column("record").to_pylist()
    return pa.Table.from_pylist([json.loads(r) for r in records], _REPORTS_ARROW)
