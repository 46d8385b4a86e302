"""Benchmark of ``bundlewise pipeline``: realistic topic samples at 1M and 10M rows, Spark vs DuckDB.

The generator writes a canonical trace (docs/formats.md) to Parquet under a temporary directory: many
namespaces, topics with Zipf-skewed message rates (exponent 1.1), log-normal message sizes and per-sample
noise, some partitioned topics, 24 brokers owning bundles.  Then, in the same run:

* Spark: ``jobs.run_pipeline`` end to end from the Parquet trace (ingest + validation, topic → bundle,
  per (time, bundle) load with the exact short/long-term averages, broker load, split candidates, writing
  every output dataset), after one unmeasured run of each case;
* DuckDB (the single-machine baseline): the same topic → bundle resolution (CRC-32 of each distinct topic once),
  per (time, bundle) aggregation, the same time averages (``transforms.averages_frame``, numpy, on the
  aggregated table) and per (time, broker) totals and average sums, writing topic_samples, bundle_load and
  broker_load (not split candidates, rejects or the summary: Spark does a little more work).

Each size runs with every output and without ``topic_samples/`` (the one output as large as the input;
``--no-topic-samples``), DuckDB likewise; each case ``BUNDLEWISE_BENCH_REPEATS`` times (default 3), Spark and
DuckDB interleaved.

Figures: medians, rows/s of each, and the Spark/DuckDB time ratio → bench/results/pipeline.json.
``BUNDLEWISE_BENCH_ROWS=1000000,10000000`` overrides the sizes.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import write_result

SIZES = tuple(int(x) for x in os.environ.get("BUNDLEWISE_BENCH_ROWS", "1000000,10000000").split(","))
REPEATS = int(os.environ.get("BUNDLEWISE_BENCH_REPEATS", "3"))
NAMESPACES = 400
BROKERS = 24
BUNDLES = 4
SECONDS_PER_SAMPLE = 60_000


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
    topic_arr = pa.array(names, pa.string()).dictionary_encode()
    owner_arr = pa.array(owner, pa.string()).dictionary_encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    files = 4
    per_file = -(-n_times // files)
    for f in range(files):
        times = range(f * per_file, min(n_times, (f + 1) * per_file))
        if not times:
            continue
        with pq.ParquetWriter(out_dir / f"part-{f}.parquet", _schema()) as writer:
            for t in times:
                noise = rng.lognormal(0.0, 0.2, n_topics)
                rate_in = base_rate * noise
                table = pa.table(
                    {
                        "timestamp": pa.array(np.full(n_topics, t * SECONDS_PER_SAMPLE, dtype=np.int64)),
                        "topic": topic_arr.cast(pa.string()),
                        "msgRateIn": rate_in,
                        "msgRateOut": rate_in * fanout,
                        "msgThroughputIn": rate_in * msg_size,
                        "msgThroughputOut": rate_in * fanout * msg_size,
                        "producerCount": producers,
                        "consumerCount": consumers,
                        "broker": owner_arr.cast(pa.string()),
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


def run_spark(spark: Any, trace: Path, out: Path, topic_samples: bool = True) -> float:
    from bundlewise.config import Config
    from bundlewise.pipeline import jobs
    from bundlewise.pipeline.boundaries import Boundaries

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    summary = jobs.run_pipeline(
        spark,
        str(trace),
        "trace",
        Boundaries.of_count(BUNDLES),
        Config(),
        str(out),
        lambda m: print("   ", m, file=sys.stderr),
        bundle_counts_known=True,
        write_topic_samples=topic_samples,
    )
    seconds = time.perf_counter() - t0
    print(f"  spark: {summary.rows_in:,} rows, {summary.bundles} bundles, {seconds:.2f}s")
    return seconds


def run_duckdb(trace: Path, out: Path, topic_samples: bool = True) -> float:
    import duckdb

    from bundlewise.pipeline.frames import averages_frame
    from bundlewise.pipeline.schemas import AVERAGE_FIELDS

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {os.cpu_count() or 2}")
    t0 = time.perf_counter()
    src = f"read_parquet('{trace}/*.parquet')"
    topics = con.execute(f"SELECT DISTINCT topic FROM {src}").fetchnumpy()["topic"]
    seg = (1 << 32) // BUNDLES
    rows = []
    for t in topics:
        full = str(t)
        h = zlib.crc32(full.encode())
        ns = full.split("://", 1)[1].rsplit("/", 1)[0]
        i = min(h // seg, BUNDLES - 1)
        lo = i * seg
        hi = (i + 1) * seg if i < BUNDLES - 1 else 0xFFFFFFFF
        rows.append((full, ns, f"{ns}/0x{lo:08x}_0x{hi:08x}"))
    import pandas as pd

    keys = pd.DataFrame(rows, columns=["topic", "namespace", "bundle"])
    con.register("keys", keys)
    con.execute(f"""
        CREATE TEMP TABLE samples AS
        SELECT s.*, k.namespace, k.bundle FROM {src} s JOIN keys k USING (topic)
        WHERE s.timestamp IS NOT NULL AND s.msgRateIn >= 0 AND s.msgRateOut >= 0
          AND s.msgThroughputIn >= 0 AND s.msgThroughputOut >= 0
    """)
    if topic_samples:
        con.execute(f"COPY samples TO '{out}/topic_samples.parquet' (FORMAT parquet)")
    bundle_load = con.execute("""
        SELECT timestamp, bundle, any_value(namespace) AS namespace, min(broker) AS broker,
               sum(msgRateIn) AS msgRateIn, sum(msgRateOut) AS msgRateOut,
               sum(msgThroughputIn) AS msgThroughputIn, sum(msgThroughputOut) AS msgThroughputOut,
               count(*) AS topics, sum(producerCount) AS producerCount, sum(consumerCount) AS consumerCount
        FROM samples GROUP BY timestamp, bundle
    """).df()
    bundle_load["sessions"] = bundle_load["producerCount"] + bundle_load["consumerCount"]
    bundle_load = averages_frame(bundle_load)  # the same exact recurrence, vectorised in numpy
    con.register("bundle_load", bundle_load)
    con.execute(f"COPY bundle_load TO '{out}/bundle_load.parquet' (FORMAT parquet)")
    averages = ", ".join(f"sum({c}) AS {c}" for c in AVERAGE_FIELDS)
    con.execute(f"""
        COPY (SELECT timestamp, broker, sum(msgRateIn) AS msgRateIn, sum(msgRateOut) AS msgRateOut,
                     sum(msgThroughputIn) AS msgThroughputIn, sum(msgThroughputOut) AS msgThroughputOut,
                     count(*) AS bundles, sum(topics) AS topics, sum(producerCount) AS producerCount,
                     sum(consumerCount) AS consumerCount, {averages}
              FROM bundle_load WHERE broker IS NOT NULL GROUP BY timestamp, broker)
        TO '{out}/broker_load.parquet' (FORMAT parquet)
    """)
    seconds = time.perf_counter() - t0
    con.close()
    print(f"  duckdb: {seconds:.2f}s")
    return seconds


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    from bundlewise.pipeline.session import get_session

    spark = get_session("local[*]")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bundlewise-bench-") as tmp:
        root = Path(tmp)
        for rows in SIZES:
            trace = root / f"trace-{rows}"
            t0 = time.perf_counter()
            generate(rows, trace)
            print(f"generated {rows:,} rows in {time.perf_counter() - t0:.1f}s")
            entry: dict[str, Any] = {"rows": rows, "repeats": REPEATS}
            for label, with_samples in (("all_outputs", True), ("without_topic_samples", False)):
                # one unmeasured run of each first: the JVM's JIT and code generation, the Python workers (and
                # their cache of resolved topic names), DuckDB and the OS page cache warm up
                run_spark(spark, trace, root / "warmup", with_samples)
                run_duckdb(trace, root / "warmup-duck", with_samples)
                spark_runs: list[float] = []
                duck_runs: list[float] = []
                for _ in range(REPEATS):  # interleaved, so both see the same machine
                    spark_runs.append(run_spark(spark, trace, root / f"spark-{rows}", with_samples))
                    duck_runs.append(run_duckdb(trace, root / f"duck-{rows}", with_samples))
                spark_s, duck_s = _median(spark_runs), _median(duck_runs)
                entry[label] = {
                    "spark_seconds": round(spark_s, 3),
                    "spark_runs": [round(x, 3) for x in spark_runs],
                    "spark_rows_per_second": round(rows / spark_s),
                    "duckdb_seconds": round(duck_s, 3),
                    "duckdb_runs": [round(x, 3) for x in duck_runs],
                    "duckdb_rows_per_second": round(rows / duck_s),
                    "spark_over_duckdb": round(spark_s / duck_s, 3),
                }
                print(
                    f"  {rows:,} rows, {label} (median of {REPEATS}): spark {rows / spark_s:,.0f} rows/s, "
                    f"duckdb {rows / duck_s:,.0f} rows/s, ratio {spark_s / duck_s:.2f}"
                )
            results[str(rows)] = entry
            shutil.rmtree(trace, ignore_errors=True)
    write_result(
        "pipeline",
        {
            "target": {"rows_per_second_10M": 2_000_000, "spark_over_duckdb_max": 1.5},
            "spark": {
                "master": "local[*]",
                "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                "scan": "columnar (Arrow in the Spark tasks) for local Parquet traces",
            },
            "runs": results,
        },
    )


if __name__ == "__main__":
    main()
