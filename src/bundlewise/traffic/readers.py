"""Reading a local topic-samples trace with pyarrow, without a JVM: Parquet, CSV, JSON Lines, the pipeline's outputs.

``read_local(path)`` reads a file or a directory of files of one kind (Parquet — a Spark or pyarrow dataset of
many files included —, CSV, JSON Lines) into an Arrow table of the trace's columns, as Spark's readers read them
in the pipeline (``pipeline.reading``), so that ``traffic.rules`` judges the same values:

* **Parquet**: the trace's columns as stored (``bundle`` and ``topics`` too: the pipeline's ``topic_samples/``).
* **CSV**: the first line is the header, every value is text; an unquoted empty field and ``""`` are null.
  Blocks are parsed by pyarrow; a block pyarrow cannot read as Spark's CSV reader does (a line with another
  number of fields, a quoted line break, a ``\\`` or a doubled quote, which Spark's reader escapes differently)
  is read line by line as Spark reads it (``_csv_line``): too few fields are null, extra fields are dropped.
* **JSON Lines**: blocks are parsed by pyarrow with the trace's types (numbers as doubles: the value Spark's
  text-then-double reading gives); a block it cannot read so (a string where a number is expected, a number
  as a topic, ``NaN``/``Infinity`` literals, a duplicate key, trailing text, a line that is not an object) is
  read line by line with the trace fields as text (each number's literal), as Spark reads it; a line that is
  not a JSON object is *malformed* (``traffic.rules``).
* Blank lines are skipped; below a directory, names starting with ``.`` or ``_`` are skipped (``_SUCCESS``,
  checksums), as Spark skips them (``data_files``).

``sniff`` tells a dump (Pulsar's ``broker-stats/topics`` or load-report JSON, Prometheus text) from a trace by
the first file's name and first bytes; dumps, remote paths and ``--spark`` go through the pipeline's Spark
reader instead (``cli/traces.py``).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq

from bundlewise.model.errors import InputError
from bundlewise.model.textfiles import BOM, strip_bom
from bundlewise.traffic.columns import NUMBER_FIELDS, TRACE_COLUMNS

TRACE_KINDS = {".parquet": "parquet", ".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
PROM_EXTENSIONS = (".prom", ".txt", ".metrics")
RECORDED_COLUMNS = ("bundle", "topics")
"""Columns of the pipeline's outputs a replay reads besides the trace's."""
BLOCK_BYTES = 16 << 20
BOM_BYTES = BOM.encode("utf-8")
JSON_SCHEMA = pa.schema(
    [
        ("timestamp", pa.float64()),
        ("topic", pa.string()),
        *[(f, pa.float64()) for f in NUMBER_FIELDS],
        ("broker", pa.string()),
    ]
)
"""The types a JSON Lines block is read with by pyarrow; any other type makes the block read line by line."""


@dataclass
class Part:
    """Rows read alike (a Parquet file, a text block): the trace columns as stored or as text, which rows are
    malformed and their raw text (JSON Lines)."""

    table: pa.Table
    malformed: np.ndarray | None = None
    records: list[str | None] | None = None


@dataclass
class RawTrace:
    """A trace as read, in parts, and where it came from."""

    parts: list[Part]
    source: str
    kind: str
    files: int


def is_remote(path: str) -> bool:
    """A URI of another file system than the local one (``hdfs://``, ``s3a://`` …): Spark reads it."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() != "file"


def local_path(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def data_files(path: str, fs: pafs.FileSystem | None = None) -> list[str] | None:
    """The data files at ``path`` (itself, or every file below it) in ``fs`` (default: the local one), sorted;
    None when it does not exist.  Names starting with ``.`` or ``_`` are skipped below a folder, as Spark skips
    them."""
    fs = fs if fs is not None else pafs.LocalFileSystem()
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        return None
    if info.type == pafs.FileType.File:
        return [path]
    root = path.rstrip("/") + "/"
    files = []
    for f in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        relative = f.path[len(root) :] if f.path.startswith(root) else f.path
        if f.type == pafs.FileType.File and not any(p.startswith((".", "_")) for p in relative.split("/")):
            files.append(f.path)
    return sorted(files)


def sniff(first_file: str, head: bytes) -> str:
    """``trace`` unless the files are ``.prom``/``.txt`` (Prometheus) or single-object JSON dumps."""
    ext = os.path.splitext(first_file)[1].lower()
    if ext in PROM_EXTENSIONS:
        return "prometheus"
    if ext == ".json":
        text = head[: 1 << 16].decode("utf-8", errors="replace").lstrip()
        if text.startswith("{") and "\n{" not in text[:4096]:
            if '"lastStats"' in text or '"report"' in text or '"bandwidthIn"' in text:
                return "load-report"
            return "topics-stats"
    return "trace"


def trace_kind(files: Sequence[str], source: str) -> str:
    """``parquet``, ``csv`` or ``json``: every file of a trace must be of one kind."""
    exts = {os.path.splitext(f)[1].lower() for f in files}
    kinds = {TRACE_KINDS.get(e) for e in exts}
    if len(kinds) != 1 or None in kinds:
        raise InputError(
            f"trace files must all be .parquet, .csv or .jsonl (found {', '.join(sorted(exts))})", source=source
        )
    kind = kinds.pop()
    assert kind is not None
    return kind


def list_input(path: str) -> list[str]:
    files = data_files(local_path(path))
    if files is None:
        raise InputError("no such file or directory", source=path)
    if not files:
        raise InputError("directory holds no input files", source=path)
    return files


def head_bytes(path: str, n: int = 1 << 16) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def read_local(path: str) -> RawTrace:
    """A local trace (module docstring)."""
    files = list_input(path)
    kind = trace_kind(files, path)
    try:
        if kind == "parquet":
            return RawTrace(_parquet(files), path, kind, len(files))
        if kind == "csv":
            return RawTrace(_csv(files, path), path, kind, len(files))
        return RawTrace([p for f in files for p in _json_file(f)], path, kind, len(files))
    except OSError as e:
        raise InputError(f"cannot read: {e}", source=path) from None
    except pa.ArrowInvalid as e:
        what = "not a readable Parquet file" if kind == "parquet" else f"cannot read as {kind}"
        raise InputError(f"{what}: {str(e).splitlines()[0]}", source=path) from None


def _parquet(files: list[str]) -> list[Part]:
    parts = []
    for f in files:
        present = pq.read_schema(f).names
        columns = [c for c in (*TRACE_COLUMNS, *RECORDED_COLUMNS) if c in present]
        # one file, read as such: ``pq.read_table`` goes through pyarrow.dataset, which loads pandas
        parts.append(Part(pq.ParquetFile(f).read(columns=columns)))
    return parts


def _csv(files: list[str], source: str) -> list[Part]:
    """Every file's blocks, with the first file's header (Spark applies it to all files)."""
    header = _csv_header(files[0])
    if not {"timestamp", "topic"} <= set(header):
        missing = [c for c in ("timestamp", "topic") if c not in header]
        raise InputError(
            f"trace has no {', '.join(missing)} column (need timestamp, topic, msgRateIn, ...)", source=source
        )
    return [Part(_csv_block(block, header)) for f in files for block in _blocks(f, skip_first_line=True)]


def _csv_header(path: str) -> list[str]:
    with pafs.LocalFileSystem().open_input_file(path) as fh:
        return csv_header(fh, source=path)


def _blocks(path: str, skip_first_line: bool) -> Iterator[bytes]:
    """The file in blocks of about ``BLOCK_BYTES`` cut at line ends (``line_blocks``)."""
    with pafs.LocalFileSystem().open_input_file(path) as fh:
        for _offset, block in line_blocks(fh, 0, None, skip_first_line, BLOCK_BYTES, source=path):
            yield block


# -- lines and blocks (shared with the pipeline's fast path, ``pipeline.fragments``) ---------------------------


def csv_header(f: pa.NativeFile, source: str | None = None) -> list[str]:
    """The column names of a CSV file's first line (``f`` an open pyarrow file, read from its start), a leading
    byte-order mark removed (``model.textfiles.strip_bom``; noted on stderr when ``source`` names the file)."""
    f.seek(0)
    length = _through_newline(f, 0, f.size())
    f.seek(0)
    first = _without_bom(f.read(length), source)
    return next(csv.reader([first.rstrip(b"\r\n").decode("utf-8", errors="replace")]), [])


def line_blocks(
    f: pa.NativeFile,
    start: int,
    end: int | None,
    skip_header: bool = False,
    block: int = BLOCK_BYTES,
    source: str | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``(offset, block)``: blocks of whole lines of ``f`` (an open pyarrow file) and where each starts — the
    lines whose first byte lies in ``[start, end)`` (Hadoop's ``LineRecordReader`` split rule: a range that does
    not start the file skips the line it starts in; the line it ends in is read to its end), in blocks of about
    ``block`` bytes, each ending at a line end (or the end of the file).  ``skip_header``: a range starting the
    file skips its first line; else a leading byte-order mark is left out (``model.textfiles.strip_bom``; noted on
    stderr when ``source`` names the file).  A block's own range ``[offset, offset + len(block))`` reads it
    again."""
    size = f.size()
    end = size if end is None else min(end, size)
    pos = start
    bom = 0
    if start <= len(BOM_BYTES):  # a range right after the mark (a first block read again) starts the file too
        f.seek(0)
        head = f.read(len(BOM_BYTES))
        bom = len(head) - len(_without_bom(head, source if start == 0 and not skip_header else None))
    if start > bom or (start > 0 and skip_header):  # the line that starts before ``start`` is the previous range's
        f.seek(start - 1)
        pos = start - 1 + _through_newline(f, start - 1, size)
    elif skip_header:
        f.seek(0)
        pos = _through_newline(f, 0, size)
    else:
        pos = bom
    while pos < end:
        f.seek(pos)
        data: bytes = f.read(block)
        if not data:
            return
        if pos + len(data) < size:  # cut at the last line end, reading on when one line is longer than a block
            cut = data.rfind(b"\n")
            while cut < 0 and pos + len(data) < size:
                data += f.read(block)
                cut = data.rfind(b"\n")
            data = data[: cut + 1] if cut >= 0 else data
        if pos + len(data) > end:  # keep only the lines starting before ``end``
            stop = data.find(b"\n", max(0, end - 1 - pos))
            data = data if stop < 0 else data[: stop + 1]
        yield pos, data
        pos += len(data)


def _without_bom(data: bytes, source: str | None) -> bytes:
    """``data`` (a file's first bytes) without a leading UTF-8 byte-order mark, noted on stderr when ``source``
    names the file (the simulator's reader on the driver; the pipeline's tasks remove it silently)."""
    return strip_bom(data, "", _silent) if source is None else strip_bom(data, source)


def _silent(line: str) -> None:
    """Notes are not printed from Spark's tasks."""


def _through_newline(f: pa.NativeFile, at: int, size: int) -> int:
    """How many bytes from ``at`` (the file's position) through the next ``\\n`` (to the end when none)."""
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


def block_lines(block: bytes) -> list[str]:
    """A block's lines that are not blank (Spark's readers skip those), decoded as Spark decodes them (UTF-8, bad
    bytes replaced)."""
    return [x.decode("utf-8", errors="replace") for x in (y.rstrip(b"\r") for y in block.split(b"\n")) if x.strip()]


def block_line_count(block: bytes) -> int:
    """The number of lines of ``block`` that are not blank (``len(block_lines(block))``), without decoding them
    when the block has no blank line."""
    if block[:1] in _BLANK_STARTS or _BLANK_AFTER_NEWLINE.search(block) is not None:
        return len(block_lines(block))  # maybe a blank line: count them one by one
    return block.count(b"\n") + (0 if block.endswith(b"\n") else 1)


_BLANK_STARTS = (b"", b"\n", b"\r", b" ", b"\t", b"\x0b", b"\x0c")
_BLANK_AFTER_NEWLINE = re.compile(rb"\n[\n\r \t\x0b\x0c]")
"""A blank line starts with one of these (``bytes.strip`` whitespace): a block without one counts its line ends."""


# -- CSV ---------------------------------------------------------------------------------------------------


def _csv_block(block: bytes, names: list[str]) -> pa.Table:
    if b"\\" not in block and b'""' not in block:
        try:
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=pacsv.ReadOptions(column_names=names, use_threads=True),
                parse_options=pacsv.ParseOptions(newlines_in_values=False),
                convert_options=pacsv.ConvertOptions(
                    column_types=dict.fromkeys(names, pa.string()),
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=True,
                    null_values=[""],
                ),
            )
            if table.num_rows == block_line_count(block):
                return table
        except pa.ArrowInvalid:
            pass
    rows = [_csv_line(line, len(names)) for line in block_lines(block)]
    return pa.table({c: pa.array([r[i] for r in rows], pa.string()) for i, c in enumerate(names)})


def _csv_line(line: str, width: int) -> list[str | None]:
    """One CSV line as Spark's reader reads it: ``"`` quotes, ``\\`` escapes inside quotes, empty fields and
    ``""`` null, too few fields null, extra fields dropped."""
    fields: list[str | None] = []
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == '"':
            j, value = i + 1, []
            while j < n:
                c = line[j]
                if c == "\\" and j + 1 < n:
                    value.append(line[j + 1])
                    j += 2
                    continue
                if c == '"':
                    break
                value.append(c)
                j += 1
            end = line.find(",", j + 1)
            text = "".join(value)
            tail = line[j + 1 : end if end >= 0 else n]
            if tail:  # characters after the closing quote: Spark keeps the field as written
                text = line[i : end if end >= 0 else n]
            fields.append(text if text else None)
            i = end + 1 if end >= 0 else n + 1
        else:
            end = line.find(",", i)
            text = line[i : end if end >= 0 else n]
            fields.append(text if text else None)
            i = end + 1 if end >= 0 else n + 1
        if i > n:
            break
    return (fields + [None] * width)[:width]


# -- JSON Lines --------------------------------------------------------------------------------------------


def _json_file(path: str) -> list[Part]:
    return [_json_block(block) for block in _blocks(path, skip_first_line=False)]


_LITERALS = (b"NaN", b"Infinity")


def _json_block(block: bytes) -> Part:
    if not any(x in block for x in _LITERALS):
        try:
            table = pajson.read_json(
                pa.py_buffer(block),
                read_options=pajson.ReadOptions(use_threads=True, block_size=max(1 << 20, len(block) + 1)),
                parse_options=pajson.ParseOptions(explicit_schema=JSON_SCHEMA, unexpected_field_behavior="ignore"),
            )
            if table.num_rows == block_line_count(block):
                return Part(table)
        except pa.ArrowInvalid:
            pass
    return _json_lines(block_lines(block))


def _json_lines(lines: list[str]) -> Part:
    """Lines read one by one with every trace field as text (a number's literal), as Spark reads them."""
    columns: dict[str, list[str | None]] = {c: [] for c in TRACE_COLUMNS}
    malformed: list[bool] = []
    records: list[str | None] = []
    decoder = json.JSONDecoder(parse_float=str, parse_int=str, parse_constant=lambda c: f'"{c}"')
    plain_decoder = json.JSONDecoder(parse_constant=str)
    for line in lines:
        try:
            doc, _ = decoder.raw_decode(line.strip())
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            for c in TRACE_COLUMNS:
                columns[c].append(None)
            malformed.append(True)
            records.append(line)
            continue
        nested = any(isinstance(doc.get(c), dict | list) for c in TRACE_COLUMNS)
        plain = plain_decoder.raw_decode(line.strip())[0] if nested else None
        for c in TRACE_COLUMNS:
            value = doc.get(c)
            if nested and isinstance(value, dict | list) and isinstance(plain, dict):
                value = plain.get(c)  # a container is written back with its numbers as numbers
            columns[c].append(_as_text(value))
        malformed.append(False)
        records.append(None)
    table = pa.table({c: pa.array(v, pa.string()) for c, v in columns.items()})
    return Part(table, np.array(malformed, dtype=bool), records)


def _as_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
