"""``bundlewise pipeline`` on a real Spark cluster: a standalone master and worker (``spark_cluster``) and
``spark-submit`` to it, each with relative ``--input``/``--out`` paths: ``--master`` on a directory of
broker-stats/topics dumps, ``spark-submit`` on a Parquet trace; every output equals a ``local[*]`` run's.

The executors run in other processes with another working directory (the worker's), so a relative path that
reached them unresolved, or a file written by a task to the wrong place, fails here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.spark_cluster import cluster_env, spark_home
from tests.test_pipeline_fixtures import topics_dump_broker1, topics_dump_broker2

import bundlewise.cli.main

pytestmark = pytest.mark.spark  # every test here runs Spark (the module fixture ``work`` too)

T0 = 1700000000000
DATASETS = ("topic_samples", "bundle_load", "broker_load", "split_candidates", "namespaces", "rejects")


def _inputs(root: Path) -> None:
    """``dumps/``: two brokers at two times and a truncated file; ``trace/``: two Parquet files."""
    dumps = root / "dumps"
    dumps.mkdir()
    for k in range(2):
        one, two = topics_dump_broker1(), topics_dump_broker2()
        one["public/default"]["0x00000000_0x40000000"]["persistent"]["persistent://public/default/my-topic"][
            "msgRateIn"
        ] = 10.0 + 20 * k
        (dumps / f"broker-1:8080@{T0 + 60_000 * k}.json").write_text(json.dumps(one))
        (dumps / f"broker-2:8080@{T0 + 60_000 * k}.json").write_text(json.dumps(two))
    (dumps / f"broker-2:8080@{T0 + 120_000}.json").write_text("{truncated")
    trace = root / "trace"
    trace.mkdir()
    for f in range(2):
        rows = [
            {
                "timestamp": T0 + 60_000 * t,
                "topic": f"persistent://tenant/ns-{i % 5}/topic-{i}",
                "msgRateIn": 100.0 * i + t,
                "msgRateOut": 20_000.0 if i == 3 else 1.0,
                "msgThroughputIn": 1e5 * (i % 7),
                "msgThroughputOut": 3e5,
                "producerCount": i % 3,
                "consumerCount": 2,
                "broker": f"broker-{i % 4}:8080",
            }
            for t in range(3 * f, 3 * f + 3)
            for i in range(60)
        ]
        rows.append({**rows[0], "topic": "persistent://tenant//bad"})
        pq.write_table(pa.Table.from_pylist(rows), trace / f"part-{f}.parquet", row_group_size=50)


def _run(cwd: Path, master: str | None, source: str, out: str, submit: bool = False) -> dict:
    args = ["pipeline", "--input", source, "--out", out, "--bundles", "4"]
    if submit:
        cmd = [os.path.join(spark_home(), "bin", "spark-submit"), "--master", str(master)]
        cmd += [bundlewise.cli.main.__file__, *args]
    else:
        cmd = [sys.executable, "-m", "bundlewise.cli.main", *args] + (["--master", master] if master else [])
    done = subprocess.run(cmd, cwd=cwd, env=cluster_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(summary["outputs"]) == set(DATASETS)
    for path in summary["outputs"].values():  # absolute, under the working directory
        assert path.startswith(str(cwd / out) + "/"), path
    summary.pop("seconds")
    summary.pop("outputs")
    return summary


def _rows(folder: Path) -> list[dict]:
    table = pq.ParquetDataset(str(folder)).read()
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _assert_same(root: Path, got: str, want: str) -> None:
    for name in DATASETS:
        a, b = _rows(root / got / name), _rows(root / want / name)
        assert len(a) == len(b) > 0 or name in ("rejects", "split_candidates"), name
        assert _close(a, b), name


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """The inputs and their ``local[*]`` runs (relative paths, default master)."""
    root = tmp_path_factory.mktemp("cluster-work")
    _inputs(root)
    return root, {source: _run(root, None, source, f"local-{source}") for source in ("dumps", "trace")}


def test_a_standalone_cluster_gives_the_local_outputs_from_relative_paths(spark_cluster, work):
    """The dumps through ``--master``; the Parquet trace goes to the same cluster through ``spark-submit`` (below)."""
    root, local = work
    summary = _run(root, spark_cluster.url, "dumps", "standalone-dumps")
    assert summary == local["dumps"]
    assert (summary["rowsIn"], summary["rowsRejected"]) == (11, 1)  # 5 topics x 2 times + 1 file
    _assert_same(root, "standalone-dumps", "local-dumps")
    assert not any(p.name.startswith(("spark:", "file:", "hdfs:")) for p in root.rglob("*"))


def test_spark_submit_runs_the_pipeline_on_the_cluster(spark_cluster, work):
    root, local = work
    summary = _run(root, spark_cluster.url, "trace", "submitted", submit=True)
    assert summary == local["trace"]
    assert (summary["rowsIn"], summary["rowsRejected"]) == (362, 2)
    _assert_same(root, "submitted", "local-trace")
