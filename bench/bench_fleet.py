"""Fleet scale: ``simulate`` of a cluster of up to 1,000 brokers x 100,000 bundles x 1,000,000 topics, per strategy.

The cluster (``bench.common.skewed_scenario``): ``brokers`` namespaces of 100 bundles and 1,000 topics each
(so 100 bundles and 1,000 topics per broker), Zipf-skewed, ~50 % CPU per broker on average, a 20 % diurnal
swing and 5 % noise, 1-minute ticks, every broker up from the start.  Each size x strategy runs in a fresh
process, so its peak resident memory is its own.  Per run:

* ``wall_s`` (the run, setup excluded), ``cpu_s`` (its process CPU time: on a machine shared with other work the
  steadier figure), ``setup_s`` (the engine: cluster, topic hashes, first reports);
* ``tick_ms``: median and max of a tick's CPU time; ``decision_ms``: median and max of the tick's decision phases
  -- the lookups (the placement flow of every unowned bundle) and the shedding cycle (the strategy and each
  destination's placement flow); ``other_ms``: median and max of the rest of the tick (events, observe, reports,
  leader update, splits and merges, record), the simulator's own cost (docs/simulator.md, Cost of a tick);
* ``peak_rss_mb``: the process's peak resident set size;
* ``day_s`` / ``day_cpu_s``: the wall / CPU time a simulated day would take (scaled by 1,440 / ticks: an
  extrapolation unless ``ticks`` is 1,440, and marked so in the table).

``python -m bench fleet`` runs ``BENCH_FLEET_SIZES`` (default ``100x10000x100000:60,300x30000x300000:60,
1000x100000x1000000:10``: brokers x bundles x topics : simulated minutes) for every registered strategy
(``BENCH_FLEET_STRATEGIES`` to choose), prints the table and writes ``bench/results/fleet.json`` and
``bench/results/fleet.md`` (``bench.common.write_result``; ``python -m bench --markdown fleet`` renders the ``.md``
again from the JSON).  ``BENCH_FLEET_BASELINE=SRC`` (a ``src`` folder of another version, e.g. from ``git
archive``) also runs every size x strategy on that code, labelled ``BENCH_FLEET_BASELINE_LABEL``, in the same run
(only the sizes of ``BENCH_FLEET_BASELINE_SIZES`` when set).  A ``note`` (how the figures were taken) and a
``profile`` (a list of findings) added to the JSON are rendered above the table.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import skewed_scenario, write_result

RESULT = "fleet"
TITLE = "Fleet scale: simulate per size x strategy"

DEFAULT_SIZES = "100x10000x100000:60,300x30000x300000:60,1000x100000x1000000:10"
ROOT = Path(__file__).resolve().parent.parent
TICKS_PER_DAY = 1440


def parse_sizes(text: str) -> list[tuple[int, int, int, int]]:
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):  # "" (unset): no sizes
        size, _, minutes = item.partition(":")
        brokers, bundles, topics = (int(x) for x in size.split("x"))
        out.append((brokers, bundles, topics, int(minutes or 60)))
    return out


def one(brokers: int, bundles: int, topics: int, minutes: int, strategy: str) -> dict[str, Any]:
    """One run in this process (the child's side); the phase clock is the engine's probe."""
    from bundlewise.sim.engine import Engine
    from bundlewise.traffic.workload import GeneratedWorkload

    sc = skewed_scenario(brokers, bundles // brokers, topics // brokers, minutes / 60, name=f"fleet-{brokers}")
    t0 = time.perf_counter()
    workload = GeneratedWorkload(sc.namespaces, sc.workload, sc.seed)
    marks: list[tuple[str, float]] = []
    engine = Engine(sc, workload, strategy, probe=lambda _e, phase: marks.append((phase, time.process_time())))
    setup = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    result = engine.run()
    wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    ticks, decision, other = [], [], []
    start = c1
    for k in range(0, len(marks), 5):  # events, lookups, observe, splits, shed (and the record after it)
        phases = dict(zip((p for p, _ in marks[k : k + 5]), range(5), strict=True))
        times = [t for _, t in marks[k : k + 5]]
        end = marks[k + 5][1] if k + 5 < len(marks) else c1 + cpu
        lookups = times[phases["lookups"]] - times[phases["events"]]
        shed = times[phases["shed"]] - times[phases["splits"]]
        ticks.append(end - start)
        decision.append(lookups + shed)
        other.append(end - start - lookups - shed)
        start = end
    ms = 1000.0
    return {
        "brokers": brokers,
        "bundles": bundles,
        "topics": topics,
        "strategy": strategy,
        "ticks": engine.clock.ticks,
        "setup_s": round(setup, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "tick_ms": {"median": round(statistics.median(ticks) * ms, 1), "max": round(max(ticks) * ms, 1)},
        "decision_ms": {"median": round(statistics.median(decision) * ms, 1), "max": round(max(decision) * ms, 1)},
        "other_ms": {"median": round(statistics.median(other) * ms, 1), "max": round(max(other) * ms, 1)},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "day_s": round(wall * TICKS_PER_DAY / engine.clock.ticks, 1),
        "day_cpu_s": round(cpu * TICKS_PER_DAY / engine.clock.ticks, 1),
        "unloads": result.metrics["unloads"],
        "splits": result.metrics["splits"],
    }


def run_child(size: tuple[int, int, int, int], strategy: str, src: str | None) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:  # the baseline's modules first; this bench's own code from here
        env["PYTHONPATH"] = os.pathsep.join([src, str(ROOT)])
    args = [sys.executable, "-m", "bench.bench_fleet", "--one", *(str(x) for x in size), strategy]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def markdown(payload: dict[str, Any]) -> str:
    """The size x strategy table of ``payload["rows"]``."""
    rows: list[dict[str, Any]] = payload["rows"]
    lines = []
    if payload.get("note"):  # how and where the figures were taken, kept in the JSON beside them
        lines += [f"*Note:* {payload['note']}", ""]
    if payload.get("profile"):  # what a profile of the largest size found, before and after a change
        lines += ["What a tick spends (cProfile):", "", *(f"* {item}" for item in payload["profile"]), ""]
    lines += [
        "Ticks of 1 minute; tick, decision and other are CPU milliseconds of the run's process. *decision*: the",
        "lookups' and the shedding cycle's phases of a tick; *other*: the rest of the tick (the simulator's own work).",
        "*day*: the run's wall / CPU time scaled to 1,440 ticks (extrapolated, marked `~`, unless the run simulated a",
        "whole day). Peak RSS: the run's process.",
        "",
        "| code | brokers x bundles x topics | strategy | ticks | wall s | cpu s | day wall / cpu s "
        "| tick ms median / max | decision ms median / max | other ms median / max | peak RSS MB | unloads | splits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        size = f"{r['brokers']:,} x {r['bundles']:,} x {r['topics']:,}"
        mark = "" if r["ticks"] == TICKS_PER_DAY else "~"
        day = f"{mark}{r['day_s']} / {mark}{r['day_cpu_s']}"
        t, d, o = r["tick_ms"], r["decision_ms"], r["other_ms"]
        lines.append(
            f"| {r['code']} | {size} | {r['strategy']} | {r['ticks']} | {r['wall_s']} | {r['cpu_s']} | {day} "
            f"| {t['median']} / {t['max']} | {d['median']} / {d['max']} | {o['median']} / {o['max']} "
            f"| {r['peak_rss_mb']} | {r['unloads']} | {r['splits']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    from bundlewise.algorithms.registry import shedding_names

    sizes = parse_sizes(os.environ.get("BENCH_FLEET_SIZES", DEFAULT_SIZES))
    wanted = os.environ.get("BENCH_FLEET_STRATEGIES")
    strategies = wanted.split(",") if wanted else list(shedding_names())
    baseline = os.environ.get("BENCH_FLEET_BASELINE")
    label = os.environ.get("BENCH_FLEET_BASELINE_LABEL", "baseline")
    baseline_sizes = parse_sizes(os.environ.get("BENCH_FLEET_BASELINE_SIZES", "")) if baseline else []
    rows = []
    for size in sizes:
        codes: list[tuple[str, str | None]] = [("this", None)]
        if baseline and (not baseline_sizes or size in baseline_sizes):
            codes.append((label, baseline))
        for strategy in strategies:
            for label_, src in codes:
                row = {"code": label_, **run_child(size, strategy, src)}
                rows.append(row)
                print(
                    f"fleet {label_:<8} {size[0]:>5} x {size[1]:>7} x {size[2]:>8} {strategy:<20} "
                    f"{row['ticks']:>5} ticks {row['wall_s']:>8.1f} s ({row['cpu_s']:>8.1f} s CPU)  "
                    f"tick {row['tick_ms']['median']:>8.1f} ms "
                    f"(decision {row['decision_ms']['median']:>8.1f}, other {row['other_ms']['median']:>7.1f})  "
                    f"peak {row['peak_rss_mb']:>7.0f} MB",
                    flush=True,
                )
                write(sizes, rows)  # after every row: a long run cut short keeps what it measured


def write(sizes: list[tuple[int, int, int, int]], rows: list[dict[str, Any]]) -> None:
    write_result(RESULT, {"sizes": [list(s) for s in sizes], "rows": rows}, TITLE, markdown)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--one":
        b, n, t, m = (int(x) for x in sys.argv[2:6])
        print(json.dumps(one(b, n, t, m, sys.argv[6])))
    else:
        main()
