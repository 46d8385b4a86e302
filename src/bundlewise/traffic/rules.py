"""What counts as a sample in a topic-samples trace, and why a row is rejected: the one set of rules.

The rules (docs/formats.md, topic-samples trace), checked per row in this order, the first that fails naming
the reject's ``reason``:

1. ``malformed record`` — a line the file's reader cannot read as a record (JSON Lines only);
2. ``timestamp: missing`` — no timestamp; ``timestamp: expected ms since the epoch (>= 0) or ISO-8601`` — a
   number (typed, or text in the number grammar below) that is NaN, negative or not below 9.2·10¹⁸ and is not
   an ISO-8601 date-time either.  A number is truncated to whole ms (``1.5`` is 1).  ISO-8601 is
   ``YYYY-MM-DD`` optionally followed by ``T`` or a space, ``hh:mm:ss``, up to 9 fraction digits (truncated to
   ms) and ``Z`` or ``±hh:mm`` (at most 18:00); without a zone it is UTC; before 1970 it is rejected;
3. ``topic: missing`` — no topic, or only spaces;
4. for each of ``msgRateIn``, ``msgRateOut``, ``msgThroughputIn``, ``msgThroughputOut``, ``producerCount``,
   ``consumerCount`` in turn (absent or null: 0): ``F: expected a number`` (text outside the grammar),
   ``F: expected a finite number``, ``F: expected a number >= 0``, and for the counts ``F: expected a whole
   number``, ``F: expected a whole number below 2^63`` (at or above 9.2·10¹⁸);
5. ``topic: …`` — a name ``model.names.TopicName`` rejects (its message).

**Text numbers** are read as the JVM reads them (``Double.parseDouble``, which Spark's cast uses): leading and
trailing characters up to U+0020 dropped; then ``[+-]`` and ``NaN``, ``Infinity``, a decimal
``digits[.digits][e[+-]digits]`` or a hexadecimal ``0x…p…`` float, optionally suffixed ``f``/``d``; also
(Spark) ``inf``, ``+inf``, ``-inf``, ``infinity``, ``+infinity``, ``-infinity``, ``nan`` in any case.
Typed numbers (Parquet) are taken as doubles.  The sample's ``topic`` is the text with spaces trimmed.

``check(table, source)`` applies the rules to an Arrow table (numpy over the columns; Python only over the
distinct texts that are not plain decimals and the distinct topic names) and returns the samples and the
rejects.  The pipeline's Spark expressions (``pipeline.ingest``, ``pipeline.transforms``) stand in for these
rules on a cluster; ``tests/test_trace_rules.py`` proves them equal on generated rows.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName
from bundlewise.traffic.columns import COUNT_FIELDS, NUMBER_FIELDS, RATE_FIELDS

MALFORMED = "malformed record"
TIMESTAMP_MISSING = "timestamp: missing"
TIMESTAMP_INVALID = "timestamp: expected ms since the epoch (>= 0) or ISO-8601"
TOPIC_MISSING = "topic: missing"
LONG_LIMIT = 9.2e18
"""Timestamps and counts are longs: a number at or above this is rejected."""
ISO_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})?)?$"
"""The ISO-8601 forms accepted (the same pattern gates Spark's timestamp cast in the pipeline)."""
DECIMAL_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
"""Plain decimals: read in bulk by Arrow's cast (correctly rounded, as the JVM's reading is)."""
_JAVA = re.compile(
    r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
    r"|0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)
_SPECIAL = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf}
_SPECIAL |= {"-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan}
_JAVA_BLANKS = "".join(chr(i) for i in range(33))
_ISO = re.compile(ISO_PATTERN)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def not_number(field: str) -> str:
    return f"{field}: expected a number"


def not_finite(field: str) -> str:
    return f"{field}: expected a finite number"


def negative(field: str) -> str:
    return f"{field}: expected a number >= 0"


def not_whole(field: str) -> str:
    return f"{field}: expected a whole number"


def too_big(field: str) -> str:
    return f"{field}: expected a whole number below 2^63"


def text_number(text: str) -> float | None:
    """A text's number as the JVM reads it (module docstring), or None."""
    t = text.strip(_JAVA_BLANKS)
    special = _SPECIAL.get(t.lower())
    if special is not None:
        return special
    if _JAVA.fullmatch(t) is None:
        return None
    body = t[:-1] if t[-1] in "fFdD" and not t.lower().startswith(("0x", "+0x", "-0x")) else t
    if body.lstrip("+-")[:2].lower() == "0x":
        body = body[:-1] if body[-1] in "fFdD" else body
        try:
            return float.fromhex(body)
        except OverflowError:
            return -math.inf if body.startswith("-") else math.inf
    if body.lstrip("+-") in ("NaN", "Infinity"):
        return float(body.replace("Infinity", "inf"))
    return float(body)


def iso_millis(text: str) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 text in the accepted forms, or None."""
    m = _ISO.fullmatch(text)
    if m is None:
        return None
    try:
        day = datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), tzinfo=UTC)
        if not m.group(1):
            moment = day
        else:
            h, mi, s = int(text[11:13]), int(text[14:16]), int(text[17:19])
            moment = datetime(day.year, day.month, day.day, h, mi, s, tzinfo=UTC)
    except ValueError:
        return None
    fraction = m.group(2)
    zone = m.group(3)
    if zone and zone != "Z":
        zh, zm = int(zone[1:3]), int(zone[4:6])
        if zm > 59 or zh * 60 + zm > 18 * 60:
            return None
        offset = timedelta(hours=zh, minutes=zm)
        moment = moment - offset if zone[0] == "+" else moment + offset
    delta = moment - _EPOCH
    ms = (delta.days * 86_400 + delta.seconds) * 1000 + (int(fraction[1:4].ljust(3, "0")) if fraction else 0)
    return ms


def text_timestamp(text: str) -> int | None:
    """A text timestamp: a number of ms (truncated), else ISO-8601; None when neither or out of range."""
    t = text.strip(" ")
    n = text_number(t)
    if n is not None and not math.isnan(n) and 0 <= n < LONG_LIMIT:
        return int(n)
    ms = iso_millis(t)
    return ms if ms is not None and 0 <= ms < LONG_LIMIT else None


@dataclass
class Checked:
    """The rows that are samples (``timestamp`` int64, ``broker``, ``topic`` (full name), rates float64, counts
    int64, and ``bundle``/``topics`` when the table carries them) and the rejects (``source``, ``record``,
    ``reason``)."""

    samples: pa.Table
    rejects: pa.Table


REJECTS = pa.schema([("source", pa.string()), ("record", pa.string()), ("reason", pa.string())])


def _is_text(t: pa.DataType) -> bool:
    t = t.value_type if pa.types.is_dictionary(t) else t
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _distinct(col: pa.ChunkedArray) -> tuple[list[Any], np.ndarray]:
    """Distinct values (as Python objects) and each row's index into them (-1: null)."""
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    values = arr.dictionary.to_pylist()
    index: np.ndarray = arr.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return values, index


def _text_numbers(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A text column's numbers (NaN where unreadable) and a mask of the readable ones (nulls: not readable)."""
    text = col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col
    plain = pc.match_substring_regex(text, DECIMAL_PATTERN).fill_null(False)
    values = pc.if_else(plain, text, pa.scalar("0")).cast(pa.float64()).to_numpy()
    ok = plain.to_numpy(zero_copy_only=False).copy()
    values = values.copy()
    rest = np.flatnonzero(~ok & ~text.is_null().to_numpy(zero_copy_only=False))
    if len(rest):
        distinct, index = _distinct(text.take(pa.array(rest)))
        read = [text_number(v) for v in distinct]
        for j, row in enumerate(rest):
            v = read[index[j]]
            if v is not None:
                values[row], ok[row] = v, True
    return values, ok


def _timestamps(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps, mask of valid ones) — numbers truncated to ms, timestamps as ms, text by ``text_timestamp``."""
    t = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        ms = col.cast(pa.timestamp("ms")).cast(pa.int64()).fill_null(-1).to_numpy()
        return ms, (ms >= 0) & ~col.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        d = col.cast(pa.float64()).fill_null(np.nan).to_numpy()
        ok = ~np.isnan(d) & (d >= 0) & (d < LONG_LIMIT)
        return np.where(ok, d, 0).astype(np.int64), ok
    distinct, index = _distinct(col.cast(pa.string()))
    read = [text_timestamp(v) for v in distinct] + [None]
    ms = np.array([-1 if v is None else v for v in read], dtype=np.int64)[index]
    return ms, ms >= 0


def _numbers(table: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values as doubles, present, readable): absent columns and nulls are 0 and count as absent."""
    n = table.num_rows
    if name not in table.column_names:
        return np.zeros(n), np.zeros(n, bool), np.ones(n, bool)
    col = table.column(name)
    present = ~col.is_null().to_numpy(zero_copy_only=False)
    t = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return col.cast(pa.float64()).fill_null(0.0).to_numpy(), present, np.ones(n, bool)
    text = col if _is_text(t) else col.cast(pa.string())
    values, ok = _text_numbers(text)
    return np.where(present, values, 0.0), present, ok | ~present


def _topics(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str | None], list[str | None]]:
    """Per row the index of its distinct topic; per distinct topic its full name (None: rejected) and why."""
    text = col if _is_text(col.type) else col.cast(pa.string())
    distinct, index = _distinct(text)
    full: list[str | None] = []
    why: list[str | None] = []
    for raw in distinct:
        name = raw.strip(" ")
        if not name:
            full.append(None)
            why.append(TOPIC_MISSING)
            continue
        try:
            full.append(str(TopicName.parse(name)))
            why.append(None)
        except InputError as e:
            full.append(None)
            why.append(f"topic: {e}")
    return index, full, why


def check(
    table: pa.Table, source: str, *, malformed: np.ndarray | None = None, records: list[str | None] | None = None
) -> Checked:
    """The rules over ``table`` (module docstring).  ``malformed`` marks rows the reader could not read (their
    raw text in ``records``); a table with ``bundle`` and ``topics`` columns (the pipeline's outputs) may hold
    bundle-level rows: no topic, a bundle."""
    n = table.num_rows
    code = np.zeros(n, dtype=np.int32)  # 0: a sample so far; k: texts[k] is the first reason that failed
    texts: list[str] = [""]

    def first(mask: np.ndarray, text: str) -> None:
        if mask.any():
            texts.append(text)
            code[mask & (code == 0)] = len(texts) - 1

    if malformed is not None:
        first(malformed, MALFORMED)
    if "timestamp" not in table.column_names or "topic" not in table.column_names:
        missing = [c for c in ("timestamp", "topic") if c not in table.column_names]
        raise InputError(
            f"trace has no {', '.join(missing)} column (need timestamp, topic, msgRateIn, ...)", source=source
        )
    ts_col = table.column("timestamp")
    ts, ts_ok = _timestamps(ts_col)
    first(ts_col.is_null().to_numpy(zero_copy_only=False), TIMESTAMP_MISSING)
    first(~ts_ok, TIMESTAMP_INVALID)
    topic_index, full, why = _topics(table.column("topic"))
    bundle_rows = np.zeros(n, dtype=bool)
    if "bundle" in table.column_names:
        bundle_rows = (topic_index < 0) & ~table.column("bundle").is_null().to_numpy(zero_copy_only=False)
    first((topic_index < 0) & ~bundle_rows, TOPIC_MISSING)
    first(np.array([w == TOPIC_MISSING for w in why] + [False], dtype=bool)[topic_index], TOPIC_MISSING)
    values: dict[str, np.ndarray] = {}
    for name in NUMBER_FIELDS:
        v, present, ok = _numbers(table, name)
        first(present & ~ok, not_number(name))
        first(~np.isfinite(v), not_finite(name))
        with np.errstate(invalid="ignore"):
            first(v < 0, negative(name))
            if name in COUNT_FIELDS:
                first(np.rint(v) != v, not_whole(name))
                first(v >= LONG_LIMIT, too_big(name))
        values[name] = v
    named = [w for w in why if w is not None and w != TOPIC_MISSING]
    if named:  # each rejected name's own message, after the other rules
        base = len(texts)
        texts += list(dict.fromkeys(named))
        number = {w: base + k for k, w in enumerate(dict.fromkeys(named))}
        per_topic = np.array([number.get(w, 0) if w is not None else 0 for w in why] + [0], dtype=np.int32)
        late = per_topic[topic_index]
        code = np.where((code == 0) & (late > 0), late, code)
    good = code == 0
    samples = _samples(table, good, ts, topic_index, full, values)
    rejects = _rejects(table, ~good, np.array(texts, dtype=object)[code], source, records)
    return Checked(samples, rejects)


def _samples(
    table: pa.Table,
    good: np.ndarray,
    ts: np.ndarray,
    index: np.ndarray,
    full: list[str | None],
    values: dict[str, np.ndarray],
) -> pa.Table:
    every = bool(good.all())
    keep = None if every else np.flatnonzero(good)

    def kept(x: np.ndarray) -> np.ndarray:
        return x if keep is None else x[keep]

    def column(name: str, kind: pa.DataType) -> pa.ChunkedArray:
        col = table.column(name).cast(kind)
        return col if keep is None else col.take(pa.array(keep))

    names = pa.array([f or "" for f in full], pa.string())  # rejected names: never referenced by a sample
    ids = kept(index)
    topic = pa.DictionaryArray.from_arrays(pa.array(np.maximum(ids, 0), pa.int32(), mask=ids < 0), names)
    rows = len(ts) if keep is None else len(keep)
    cols: dict[str, Any] = {
        "timestamp": pa.array(kept(ts), pa.int64()),
        "broker": column("broker", pa.string()) if "broker" in table.column_names else pa.nulls(rows, pa.string()),
        "topic": topic,
    }
    for name in RATE_FIELDS:
        cols[name] = pa.array(kept(values[name]), pa.float64())
    for name in COUNT_FIELDS:
        cols[name] = pa.array(kept(values[name]).astype(np.int64), pa.int64())
    if "bundle" in table.column_names:
        cols["bundle"] = column("bundle", pa.string())
        if "topics" in table.column_names:
            cols["topics"] = column("topics", pa.int64()).fill_null(1)
    return pa.table(cols)


def _rejects(
    table: pa.Table, bad: np.ndarray, reason: np.ndarray, source: str, records: list[str | None] | None
) -> pa.Table:
    rows = np.flatnonzero(bad)
    if not len(rows):
        return REJECTS.empty_table()
    sub = table.take(pa.array(rows)).to_pylist()
    texts = []
    for i, row in zip(rows, sub, strict=True):
        raw = records[i] if records is not None else None
        if raw is not None:
            texts.append(raw[:500])
        else:
            texts.append(json.dumps({k: v for k, v in row.items() if v is not None}, default=str)[:500])
    return pa.table(
        {
            "source": pa.array([source] * len(rows), pa.string()),
            "record": pa.array(texts, pa.string()),
            "reason": pa.array([str(r) for r in reason[rows]], pa.string()),
        }
    )


def check_parts(parts: Sequence[tuple[pa.Table, np.ndarray | None, list[str | None] | None]], source: str) -> Checked:
    """``check`` over rows read in parts (each part's columns alike), the samples and rejects concatenated."""
    done = [check(table, source, malformed=bad, records=raw) for table, bad, raw in parts if table.num_rows]
    if not done:
        return Checked(pa.table({"timestamp": pa.array([], pa.int64())}), REJECTS.empty_table())
    samples = pa.concat_tables([d.samples for d in done], promote_options="permissive")
    rejects = pa.concat_tables([d.rejects for d in done])
    return Checked(samples, rejects)


def check_topic_names(samples: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Rule 5 alone, for samples already checked otherwise (read by Spark): the rows whose topic the model
    accepts (a null topic with a ``bundle`` is a bundle-level row), with each topic's full name; the others'
    reasons counted."""
    index, full, why = _topics(samples.column("topic"))
    named = np.array([w is None for w in why] + [False], dtype=bool)[index]
    bundle = np.zeros(samples.num_rows, dtype=bool)
    if "bundle" in samples.column_names:
        bundle = (index < 0) & ~samples.column("bundle").is_null().to_numpy(zero_copy_only=False)
    keep = named | bundle
    counts: dict[str, int] = {}
    for i in np.flatnonzero(~keep):
        reason = why[index[i]] if index[i] >= 0 else TOPIC_MISSING
        key = reason if reason is not None else TOPIC_MISSING
        counts[key] = counts.get(key, 0) + 1
    names = pa.array([f or "" for f in full], pa.string())
    topic = pa.DictionaryArray.from_arrays(pa.array(np.maximum(index, 0), pa.int32(), mask=index < 0), names)
    i = samples.schema.get_field_index("topic")
    fixed = samples.set_column(i, "topic", topic.cast(pa.string()))
    return fixed.filter(pa.array(keep)), counts
