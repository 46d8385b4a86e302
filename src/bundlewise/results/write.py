"""The one writer of a run's files, for ``simulate --out`` and ``live up --out`` alike (docs/formats.md).

* ``summary(name, results)`` is ``{"scenario": name, "strategies": {NAME: METRICS}}``; ``summary_json(doc)``
  its text (key order kept, floats as ``results.measure`` rounded them: byte-identical for the same inputs and
  seed except each ``wall_seconds``).
* ``timeline_table(results)``: ``timeline.parquet`` as a ``pyarrow.Table``, one row per run × tick × broker slot:
  ``TIMELINE_COLUMNS`` (``strategy, tick, time_ms, broker, up, true_load, reported_load, bundles,
  delivered_load, backlog_bytes``; a run that does not measure delivery — a live one — has ``null`` in the
  last two), and with a ``[dispatch]`` section ``DISPATCH_COLUMNS``.
* ``decisions.jsonl``: one ``results.decisions.decision_row`` per decision, the runs in order.
* ``write_run(directory, doc, results, report_html)`` writes ``summary.json``, ``timeline.parquet``,
  ``decisions.jsonl``, ``report.html`` (rendered by the caller: ``results`` lies below ``report``) and, for a
  live run, ``lookups.parquet`` (every lookup, ``RunResult.lookups``) into ``directory`` — the staging
  directory of the one atomic-output policy (``files.atomic``), renamed into place by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundlewise.model.errors import InputError
from bundlewise.results.decisions import decision_row
from bundlewise.results.record import RunResult

TIMELINE_COLUMNS = (
    "strategy",
    "tick",
    "time_ms",
    "broker",
    "up",
    "true_load",
    "reported_load",
    "bundles",
    "delivered_load",
    "backlog_bytes",
)
DISPATCH_COLUMNS = ("dispatched_msgs", "dispatched_bytes", "dispatch_throttled_reads", "backlog_msgs")


def summary(scenario: str, results: Sequence[RunResult]) -> dict[str, Any]:
    return {"scenario": scenario, "strategies": {r.strategy: r.metrics for r in results}}


def summary_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def _where_up(r: RunResult, values: np.ndarray | None) -> np.ndarray:
    """Per tick × slot, ``values`` where the broker is up, NaN (written as null) elsewhere or when unmeasured."""
    if values is None:
        return np.full(r.true_load.shape, np.nan)
    return np.where(r.up, values, np.nan)


def timeline_table(results: Sequence[RunResult]) -> Any:
    """The timeline as a ``pyarrow.Table``."""
    import pyarrow as pa

    parts: dict[str, list[np.ndarray]] = {k: [] for k in TIMELINE_COLUMNS}
    for r in results:
        ticks, slots = r.true_load.shape
        parts["strategy"].append(np.full(ticks * slots, r.strategy, dtype=object))
        parts["tick"].append(np.repeat(np.arange(ticks, dtype=np.int64), slots))
        parts["time_ms"].append(np.repeat(r.times, slots))
        parts["broker"].append(np.tile(np.array(r.brokers, dtype=object), ticks))
        parts["up"].append(r.up.reshape(-1))
        parts["true_load"].append(_where_up(r, r.true_load).reshape(-1))
        parts["reported_load"].append(r.reported_load.reshape(-1))
        parts["bundles"].append(r.bundles.reshape(-1))
        parts["delivered_load"].append(_where_up(r, r.delivered_load).reshape(-1))
        backlog = r.backlog_bytes if r.backlog_bytes is not None else np.full(r.true_load.shape, np.nan)
        parts["backlog_bytes"].append(backlog.reshape(-1))
    cols = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    floats = {"true_load", "reported_load", "delivered_load", "backlog_bytes"}
    types = {"strategy": pa.string(), "tick": pa.int64(), "time_ms": pa.int64(), "broker": pa.string()}
    types.update(up=pa.bool_(), bundles=pa.int64(), **{k: pa.float64() for k in floats})
    columns = {k: pa.array(cols[k], type=types[k], from_pandas=k in floats) for k in TIMELINE_COLUMNS}
    return pa.table({**columns, **_dispatch_columns(results)})


def _dispatch_columns(results: Sequence[RunResult]) -> dict[str, Any]:
    """With a ``[dispatch]`` section, per tick and broker slot: messages and bytes dispatched, reads
    throttled (any level) and the backlog (messages) of the dispatch topics it owns at the tick's end."""
    import pyarrow as pa

    records = [r.dispatch for r in results]
    if not records or any(rec is None for rec in records):
        return {}
    out = {}
    for col, attr in zip(DISPATCH_COLUMNS, ("msgs", "bytes", "throttled", "backlog"), strict=True):
        arrays = [getattr(rec, attr).reshape(-1) for rec in records if rec is not None]
        out[col] = pa.array(np.concatenate(arrays), type=pa.int64())
    return out


def decisions_jsonl(results: Sequence[RunResult]) -> str:
    """``decisions.jsonl``: every run's decisions, the runs in order."""
    return "".join(json.dumps(decision_row(d)) + "\n" for r in results for d in r.decisions)


def write_run(
    out: str | Path, doc: dict[str, Any], results: Sequence[RunResult], report_html: str | None = None
) -> dict[str, Path]:
    """Write the run's files under ``out`` (created if missing); returns them by name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output directory: {e.strerror}", field="--out") from None
    paths = {name: root / name for name in ("summary.json", "timeline.parquet", "decisions.jsonl")}
    paths["summary.json"].write_text(summary_json(doc), encoding="utf-8")
    pq.write_table(timeline_table(results), paths["timeline.parquet"])
    paths["decisions.jsonl"].write_text(decisions_jsonl(results), encoding="utf-8")
    if report_html is not None:
        paths["report.html"] = root / "report.html"
        paths["report.html"].write_text(report_html, encoding="utf-8")
    lookups = [r.lookups for r in results if r.lookups is not None]
    if lookups:
        paths["lookups.parquet"] = root / "lookups.parquet"
        pq.write_table(pa.concat_tables(lookups), paths["lookups.parquet"])
    return paths
