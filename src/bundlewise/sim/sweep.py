"""Sweeps: one scenario across a grid of settings, one simulation per grid point, run as Spark tasks.

A grid is a list of axes ``KEY=V1,V2,…``: ``strategy`` (shedding strategy names) or any configuration
key (values coerced and validated like ``--set``).  Its points are the Cartesian product, first axis
outermost.  ``validate_points`` checks every value and resolves every strategy name in the registry on
the driver, before any task starts.  ``run_sweep`` runs one Spark task per point: the tasks
``(scenario, workload trace or None, point, strategy entry)`` travel in the mapped function's closure
(Spark serialises it with cloudpickle), so a worker needs no registry lookup of its own -- a strategy
registered in the driver's process runs on the workers too -- and each task calls ``run_point``.  One row
per point: the point's settings followed by every METRIC.  ``run_point`` is deterministic, so a sweep's
table (``wall_seconds`` aside) does not depend on how Spark schedules it.  ``format_rows`` prints it for people
with the units and number formats of ``simulate``'s table, identical runs collapsed into one line (``collapse``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from bundlewise.algorithms.registry import SheddingEntry, shedding_entry
from bundlewise.config import ALL_KEYS
from bundlewise.model.errors import InputError
from bundlewise.results.catalogue import METRIC_KEYS, format_value, metric_def
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


def collapse(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRIC_KEYS) -> list[tuple[dict[str, Any], int]]:
    """Runs with identical results (every metric as the table writes it, ``wall_seconds`` aside) and the same
    strategy become one row, in the order of their first run; a setting that differs among them lists its
    values (``5,10,20``).  Each row comes with the number of runs it stands for."""
    settings = [k for k in rows[0] if k not in METRIC_KEYS] if rows else []
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        same = tuple(format_value(m, r.get(m)) for m in metrics if m != "wall_seconds")
        groups.setdefault((str(r.get("strategy")), *same), []).append(r)
    out = []
    for members in groups.values():
        row = dict(members[0])
        for k in settings:
            values = list(dict.fromkeys(str(m[k]) for m in members))
            row[k] = ",".join(values)
        out.append((row, len(members)))
    return out


def format_rows(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRIC_KEYS) -> str:
    """Plain-text table like ``simulate``'s: one line per distinct result (``collapse``: the ``runs`` column
    counts the grid points it stands for), a line of units under the header, numbers written as the report
    writes them (``metric_defs.format_value``)."""
    if not rows:
        return "(empty sweep)\n"
    settings = [k for k in rows[0] if k not in METRIC_KEYS]
    header = [k.replace("loadBalancer", "") for k in settings] + ["runs", *metrics]
    units = [""] * len(settings) + ["", *(metric_def(m).unit for m in metrics)]
    body = []
    for r, n in collapse(rows, metrics):
        body.append([str(r[k]) for k in settings] + [str(n)] + [format_value(m, r.get(m)) for m in metrics])
    widths = [max(len(x) for x in col) for col in zip(header, units, *body, strict=True)]
    left = len(settings)

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if k < left else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([fmt(header), fmt(units), "  ".join("-" * w for w in widths), *map(fmt, body)]) + "\n"
