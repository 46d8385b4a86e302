"""``bundlewise simulate`` end to end: reproducible outputs, formats, bad input -> exit 2.

Reproducibility: ``summary.json`` must be byte-identical for two runs with the same seed except for
each strategy's ``wall_seconds`` (the one figure that measures the machine); the test removes the
``"wall_seconds": …`` lines from both files and compares the remaining bytes exactly, and compares
``decisions.jsonl`` and the timeline in full.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main

SMALL = """
name = "small"
description = "three brokers, one restart"
duration = "40m"
step = "1m"
seed = 5
[broker_defaults]
cpu_cores = 4
[[brokers]]
name = "a"
[[brokers]]
name = "b"
[[brokers]]
name = "c"
cpu_cores = 8
[[namespaces]]
name = "t/ns"
bundles = 12
topics = 120
msg_rate = 60000
zipf = 1.0
[[events]]
at = "10m"
action = "restart"
broker = "b"
down_for = "2m"
[workload]
noise = 0.05
cpu_jitter = 0.02
[balancer]
loadBalancerBrokerThresholdShedderPercentage = 5
"""

WALL = re.compile(rb'\s*"wall_seconds": [0-9.e+-]+,?\n')


def _cluster(tmp_path: Path, text: str = SMALL, name: str = "cluster.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", "--no-progress", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_same_seed_gives_byte_identical_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _cluster(tmp_path)
    for d in ("one", "two"):
        code, _, _ = _run(
            capsys,
            "--cluster",
            cluster,
            "--out",
            str(tmp_path / d),
            "--strategy",
            "ThresholdShedder",
            "UniformLoadShedder",
            "AvgShedder",
        )
        assert code == 0
    one, two = (tmp_path / "one" / "summary.json").read_bytes(), (tmp_path / "two" / "summary.json").read_bytes()
    assert WALL.sub(b"", one) == WALL.sub(b"", two)
    assert len(WALL.findall(one)) == 3
    assert (tmp_path / "one" / "decisions.jsonl").read_bytes() == (tmp_path / "two" / "decisions.jsonl").read_bytes()
    timelines = [pq.read_table(tmp_path / d / "timeline.parquet") for d in ("one", "two")]
    assert timelines[0].equals(timelines[1])


def test_another_seed_gives_another_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _cluster(tmp_path)
    _, a, _ = _run(capsys, "--cluster", cluster, "--strategy", "UniformLoadShedder")
    _, b, _ = _run(capsys, "--cluster", cluster, "--strategy", "UniformLoadShedder", "--seed", "6")

    def strip(s: str) -> dict[str, object]:
        metrics = json.loads(s)["strategies"]["UniformLoadShedder"]
        return {k: v for k, v in metrics.items() if k != "wall_seconds"}

    assert strip(a) != strip(b)


def test_outputs_follow_the_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        capsys,
        "--cluster",
        _cluster(tmp_path),
        "--out",
        str(tmp_path / "o"),
        "--strategy",
        "OverloadShedder",
        "--strategy",
        "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
    )
    assert code == 0
    doc: dict[str, Any] = json.loads(out)
    assert doc["scenario"] == "small" and list(doc["strategies"]) == ["OverloadShedder", "ThresholdShedder"]
    keys = {
        "load_std_mean",
        "load_std_p95",
        "load_spread_mean",
        "max_load_p99",
        "overloaded_broker_minutes",
        "unloads",
        "splits",
        "assignments",
        "throughput_moved_bytes",
        "flaps",
        "settle_minutes",
        "topic_unavailable_seconds",
        "repeat_unloads",
        "saturated_broker_minutes",
        "undelivered_bytes",
        "backlog_age_max_minutes",
        "wall_seconds",
        "events",
    }
    for m in doc["strategies"].values():
        assert keys <= set(m)
    assert json.loads((tmp_path / "o" / "summary.json").read_text()) == doc
    assert "load_std_mean" in err  # the comparison table goes to stderr in json format
    t = pq.read_table(tmp_path / "o" / "timeline.parquet")
    assert t.column_names == [
        "strategy",
        "tick",
        "time_ms",
        "broker",
        "up",
        "true_load",
        "reported_load",
        "bundles",
        "delivered_load",
        "backlog_bytes",
    ]
    assert t.num_rows == 2 * 40 * 3
    rows = t.to_pylist()
    down = [r for r in rows if r["broker"] == "b" and r["tick"] == 11]
    assert all(not r["up"] and r["true_load"] is None and r["bundles"] == 0 for r in down)
    decisions = [json.loads(line) for line in (tmp_path / "o" / "decisions.jsonl").read_text().splitlines()]
    assert decisions and all(d["reason"] and d["type"] in ("assignment", "unload", "split") for d in decisions)
    restart_lookups = [d for d in decisions if d["type"] == "assignment" and d["time_ms"] == 10 * 60_000]
    assert restart_lookups and all(d["broker"] in ("a", "c") for d in restart_lookups)
    html = (tmp_path / "o" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and "ThresholdShedder" in html


def test_table_format_prints_the_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--cluster",
        _cluster(tmp_path),
        "--format",
        "table",
        "--strategy",
        "AvgShedder",
        "--set",
        "loadBalancerAvgShedderHitCountHighThreshold=3",
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "scenario: small" and lines[1].split() == ["metric", "unit", "AvgShedder"]
    assert [ln.split()[:2] for ln in lines[3:]][:2] == [["load_std_mean", "pp"], ["load_std_p95", "pp"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("duration = '1h'\n", "error: {f}: brokers: missing; expected at least one [[brokers]]"),
        ("step = 'soon'\n[[brokers]]\nname='a'\n", "error: {f}: step: expected a duration"),
        (
            "[[brokers]]\nname='a'\ncpu_cores=-4\n",
            "error: {f}: brokers[0].cpu_cores: expected a number from 0.1 to 10,000, got -4",
        ),
        (
            "[[brokers]]\nname='a'\n[[events]]\nat='1m'\naction='reboot'\nbroker='a'\n",
            "error: {f}: events[0].action: expected one of add, remove, restart",
        ),
        (
            "[[brokers]]\nname='a'\n[[events]]\nat='1m'\naction='restart'\nbroker='zz'\n",
            "error: {f}: events[0].broker: expected a broker listed",
        ),
        (
            "[[brokers]]\nname='a'\n[balancer]\nloadBalancerSheddingIntervalMinutes='x'\n",
            "error: {f}: balancer: loadBalancerSheddingIntervalMinutes: expected a number",
        ),
        ("[[brokers]\n", "error: {f}: not valid TOML"),
        ("bogus = 1\n[[brokers]]\nname='a'\n", "error: {f}: bogus: unknown key"),
    ],
)
def test_bad_cluster_file_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    f = _cluster(tmp_path, text, "bad.toml")
    code, out, err = _run(capsys, "--cluster", f)
    assert code == 2 and out == ""
    assert err.startswith(message.format(f=f)) and err.count("\n") == 1, err


def test_cluster_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(SMALL))
    code, out, _ = _run(capsys, "--cluster", "-", "--strategy", "OverloadShedder")
    assert code == 0 and json.loads(out)["scenario"] == "small"


def test_missing_cluster_file_and_unknown_strategy_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--cluster", str(tmp_path / "nope.toml"))
    assert code == 2 and err.startswith(f"error: {tmp_path / 'nope.toml'}: cannot read") and err.count("\n") == 1
    code, _, err = _run(capsys, "--cluster", _cluster(tmp_path), "--strategy", "FooShedder")
    assert code == 2 and "unknown shedding strategy 'FooShedder'" in err and err.count("\n") == 1


@pytest.mark.spark
def test_trace_workload_through_the_pipeline(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    rows = []
    for minute in range(0, 10, 2):
        for i in range(20):
            rows.append(
                {
                    "timestamp": 1_700_000_000_000 + minute * 60_000,
                    "topic": f"persistent://t/ns/x-{i}",
                    "msgRateIn": 200.0 * (i + 1),
                    "msgRateOut": 200.0,
                    "msgThroughputIn": 2e5 * (i + 1),
                    "msgThroughputOut": 2e5,
                }
            )
    trace.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cluster = _cluster(
        tmp_path,
        "duration='10m'\n[[brokers]]\nname='a'\n[[brokers]]\nname='b'\n[[namespaces]]\nname='t/ns'\nbundles=8\n",
    )
    code, out, err = _run(
        capsys,
        "--cluster",
        cluster,
        "--workload",
        str(trace),
        "--strategy",
        "ThresholdShedder",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 0, err
    t = pq.read_table(tmp_path / "o" / "timeline.parquet").to_pylist()
    assert {r["bundles"] for r in t if r["tick"] == 0} == {4}
    assert all(r["true_load"] > 0 for r in t)
    assert json.loads(out)["strategies"]["ThresholdShedder"]["assignments"] == 0
