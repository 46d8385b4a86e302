"""The fast path's input: what each Spark task reads (a *fragment*) and how it reads it into Arrow pieces.

Planning (driver, ``plan``), through the input's ``pyarrow.fs`` file system:

* **Parquet trace**: a file, or a run of its row groups, about two fragments per task slot (whole row groups,
  at most ``MAX_FRAGMENT_ROWS``); only when every file's column types are ones the scan reads as they are.
* **CSV / JSON Lines trace**: byte ranges of about ``TEXT_FRAGMENT_BYTES`` (or fewer, to give each slot two).
  A range owns the lines whose first byte lies in it, as Hadoop's ``LineRecordReader`` splits text: a range
  that does not start a file skips the line it starts in; the line it ends in is read to its end.  Every CSV
  file must have the same header line (Spark reads each file's first line as its header).
* **Dump files** (broker-stats/topics, load reports, Prometheus text): whole files, grouped.

Reading (in the tasks, ``pieces``): Parquet one row group at a time; text in blocks of about ``TEXT_BLOCK_BYTES``
cut at line ends (``traffic.readers.line_blocks``, the one block cutter, shared with the simulator's reader),
parsed by pyarrow's CSV/JSON readers (CSV all as strings; JSON with the trace's types); dumps by ``dumps``'
parsers.  Each ``Piece`` carries its rows and where it came from as a ``Fragment`` of its own (a row group, a
block's byte range, a dump file): a piece the scan does not take whole — a row it does not take as clean, or a
block pyarrow cannot parse at all (a malformed line, a type the explicit schema does not allow, a quoted
newline) — goes to the general path as that fragment, which Spark's readers then read (``reading.
read_fragments``): the general path, not pyarrow, judges every piece that is not plainly clean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq

from bundlewise.model.errors import InputError
from bundlewise.pipeline import dumps
from bundlewise.pipeline.columns import BROKER_REPORT_FIELDS, COUNT_FIELDS, NUMBER_FIELDS, RATE_FIELDS, TRACE_COLUMNS
from bundlewise.pipeline.locations import Location, arrow_files
from bundlewise.traffic.readers import block_line_count, csv_header, line_blocks, sniff, trace_kind

MAX_FRAGMENT_ROWS = 4_000_000
TEXT_FRAGMENT_BYTES = 128 << 20
MIN_TEXT_FRAGMENT_BYTES = 8 << 20
TEXT_BLOCK_BYTES = 16 << 20
DUMP_FILES_PER_FRAGMENT = 64
DUMP_FORMATS = ("topics-stats", "load-report", "prometheus")
BYTES_PER_ROW = 60
"""About the size of one trace row as text, or of one topic in a dump: for estimating rows from bytes."""

JSON_SCHEMA = pa.schema(
    [
        ("timestamp", pa.int64()),
        ("topic", pa.string()),
        *[(f, pa.float64()) for f in NUMBER_FIELDS],
        ("broker", pa.string()),
    ]
)
"""The types a JSON Lines block is read with (counts as numbers: ``2`` and ``2.0`` both; the scan checks they
are whole).  A line with another type for one of these fields makes its block the general path's."""
DUMP_ROWS = pa.schema(
    [
        ("timestamp", pa.int64()),
        ("broker", pa.string()),
        ("topic", pa.string()),
        ("bundle", pa.string()),
        *[(f, pa.float64()) for f in RATE_FIELDS],
        *[(f, pa.int64()) for f in COUNT_FIELDS],
        ("topics", pa.int64()),
    ]
)
"""The rows ``dumps``' parsers return (``columns.SAMPLE_COLUMNS``)."""


