"""What ``--format table`` and ``--format admin`` print beside the decisions: step headings, the projected
load of every broker after the moves (``algorithms.projection``) and the ``pulsar-admin`` commands
(``model.admin``).  ``admin`` output is a shell script: commands on their own lines, everything else a
``#`` comment, so it can be reviewed and then run as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from bundlewise.algorithms.advice import MoveAdvice
from bundlewise.algorithms.projection import Projected
from bundlewise.model.admin import unload_command
from bundlewise.model.decisions import Unload
from bundlewise.model.resources import MIB


def when(timestamp: int | None) -> str:
    """A step's time for people: ISO-8601 UTC with the ms since the epoch."""
    if timestamp is None:
        return ""
    iso = datetime.fromtimestamp(timestamp / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f" at {iso} ({timestamp})"


def columns(rows: Sequence[Sequence[str]], prefix: str = "  ", right: Sequence[int] = ()) -> list[str]:
    """Rows as aligned text columns (the ``right`` ones right-aligned)."""
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True))]
        out.append((prefix + "  ".join(cells)).rstrip())
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.2f}%"


def projection_lines(projected: Sequence[Projected], prefix: str = "  ") -> list[str]:
    """The projection table: load, msg/s and MB/s of every broker, before -> after."""
    if not projected:
        return []
    head = ("broker", "load", "", "after", "msg/s", "", "after", "MB/s", "", "after")
    rows = [head] + [
        (
            p.broker,
            _pct(p.load),
            "->",
            _pct(p.load_after),
            f"{p.msg_rate:,.1f}",
            "->",
            f"{p.msg_rate_after:,.1f}",
            f"{p.throughput / MIB:,.2f}",
            "->",
            f"{p.throughput_after / MIB:,.2f}",
        )
        for p in projected
    ]
    return columns(rows, prefix, right=(1, 3, 4, 6, 7, 9))


PROJECTION_NOTE = (
    "projected after these moves (load: weighted max resource usage; a bundle takes its share of its broker's "
    "throughput with it)"
)


def admin_unload_lines(unloads: Sequence[Unload], advice: Sequence[MoveAdvice] = ()) -> list[str]:
    """One commented reason, the advisor's warnings and notes (``algorithms.advice``) and one
    ``pulsar-admin namespaces unload`` per unload."""
    lines = []
    said = {id(a.unload): a for a in advice}
    for u in unloads:
        move = f"{u.broker} -> {u.destination}" if u.destination else f"{u.broker} (the next lookup places it)"
        lines.append(f"# {u.bundle}: {move}: {u.reason}")
        if id(u) in said:
            lines += [f"#   {line}" for line in said[id(u)].lines()]
        command = unload_command(u.bundle, u.destination)
        lines.append(command if command is not None else f"# (no command: {u.bundle!r} is not a bundle name)")
    return lines


def skipped_lines(skipped: Sequence[Unload], prefix: str) -> list[str]:
    return [f"{prefix}skipped {s.bundle} on {s.broker}: {s.reason}" for s in skipped]
