"""Sweeps: one scenario across a grid of settings, one simulation per grid point, run as Spark tasks.

A grid is a list of axes ``KEY=V1,V2,…``: ``strategy`` (shedding strategy names) or any configuration
key (values coerced and validated like ``--set``).  Its points are the Cartesian product, first axis
outermost.  ``validate_points`` checks every value and resolves every strategy name in the registry on
the driver, before any task starts.  ``run_sweep`` runs one Spark task per point: the tasks
``(scenario, workload trace or None, point, strategy entry)`` travel in the mapped function's closure
(Spark serialises it with cloudpickle), so a worker needs no registry lookup of its own -- a strategy
registered in the driver's process runs on the workers too -- and each task calls ``run_point``.  One row
per point: the point's settings followed by every METRIC.  ``run_point`` is deterministic, so a sweep's
table (``wall_seconds`` aside) does not depend on how Spark schedules it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from bundlewise.algorithms.registry import SheddingEntry, shedding_entry
from bundlewise.config import ALL_KEYS
from bundlewise.model.errors import InputError
from bundlewise.results.catalogue import METRIC_KEYS
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.trace import TraceWorkload

Point = dict[str, str]
DEFAULT_GRID = ("loadBalancerBrokerThresholdShedderPercentage=5,10,20", "loadBalancerHistoryResourcePercentage=0.5,0.9")


def parse_grid(axes: Sequence[str], strategies: Sequence[str]) -> list[Point]:
    """Grid points from ``KEY=V1,V2`` axes; ``strategies`` is the strategy axis unless one is given."""
    parsed: list[tuple[str, list[str]]] = []
    for axis in axes:
        key, sep, values = axis.partition("=")
        key = key.strip()
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not vals:
            raise InputError(f"expected KEY=V1,V2,..., got {axis!r}", field="--grid")
        if key != "strategy" and key not in ALL_KEYS:
            raise InputError(f"unknown configuration key {key!r}", field="--grid")
        if any(k == key for k, _ in parsed):
            raise InputError(f"axis {key} given twice", field="--grid")
        parsed.append((key, vals))
    if all(k != "strategy" for k, _ in parsed):
        parsed.insert(0, ("strategy", list(strategies)))
    keys = [k for k, _ in parsed]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in parsed))]


Task = tuple[Scenario, TraceWorkload | None, Point, SheddingEntry, RecordedLayout | None]


def run_point(task: Task) -> dict[str, Any]:
    """One simulation of a grid point (runs on a Spark executor)."""
    scenario, trace, point, entry, layout = task
    settings = {k: v for k, v in point.items() if k != "strategy"}
    config = scenario.config.with_values(settings, source="--grid")
    result = Engine(scenario, make_workload(scenario, trace), entry, config, layout=layout).run()
    return {**point, **{k: result.metrics[k] for k in METRIC_KEYS}}


def validate_points(scenario: Scenario, points: Sequence[Point]) -> list[SheddingEntry]:
    """Reject bad values and unknown strategies on the driver, before any task starts; the points' entries."""
    entries = []
    for p in points:
        scenario.config.with_values({k: v for k, v in p.items() if k != "strategy"}, source="--grid")
        entries.append(shedding_entry(p["strategy"], field="--grid"))
    return entries


def run_sweep(
    spark: Any,
    scenario: Scenario,
    points: Sequence[Point],
    trace: TraceWorkload | None = None,
    layout: RecordedLayout | None = None,
) -> list[dict[str, Any]]:
    """Every point as a Spark task; rows in grid order (a recording's ``layout`` the runs start from)."""
    entries = validate_points(scenario, points)
    tasks: list[Task] = [(scenario, trace, p, e, layout) for p, e in zip(points, entries, strict=True)]
    indices = spark.sparkContext.parallelize(range(len(tasks)), max(1, len(tasks)))
    rows: list[dict[str, Any]] = indices.map(lambda i: run_point(tasks[i])).collect()
    return rows


def rows_table(rows: Sequence[dict[str, Any]]) -> Any:
    """The sweep as a ``pyarrow.Table`` (settings as strings, metrics as numbers; null when undefined)."""
    import pyarrow as pa

    if not rows:
        return pa.table({})
    cols: dict[str, Any] = {}
    for key in rows[0]:
        values = [r.get(key) for r in rows]
        if key in METRIC_KEYS:
            cols[key] = pa.array([None if v is None else float(v) for v in values], type=pa.float64())
        else:
            cols[key] = pa.array([str(v) for v in values], type=pa.string())
    return pa.table(cols)


def format_rows(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRIC_KEYS) -> str:
    """Plain-text table: one line per grid point."""
    if not rows:
        return "(empty sweep)\n"
    settings = [k for k in rows[0] if k not in METRIC_KEYS]
    short = {k: k.replace("loadBalancer", "") for k in settings}
    header = [short[k] for k in settings] + list(metrics)
    body = []
    for r in rows:
        line = [str(r[k]) for k in settings]
        for m in metrics:
            v = r.get(m)
            line.append("null" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v))
        body.append(line)
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, body)]) + "\n"
