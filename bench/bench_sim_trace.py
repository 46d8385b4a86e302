"""``simulate --workload``: a production-shaped trace with every strategy, without a JVM, against Spark's reading.

The trace (``generate``): 4 hours of one-minute samples of ~12,000 topics — 2.9 M rows — in 16 Zipf-skewed
namespaces of 64 bundles each (1,024 bundles) owned by 40 brokers (the ``broker`` column), written as one Parquet
file; the scenario: those 40 brokers (8 cores, 10 Gbit/s), 4 hours at a one-minute step, a restart at 1 h.

Cases, each measured side by side with ``simulate --spark`` (Spark's reader, what ``main`` did: a JVM, a session,
the pipeline's general path) in one run, runs interleaved, medians of ``BUNDLEWISE_BENCH_REPEATS`` (default 3):

* *cold*: ``bundlewise simulate --cluster … --workload trace.parquet`` with all five strategies in a fresh process,
  wall time to exit (target ≤ 10 s without a JVM);
* *warm*: reading the trace in this process after an unmeasured read (page cache, JIT, Spark's session up);
* *start-up*: a command that does not touch Spark (``bundlewise bundle TOPIC``, and ``simulate --help``) against
  ``python -c pass`` (target ≤ 1 s fixed cost).

Writes bench/results/simulator_trace.json.  ``BUNDLEWISE_BENCH_TRACE_ROWS`` shrinks the trace for a quick look
(the topics per sample scale; the span stays 4 hours).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import write_result

RESULT = "simulator_trace"
TITLE = "simulate --workload on a recorded trace: without a JVM vs through Spark"

ROWS = int(os.environ.get("BUNDLEWISE_BENCH_TRACE_ROWS", "2900000"))
REPEATS = int(os.environ.get("BUNDLEWISE_BENCH_REPEATS", "3"))
BROKERS, NAMESPACES, BUNDLES_PER_NS, SAMPLES = 40, 16, 64, 240
T0 = 1_700_000_000_000
ROOT = Path(__file__).resolve().parent.parent
CLI = [str(Path(sys.executable).parent / "bundlewise")]
"""The console script a user runs."""
STRATEGIES = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder", "TransferShedder")


def generate(rows: int, folder: Path, seed: int = 11) -> tuple[Path, Path]:
    """The trace (Parquet) and the scenario (TOML) described in the module docstring."""
    rng = np.random.default_rng(seed)
    topics = max(NAMESPACES, rows // SAMPLES)
    ns_weight = 1.0 / np.arange(1, NAMESPACES + 1) ** 0.8
    ns_of = rng.choice(NAMESPACES, size=topics, p=ns_weight / ns_weight.sum())
    names = np.array([f"persistent://tenant-{k % 4}/ns-{k}/topic-{i}" for i, k in enumerate(ns_of)], dtype=object)
    share = 1.0 / np.arange(1, topics + 1) ** 0.6
    rng.shuffle(share)
    # ~45 % of 40 × 8 cores at 24 µs per message in and out of 1 KiB
    base = share / share.sum() * BROKERS * 0.45 * 8 / 24e-6
    size = rng.lognormal(np.log(1024), 0.5, topics)
    diurnal = 1 + 0.3 * np.sin(np.linspace(0, np.pi, SAMPLES))
    parts = []
    for s in range(SAMPLES):
        rate = base * diurnal[s] * np.maximum(0.0, 1 + 0.1 * rng.standard_normal(topics))
        parts.append(
            pa.table(
                {
                    "timestamp": pa.array(np.full(topics, T0 + s * 60_000, dtype=np.int64)),
                    "topic": pa.array(names, pa.string()).dictionary_encode(),
                    "msgRateIn": pa.array(rate),
                    "msgRateOut": pa.array(rate),
                    "msgThroughputIn": pa.array(rate * size),
                    "msgThroughputOut": pa.array(rate * size),
                    "producerCount": pa.array(np.ones(topics, dtype=np.int64)),
                    "consumerCount": pa.array(np.full(topics, 2, dtype=np.int64)),
                }
            )
        )
    trace = folder / "trace.parquet"
    pq.write_table(pa.concat_tables(parts).combine_chunks(), trace, row_group_size=1 << 20)
    cluster = folder / "cluster.toml"
    lines = ['name = "bench-trace"', 'duration = "4h"', 'step = "1m"']
    lines += [f'[[brokers]]\nname = "broker-{b + 1}"' for b in range(BROKERS)]
    lines += [f'[[namespaces]]\nname = "tenant-{k % 4}/ns-{k}"\nbundles = {BUNDLES_PER_NS}' for k in range(NAMESPACES)]
    lines += ['[[events]]\nat = "1h"\naction = "restart"\nbroker = "broker-7"\ndown_for = "5m"']
    cluster.write_text("\n".join(lines) + "\n")
    return trace, cluster


def _command(cluster: Path, trace: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "simulate",
        "--no-progress",
        "--cluster",
        str(cluster),
        "--workload",
        str(trace),
        "--strategy",
        *STRATEGIES,
        *extra,
    ]


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}…: {done.stderr[-2000:]}")
    return took


def _median(times: list[float]) -> float:
    return round(statistics.median(times), 3)


def cold(cluster: Path, trace: Path) -> dict[str, Any]:
    fast, spark = [], []
    for _ in range(REPEATS):
        fast.append(_timed(_command(cluster, trace)))
        spark.append(_timed(_command(cluster, trace, "--spark")))
    return {
        "without_jvm_s": _median(fast),
        "spark_s": _median(spark),
        "speedup": round(_median(spark) / _median(fast), 1),
    }


def warm(trace: Path) -> dict[str, Any]:
    from bundlewise.cli.traces import load_workload

    load_workload(str(trace))
    load_workload(str(trace), use_spark=True)
    fast, spark = [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        load_workload(str(trace))
        fast.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        load_workload(str(trace), use_spark=True)
        spark.append(time.perf_counter() - t0)
    return {
        "without_jvm_s": _median(fast),
        "spark_s": _median(spark),
        "speedup": round(_median(spark) / _median(fast), 1),
    }


def startup() -> dict[str, Any]:
    cases = {
        "python": [sys.executable, "-c", "pass"],
        "bundle": [*CLI, "bundle", "persistent://t/ns/a"],
        "simulate_help": [*CLI, "simulate", "--help"],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(max(5, REPEATS)):
        for name, cmd in cases.items():
            times[name].append(_timed(cmd))
    out = {f"{k}_s": _median(v) for k, v in times.items()}
    out["fixed_cost_s"] = round(max(out["bundle_s"], out["simulate_help_s"]), 3)
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-sim-trace-") as tmp:
        trace, cluster = generate(ROWS, Path(tmp))
        rows = pq.read_metadata(trace).num_rows
        print(f"trace: {rows:,} rows, {BROKERS} brokers, {NAMESPACES * BUNDLES_PER_NS} bundles, 4 h at 1 m")
        results = {"cold": cold(cluster, trace), "warm": warm(trace), "startup": startup()}
    c, w, s = results["cold"], results["warm"], results["startup"]
    print(f"cold, 5 strategies end to end: {c['without_jvm_s']:.2f} s without a JVM, {c['spark_s']:.2f} s with --spark")
    print(f"warm, reading the trace:       {w['without_jvm_s']:.2f} s without a JVM, {w['spark_s']:.2f} s with --spark")
    startup_line = f"bundle {s['bundle_s']:.2f} s, simulate --help {s['simulate_help_s']:.2f} s"
    print(f"start-up: {startup_line}, python {s['python_s']:.2f} s")
    write_result(
        RESULT,
        {
            "trace": {
                "rows": rows,
                "brokers": BROKERS,
                "bundles": NAMESPACES * BUNDLES_PER_NS,
                "hours": 4,
                "step": "1m",
            },
            "strategies": list(STRATEGIES),
            "repeats": REPEATS,
            **results,
            "targets": {
                "cold_without_jvm_s": 10.0,
                "fixed_cost_s": 1.0,
                "meets": c["without_jvm_s"] <= 10.0 and s["fixed_cost_s"] <= 1.0,
            },
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
