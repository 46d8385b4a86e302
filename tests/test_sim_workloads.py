"""``simulate --workload``: a local trace without a JVM, the same result as through Spark, the pipeline's outputs as
workloads, and a recorded production replayed from the layout it recorded (dumps → pipeline → simulate)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main
from bundlewise.cli.traces import load_workload
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.sim.engine import Engine
from bundlewise.sim.layout import replay_scenario
from bundlewise.sim.scenario import parse_scenario

T0 = 1_700_000_000_000
WALL = re.compile(r'\s*"wall_seconds": [0-9.e+-]+,?\n')
CLUSTER = (
    "duration = '10m'\n[[brokers]]\nname = 'a'\n[[brokers]]\nname = 'b'\n[[namespaces]]\nname = 't/ns'\nbundles = 8\n"
)


def _rows() -> list[dict[str, Any]]:
    rows = []
    for minute in range(0, 10, 2):
        for i in range(20):
            rows.append(
                {
                    "timestamp": T0 + minute * 60_000,
                    "topic": f"persistent://t/ns/x-{i}",
                    "msgRateIn": 200.0 * (i + 1),
                    "msgRateOut": 200.0,
                    "msgThroughputIn": 2e5 * (i + 1),
                    "msgThroughputOut": 2e5,
                    "producerCount": 1 + minute,
                    "consumerCount": 2,
                }
            )
    return rows


def _simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, workload: Path | str, *args: str) -> tuple[str, str]:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(CLUSTER)
    code = main(
        [
            "simulate",
            "--no-progress",
            "--cluster",
            str(cluster),
            "--workload",
            str(workload),
            "--strategy",
            "ThresholdShedder",
            "TransferShedder",
            *args,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    return WALL.sub("", out), err


def _write_all(tmp_path: Path, rows: list[dict[str, Any]]) -> dict[str, Path]:
    table = pa.Table.from_pylist(rows)
    paths = {k: tmp_path / f"trace.{k}" for k in ("jsonl", "csv", "parquet")}
    paths["jsonl"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    pacsv.write_csv(table, paths["csv"])
    pq.write_table(table, paths["parquet"])
    return paths


def test_a_local_trace_is_read_without_a_jvm(tmp_path: Path) -> None:
    path = _write_all(tmp_path, _rows())["jsonl"]
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    code = (
        "import sys\nfrom bundlewise.cli.main import main\n"
        f"rc = main(['simulate', '--no-progress', '--cluster', {str(tmp_path / 'cluster.toml')!r}, '--workload',"
        f" {str(path)!r}, '--strategy', 'OverloadShedder'])\n"
        "print(rc, 'pyspark' in sys.modules, 'py4j' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "0 False False"
    assert json.loads(done.stdout)["strategies"]["OverloadShedder"]["assignments"] == 0


def test_parquet_csv_and_json_lines_give_the_same_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = {k: _simulate(capsys, tmp_path, p)[0] for k, p in _write_all(tmp_path, _rows()).items()}
    assert outs["jsonl"] == outs["csv"] == outs["parquet"]


def test_rejected_rows_are_summed_up_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "trace.jsonl"
    rows = _rows()
    lines = [json.dumps(r) for r in rows]
    lines += [
        '{"timestamp": -5, "topic": "t/ns/a"}',
        "not json",
        '{"timestamp": 1, "topic": "t/ns/a", "msgRateIn": "x"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    out, err = _simulate(capsys, tmp_path, path)
    assert (
        f"warning: {path}: 3 of {len(rows) + 3} rows rejected: timestamp: expected ms since the epoch (>= 0) or "
        "ISO-8601 (1), malformed record (1), msgRateIn: expected a number (1)"
    ) in err
    assert out == _simulate(capsys, tmp_path, _write_all(tmp_path, rows)["parquet"])[0]


def test_a_dataset_of_many_parquet_files_is_one_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows()
    folder = tmp_path / "samples"
    folder.mkdir()
    for k in range(4):
        pq.write_table(pa.Table.from_pylist(rows[k::4]), folder / f"part-{k:05d}.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-00000.parquet.crc").write_text("x")
    assert (
        _simulate(capsys, tmp_path, folder)[0] == _simulate(capsys, tmp_path, _write_all(tmp_path, rows)["parquet"])[0]
    )


# -- through Spark, and the pipeline's outputs --------------------------------------------------------------


@pytest.mark.spark
def test_the_fast_path_and_spark_give_the_same_run(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in _write_all(tmp_path, _rows()).values():
        assert _simulate(capsys, tmp_path, path)[0] == _simulate(capsys, tmp_path, path, "--spark")[0], path


def _pipeline(capsys: pytest.CaptureFixture[str], source: Path, out: Path, *args: str) -> None:
    code = main(["pipeline", "--input", str(source), "--out", str(out), "--master", "local[2]", *args])
    _, err = capsys.readouterr()
    assert code == 0, err


@pytest.mark.spark
def test_the_pipelines_topic_samples_replay_the_same_both_ways(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    for r in rows:
        r["broker"] = "a" if int(r["topic"].rsplit("-", 1)[1]) % 2 else "b"
    trace = _write_all(tmp_path, rows)["parquet"]
    out = tmp_path / "out"
    _pipeline(capsys, trace, out, "--bundles", "8")
    samples = out / "topic_samples"
    assert len([p for p in samples.iterdir() if p.suffix == ".parquet"]) >= 1
    fast, _ = _simulate(capsys, tmp_path, samples)
    assert fast == _simulate(capsys, tmp_path, samples, "--spark")[0]
    assert fast == _simulate(capsys, tmp_path, out)[0]  # the whole --out folder is a workload too
    bundle_level, _ = _simulate(capsys, tmp_path, out / "bundle_load")
    doc = json.loads(bundle_level)["strategies"]["ThresholdShedder"]
    assert (
        doc["assignments"] == 0
        and doc["max_load_p99"] == json.loads(fast)["strategies"]["ThresholdShedder"]["max_load_p99"]
    )


# -- a recorded production: dumps -> pipeline -> simulate -------------------------------------------------------

LAYOUT = {  # each namespace's bundles as production had them (not Pulsar's default 4), and their owners
    "shop/orders": (
        [0x00000000, 0x20000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF],
        ["b1", "b2", "b1", "b3", "b2"],
    ),
    "shop/audit": ([0x00000000, 0x80000000, 0xFFFFFFFF], ["b3", "b1"]),
}


def _recorded_production(folder: Path) -> dict[str, str]:
    """Broker-stats/topics dumps of three brokers over 8 minutes; ``shop/orders``'s second bundle moves from b2 to
    b3 at minute 4, and one bundle of ``shop/audit`` has no topic (so no broker reports it).  Returns each
    reported bundle's owner at the first sample."""
    from test_pipeline_fixtures import topic_stats

    folder.mkdir()
    topics: dict[str, list[str]] = {}
    for ns, (bounds, _) in LAYOUT.items():
        bundles = NamespaceBundles.of(ns, bounds)
        n = 40 if ns == "shop/orders" else 12
        for i in range(n):
            name = f"persistent://{ns}/t-{i}"
            b = bundles.find_bundle(name)
            if ns == "shop/audit" and b.lower == 0x80000000:
                continue  # leave the upper audit bundle without topics
            topics.setdefault(b.name, []).append(name)
    first: dict[str, str] = {}
    for minute in range(8):
        dumps: dict[str, dict[str, Any]] = {"b1": {}, "b2": {}, "b3": {}}
        for ns, (bounds, owners) in LAYOUT.items():
            for k, b in enumerate(NamespaceBundles.of(ns, bounds).bundles):
                owner = owners[k]
                if b.name == "shop/orders/0x20000000_0x40000000" and minute >= 4:
                    owner = "b3"
                if b.name not in topics:
                    continue
                first.setdefault(b.name, owner)
                stats = {t: topic_stats(100.0 + i, 50.0, 1e5 + i, 5e4, 1, [1]) for i, t in enumerate(topics[b.name])}
                dumps[owner].setdefault(ns, {})[b.range_name] = {"persistent": stats}
        for broker, doc in dumps.items():
            (folder / f"{broker}@{T0 + minute * 60_000}.json").write_text(json.dumps(doc))
    return first


