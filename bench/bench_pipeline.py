"""Benchmark of ``bundlewise pipeline`` against a streamed DuckDB script doing the same work, cold and warm.

The generator writes a canonical trace (docs/formats.md) as Parquet: 100k topics per 10M rows in 400 Zipf-skewed
namespaces, Zipf-skewed message rates (exponent 1.1), log-normal message sizes and per-sample noise, some
partitioned topics, 24 brokers owning bundles; the same rows as CSV and JSON Lines (written by DuckDB).

**The yardstick** (``duckdb_pipeline``), the fastest straightforward single-machine script: the distinct topics
read once and hashed by ``zlib.crc32`` into their bundles (``keys``), then streamed ``COPY (SELECT … FROM the
Parquet files JOIN keys WHERE <the rates are valid>) TO topic_samples.parquet`` and one aggregation per
(timestamp, bundle) straight from the files (no temporary table); Pulsar's time averages, split candidates
and broker load from the aggregated table with the pipeline's own ``frames`` functions (numpy, identical work on
both sides); every table written as Parquet.  Spark does a little more (rejects, the summary).

**Cases**, each with all outputs and without ``topic_samples/`` (the one output as large as the input):

* *cold*: a fresh process per run on each side — ``bundlewise pipeline`` (JVM, Spark session, Python workers)
  and ``python -m bench.bench_pipeline duckdb …`` — wall time from start to exit;
* *warm*: in this process after one unmeasured run (JIT, Python workers, page cache);
* *inputs* (warm, all outputs): the fast path on the Parquet, CSV and JSON Lines copies, and Spark's own reader
  (``--spark-reader``, the general path) on the Parquet files — each against the Parquet fast path;
* *resolution* (cold and warm, with and without ``topic_samples/``): whether ``keyed`` pays for itself — the
  general path (Spark's Parquet reader) with ``keyed`` and with every row through ``transforms.resolve`` (its
  alternative; ``keyed.uniform_bounds`` patched to say no), beside the fast path.  ``python -m
  bench.bench_pipeline resolution`` runs it alone and prints it.

Runs of a case are interleaved (Spark, DuckDB, Spark, …) so both see the same machine; figures are medians of
``BUNDLEWISE_BENCH_REPEATS`` (default 3).  Rows/s and ratios go to bench/results/pipeline.json.
``BUNDLEWISE_BENCH_ROWS`` sets the sizes (default ``10000000``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench.common import write_result

RESULT = "pipeline"
TITLE = "Spark pipeline vs a streamed DuckDB script, cold and warm"

SIZES = tuple(int(x) for x in os.environ.get("BUNDLEWISE_BENCH_ROWS", "10000000").split(","))
REPEATS = int(os.environ.get("BUNDLEWISE_BENCH_REPEATS", "3"))
NAMESPACES = 400
BROKERS = 24
BUNDLES = 4
SECONDS_PER_SAMPLE = 60_000
ROOT = Path(__file__).resolve().parent.parent


def _shape(rows: int) -> tuple[int, int]:
    """(topics, timestamps): 10k topics × 100 samples per 1M rows."""
    topics = max(1000, rows // 100)
    return topics, rows // topics


def generate(rows: int, out_dir: Path, seed: int = 7) -> Path:
    """Write a trace of ``rows`` rows to ``out_dir`` as 4 Parquet files; returns the directory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    n_topics, n_times = _shape(rows)
    ns_of = rng.zipf(1.3, n_topics) % NAMESPACES
    names = []
    for i in range(n_topics):
        ns = int(ns_of[i])
        base = f"persistent://tenant-{ns % 40}/ns-{ns}/topic-{i}"
        names.append(f"{base}-partition-{i % 8}" if i % 5 == 0 else base)
    hashes = np.array([zlib.crc32(n.encode()) for n in names], dtype=np.int64)
    seg = (1 << 32) // BUNDLES
    bundle_idx = np.minimum(hashes // seg, BUNDLES - 1)
    owner = np.array(
        [f"broker-{(int(ns) * BUNDLES + int(b)) % BROKERS}:8080" for ns, b in zip(ns_of, bundle_idx, strict=True)]
    )
    weight = 1.0 / np.power(rng.permutation(n_topics) + 1.0, 1.1)
    base_rate = 2_000_000.0 * weight / weight.sum()
    msg_size = rng.lognormal(7.0, 1.0, n_topics)
    fanout = rng.integers(1, 4, n_topics).astype(np.float64)
    producers = rng.integers(1, 6, n_topics)
    consumers = rng.integers(0, 10, n_topics)
    topic_arr = pa.array(names, pa.string())
    owner_arr = pa.array(owner, pa.string())
    out_dir.mkdir(parents=True, exist_ok=True)
    files = 4
    per_file = -(-n_times // files)
    for f in range(files):
        times = range(f * per_file, min(n_times, (f + 1) * per_file))
        if not times:
            continue
        with pq.ParquetWriter(out_dir / f"part-{f}.parquet", _schema()) as writer:
            for t in times:
                rate_in = base_rate * rng.lognormal(0.0, 0.2, n_topics)
                table = pa.table(
                    {
                        "timestamp": pa.array(np.full(n_topics, t * SECONDS_PER_SAMPLE, dtype=np.int64)),
                        "topic": topic_arr,
                        "msgRateIn": rate_in,
                        "msgRateOut": rate_in * fanout,
                        "msgThroughputIn": rate_in * msg_size,
                        "msgThroughputOut": rate_in * fanout * msg_size,
                        "producerCount": producers,
                        "consumerCount": consumers,
                        "broker": owner_arr,
                    },
                    schema=_schema(),
                )
                writer.write_table(table)
    return out_dir


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("timestamp", pa.int64()),
            ("topic", pa.string()),
            ("msgRateIn", pa.float64()),
            ("msgRateOut", pa.float64()),
            ("msgThroughputIn", pa.float64()),
            ("msgThroughputOut", pa.float64()),
            ("producerCount", pa.int64()),
            ("consumerCount", pa.int64()),
            ("broker", pa.string()),
        ]
    )


