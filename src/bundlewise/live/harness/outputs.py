"""What ``live up`` writes to ``--out``: the files of ``simulate --out`` measured for real, plus the lookups.

* ``decisions.jsonl`` -- every broker's decision log (``--decisions``; written while it led) merged in time
  order; each row is the simulator's row (``model.decisions.Logged``) with ``time_ms`` counted from the run's
  origin, plus ``label`` (Success / Skip), ``cause`` (the extensible leader's ``UnloadDecision`` reason) and
  ``leader``; rows logged after the duration (while the brokers stop) are left out.  An unload's
  ``throughput`` is the bundle's in + out bytes/s in the last timeline sample at or before it.
* ``summary.json`` -- ``{"scenario", "strategies": {NAME: METRICS}}`` (NAME: the strategy, or
  ``MANAGER/STRATEGY`` for each run of ``--managers``) with the simulator's metrics computed
  by the one implementation (``traffic.metrics.summarise``) from the sampled timeline (true load = demand /
  capacity, as in the simulator) and the decisions (only carried-out unloads count), then the live-only
  metrics (``live_metrics``).  Not measured live, hence ``null``: ``undelivered_bytes`` and
  ``backlog_age_max_minutes`` (the emulated broker keeps no backlog); ``saturated_broker_minutes`` counts
  broker-ticks whose demand exceeded capacity (load > 1).
* ``timeline.parquet`` -- per tick and broker: ``strategy, tick, time_ms, broker, up, true_load,
  reported_load, bundles``.
* ``lookups.parquet`` -- every lookup: ``strategy, time_ms, topic, hops, attempts, latency_ms, result, broker``.
* ``report.html`` -- rendered by the report layer from ``LiveResult`` (the caller passes it in).

``write_files`` writes them into the staging directory the project's one atomic-output policy
(``files.atomic``) gives the command; it is renamed into place once complete, so ``--out`` never holds a
partial run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bundlewise.config.views import PlacementSettings, SimSettings
from bundlewise.live.harness.up import LiveRun
from bundlewise.model.decisions import Assignment, Label, Logged, SplitDecision, Unload
from bundlewise.traffic.metrics import Counters, Mark, Record, summarise


@dataclass
class LiveResult:
    """One live run in the shape of a simulator run (``sim.engine.RunResult``'s fields) plus the lookups."""

    strategy: str
    metrics: dict[str, Any]
    times: np.ndarray
    brokers: list[str]
    true_load: np.ndarray
    reported_load: np.ndarray
    bundles: np.ndarray
    up: np.ndarray
    decisions: list[Logged]
    events: list[dict[str, Any]]
    rows: list[dict[str, Any]]  # decisions.jsonl
    lookups: Any  # pyarrow.Table


def _decision(row: dict[str, Any], origin_ms: int) -> Logged | None:
    t = int(row.get("time_ms", 0)) - origin_ms
    kind = row.get("type")
    label = Label(row.get("label", "Success")) if row.get("label") in ("Success", "Skip", "Failure") else Label.SUCCESS
    d: Unload | SplitDecision | Assignment
    if kind == "unload":
        d = Unload(row["broker"], row["bundle"], str(row.get("reason", "")), row.get("destination"), label)
    elif kind == "split":
        reason = str(row.get("reason", ""))
        d = SplitDecision(
            row["bundle"],
            row["broker"],
            (),
            reason.removeprefix("split: "),
            label,
            row.get("algorithm"),
            tuple(row.get("children") or ()),
        )
    elif kind == "assignment":
        d = Assignment(row["bundle"], row.get("broker"), tuple(row.get("best") or ()), str(row.get("reason", "")))
    else:
        return None
    return Logged(str(row.get("strategy", "")), int(row.get("tick", 0)), t, d)


def read_decisions(files: Sequence[Path], origin_ms: int) -> list[tuple[Logged, dict[str, Any]]]:
    """Every broker's decision log, merged by time (a row that does not parse is skipped)."""
    out: list[tuple[Logged, dict[str, Any]]] = []
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                    logged = _decision(row, origin_ms)
                except (ValueError, KeyError, TypeError):
                    continue
                if logged is not None:
                    out.append((logged, row))
    out.sort(key=lambda x: x[0].time_ms)
    return out


def _percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 3) if len(values) else None


def live_metrics(run: LiveRun) -> dict[str, Any]:
    """The metrics only a live run has (docs/live/)."""
    ok = [r.latency_ms for r in run.lookups if r.result == "ok"]
    reassign = [loss.reassign_seconds for loss in run.player.losses if loss.bundles]
    failover = [loss.failover_seconds for loss in run.player.losses if loss.was_leader]
    obs = run.observations

    def worst(xs: list[float | None]) -> float | None:
        if not xs or any(x is None for x in xs):
            return None
        return round(max(x for x in xs if x is not None), 3)

    return {
        "lookup_latency_ms_p50": _percentile(ok, 50),
        "lookup_latency_ms_p99": _percentile(ok, 99),
        "lookups": len(run.lookups),
        "lookups_failed": sum(1 for r in run.lookups if r.result != "ok"),
        "reassign_seconds_max": worst(reassign),
        "leader_failover_seconds_max": worst(failover),
        "double_owner_observations": len(obs.double_owners),
        "observer_rounds_per_second": round(obs.rate, 2),
    }