@pytest.mark.spark
def test_a_recorded_production_replays_from_its_recorded_layout(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    recorded = _recorded_production(tmp_path / "dumps")
    out = tmp_path / "out"
    _pipeline(capsys, tmp_path / "dumps", out)
    workload = load_workload(str(out))
    layout = workload.layout
    assert layout is not None
    # the namespaces' boundaries as recorded (the audit gap filled as a bundle without topics), never 4 bundles
    assert dict(layout.boundaries) == {ns: tuple(bounds) for ns, (bounds, _) in LAYOUT.items()}
    assert dict(layout.owners) == recorded
    # a scenario that lists neither the namespaces nor the brokers: both come from the recording
    scenario = replay_scenario(parse_scenario({"duration": "8m", "brokers": [{"name": "spare"}]}, "c.toml"), layout)
    assert [b.name for b in scenario.brokers] == ["spare", "b1", "b2", "b3"]
    first_tick: dict[str, str] = {}

    def probe(engine: Engine, phase: str) -> None:
        if engine.clock.tick == 0 and phase == "lookups":
            cl = engine.cluster
            first_tick.update({cl.bundle_names[b]: cl.names[o] for b, o in enumerate(cl.owner) if o >= 0})

    result = Engine(scenario, workload.trace, "ThresholdShedder", layout=layout, probe=probe).run()
    assert first_tick == recorded  # the first tick's ownership is the recording's
    assert result.metrics["assignments"] == 0 and not [d for d in result.decisions if d.tick == 0]
    # and through the command: the timeline's first tick counts each broker's recorded bundles
    cluster = tmp_path / "replay.toml"
    cluster.write_text("duration = '8m'\n[[brokers]]\nname = 'spare'\n")
    code = main(
        [
            "simulate",
            "--no-progress",
            "--cluster",
            str(cluster),
            "--workload",
            str(out),
            "--out",
            str(tmp_path / "sim"),
            "--strategy",
            "ThresholdShedder",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "3 recorded broker(s) not in the scenario join it with its [broker_defaults]: b1, b2, b3" in err
    tick0 = [r for r in pq.read_table(tmp_path / "sim" / "timeline.parquet").to_pylist() if r["tick"] == 0]
    counts = {r["broker"]: r["bundles"] for r in tick0}
    want = {b: sum(1 for o in recorded.values() if o == b) for b in ("spare", "b1", "b2", "b3")}
    assert counts == want


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("t.csv", "a,b\n1,2\n", "t.csv: trace has no timestamp, topic column"),
        ("t.csv", "timestamp,topic\n", "t.csv: no valid record: the input holds no rows"),
        ("t.parquet", "garbage", "t.parquet: not a readable Parquet file:"),
        (
            "t.jsonl",
            '{"timestamp": -1, "topic": "a"}\n',
            "t.jsonl: no valid record: all 1 rows rejected; most frequent reasons: timestamp: expected ms",
        ),
    ],
)
def test_a_bad_workload_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    code = main(["simulate", "--no-progress", "--workload", str(path), "--strategy", "OverloadShedder"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_dumps_and_remote_paths_go_through_spark_traces_do_not(tmp_path: Path) -> None:
    from bundlewise.cli.traces import needs_spark

    (tmp_path / "b1@1.prom").write_text("pulsar_rate_in 1\n")
    (tmp_path / "b1@1.json").write_text('{"t/ns": {"0x00000000_0xffffffff": {"persistent": {}}}}')
    (tmp_path / "t.jsonl").write_text('{"timestamp": 1, "topic": "a"}\n{"timestamp": 2, "topic": "a"}\n')
    assert needs_spark(str(tmp_path / "b1@1.prom")) and needs_spark(str(tmp_path / "b1@1.json"))
    assert needs_spark("hdfs://nn:8020/traces/t.parquet") and needs_spark("s3a://bucket/t")
    assert not needs_spark(str(tmp_path / "t.jsonl")) and not needs_spark(f"file://{tmp_path / 't.jsonl'}")
    (tmp_path / "out" / "topic_samples").mkdir(parents=True)
    assert not needs_spark(str(tmp_path / "out"))