def text_copies(trace: Path, root: Path) -> dict[str, Path]:
    """The trace as CSV and as JSON Lines, one file per Parquet file (written by DuckDB)."""
    import duckdb

    copies = {}
    for kind, ext, options in (("csv", "csv", "FORMAT csv, HEADER"), ("jsonl", "jsonl", "FORMAT json")):
        d = root / f"{trace.name}-{kind}"
        d.mkdir(exist_ok=True)
        for part in sorted(trace.glob("*.parquet")):
            duckdb.sql(f"COPY (SELECT * FROM read_parquet('{part}')) TO '{d / part.stem}.{ext}' ({options})")
        copies[kind] = d
    return copies


def duckdb_pipeline(trace: Path, out: Path, topic_samples: bool = True) -> None:
    """The yardstick: the pipeline's work as a streamed DuckDB script (see the module docstring)."""
    import duckdb
    import pyarrow as pa

    from bundlewise.config import Config
    from bundlewise.pipeline import frames
    from bundlewise.pipeline.columns import AVERAGE_FIELDS, RATE_FIELDS

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    con = duckdb.connect()
    src = f"read_parquet('{trace}/*.parquet')"
    names = con.sql(f"SELECT DISTINCT topic FROM {src} WHERE topic IS NOT NULL").to_arrow_table().column(0)
    seg = (1 << 32) // BUNDLES
    namespaces, bundles = [], []
    for full in names.to_pylist():
        i = min(zlib.crc32(full.encode()) // seg, BUNDLES - 1)
        ns = full.split("://", 1)[1].rsplit("/", 1)[0]
        namespaces.append(ns)
        bundles.append(f"{ns}/0x{i * seg:08x}_0x{(i + 1) * seg if i < BUNDLES - 1 else 0xFFFFFFFF:08x}")
    keys = pa.table({"topic": names, "namespace": namespaces, "bundle": bundles})
    con.register("keys", keys)
    valid = " AND ".join(
        [f"isfinite({c}) AND {c} >= 0" for c in RATE_FIELDS]
        + ["producerCount >= 0", "consumerCount >= 0", "s.timestamp >= 0"]
    )
    joined = f"{src} s JOIN keys k USING (topic) WHERE {valid}"
    if topic_samples:
        con.execute(
            f"COPY (SELECT s.timestamp, s.broker, s.topic, k.bundle, k.namespace, {', '.join(RATE_FIELDS)}, "
            f"producerCount, consumerCount, 1::BIGINT AS topics FROM {joined}) "
            f"TO '{out}/topic_samples.parquet' (FORMAT parquet)"
        )
    sums = ", ".join(f"sum({c}) AS {c}" for c in RATE_FIELDS)
    partial = con.sql(
        f"SELECT timestamp, bundle, any_value(namespace) AS namespace, min(broker) AS broker, {sums}, "
        "count(*) AS topics, sum(producerCount) AS producerCount, sum(consumerCount) AS consumerCount, "
        f"count(*) AS rows FROM {joined} GROUP BY timestamp, bundle"
    ).to_arrow_table()
    config = Config()
    stage = frames.bundle_stage(partial, frames.SplitThresholds.of(config), _stage_schema(partial))
    con.register("stage", stage)
    con.execute(f"COPY (SELECT * EXCLUDE (rows, reasons) FROM stage) TO '{out}/bundle_load.parquet' (FORMAT parquet)")
    candidates = frames.split_candidates(
        stage, int(config["loadBalancerNamespaceMaximumBundles"]), None, _candidates_schema()
    )
    con.register("candidates", candidates)
    con.execute(f"COPY candidates TO '{out}/split_candidates.parquet' (FORMAT parquet)")
    averages = ", ".join(f"sum({c}) AS {c}" for c in AVERAGE_FIELDS)
    con.execute(
        f"COPY (SELECT timestamp, broker, {sums}, count(*) AS bundles, sum(topics) AS topics, "
        f"sum(producerCount) AS producerCount, sum(consumerCount) AS consumerCount, {averages} "
        f"FROM stage WHERE broker IS NOT NULL GROUP BY timestamp, broker) TO '{out}/broker_load.parquet' "
        "(FORMAT parquet)"
    )
    con.close()


def _stage_schema(partial: Any) -> Any:
    import pyarrow as pa

    from bundlewise.pipeline.columns import AVERAGE_FIELDS, RATE_FIELDS

    return pa.schema(
        [
            ("timestamp", pa.int64()),
            ("namespace", pa.string()),
            ("bundle", pa.string()),
            ("broker", pa.string()),
            *[(c, pa.float64()) for c in RATE_FIELDS],
            ("topics", pa.int64()),
            ("producerCount", pa.int64()),
            ("consumerCount", pa.int64()),
            ("sessions", pa.int64()),
            ("shortTermSamples", pa.int32()),
            ("longTermSamples", pa.int32()),
            *[(c, pa.float64()) for c in AVERAGE_FIELDS],
            ("rows", pa.int64()),
            ("reasons", pa.list_(pa.string())),
        ]
    )


def _candidates_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("timestamp", pa.int64()),
            ("namespace", pa.string()),
            ("bundle", pa.string()),
            ("broker", pa.string()),
            ("topics", pa.int64()),
            ("sessions", pa.int64()),
            ("longTermMsgRate", pa.float64()),
            ("longTermMsgThroughput", pa.float64()),
            ("reasons", pa.list_(pa.string())),
            ("bundleCount", pa.int64()),
            ("withinNamespaceCap", pa.bool_()),
        ]
    )