@dataclass(frozen=True)
class Fragment:
    """One task's share, or one piece of it: ``files`` (paths inside the input's file system); for Parquet
    optionally some row groups of one file; for text a byte range ``[start, end)`` of one file."""

    files: tuple[str, ...]
    row_groups: tuple[int, ...] | None = None
    start: int = 0
    end: int | None = None

    def encode(self) -> str:
        """The fragment as one line of JSON (how a scan task hands it to the general path)."""
        groups = None if self.row_groups is None else list(self.row_groups)
        return json.dumps({"files": list(self.files), "rowGroups": groups, "start": self.start, "end": self.end})

    @classmethod
    def decode(cls, text: str) -> Fragment:
        doc = json.loads(text)
        groups = doc["rowGroups"]
        return cls(tuple(doc["files"]), None if groups is None else tuple(groups), doc["start"], doc["end"])


@dataclass(frozen=True)
class Plan:
    """How the fast path reads an input: its kind (``parquet``, ``csv``, ``json`` or a dump format), where, the
    fragments, and for CSV the header's column names."""

    kind: str
    location: Location
    fragments: tuple[Fragment, ...]
    header: tuple[str, ...] = ()
    block_bytes: int = TEXT_BLOCK_BYTES
    rows: int = 0
    """The input's rows: exact for Parquet (metadata), else its bytes / ``BYTES_PER_ROW``."""
    timestamp: int | None = None
    """Dumps: the time of a file that carries none (``--timestamp``); None: the file's modification time."""


@dataclass
class Piece:
    """Rows read from a fragment: ``table`` (trace columns; ``bundle`` when the input carries it), None when
    pyarrow cannot read them as Spark would; ``where`` the piece as a fragment of its own (a row group, a text
    block's byte range, a dump file), which the general path reads when the scan does not take the piece whole;
    a dump's parser rejects and (load reports) broker rows as JSON objects."""

    source: str
    where: Fragment
    table: pa.Table | None = None
    rejects: list[tuple[str, str, str]] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)


def input_files(location: Location) -> list[str] | None:
    """The input's files (paths inside its pyarrow file system), None when pyarrow cannot list it here.
    A location pyarrow reaches but that does not exist, or holds no files, is bad input."""
    arrow = location.arrow_fs()
    if arrow is None:
        return None
    fs, path = arrow
    try:
        files = arrow_files(fs, path)
    except OSError as e:
        if location.is_local:
            raise InputError(f"cannot read: {e}", source=location.uri) from None
        return None  # e.g. no credentials for pyarrow here: Spark's own file systems may still read it
    if files is None:
        raise InputError("no such file or directory", source=location.path or location.uri)
    if not files:
        raise InputError("directory holds no input files", source=location.path or location.uri)
    return files


def detect_format(fs: pafs.FileSystem, files: Sequence[str]) -> str:
    """``trace`` unless the files are Prometheus text or single-object JSON dumps (``traffic.readers.sniff``)."""
    with fs.open_input_stream(files[0]) as f:
        head = f.read(1 << 16)
    return sniff(files[0], head)


