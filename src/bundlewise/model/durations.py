"""Durations as written in scenario files and on the command line: ``"6h"``, ``"1m"``, ``"1h30m"``.

A duration is ``"6h"``, ``"1m"``, ``"30s"``, ``"500ms"``, ``"1d"`` or a concatenation (``"1h30m"``);
a bare number is seconds.  Durations are integer milliseconds.
"""

from __future__ import annotations

import re

from bundlewise.model.errors import InputError

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|min|s|m|h|d)")


def parse_duration(value: object, field: str, source: str | None = None) -> int:
    """A duration in ms; ``InputError`` naming ``field`` for anything else."""
    if isinstance(value, bool):
        raise InputError(f"expected a duration like '6h' or '1m', got {value!r}", source=source, field=field)
    if isinstance(value, int | float):
        if value < 0:
            raise InputError(f"expected a duration >= 0, got {value!r}", source=source, field=field)
        return round(value * 1000)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        pos, total = 0, 0.0
        for m in _PART.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if text and pos == len(text):
            return round(total)
    raise InputError(
        f"expected a duration like '6h', '1m', '30s' or '1h30m', got {value!r}", source=source, field=field
    )


def format_duration(ms: int) -> str:
    """``5400000`` -> ``"1h30m"`` (for reasons and the report)."""
    if ms == 0:
        return "0s"
    out = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        if ms >= size:
            out.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(out)
