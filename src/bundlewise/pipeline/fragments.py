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
cut at line ends, parsed by pyarrow's CSV/JSON readers (CSV all as strings; JSON with the trace's types);
dumps by ``dumps``' parsers.  Each ``Piece`` carries the rows to scan and, for text, the raw line of each row:
a row the scan does not take as clean goes to the general path as its raw line (Spark parses it), and a block
pyarrow cannot parse at all (a malformed line, a type the explicit schema does not allow, a quoted newline)
goes there whole — so the general path, not pyarrow, judges every line that is not plainly clean.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq

from bundlewise.model.errors import InputError
from bundlewise.pipeline import dumps
from bundlewise.pipeline.columns import COUNT_FIELDS, NUMBER_FIELDS, RATE_FIELDS, TRACE_COLUMNS
from bundlewise.pipeline.locations import Location, arrow_files
from bundlewise.traffic.readers import sniff, trace_kind

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
    """One task's share: ``files`` (paths inside the input's file system); for Parquet optionally some row
    groups of one file; for text a byte range ``[start, end)`` of one file."""

    files: tuple[str, ...]
    row_groups: tuple[int, ...] | None = None
    start: int = 0
    end: int | None = None


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
    """Rows read from a fragment: ``table`` (trace columns; ``bundle`` when the input carries it) and, for text,
    ``lines[i]`` the raw line of row i; or, with ``table`` None, ``lines`` the general path reads whole."""

    source: str
    table: pa.Table | None = None
    lines: Sequence[str] | None = None
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