def plan(location: Location, fmt: str, files: Sequence[str], slots: int, timestamp: int | None = None) -> Plan | str:
    """The fragments of ``files`` (already listed by ``input_files``), or why the fast path cannot read them (the
    general path then reads the input).  ``timestamp``: the time of dump files that carry none (else their
    modification time)."""
    fs, _ = location.arrow_fs() or (None, None)
    if fs is None:
        return "pyarrow cannot open the input here"
    if fmt in DUMP_FORMATS:
        per = max(1, min(DUMP_FILES_PER_FRAGMENT, math.ceil(len(files) / max(1, 2 * slots))))
        groups = [Fragment(tuple(files[i : i + per])) for i in range(0, len(files), per)]
        return Plan(fmt, location, tuple(groups), rows=_bytes(fs, files) // BYTES_PER_ROW, timestamp=timestamp)
    kind = trace_kind(files, location.uri)
    if kind == "parquet":
        parquet = _parquet_fragments(fs, files, slots)
        return parquet if isinstance(parquet, str) else Plan(kind, location, tuple(parquet[0]), rows=parquet[1])
    header: tuple[str, ...] = ()
    if kind == "csv":
        headers = {_csv_header(fs, f) for f in files}
        if len(headers) != 1:  # Spark applies the first file's header to all: the general path decides
            return "the CSV files have different header lines"
        header = headers.pop()
        if len(set(header)) != len(header) or not {"timestamp", "topic"} <= set(header):
            return "the CSV header repeats a column or lacks timestamp or topic"
    text = _text_fragments(fs, files, slots)
    return Plan(kind, location, tuple(text), header, TEXT_BLOCK_BYTES, _bytes(fs, files) // BYTES_PER_ROW)


def estimate_rows(fs: pafs.FileSystem, files: Sequence[str]) -> tuple[int, str]:
    """``(rows, how they were counted)``: a Parquet input's rows from its metadata, else bytes / ``BYTES_PER_ROW``."""
    if all(f.lower().endswith(".parquet") for f in files):
        try:
            rows = 0
            for path in files:
                with fs.open_input_file(path) as f:
                    rows += pq.read_metadata(f).num_rows
            return rows, "Parquet metadata"
        except (OSError, pa.ArrowException):
            pass
    return _bytes(fs, files) // BYTES_PER_ROW, f"{BYTES_PER_ROW} bytes a row"


def _bytes(fs: pafs.FileSystem, files: Sequence[str]) -> int:
    return sum(i.size or 0 for i in fs.get_file_info(list(files)))


def _usable(schema: pa.Schema) -> bool:
    """Parquet column types the scan reads as they are (anything else: the general path)."""

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
    numeric = (kind(f) for f in NUMBER_FIELDS)
    return all(t is None or pa.types.is_integer(t) or pa.types.is_floating(t) for t in numeric)


def _parquet_fragments(fs: pafs.FileSystem, files: Sequence[str], slots: int) -> tuple[list[Fragment], int] | str:
    sizes: list[tuple[str, list[int]]] = []
    for path in files:
        try:
            with fs.open_input_file(path) as f:
                meta = pq.read_metadata(f)
            schema = meta.schema.to_arrow_schema()
        except (OSError, pa.ArrowException):
            return f"pyarrow cannot read the Parquet footer of {path}"
        if not _usable(schema):
            return f"{path} has column types the scan does not read as they are"
        sizes.append((path, [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]))
    total = sum(sum(groups) for _p, groups in sizes)
    target = min(MAX_FRAGMENT_ROWS, max(1, math.ceil(total / max(1, 2 * slots))))
    fragments: list[Fragment] = []
    for path, groups in sizes:
        if sum(groups) <= target:
            fragments.append(Fragment((path,)))
            continue
        run: list[int] = []
        rows = 0
        for i, n in enumerate(groups):
            if run and rows + n > target:
                fragments.append(Fragment((path,), tuple(run)))
                run, rows = [], 0
            run.append(i)
            rows += n
        if run:
            fragments.append(Fragment((path,), tuple(run)))
    return fragments, total


def _csv_header(fs: pafs.FileSystem, path: str) -> tuple[str, ...]:
    with fs.open_input_file(path) as f:
        return tuple(csv_header(f))


def _text_fragments(fs: pafs.FileSystem, files: Sequence[str], slots: int) -> list[Fragment]:
    infos = fs.get_file_info(list(files))
    total = sum(i.size or 0 for i in infos)
    target = max(MIN_TEXT_FRAGMENT_BYTES, min(TEXT_FRAGMENT_BYTES, math.ceil(total / max(1, 2 * slots))))
    fragments = []
    for info in infos:
        size = info.size or 0
        for start in range(0, max(size, 1), target):
            fragments.append(Fragment((info.path,), start=start, end=min(size, start + target)))
    return fragments


def pieces(plan_: Plan, fragment: Fragment) -> Iterator[Piece]:
    """The fragment's rows, piece by piece (a row group, a text block, a dump file)."""
    fs, _ = plan_.location.arrow_fs() or (pafs.LocalFileSystem(), "")
    if plan_.kind == "parquet":
        yield from _parquet_pieces(fs, fragment)
    elif plan_.kind in ("csv", "json"):
        path = fragment.files[0]
        with fs.open_input_file(path) as f:
            blocks = line_blocks(f, fragment.start, fragment.end, plan_.kind == "csv", plan_.block_bytes)
            for offset, block in blocks:
                where = Fragment((path,), start=offset, end=offset + len(block))
                yield Piece(path, where, _text_table(plan_, block))
    else:
        for path in fragment.files:
            with fs.open_input_stream(path) as f:
                text = f.read().decode("utf-8", errors="replace")
            yield _dump_piece(plan_.kind, path, text, dump_time(plan_, fs, path))


def dump_time(plan_: Plan, fs: pafs.FileSystem, path: str) -> int | None:
    """The time of a dump file that carries none: ``--timestamp``, else the file's modification time in ms (None
    when the file system does not say)."""
    if plan_.timestamp is not None:
        return plan_.timestamp
    mtime = fs.get_file_info(path).mtime_ns
    return None if mtime is None else mtime // 1_000_000


def _parquet_pieces(fs: pafs.FileSystem, fragment: Fragment) -> Iterator[Piece]:
    path = fragment.files[0]
    with fs.open_input_file(path) as handle:
        present = pq.read_schema(handle).names
        columns = [c for c in TRACE_COLUMNS if c in present]
        f = pq.ParquetFile(handle, read_dictionary=["broker"] if "broker" in columns else None)
        groups = fragment.row_groups if fragment.row_groups is not None else tuple(range(f.num_row_groups))
        for group in groups:
            table = f.read_row_group(group, columns=columns, use_threads=False)
            yield Piece(path, Fragment((path,), (group,)), table)


def _text_table(plan_: Plan, block: bytes) -> pa.Table | None:
    """A CSV/JSON block → its rows, or None when pyarrow cannot read it as Spark's reader would."""
    try:
        if plan_.kind == "csv":
            if b"\\" in block or b'""' in block:
                return None  # escapes: Spark's CSV reader escapes with \, pyarrow doubles "
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=pacsv.ReadOptions(
                    column_names=list(plan_.header), use_threads=False, block_size=len(block) + 1
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: _TEXT_TYPES.get(c, pa.string()) for c in plan_.header},
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                    null_values=[""],
                ),
            )
        else:
            table = pajson.read_json(
                pa.py_buffer(block),
                read_options=pajson.ReadOptions(use_threads=False),
                parse_options=pajson.ParseOptions(explicit_schema=JSON_SCHEMA, unexpected_field_behavior="ignore"),
            )
    except (pa.ArrowException, ValueError):
        return None
    return table if table.num_rows == block_line_count(block) else None  # blank lines pyarrow read as rows


_TEXT_TYPES = {"topic": pa.dictionary(pa.int32(), pa.string()), "broker": pa.dictionary(pa.int32(), pa.string())}
"""CSV names are dictionary-encoded as they are read (each distinct name is then looked up once)."""


def _dump_piece(fmt: str, path: str, text: str, fallback: int | None = None) -> Piece:
    rows, rejects = dumps.PARSERS[fmt](path, text, fallback)
    reports: list[str] = []
    if fmt == "load-report":
        brows, brejects = dumps.parse_load_report_broker(path, text, fallback)
        reports = [json.dumps(dict(zip(BROKER_REPORT_FIELDS, r, strict=True))) for r in brows]
        rejects += brejects
    table = DUMP_ROWS.empty_table()
    if rows:
        columns = list(zip(*rows, strict=True))
        table = pa.table({f.name: pa.array(c, f.type) for f, c in zip(DUMP_ROWS, columns, strict=True)})
    return Piece(path, Fragment((path,)), table, rejects, reports)
