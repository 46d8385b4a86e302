"""Run a scenario with several strategies and write the outputs of ``simulate --out`` (docs/formats.md).

* ``simulate(scenario, strategies, trace=None, progress=None)`` runs one ``Engine`` per strategy on the
  same workload (a fresh generator with the scenario's seed each time, or the same trace), so the
  strategies see identical traffic.
* ``summary(scenario, results)`` is ``{"scenario": name, "strategies": {NAME: METRICS}}``.
* ``write_outputs(out, scenario, results)`` writes ``summary.json`` (fixed key order and float rounding:
  byte-identical for the same inputs and seed except each ``wall_seconds``), ``timeline.parquet``
  (pyarrow; one row per strategy × tick × broker slot: ``strategy, tick, time_ms, broker, up,
  true_load, reported_load, bundles, delivered_load, backlog_bytes``, and with a ``[dispatch]`` section
  ``dispatched_msgs, dispatched_bytes, dispatch_throttled_reads, backlog_msgs``), ``decisions.jsonl``
  (every assignment, unload and split, with its reason) and, rendered by the caller, ``report.html``.
  All the writing of ``--out`` is this one function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundlewise.algorithms.registry import SheddingEntry
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.sim.dispatch.cluster import DISPATCH_METRIC_KEYS
from bundlewise.sim.engine import Engine, RunResult
from bundlewise.sim.metric_defs import format_value, metric_def
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.metrics import LIVE_METRIC_KEYS, METRIC_KEYS
from bundlewise.traffic.trace import TraceWorkload
from bundlewise.traffic.workload import GeneratedWorkload, Workload

ProgressFactory = Callable[[str], Callable[[int, int], None]]


def make_workload(scenario: Scenario, trace: TraceWorkload | None) -> Workload:
    if trace is not None:
        return trace
    return GeneratedWorkload(scenario.namespaces, scenario.workload, scenario.seed)


def simulate(
    scenario: Scenario,
    strategies: Sequence[str | SheddingEntry],
    trace: TraceWorkload | None = None,
    progress: ProgressFactory | None = None,
    config: Config | None = None,
    layout: RecordedLayout | None = None,
) -> list[RunResult]:
    """One run per strategy; strategy names may repeat only once each.  With a recorded ``layout`` the runs
    start from it (``sim.layout``)."""
    results = []
    seen: set[str] = set()
    for strategy in strategies:
        label = strategy if isinstance(strategy, str) else strategy.name
        engine = Engine(
            scenario,
            make_workload(scenario, trace),
            strategy,
            config,
            progress(label) if progress else None,
            layout=layout,
        )
        if engine.strategy in seen:
            raise InputError(f"strategy {engine.strategy!r} given twice", field="--strategy")
        seen.add(engine.strategy)
        results.append(engine.run())
    return results


def summary(scenario: Scenario, results: Sequence[RunResult]) -> dict[str, Any]:
    return {"scenario": scenario.name, "strategies": {r.strategy: r.metrics for r in results}}


def summary_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def metric_keys(doc: dict[str, Any]) -> tuple[str, ...]:
    """METRIC_KEYS, plus ``merges`` after ``splits`` when a strategy merges (bundlewise's own), the dispatch
    metrics when the runs have them (a ``[dispatch]`` section) and the live-only metrics for a ``live up`` run."""
    first: dict[str, Any] = next(iter(doc["strategies"].values()), {})
    keys: tuple[str, ...] = METRIC_KEYS
    if any("merges" in m for m in doc["strategies"].values()):
        at = keys.index("splits") + 1
        keys = (*keys[:at], "merges", *keys[at:])
    keys += DISPATCH_METRIC_KEYS if "dispatched_messages" in first else ()
    return keys + (LIVE_METRIC_KEYS if "lookups" in first else ())


def comparison_table(doc: dict[str, Any]) -> str:
    """Metrics as rows (key and unit), strategies as columns, numbers written as the report writes them
    (``metric_defs.format_value``)."""
    strategies = list(doc["strategies"])
    rows = [["metric", "unit", *strategies]]
    for key in metric_keys(doc):
        row = [key, metric_def(key).unit]
        row += [format_value(key, doc["strategies"][s].get(key)) for s in strategies]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, r in enumerate(rows):
        left = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        lines.append("  ".join([*left, *(c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True))]))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return f"scenario: {doc['scenario']}\n" + "\n".join(lines) + "\n"


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
        parts["true_load"].append(np.where(r.up, r.true_load, np.nan).reshape(-1))
        parts["reported_load"].append(r.reported_load.reshape(-1))
        parts["bundles"].append(r.bundles.reshape(-1))
        delivered = r.delivered_load if r.delivered_load is not None else r.true_load
        parts["delivered_load"].append(np.where(r.up, delivered, np.nan).reshape(-1))
        backlog = r.backlog_bytes if r.backlog_bytes is not None else np.zeros_like(r.true_load)
        parts["backlog_bytes"].append(backlog.reshape(-1))
    cols = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    return pa.table(
        {
            "strategy": pa.array(cols["strategy"], type=pa.string()),
            "tick": pa.array(cols["tick"], type=pa.int64()),
            "time_ms": pa.array(cols["time_ms"], type=pa.int64()),
            "broker": pa.array(cols["broker"], type=pa.string()),
            "up": pa.array(cols["up"], type=pa.bool_()),
            "true_load": pa.array(cols["true_load"], type=pa.float64(), from_pandas=True),
            "reported_load": pa.array(cols["reported_load"], type=pa.float64(), from_pandas=True),
            "bundles": pa.array(cols["bundles"], type=pa.int64()),
            "delivered_load": pa.array(cols["delivered_load"], type=pa.float64(), from_pandas=True),
            "backlog_bytes": pa.array(cols["backlog_bytes"], type=pa.float64()),
            **_dispatch_columns(results),
        }
    )


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


def write_outputs(
    out: str | Path, scenario: Scenario, results: Sequence[RunResult], report_html: str | None = None
) -> dict[str, Path]:
    """Write the outputs under ``out`` (created); ``report.html`` is rendered by ``bundlewise.report``
    (the caller passes it in, since ``sim`` does not import the layer above)."""
    import pyarrow.parquet as pq

    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output directory: {e.strerror}", field="--out") from None
    doc = summary(scenario, results)
    paths = {name: root / name for name in ("summary.json", "timeline.parquet", "decisions.jsonl", "report.html")}
    paths["summary.json"].write_text(summary_json(doc), encoding="utf-8")
    pq.write_table(timeline_table(results), paths["timeline.parquet"])
    with paths["decisions.jsonl"].open("w", encoding="utf-8") as fh:
        for r in results:
            for d in r.decisions:
                fh.write(json.dumps(d.to_json()) + "\n")
    if report_html is not None:
        paths["report.html"].write_text(report_html, encoding="utf-8")
    else:
        del paths["report.html"]
    return paths