def run_spark(spark: Any, source: Path, out: Path, topic_samples: bool = True, spark_reader: bool = False) -> float:
    from bundlewise.config import Config
    from bundlewise.pipeline import jobs
    from bundlewise.pipeline.boundaries import Boundaries

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    jobs.run_pipeline(
        spark,
        str(source),
        "trace",
        Boundaries.of_count(BUNDLES),
        Config(),
        str(out),
        bundle_counts_known=True,
        write_topic_samples=topic_samples,
        columnar=not spark_reader,
    )
    return time.perf_counter() - t0


def run_duckdb(trace: Path, out: Path, topic_samples: bool = True) -> float:
    t0 = time.perf_counter()
    duckdb_pipeline(trace, out, topic_samples)
    return time.perf_counter() - t0


def _process(cmd: list[str], out: Path) -> float:
    """Wall time of a fresh process, start to exit."""
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr[-2000:]}")
    return seconds


def cold_spark(trace: Path, out: Path, topic_samples: bool) -> float:
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "pipeline", "--input", str(trace), "--out", str(out)]
    return _process(cmd + ["--bundles", str(BUNDLES)] + ([] if topic_samples else ["--no-topic-samples"]), out)


def cold_duckdb(trace: Path, out: Path, topic_samples: bool) -> float:
    cmd = [sys.executable, "-m", "bench.bench_pipeline", "duckdb", str(trace), str(out)]
    return _process(cmd + ([] if topic_samples else ["--no-topic-samples"]), out)