def plan(location: Location, fmt: str, files: Sequence[str], slots: int, timestamp: int | None = None) -> Plan | None:
    """The fragments of ``files`` (already listed by ``input_files``), or None: the general path reads it.
    ``timestamp``: the time of dump files that carry none (else their modification time)."""
    fs, _ = location.arrow_fs() or (None, None)
    if fs is None:
        return None
    if fmt in DUMP_FORMATS:
        per = max(1, min(DUMP_FILES_PER_FRAGMENT, math.ceil(len(files) / max(1, 2 * slots))))
        groups = [Fragment(tuple(files[i : i + per])) for i in range(0, len(files), per)]
        return Plan(fmt, location, tuple(groups), rows=_bytes(fs, files) // BYTES_PER_ROW, timestamp=timestamp)
    kind = trace_kind(files, location.uri)
    if kind == "parquet":
        parquet = _parquet_fragments(fs, files, slots)
        return None if parquet is None else Plan(kind, location, tuple(parquet[0]), rows=parquet[1])
    header: tuple[str, ...] = ()
    if kind == "csv":
        headers = {_csv_header(fs, f) for f in files}
        if len(headers) != 1:
            return None  # Spark applies the first file's header to all: the general path decides
        header = headers.pop()
        if len(set(header)) != len(header) or not {"timestamp", "topic"} <= set(header):
            return None
    text = _text_fragments(fs, files, slots)
    return Plan(kind, location, tuple(text), header, TEXT_BLOCK_BYTES, _bytes(fs, files) // BYTES_PER_ROW)


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


def _parquet_fragments(fs: pafs.FileSystem, files: Sequence[str], slots: int) -> tuple[list[Fragment], int] | None:
    sizes: list[tuple[str, list[int]]] = []
    for path in files:
        try:
            with fs.open_input_file(path) as f:
                meta = pq.read_metadata(f)
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
    with fs.open_input_stream(path) as f:
        first = f.read(1 << 16).split(b"\n", 1)[0].rstrip(b"\r")
    return tuple(next(csv.reader([first.decode("utf-8", errors="replace")]), []))


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
            for block in blocks:
                yield _text_piece(plan_, path, block)
    else:
        for path in fragment.files:
            with fs.open_input_stream(path) as f:
                text = f.read().decode("utf-8", errors="replace")
            fallback = plan_.timestamp if plan_.timestamp is not None else file_time(fs, path)
            yield _dump_piece(plan_.kind, path, text, fallback)


def file_time(fs: pafs.FileSystem, path: str) -> int | None:
    """A file's modification time in ms (None when the file system does not say)."""
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
            yield Piece(path, f.read_row_group(group, columns=columns, use_threads=False))


def line_blocks(
    f: Any, start: int, end: int | None, skip_header: bool = False, block: int = TEXT_BLOCK_BYTES
) -> Iterator[bytes]:
    """Blocks of whole lines: the lines whose first byte lies in ``[start, end)`` (Hadoop's split rule), in
    blocks of about ``block`` bytes, each ending at a line end (or the end of the file)."""
    size = f.size()
    end = size if end is None else min(end, size)
    pos = start
    if start > 0:  # the line that starts before ``start`` belongs to the previous range
        f.seek(start - 1)
        pos = start - 1 + _through_newline(f, start - 1, size)
    elif skip_header:
        f.seek(0)
        pos = _through_newline(f, 0, size)
    while pos < end:
        f.seek(pos)
        data: bytes = f.read(block)
        if not data:
            return
        if pos + len(data) < size:  # cut at the last line end, reading on when one line is longer than a block
            cut = data.rfind(b"\n")
            while cut < 0 and pos + len(data) < size:
                more = f.read(block)
                data += more
                cut = data.rfind(b"\n")
            data = data[: cut + 1] if cut >= 0 else data
        if pos + len(data) > end:  # keep only the lines starting before ``end``
            stop = data.find(b"\n", max(0, end - 1 - pos))
            data = data if stop < 0 else data[: stop + 1]
        yield data
        pos += len(data)


def _through_newline(f: Any, at: int, size: int) -> int:
    """How many bytes from ``at`` (the stream's position) through the next ``\\n`` (to the end when none)."""
    n = 0
    while at + n < size:
        chunk: bytes = f.read(1 << 16)
        if not chunk:
            break
        i = chunk.find(b"\n")
        if i >= 0:
            return n + i + 1
        n += len(chunk)
    return n


def _lines(block: bytes) -> list[str]:
    """The block's lines that are not blank (Spark's readers skip those), decoded as Spark decodes them (UTF-8,
    bad bytes replaced)."""
    return [x.decode("utf-8", errors="replace") for x in (y.rstrip(b"\r") for y in block.split(b"\n")) if x.strip()]


def _line_count(block: bytes) -> int | None:
    """The number of lines of a block without blank lines; None when it has some (count them one by one)."""
    if block[:1] in _BLANK_STARTS or _BLANK_AFTER_NEWLINE.search(block) is not None:
        return None  # maybe a blank line: the caller counts the lines one by one
    return block.count(b"\n") + (0 if block.endswith(b"\n") else 1)


_BLANK_STARTS = (b"", b"\n", b"\r", b" ", b"\t")
_BLANK_AFTER_NEWLINE = re.compile(rb"\n[\n\r \t]")


def _text_piece(plan_: Plan, path: str, block: bytes) -> Piece:
    """A CSV/JSON block → its rows with their lines; or the block's lines alone when pyarrow cannot read it."""
    try:
        if plan_.kind == "csv":
            if b"\\" in block or b'""' in block:
                raise ValueError("escapes: Spark's CSV reader decides")  # Spark escapes with \, pyarrow doubles "
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
        return Piece(path, None, _lines(block))
    count = _line_count(block)
    lines: Sequence[str] | None = None
    if count is None:
        lines = _lines(block)
        count = len(lines)
    if table.num_rows != count:
        return Piece(path, None, lines if lines is not None else _lines(block))
    return Piece(path, table, lines if lines is not None else _LazyLines(block))


class _LazyLines(Sequence[str]):
    """A block's lines, split only when some row needs its raw line."""

    def __init__(self, block: bytes) -> None:
        self.block = block
        self._lines: list[str] | None = None

    def _all(self) -> list[str]:
        if self._lines is None:
            self._lines = _lines(self.block)
        return self._lines

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __len__(self) -> int:
        lines: list[str] = self._all()
        return len(lines)


_TEXT_TYPES = {"topic": pa.dictionary(pa.int32(), pa.string()), "broker": pa.dictionary(pa.int32(), pa.string())}
"""CSV names are dictionary-encoded as they are read (each distinct name is then looked up once)."""


def _dump_piece(fmt: str, path: str, text: str, fallback: int | None = None) -> Piece:
    rows, rejects = dumps.PARSERS[fmt](path, text, fallback)
    reports: list[str] = []
    if fmt == "load-report":
        brows, brejects = dumps.parse_load_report_broker(path, text, fallback)
        reports = [json.dumps(list(r)) for r in brows]
        rejects += brejects
    table = None
    if rows:
        columns = list(zip(*rows, strict=True))
        table = pa.table({f.name: pa.array(c, f.type) for f, c in zip(DUMP_ROWS, columns, strict=True)})
    return Piece(path, table, None, rejects, reports)
