"""What ``live up`` measures for ``--out``: the files of ``simulate --out`` measured for real, plus the lookups.

``build_result(run)`` turns a finished ``LiveRun`` into the one run record (``results.record.RunResult``),
written by the one writer (``results.write.write_run``) and rendered by the report exactly as a simulated
run is:

* decisions -- every broker's decision log (``--decisions``; written while it led) read back with
  ``results.decisions.read_row`` and merged in time order, ``time_ms`` counted from the run's origin, the
  tick and the run's name set; rows logged after the duration (while the brokers stop) are left out.  An
  unload's ``throughput`` is the bundle's in + out bytes/s in the last timeline sample at or before it.
* metrics -- the simulator's metrics computed by the one implementation (``results.measure.summarise``) from
  the sampled timeline (true load = demand / capacity, as in the simulator) and the decisions (only
  carried-out unloads count), then the live-only metrics (``live_metrics``) and, when the run had real
  clients, what they saw (``client_metrics``).  Not measured live, hence
  ``null``: ``undelivered_bytes`` and ``backlog_age_max_minutes`` (the emulated broker keeps no backlog), and
  in the timeline ``delivered_load`` and ``backlog_bytes``; ``saturated_broker_minutes`` counts broker-ticks
  whose demand exceeded capacity (load > 1).
* lookups -- every lookup: ``strategy, time_ms, topic, hops, attempts, latency_ms, result, broker``
  (``lookups.parquet``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundlewise.config.views import PlacementSettings, SimSettings
from bundlewise.live.harness.clients import ClientRecords
from bundlewise.live.harness.up import LiveRun
from bundlewise.model.decisions import Assignment, Label, Logged, SplitDecision, Unload
from bundlewise.results.decisions import read_row
from bundlewise.results.measure import Counters, Mark, Record, summarise
from bundlewise.results.record import RunResult


def read_decisions(files: Sequence[Path], origin_ms: int) -> list[Logged]:
    """Every broker's decision log, merged by time (a row that does not parse is skipped)."""
    out: list[Logged] = []
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    logged = read_row(json.loads(line), origin_ms)
                except (ValueError, KeyError, TypeError):
                    continue
                if logged is not None:
                    out.append(logged)
    out.sort(key=lambda x: x.time_ms)
    return out


def _percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 3) if len(values) else None


def live_metrics(run: LiveRun) -> dict[str, Any]:
    """The metrics only a live run has (docs/live/)."""
    ok = [r.latency_ms for r in run.lookups if r.result == "ok"]
    owned = [r.latency_ms for r in run.lookups if r.owned]
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
        "owned_lookup_latency_ms_p50": _percentile(owned, 50),
        "owned_lookup_latency_ms_p99": _percentile(owned, 99),
        "lookup_calibration_ms": None if run.calibration_ms is None else round(run.calibration_ms, 3),
        "lookups": len(run.lookups),
        "lookups_failed": sum(1 for r in run.lookups if r.result != "ok"),
        "reassign_seconds_max": worst(reassign),
        "leader_failover_seconds_max": worst(failover),
        "double_owner_observations": len(obs.double_owners),
        "observer_rounds_per_second": round(obs.rate, 2),
        **(client_metrics(run.clients) if run.clients is not None else {}),
    }


def client_metrics(rec: ClientRecords) -> dict[str, Any]:
    """What the real clients saw (``live.harness.clients``; CLIENT_METRIC_KEYS)."""
    latencies = rec.publish_latencies_ms()
    return {
        "publish_latency_ms_p50": _percentile(latencies, 50),
        "publish_latency_ms_p99": _percentile(latencies, 99),
        "publish_latency_ms_p999": _percentile(latencies, 99.9),
        "end_to_end_latency_ms_p50": _percentile(rec.end_to_end_ms, 50),
        "end_to_end_latency_ms_p99": _percentile(rec.end_to_end_ms, 99),
        "messages_published": rec.published,
        "publish_failures": rec.failed,
        "messages_received": len(rec.end_to_end_ms),
        "messages_lost": rec.lost,
        "messages_duplicated": rec.duplicated,
        "client_reconnects": rec.reconnects,
        "client_unavailable_seconds": round(rec.unavailable_seconds(), 3),
    }


def build_result(run: LiveRun, key: str | None = None) -> RunResult:
    """The run measured; ``key`` names it in the outputs (default: its strategy)."""
    plan, s = run.plan, run.sampler
    name = key or plan.strategy
    n = max(1, s.ticks)
    times, loads, up = s.times[:n], s.true_load[:n], s.up[:n]
    counters = Counters()
    blip = plan.config.view(SimSettings).unload_blip_seconds
    decisions: list[Logged] = []
    for logged in read_decisions(run.decision_files, run.origin_ms):
        if logged.time_ms > plan.duration:
            continue  # logged while the cluster stopped (a graceful stop's handover): not part of the run
        d = logged.decision
        tick = int(np.clip(np.searchsorted(times, logged.time_ms, side="right") - 1, 0, n - 1))
        measured: dict[str, Any] = {"throughput": None, "flap": None}
        if isinstance(d, Unload) and d.label is Label.SUCCESS:
            tput, topics = s.stats[tick].get(d.bundle, (0.0, 0)) if tick < len(s.stats) else (0.0, 0)
            measured = {"throughput": tput, "flap": counters.unload(d.bundle, logged.time_ms, tput, topics, blip)}
        elif isinstance(d, SplitDecision) and d.label is Label.SUCCESS:
            counters.splits += 1
            counters.split(d.bundle, d.children)
        elif isinstance(d, Assignment):
            counters.assignments += 1
        decisions.append(dataclasses.replace(logged, strategy=name, tick=tick, **measured))
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
    metrics = summarise(record, marks, counters, None, None, run.wall_seconds, extra=live_metrics(run))
    return RunResult(
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