def _pair(rows: int, spark_runs: list[float], duck_runs: list[float]) -> dict[str, Any]:
    spark_s, duck_s = statistics.median(spark_runs), statistics.median(duck_runs)
    return {
        "spark_seconds": round(spark_s, 3),
        "spark_runs": [round(x, 3) for x in spark_runs],
        "spark_rows_per_second": round(rows / spark_s),
        "duckdb_seconds": round(duck_s, 3),
        "duckdb_runs": [round(x, 3) for x in duck_runs],
        "duckdb_rows_per_second": round(rows / duck_s),
        "spark_over_duckdb": round(spark_s / duck_s, 3),
    }


def _say(rows: int, label: str, entry: dict[str, Any]) -> None:
    print(
        f"  {rows:,} rows, {label}: spark {entry['spark_seconds']:.2f} s ({entry['spark_rows_per_second']:,} rows/s)"
        f", duckdb {entry['duckdb_seconds']:.2f} s, ratio {entry['spark_over_duckdb']:.2f}",
        flush=True,
    )


def bench_size(spark: Any, rows: int, root: Path) -> dict[str, Any]:
    trace = root / f"trace-{rows}"
    t0 = time.perf_counter()
    generate(rows, trace)
    copies = text_copies(trace, root)
    print(f"generated {rows:,} rows (Parquet, CSV, JSON Lines) in {time.perf_counter() - t0:.1f}s", flush=True)
    entry: dict[str, Any] = {"rows": rows, "repeats": REPEATS}
    for label, with_samples in (("all_outputs", True), ("without_topic_samples", False)):
        cold_spark(trace, root / "warmup", with_samples)  # the first run ever also writes the JVM's class archive
        spark_runs, duck_runs = [], []
        for _ in range(REPEATS):
            spark_runs.append(cold_spark(trace, root / "spark", with_samples))
            duck_runs.append(cold_duckdb(trace, root / "duck", with_samples))
        entry[f"cold_{label}"] = _pair(rows, spark_runs, duck_runs)
        _say(rows, f"cold, {label}", entry[f"cold_{label}"])
        run_spark(spark, trace, root / "warmup", with_samples)
        run_duckdb(trace, root / "warmup-duck", with_samples)
        spark_runs, duck_runs = [], []
        for _ in range(REPEATS):
            spark_runs.append(run_spark(spark, trace, root / "spark", with_samples))
            duck_runs.append(run_duckdb(trace, root / "duck", with_samples))
        entry[f"warm_{label}"] = _pair(rows, spark_runs, duck_runs)
        _say(rows, f"warm, {label}", entry[f"warm_{label}"])
    inputs: dict[str, Any] = {}
    cases = {
        "parquet": (trace, False),
        "csv": (copies["csv"], False),
        "jsonl": (copies["jsonl"], False),
        "parquet_spark_reader": (trace, True),
    }
    for source, reader in cases.values():
        run_spark(spark, source, root / "warmup", True, reader)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEATS):
        for name, (source, reader) in cases.items():
            times[name].append(run_spark(spark, source, root / "spark", True, reader))
    fast = statistics.median(times["parquet"])
    for name, runs in times.items():
        median = statistics.median(runs)
        inputs[name] = {
            "seconds": round(median, 3),
            "runs": [round(x, 3) for x in runs],
            "rows_per_second": round(rows / median),
            "over_parquet_fast_path": round(median / fast, 3),
        }
        print(f"  {rows:,} rows, warm, all outputs, {name}: {median:.2f} s ({median / fast:.2f}x Parquet)", flush=True)
    entry["inputs_warm_all_outputs"] = inputs
    for path in (trace, *copies.values()):
        shutil.rmtree(path, ignore_errors=True)
    return entry


RESOLUTION_CASES = {
    "columnar": {"spark_reader": False, "keyed": True},
    "general_keyed": {"spark_reader": True, "keyed": True},
    "general_resolve": {"spark_reader": True, "keyed": False},
}
"""The resolution measurement: the fast path, and the general path (Spark's Parquet reader) with ``keyed``'s
numeric bundle keys for canonical names or with every row through ``transforms.resolve``."""


@contextlib.contextmanager
def _keyed(enabled: bool) -> Iterator[None]:
    """The general path with or without ``keyed`` (without: no boundaries count as uniform, so every row takes
    ``transforms.resolve``, as with a bundles file)."""
    from bundlewise.pipeline import keyed

    if enabled:
        yield
        return
    with mock.patch.object(keyed, "uniform_bounds", return_value=None):
        yield


