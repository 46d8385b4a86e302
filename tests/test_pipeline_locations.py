"""Paths as absolute URIs, and file systems pyarrow cannot open: read and written through Spark's own Hadoop
file systems, never as local paths.

``viewfs://`` is Hadoop's own mount-table file system (in Spark's Hadoop client); here it mounts a temporary
folder, so a run through it is a real run through a non-local Hadoop file system that pyarrow does not know.
"""

from __future__ import annotations

import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.testing import assertDataFrameEqual
from tests.test_pipeline_fixtures import topics_dump_broker1, topics_dump_broker2

from bundlewise.cli.main import main
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.pipeline import jobs
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.locations import Location

T0 = 1700000000000


def test_local_paths_become_absolute_file_uris_and_remote_ones_stay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Location.of("data/x") == Location(f"file://{tmp_path}/data/x", f"{tmp_path}/data/x")
    assert Location.of("file:data/x").path == f"{tmp_path}/data/x"
    assert Location.of("file:///abs/x") == Location("file:///abs/x", "/abs/x")
    assert Location.of("file://localhost/abs/x").path == "/abs/x"
    assert Location.of("broker-1:8080@1700000000000.json").path == f"{tmp_path}/broker-1:8080@1700000000000.json"
    assert Location.of("hdfs://nn:8020/data/") == Location("hdfs://nn:8020/data")
    assert Location.of("s3a://bucket/key").child("bundle_load").uri == "s3a://bucket/key/bundle_load"
    assert Location.of("gs://b/out").sibling(".out.tmp").uri == "gs://b/.out.tmp"
    assert Location.of("viewfs://c/x").arrow_fs() is None
    with pytest.raises(InputError, match="on this host"):
        Location.of("file://otherhost/x")


@pytest.fixture
def viewfs(spark, tmp_path):
    """``viewfs://<new table>/data`` → ``tmp_path`` (a mount table per test: Hadoop caches a file system per
    authority), and Hadoop's client told not to retry a refused connection."""
    table = f"bw{uuid.uuid4().hex[:8]}"
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.viewfs.mounttable.{table}.link./data", f"file://{tmp_path}")
    conf.set("ipc.client.connect.max.retries", "0")
    return f"viewfs://{table}/data"


def _inputs(root):
    trace = root / "in" / "trace"
    trace.mkdir(parents=True)
    rows = [
        {"timestamp": T0 + 60_000 * t, "topic": f"persistent://t/ns/x{i}", "msgRateIn": 1.0 * i, "broker": "b:1"}
        for t in range(3)
        for i in range(40)
    ]
    rows.append({**rows[0], "topic": "persistent://t//bad"})
    pq.write_table(pa.Table.from_pylist(rows), trace / "part-0.parquet")
    dumps = root / "in" / "dumps"
    dumps.mkdir()
    for k, doc in enumerate((topics_dump_broker1(), topics_dump_broker2())):
        wrapper = {"broker": f"broker-{k}:8080", "timestamp": T0, "topics": doc}  # Hadoop names cannot hold ':'
        (dumps / f"broker-{k}.json").write_text(json.dumps(wrapper))


@pytest.mark.spark
@pytest.mark.parametrize("source", ["trace", "dumps"])
def test_a_hadoop_file_system_pyarrow_cannot_open_gives_the_local_outputs(spark, tmp_path, viewfs, source):
    _inputs(tmp_path)
    cwd = os.getcwd()
    local = jobs.run_pipeline(
        spark, str(tmp_path / "in" / source), None, Boundaries.of_count(4), Config(), str(tmp_path / "l")
    )
    remote = jobs.run_pipeline(
        spark, f"{viewfs}/in/{source}", None, Boundaries.of_count(4), Config(), f"{viewfs}/out/{source}"
    )
    assert remote.outputs["bundle_load"] == f"{viewfs}/out/{source}/bundle_load"
    for name in ("topic_samples", "bundle_load", "broker_load", "split_candidates", "rejects"):
        got = spark.read.parquet(str(tmp_path / "out" / source / name))
        want = spark.read.parquet(str(tmp_path / "l" / name))
        if name == "rejects":  # each names its own input
            assert {r[0] for r in got.select("source").collect()} <= {
                f"{viewfs}/in/{source}",
                f"{viewfs}/in/{source}/broker-0.json",
            }
            got, want = got.drop("source"), want.drop("source")
        assertDataFrameEqual(got.select(*want.columns), want, rtol=1e-12)
    a, b = local.to_json(), remote.to_json()
    for j in (a, b):
        j.pop("seconds"), j.pop("outputs")
    assert a == b and a["rowsIn"] > 0
    assert not [p for p in os.listdir(cwd) if p.startswith(("viewfs:", "hdfs:"))]
    assert sorted(os.listdir(tmp_path / "out")) == [source]  # no staging folder left behind


@pytest.mark.spark
def test_an_unreachable_hdfs_output_is_one_error_line_and_no_local_folder(spark, tmp_path, viewfs, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("timestamp,topic\n0,persistent://t/ns/a\n")
    code = main(["pipeline", "--input", "t.csv", "--out", "hdfs://127.0.0.1:1/out"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("error: hdfs://127.0.0.1:1/out: cannot write: ConnectException: ") and err.count("\n") == 1
    assert "Connection refused" in err
    assert sorted(os.listdir(tmp_path)) == ["t.csv"]