def build_result(run: LiveRun, key: str | None = None) -> LiveResult:
    """The run measured; ``key`` names it in the outputs (default: its strategy)."""
    plan, s = run.plan, run.sampler
    name = key or plan.strategy
    n = max(1, s.ticks)
    times, loads, up = s.times[:n], s.true_load[:n], s.up[:n]
    merged = read_decisions(run.decision_files, run.origin_ms)
    counters = Counters()
    blip = plan.config.view(SimSettings).unload_blip_seconds
    decisions: list[Logged] = []
    rows: list[dict[str, Any]] = []
    for logged, raw in merged:
        if logged.time_ms > plan.duration:
            continue  # logged while the cluster stopped (a graceful stop's handover): not part of the run
        d = logged.decision
        tick = int(np.clip(np.searchsorted(times, logged.time_ms, side="right") - 1, 0, n - 1))
        throughput = None
        if isinstance(d, Unload) and d.label is Label.SUCCESS:
            tput, topics = s.stats[tick].get(d.bundle, (0.0, 0)) if tick < len(s.stats) else (0.0, 0)
            throughput = tput
            flap = counters.unload(d.bundle, logged.time_ms, tput, topics, blip)
            logged = Logged(logged.strategy, tick, logged.time_ms, d, throughput=throughput, flap=flap)
        elif isinstance(d, SplitDecision) and d.label is Label.SUCCESS:
            counters.splits += 1
            counters.split(d.bundle, d.children)
            logged = Logged(logged.strategy, tick, logged.time_ms, d)
        elif isinstance(d, Assignment):
            counters.assignments += 1
            logged = Logged(logged.strategy, tick, logged.time_ms, d)
        else:
            logged = Logged(logged.strategy, tick, logged.time_ms, d)
        decisions.append(logged)
        row = logged.to_json()
        row["strategy"] = name
        row.update({k: raw[k] for k in ("label", "cause", "leader", "best") if k in raw})
        rows.append(row)
    record = Record(
        times=times,
        loads=loads,
        up=up,
        saturated=loads > 1.0,
        brokers=list(s.names),
        step_ms=s.step,
        overload=plan.config.view(PlacementSettings).overload_threshold,
    )
    marks = [Mark(0, "start"), *(Mark(m.time_ms, m.action, m.broker) for m in run.player.marks)]
    metrics = summarise(record, marks, counters, 0.0, 0, run.wall_seconds)
    metrics["undelivered_bytes"] = None
    metrics["backlog_age_max_minutes"] = None
    events = metrics.pop("events")
    metrics.update(live_metrics(run))
    metrics["events"] = events
    return LiveResult(
        strategy=name,
        metrics=metrics,
        times=times,
        brokers=list(s.names),
        true_load=loads,
        reported_load=s.reported_load[:n],
        bundles=s.bundles[:n],
        up=up,
        decisions=decisions,
        events=[{"time_ms": m.time_ms, "action": m.action, "broker": m.broker} for m in run.player.marks],
        rows=rows,
        lookups=lookups_table(run, name),
    )


def lookups_table(run: LiveRun, name: str) -> Any:
    import pyarrow as pa

    recs = run.lookups
    return pa.table(
        {
            "strategy": pa.array([name] * len(recs), type=pa.string()),
            "time_ms": pa.array([r.time_ms for r in recs], type=pa.int64()),
            "topic": pa.array([r.topic for r in recs], type=pa.string()),
            "hops": pa.array([r.hops for r in recs], type=pa.int32()),
            "attempts": pa.array([r.attempts for r in recs], type=pa.int32()),
            "latency_ms": pa.array([r.latency_ms for r in recs], type=pa.float64()),
            "result": pa.array([r.result for r in recs], type=pa.string()),
            "broker": pa.array([r.broker for r in recs], type=pa.string()),
        }
    )


def timeline_table(r: LiveResult) -> Any:
    import pyarrow as pa

    ticks, slots = r.true_load.shape
    return pa.table(
        {
            "strategy": pa.array([r.strategy] * (ticks * slots), type=pa.string()),
            "tick": pa.array(np.repeat(np.arange(ticks, dtype=np.int64), slots), type=pa.int64()),
            "time_ms": pa.array(np.repeat(r.times, slots), type=pa.int64()),
            "broker": pa.array(np.tile(np.array(r.brokers, dtype=object), ticks), type=pa.string()),
            "up": pa.array(r.up.reshape(-1), type=pa.bool_()),
            "true_load": pa.array(np.where(r.up, r.true_load, np.nan).reshape(-1), type=pa.float64(), from_pandas=True),
            "reported_load": pa.array(r.reported_load.reshape(-1), type=pa.float64()),
            "bundles": pa.array(r.bundles.reshape(-1), type=pa.int64()),
        }
    )


def summary(scenario: str, results: Sequence[LiveResult]) -> dict[str, Any]:
    return {"scenario": scenario, "strategies": {r.strategy: r.metrics for r in results}}


Writer = Callable[[Path], None]


def output_files(scenario: str, results: Sequence[LiveResult], report_html: str) -> dict[str, Writer]:
    """The files of one run, or of runs side by side (``--managers``): one of each, the runs in order, each
    row naming its run in ``strategy``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def text(content: str) -> Writer:
        def write(p: Path) -> None:
            p.write_text(content, encoding="utf-8")

        return write

    doc = json.dumps(summary(scenario, results), indent=2) + "\n"
    decisions = "".join(json.dumps(row) + "\n" for r in results for row in r.rows)
    timeline = pa.concat_tables([timeline_table(r) for r in results])
    lookups = pa.concat_tables([r.lookups for r in results])
    return {
        "summary.json": text(doc),
        "decisions.jsonl": text(decisions),
        "timeline.parquet": lambda p: pq.write_table(timeline, p),
        "lookups.parquet": lambda p: pq.write_table(lookups, p),
        "report.html": text(report_html),
    }


def write_files(directory: str | Path, files: dict[str, Writer]) -> None:
    """Write ``files`` into ``directory`` (the staging directory of ``files.atomic``, made by the caller)."""
    for name, write in files.items():
        write(Path(directory) / name)