def cold_case(trace: Path, out: Path, case: str, topic_samples: bool) -> float:
    cmd = [sys.executable, "-m", "bench.bench_pipeline", "case", case, str(trace), str(out)]
    return _process(cmd + ([] if topic_samples else ["--no-topic-samples"]), out)


def _run_case(case: str, trace: Path, out: Path, topic_samples: bool) -> None:
    """One cold run of a resolution case: the CLI in this fresh process."""
    from bundlewise.cli.main import main as cli

    args = ["pipeline", "--input", str(trace), "--out", str(out), "--bundles", str(BUNDLES)]
    args += [] if topic_samples else ["--no-topic-samples"]
    args += ["--spark-reader"] if RESOLUTION_CASES[case]["spark_reader"] else []
    with _keyed(RESOLUTION_CASES[case]["keyed"]), contextlib.redirect_stdout(io.StringIO()):
        code = cli(args)
    if code:
        raise SystemExit(code)


def bench_resolution(spark: Any, rows: int, root: Path) -> dict[str, Any]:
    """``keyed`` against the general path without it, beside the fast path: cold and warm medians."""
    trace = root / f"trace-{rows}"
    if not trace.exists():
        generate(rows, trace)
    entry: dict[str, Any] = {"rows": rows, "repeats": REPEATS}
    phases = [(m, label) for label in ("all_outputs", "without_topic_samples") for m in ("warm", "cold")]
    for mode, label in phases:
        with_samples = label == "all_outputs"
        times: dict[str, list[float]] = {case: [] for case in RESOLUTION_CASES}
        for case, how in RESOLUTION_CASES.items():  # unmeasured: the class archive, the JIT, the page cache
            if mode == "cold":
                cold_case(trace, root / "warmup", case, with_samples)
            else:
                with _keyed(how["keyed"]):
                    run_spark(spark, trace, root / "warmup", with_samples, how["spark_reader"])
        for _ in range(REPEATS):
            for case, how in RESOLUTION_CASES.items():
                if mode == "cold":
                    times[case].append(cold_case(trace, root / "spark", case, with_samples))
                else:
                    with _keyed(how["keyed"]):
                        times[case].append(run_spark(spark, trace, root / "spark", with_samples, how["spark_reader"]))
        medians = {case: statistics.median(runs) for case, runs in times.items()}
        entry[f"{mode}_{label}"] = {
            case: {
                "seconds": round(medians[case], 3),
                "runs": [round(x, 3) for x in runs],
                "rows_per_second": round(rows / medians[case]),
                "over_general_keyed": round(medians[case] / medians["general_keyed"], 3),
            }
            for case, runs in times.items()
        }
        print(
            f"  {rows:,} rows, {mode}, {label}: "
            + ", ".join(f"{case} {m:.2f} s" for case, m in medians.items())
            + f"; resolve/keyed {medians['general_resolve'] / medians['general_keyed']:.2f}",
            flush=True,
        )
        print(json.dumps({f"{mode}_{label}": entry[f"{mode}_{label}"]}), flush=True)
    return entry


def main() -> None:
    from bundlewise.pipeline.session import get_session

    spark = get_session()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bundlewise-bench-") as tmp:
        for rows in SIZES:
            results[str(rows)] = bench_size(spark, rows, Path(tmp))
            results[str(rows)]["resolution"] = bench_resolution(spark, rows, Path(tmp))
    write_result(
        RESULT,
        {
            "targets": {"cold_over_duckdb_max": 2.5, "warm_over_duckdb_max": 1.0, "inputs_over_parquet_max": 1.5},
            "spark": {"master": "local[*]", "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions")},
            "duckdb": "streamed COPY with the CRC-32 of each distinct topic joined in",
            "runs": results,
        },
        TITLE,
    )
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["case"]:  # one cold run of a resolution case: case NAME TRACE OUT [--no-topic-samples]
        _run_case(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), "--no-topic-samples" not in sys.argv)
    elif sys.argv[1:2] == ["resolution"]:  # the resolution measurement alone, printed (not written)
        from bundlewise.pipeline.session import get_session

        with tempfile.TemporaryDirectory(prefix="bundlewise-bench-") as tmp:
            print(json.dumps(bench_resolution(get_session(), SIZES[0], Path(tmp)), indent=2))
    elif sys.argv[1:2] == ["duckdb"]:  # one cold run of the yardstick: duckdb TRACE OUT [--no-topic-samples]
        duckdb_pipeline(Path(sys.argv[2]), Path(sys.argv[3]), "--no-topic-samples" not in sys.argv)
    else:
        main()
