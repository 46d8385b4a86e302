"""One line of ``decisions.jsonl``, written and read in this one place (docs/formats.md, decisions.jsonl).

``decision_row(logged)`` gives every field of a ``model.decisions.Logged``: the same keys for a simulated and a
live run, per decision type (``FIELDS``), ``null`` where a run has no value:

* every row: ``strategy, tick, time_ms, time, type, bundle, broker`` first, and ``reason, label, cause,
  leader`` last — ``label`` the decision's ``Success``/``Skip``/``Failure`` (Pulsar's
  ``UnloadDecision.Label``; ``null`` for an assignment), ``cause`` its reason enum (``UnloadDecision.Reason``,
  ``SplitDecision.Reason`` — the first condition met —, bundlewise's merge reason; ``null`` for an
  assignment), ``leader`` the broker that decided it (``null`` in a simulation: the simulated leader has no
  broker id; a live extensible assignment is decided by the broker that ran the lookup);
* ``unload``: ``destination, throughput, flap``; ``split``: ``algorithm, children``; ``merge``: ``parts,
  owners, moved, unblocks``; ``assignment``: ``best`` (every broker the strategy would have picked from).

``read_row(row)`` is its inverse (``live up`` merges the brokers' logs with it): ``read_row(decision_row(x))``
writes the same row again.  A row of an unknown type, or one without ``bundle``/``broker``, gives ``None``.
"""

from __future__ import annotations

from typing import Any

from bundlewise.model.decisions import (
    Assignment,
    Label,
    Logged,
    MergeDecision,
    MergeReason,
    SplitDecision,
    SplitReason,
    Unload,
    UnloadReason,
)
from bundlewise.model.durations import format_duration

HEAD = ("strategy", "tick", "time_ms", "time", "type", "bundle", "broker")
TAIL = ("reason", "label", "cause", "leader")
FIELDS = {
    "unload": (*HEAD, "destination", "throughput", "flap", *TAIL),
    "split": (*HEAD, "algorithm", "children", *TAIL),
    "merge": (*HEAD, "parts", "owners", "moved", "unblocks", *TAIL),
    "assignment": (*HEAD, "best", *TAIL),
}
"""The keys of a ``decisions.jsonl`` row, in order, per ``type``."""


def decision_row(logged: Logged) -> dict[str, Any]:
    """The ``decisions.jsonl`` row of ``logged``: every key of ``FIELDS[logged.type]``, in that order."""
    d = logged.decision
    row: dict[str, Any] = {
        "strategy": logged.strategy,
        "tick": logged.tick,
        "time_ms": logged.time_ms,
        "time": format_duration(logged.time_ms),
        "type": logged.type,
        "bundle": d.bundle,
        "broker": d.broker,
    }
    label: Label | None = None
    cause: str | None = None
    if isinstance(d, Unload):
        row.update(destination=d.destination, throughput=logged.throughput, flap=logged.flap)
        reason, label, cause = d.reason, d.label, str(d.cause)
    elif isinstance(d, SplitDecision):
        row.update(algorithm=d.algorithm, children=list(d.children))
        reason, label = f"split: {d.detail}{logged.note}", d.label
        cause = str(d.reasons[0]) if d.reasons else None
    elif isinstance(d, MergeDecision):
        row.update(parts=list(d.parts), owners=list(d.owners), moved=list(d.moved), unblocks=d.unblocks)
        reason, label, cause = f"merge ({d.cause}): {d.detail}{logged.note}", d.label, str(d.cause)
    else:
        row["best"] = list(d.best)
        reason = d.reason
    row.update(reason=reason, label=None if label is None else str(label), cause=cause, leader=logged.leader)
    return row


def read_row(row: dict[str, Any], origin_ms: int = 0) -> Logged | None:
    """The ``Logged`` a row was written from, its time counted from ``origin_ms``; ``ValueError``,
    ``KeyError`` or ``TypeError`` on a malformed one."""
    kind = row.get("type")
    label = Label(row["label"]) if row.get("label") is not None else Label.SUCCESS
    reason = str(row.get("reason") or "")
    cause = row.get("cause")
    d: Unload | SplitDecision | MergeDecision | Assignment
    if kind == "unload":
        why = UnloadReason(cause) if cause is not None else UnloadReason.OVERLOADED
        d = Unload(row["broker"], row["bundle"], reason, row.get("destination"), label, why)
    elif kind == "split":
        reasons = (SplitReason(cause),) if cause is not None else ()
        children = tuple(row.get("children") or ())
        detail = reason.removeprefix("split: ")
        d = SplitDecision(row["bundle"], row["broker"], reasons, detail, label, row.get("algorithm"), children)
    elif kind == "merge":
        why_merge = MergeReason(cause) if cause is not None else MergeReason.BUNDLE_CAP
        detail = reason.removeprefix(f"merge ({why_merge}): ")
        owners = tuple(row.get("owners") or ())
        parts = tuple(row["parts"])
        d = MergeDecision(row["bundle"], row["broker"], parts, owners, row["unblocks"], detail, label, why_merge)
    elif kind == "assignment":
        d = Assignment(row["bundle"], row.get("broker"), tuple(row.get("best") or ()), reason)
    else:
        return None
    return Logged(
        str(row.get("strategy", "")),
        int(row.get("tick", 0)),
        int(row.get("time_ms", 0)) - origin_ms,
        d,
        throughput=row.get("throughput"),
        flap=row.get("flap"),
        leader=row.get("leader"),
    )
