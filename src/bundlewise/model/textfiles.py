"""The one way bundlewise reads an input file's text (docs/formats.md, "Input rules").

Every file a command reads whole — snapshots, load reports, ``broker.conf``/JSON/TOML configuration, scenario
TOML, topic lists, throttling scenarios, bundle boundaries — goes through ``read_text``:

* **Size first.**  A file larger than ``MAX_TEXT_BYTES`` is refused from its size alone, before a byte of it is
  read (parsed JSON takes several times its text in memory); stdin is read in chunks and refused as soon as it
  passes the limit.  Traces (CSV, JSON Lines, Parquet) are streamed in blocks instead and have no such cap.
* **UTF-8**, strictly: a file that is not (a binary file, Latin-1 text) is refused, as is one holding NUL bytes.
* **Byte-order mark and Windows line ends**: a leading UTF-8 BOM is removed and CRLF read as LF, each with a
  one-line note on stderr — an editor that saved either must not cost the first key of a ``broker.conf``
  (Java's ``Properties#load`` reads a BOM as part of the first key's name, so Pulsar itself would miss it).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from bundlewise.model.errors import InputError

MAX_TEXT_BYTES = 64 << 20
"""The largest file read whole (64 MiB; parsed JSON takes several times its text); larger inputs are split (every
command that reads snapshots takes several files) or go to the pipeline, which streams them."""
BOM = "\ufeff"


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def source_name(path: str) -> str:
    """How errors name an input file (``-`` is stdin)."""
    return "<stdin>" if path == "-" else path


def _too_large(size: int, source: str, limit: int) -> InputError:
    return InputError(
        f"is {size / (1 << 20):,.0f} MiB; expected at most {limit >> 20} MiB for a file read whole "
        "(split it, or give traces as CSV, JSON Lines or Parquet, which are streamed)",
        source=source,
    )


def _read_capped(stream: BinaryIO, source: str, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise _too_large(total, source, limit)
        chunks.append(chunk)


def read_bytes(path: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of ``path`` (``-``: stdin), refused past ``limit`` before they are read."""
    source = source_name(path)
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream put in place of stdin (tests, embedding programs)
            text = sys.stdin.read(limit + 1)
            if len(text) > limit:
                raise _too_large(len(text), source, limit)
            return text.encode("utf-8")
        return _read_capped(stream, source, limit)
    try:
        if os.path.isdir(path):
            raise InputError("is a directory; expected a file", source=source)
        size = os.stat(path).st_size
        if size > limit:
            raise _too_large(size, source, limit)
        with open(path, "rb") as fh:
            return _read_capped(fh, source, limit)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=source) from None


def decode(data: bytes, source: str, note: Callable[[str], None] = _stderr) -> str:
    """``data`` as UTF-8 text, BOM removed and CRLF read as LF (each with a note)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 text at byte {e.start}; expected UTF-8 (a binary file, or text saved as Latin-1?)",
            source=source,
        ) from None
    if "\x00" in text:
        raise InputError("holds NUL bytes; expected text (a binary file?)", source=source)
    return normalise(text, source, note)


def normalise(text: str, source: str, note: Callable[[str], None] = _stderr) -> str:
    """``text`` without a leading BOM and with CRLF as LF, each change noted once."""
    if text.startswith(BOM):
        text = text[1:]
        note(f"note: {source}: removed a UTF-8 byte-order mark at the start")
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
        note(f"note: {source}: read Windows line ends (CRLF) as LF")
    return text


def read_text(path: str, limit: int = MAX_TEXT_BYTES, note: Callable[[str], None] = _stderr) -> str:
    """The text of ``path`` (``-``: stdin) by the rules of this module."""
    return decode(read_bytes(path, limit), source_name(path), note)


def reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number in JSON")


def parse_json(text: str, source: str) -> Any:
    """One JSON document (``NaN``/``Infinity`` refused: JSON has no such numbers)."""
    try:
        return json.loads(text, parse_constant=reject_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}", source=source) from None
    except ValueError as e:
        raise InputError(f"malformed JSON: {e}", source=source) from None
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply (more than about 1,000 levels)", source=source) from None


def read_json(path: str) -> Any:
    """The JSON document of ``path`` (``-``: stdin)."""
    return parse_json(read_text(path), source_name(path))


def strip_bom(first: bytes, source: str, note: Callable[[str], None] = _stderr) -> bytes:
    """The first block of a streamed file without a leading UTF-8 BOM (noted as ``normalise`` notes it)."""
    if first.startswith(BOM.encode("utf-8")):
        note(f"note: {source}: removed a UTF-8 byte-order mark at the start")
        return first[3:]
    return first
