"""``bundlewise pipeline`` end to end: Pulsar broker-stats/topics dumps and a canonical trace."""

from __future__ import annotations

import json

import pytest
from tests.test_pipeline_fixtures import topics_dump_broker1, topics_dump_broker2

from bundlewise.cli.main import main

T0 = 1700000000000


def _run(capsys, *argv):
    code = main(["pipeline", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input", "/nonexistent/dir"], "error: /nonexistent/dir: no such file or directory"),
        (["--input", "{tmp}/empty"], "error: {tmp}/empty: directory holds no input files"),
        (
            ["--input", "{tmp}/t.csv", "--bundles", "0"],
            "error: --bundles: expected 1 to 128 bundles (loadBalancerNamespaceMaximumBundles; "
            "--set loadBalancerNamespaceMaximumBundles=N allows more), got 0",
        ),
        (
            ["--input", "{tmp}/t.csv", "--bundles-file", "{tmp}/b.json"],
            "error: {tmp}/b.json: bundles: boundaries must start at 0x00000000 and end at 0xffffffff "
            "(a namespace's bundles cover every hash), got 0x00000001..0xffffffff",
        ),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_2(capsys, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "t.csv").write_text("timestamp,topic\n0,a\n")
    (tmp_path / "b.json").write_text('{"boundaries": ["0x1", "0xffffffff"]}')
    code, out, err = _run(capsys, *[a.format(tmp=tmp_path) for a in args])
    assert (code, out) == (2, "")
    assert err == message.format(tmp=tmp_path) + "\n"


@pytest.mark.spark
def test_pipeline_on_a_directory_of_broker_stats_topics_dumps(spark, capsys, tmp_path):
    d = tmp_path / "dumps"
    d.mkdir()
    (d / f"broker-1:8080@{T0}.json").write_text(json.dumps(topics_dump_broker1(), indent=2))
    (d / f"broker-2:8080@{T0}.json").write_text(json.dumps(topics_dump_broker2()))
    later = topics_dump_broker1()
    later["public/default"]["0x00000000_0x40000000"]["persistent"]["persistent://public/default/my-topic"][
        "msgRateIn"
    ] = 30.0
    (d / f"broker-1:8080@{T0 + 60000}.json").write_text(json.dumps(later))
    (d / f"broker-2:8080@{T0 + 60000}.json").write_text("{truncated")
    out_dir = tmp_path / "out"
    code, out, err = _run(capsys, "--input", str(d), "--out", str(out_dir), "--master", "local[2]")
    assert code == 0, err
    summary = json.loads(out)
    assert {k: summary[k] for k in ("rowsIn", "rowsRejected", "bundles", "brokers", "timeSpan", "splitCandidates")} == {
        "rowsIn": 10,
        "rowsRejected": 1,
        "bundles": 3,
        "brokers": 2,
        "timeSpan": {"from": T0, "to": T0 + 60000},
        "splitCandidates": 0,
    }
    assert summary["hottestBundles"][0] == {
        "bundle": "public/default/0x00000000_0x40000000",
        "peakThroughput": 4000.0,
        "peakMsgRate": 60.0,
    }
    assert "rows rejected  1" in err and "hottest bundles" in err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "_SUCCESS",
        "broker_load",
        "bundle_load",
        "namespaces",
        "rejects",
        "split_candidates",
        "topic_samples",
    ]
    # the dumps' bundles are among the 4 default ones: the configured boundaries, complete
    layout = {
        r["namespace"]: (list(r["boundaries"]), r["source"])
        for r in spark.read.parquet(str(out_dir / "namespaces")).collect()
    }
    assert layout == {
        "public/default": ([0, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF], "configured"),
        "t/ns": ([0, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF], "configured"),
    }
    load = spark.read.parquet(str(out_dir / "bundle_load")).where("bundle = 'public/default/0x00000000_0x40000000'")
    got = [
        (
            r["timestamp"],
            r["broker"],
            r["msgRateIn"],
            r["topics"],
            r["sessions"],
            r["shortTermSamples"],
            r["shortTermMsgRateIn"],
            r["longTermMsgRateIn"],
        )
        for r in load.orderBy("timestamp").collect()
    ]
    # sessions: producers 1 + 2, consumers 2 + 1; averages (15 + 35) / 2 after the second sample
    assert got == [
        (T0, "broker-1:8080", 15.0, 2, 6, 1, 15.0, 15.0),
        (T0 + 60000, "broker-1:8080", 35.0, 2, 6, 2, 25.0, 25.0),
    ]
    brokers = spark.read.parquet(str(out_dir / "broker_load")).where(f"timestamp = {T0}").orderBy("broker").collect()
    assert [(r["broker"], r["bundles"], r["topics"], r["msgRateIn"]) for r in brokers] == [
        ("broker-1:8080", 2, 4, 18.0),
        ("broker-2:8080", 1, 1, 7.0),
    ]
    rejects = spark.read.parquet(str(out_dir / "rejects")).collect()
    assert [r["reason"].split(":")[0] for r in rejects] == ["not JSON"]


@pytest.mark.spark
def test_pipeline_on_a_canonical_trace_finds_a_split_candidate(spark, capsys, tmp_path):
    trace = tmp_path / "trace.jsonl"
    rows = [
        {
            "timestamp": T0,
            "topic": f"persistent://t/ns/hot-partition-{i}",
            "msgRateIn": 20000.0,
            "msgRateOut": 0.0,
            "msgThroughputIn": 1.0,
            "msgThroughputOut": 1.0,
            "broker": "b1",
        }
        for i in range(3)
    ]
    rows.append({"timestamp": T0, "topic": "persistent://t/ns/bad", "msgRateIn": "fast"})
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, err = _run(
        capsys, "--input", str(trace), "--bundles", "1", "--out", str(tmp_path / "o"), "--master", "local[2]"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["rowsIn"], summary["rowsRejected"], summary["bundles"], summary["splitCandidates"]) == (4, 1, 1, 1)
    assert summary["rejectReasons"] == {"msgRateIn: expected a number": 1}
    (cand,) = spark.read.parquet(str(tmp_path / "o" / "split_candidates")).collect()
    assert (cand["bundle"], list(cand["reasons"]), cand["longTermMsgRate"], cand["bundleCount"]) == (
        "t/ns/0x00000000_0xffffffff",
        ["MsgRate"],
        60000.0,
        1,
    )


@pytest.mark.spark
def test_a_parquet_trace_gives_one_summary_with_the_columnar_scan_or_spark_reader(spark, capsys, tmp_path):
    rows = [
        {
            "timestamp": T0 + 60000 * k,
            "topic": f"persistent://t/ns/hot-partition-{i}",
            "msgRateIn": 20000.0,
            "msgRateOut": 10.0 * i,
            "msgThroughputIn": 1.0,
            "msgThroughputOut": 1.0,
            "producerCount": 1,
            "consumerCount": i,
            "broker": "b1",
        }
        for k in range(3)
        for i in range(3)
    ]
    rows.append({**rows[0], "topic": "persistent://t//bad"})
    spark.createDataFrame(rows).write.parquet(str(tmp_path / "trace"))
    summaries = []
    for extra in ([], ["--spark-reader"]):
        code, out, err = _run(
            capsys, "--input", str(tmp_path / "trace"), "--bundles", "2", "--no-topic-samples", *extra
        )
        assert code == 0, err
        summary = json.loads(out)
        summaries.append({k: v for k, v in summary.items() if k not in ("seconds", "outputs")})
    assert summaries[0] == summaries[1]
    assert (summaries[0]["rowsIn"], summaries[0]["rowsRejected"], summaries[0]["splitCandidates"]) == (10, 1, 3)


@pytest.mark.spark
def test_pipeline_reads_the_balancer_table_of_a_scenario_file(spark, capsys, tmp_path):
    """The same hot bundle is a split candidate by Pulsar's defaults and not with the scenario's limit."""
    trace = tmp_path / "trace.jsonl"
    rows = [
        {"timestamp": T0, "topic": f"persistent://t/ns/hot-partition-{i}", "msgRateIn": 20000.0, "broker": "b1"}
        for i in range(3)
    ]
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "cluster.toml").write_text(
        '[[brokers]]\nname = "b1"\n[balancer]\nloadBalancerNamespaceBundleMaxMsgRate = 100000\n'
    )
    found = []
    for extra in ([], ["--config", str(tmp_path / "cluster.toml")]):
        code, out, err = _run(capsys, "--input", str(trace), "--bundles", "1", *extra)
        assert code == 0, err
        found.append(json.loads(out)["splitCandidates"])
    assert found == [1, 0]
