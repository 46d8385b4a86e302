"""Bad input, every command: exit status 2, exactly one line ``error: …`` on stderr naming the file and the
field, nothing on stdout, never a traceback (issue 12 item 4).

Each case is ``(argv, expected words in the error line)``; ``{d}`` is the test's folder, where ``FILES`` are
written first.  The Spark cases run in this process on the session the suite shares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main

DEEP = "[" * 200_000 + "]" * 200_000
REPORT = {"webServiceUrl": "http://b1:8080", "cpu": {"usage": 10, "limit": 100}, "bundles": []}
FILES: dict[str, str | bytes] = {
    "deep.json": DEEP,
    "deep.toml": "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "binary.conf": b"\x00\x01\x02\xff\xfe binary",
    "binary.json": b"\xff\xfe{}",
    "empty.json": "",
    "bad.json": "{not json",
    "nan.json": '{"brokers": {"b1": {"msgRateIn": NaN}}}',
    "nobrokers.json": '{"timestamp": 1}',
    "badts.json": '{"timestamp": "yesterday", "brokers": {}}',
    "steps.json": '{"steps": 3}',
    "negrate.json": '{"brokers": {"b1": {"msgRateIn": -5}}}',
    "cpustr.json": '{"brokers": {"b1": {"cpu": {"usage": "hot", "limit": 8}}}}',
    "extfield.json": '{"brokers": {"a": {"weightedMaxEMA": 0.5}}}',
    "modfield.json": '{"brokers": {"a": {}}, "bundleData": {}}',
    "stepconfig.json": '{"brokers": {}, "config": {"loadBalancerBrokerThresholdShedderPercentage": "lots"}}',
    "report.json": json.dumps(REPORT),
    "numbers.json": "[1, 2, 3]",
    "noname.json": '{"brokers": {"a": {}}, "candidates": ["a"]}',
    "candidates.json": '{"bundle": "t/ns/0x00000000_0xffffffff", "brokers": {"a": {}}, "candidates": "a"}',
    "unknown-candidate.json": '{"bundle": "t/ns/0x00000000_0xffffffff", "brokers": {"a": {}}, "candidates": ["z"]}',
    "topics-notlist.json": '{"name": "t"}',
    "topics-badrate.json": '[{"name": "persistent://t/ns/a", "msgRateIn": "fast"}]',
    "bundles-short.json": '{"boundaries": ["0x00000000", "0x40000000"], "numBundles": 1}',
    "bundles-count.json": '{"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 4}',
    "throttle-name.json": '{"topics": [{"name": 5}]}',
    "throttle-periods.json": '{"periods": -1, "topics": []}',
    "throttle-topics.json": "{}",
    "cluster-1ms.toml": 'step = "1ms"\n[[brokers]]\nname = "a"\n',
    "cluster-ticks.toml": 'step = "1s"\nduration = "200d"\n[[brokers]]\nname = "a"\n',
    "cluster-bundels.toml": '[[brokers]]\nname = "a"\n[[namespaces]]\nname = "t/ns"\nbundels = 4\n',
    "cluster-cpucore.toml": '[broker_defaults]\ncpu_core = 4\n[[brokers]]\nname = "a"\n',
    "cluster-burst.toml": '[[brokers]]\nname = "a"\n[[namespaces]]\nname = "t/ns"\n'
    '[[workload.bursts]]\nnamespace = "t/ns"\nfactr = 3\n',
    "cluster-event.toml": '[[brokers]]\nname = "a"\n[[events]]\nat = "1m"\naction = "restart"\n'
    'broker = "a"\ndown = "1m"\n',
    "cluster-broken.toml": "[[brokers]\n",
    "cluster-nobrokers.toml": 'duration = "1h"\n',
    "fake.parquet": "this is not parquet\n",
    "trace.csv": "timestamp,topic\n0,persistent://t/ns/a\n",
    "rejected.csv": "timestamp,topic,msgRateIn\nsoon,persistent://t/ns/a,1\n-5,persistent://t/ns/b,1\nlater,x,1\n",
    "header-only.csv": "timestamp,topic,msgRateIn\n",
    "a-file": "not a folder",
    "out-full/old.txt": "earlier results",
    "reports/broker-1.json": json.dumps(REPORT),
    "mixed/r.json": json.dumps(REPORT),
    "mixed/s.json": '{"brokers": {}}',
    "nojson/readme.txt": "no inputs here",
}

SHED = ["shed", "--strategy", "OverloadShedder"]
PLACE = ["place", "--strategy", "LeastLongTermMessageRate"]
SIM = ["simulate", "--no-progress", "--strategy", "OverloadShedder"]
CASES: list[tuple[list[str], list[str]]] = [
    # bundle
    (["bundle", "--bundles", "0", "t"], ["--bundles", "expected 1 to 128 bundles"]),
    (["bundle", "--bundles", "100000000", "t"], ["--bundles", "loadBalancerNamespaceMaximumBundles"]),
    (["bundle", "--boundaries", "0x00000000,0x40000000", "t"], ["--boundaries", "end at 0xffffffff"]),
    (["bundle", "--boundaries", "0x10,0x05", "t"], ["--boundaries", "strictly increasing"]),
    (["bundle", "--boundaries", "0x0,zz,0xffffffff", "t"], ["--boundaries", "'zz'"]),
    (["bundle", "--bundles-file", "{d}/missing.json", "t"], ["{d}/missing.json", "cannot read"]),
    (["bundle", "--bundles-file", "{d}/bad.json", "t"], ["{d}/bad.json", "malformed JSON"]),
    (["bundle", "--bundles-file", "{d}/deep.json", "t"], ["{d}/deep.json", "nested too deeply"]),
    (["bundle", "--bundles-file", "{d}/bundles-short.json", "t"], ["{d}/bundles-short.json", "bundles:", "0xffffffff"]),
    (["bundle", "--bundles-file", "{d}/bundles-count.json", "t"], ["{d}/bundles-count.json", "numBundles is 4"]),
    (["bundle", "persistent://t//x"], ["TOPIC", "empty tenant, namespace or local name"]),
    (["bundle", "--config", "{d}/binary.conf", "t"], ["{d}/binary.conf", "not UTF-8"]),
    (["bundle", "--set", "defaultNumberOfNamespaceBundles=many", "t"], ["--set", "defaultNumberOfNamespaceBundles"]),
    # split
    (["split", "--algorithm", "halve", "--bundle", "t/ns/0x00000000_0xffffffff"], ["--algorithm", "halve"]),
    (["split", "--algorithm", "range_equally_divide", "--bundle", "t/ns/0x10_0x05"], ["--bundle"]),
    (
        ["split", "--algorithm", "specified_positions_divide", "--bundle", "t/ns/0x00000000_0x10000000"],
        ["--positions", "needs --positions"],
    ),
    (
        [
            "split",
            "--algorithm",
            "specified_positions_divide",
            "--bundle",
            "t/ns/0x00000000_0x10000000",
            "--positions",
            "0x20000000",
        ],
        ["--positions", "strictly inside"],
    ),
    (
        [
            "split",
            "--algorithm",
            "topic_count_equally_divide",
            "--bundle",
            "t/ns/0x00000000_0xffffffff",
            "--topics",
            "{d}/topics-notlist.json",
        ],
        ["{d}/topics-notlist.json", "expected a JSON list of topics"],
    ),
    (
        [
            "split",
            "--algorithm",
            "topic_count_equally_divide",
            "--bundle",
            "t/ns/0x00000000_0xffffffff",
            "--topics",
            "{d}/topics-badrate.json",
        ],
        ["{d}/topics-badrate.json", "[0].msgRateIn"],
    ),
    (
        [
            "split",
            "--algorithm",
            "topic_count_equally_divide",
            "--bundle",
            "t/ns/0x00000000_0xffffffff",
            "--topics",
            "{d}/deep.json",
        ],
        ["{d}/deep.json", "nested too deeply"],
    ),
    # split-check
    (["split-check", "{d}/empty.json"], ["{d}/empty.json", "empty input"]),
    (["split-check", "{d}/nobrokers.json"], ["{d}/nobrokers.json", "snapshot", "missing 'brokers'"]),
    (["split-check", "--bundle-counts", "t/ns=many", "{d}/report.json"], ["--bundle-counts", "NS=N"]),
    (["split-check", "{d}/badts.json"], ["{d}/badts.json", "snapshot.timestamp"]),
    (["split-check", "{d}/steps.json"], ["{d}/steps.json", "steps", "list of snapshots"]),
    (["split-check", "--extensible", "{d}/modfield.json"], ["{d}/modfield.json", "bundleData"]),
    (["split-check", "--extensible", "{d}/report.json"], ["{d}/report.json", "--extensible reads extensible"]),
    # shed
    (["shed", "--strategy", "BestShedder", "{d}/report.json"], ["--strategy", "BestShedder"]),
    ([*SHED, "{d}/missing.json"], ["{d}/missing.json", "cannot read"]),
    ([*SHED, "{d}/deep.json"], ["{d}/deep.json", "nested too deeply"]),
    ([*SHED, "{d}/nan.json"], ["{d}/nan.json", "NaN"]),
    ([*SHED, "{d}/negrate.json"], ["{d}/negrate.json", "snapshot.brokers.b1.msgRateIn"]),
    ([*SHED, "{d}/cpustr.json"], ["{d}/cpustr.json", "snapshot.brokers.b1.cpu.usage"]),
    ([*SHED, "{d}/extfield.json"], ["{d}/extfield.json", "weightedMaxEMA"]),
    ([*SHED, "{d}/nojson"], ["{d}/nojson", "holds no .json or .jsonl files"]),
    ([*SHED, "{d}/mixed"], ["{d}/mixed/r.json", "{d}/mixed/s.json", "give one kind"]),
    ([*SHED, "{d}/numbers.json"], ["{d}/numbers.json", "array of load reports"]),
    (["shed", "--strategy", "TransferShedder", "{d}/reports"], ["{d}/reports", "TransferShedder reads extensible"]),
    ([*SHED, "{d}/binary.json"], ["{d}/binary.json", "not UTF-8"]),
    ([*SHED, "{d}/stepconfig.json"], ["{d}/stepconfig.json", "config", "loadBalancerBrokerThresholdShedderPercentage"]),
    ([*SHED, "--config", "{d}/deep.json", "{d}/report.json"], ["{d}/deep.json", "nested too deeply"]),
    ([*SHED, "--config", "{d}/deep.toml", "{d}/report.json"], ["{d}/deep.toml", "nested too deeply"]),
    ([*SHED, "--seed", "x", "{d}/report.json"], ["--seed", "invalid int value"]),
    ([*SHED, "--format", "yaml", "{d}/report.json"], ["--format", "invalid choice"]),
    # place
    ([*PLACE, "{d}/noname.json"], ["{d}/noname.json", "snapshot.bundle", "--bundle"]),
    ([*PLACE, "{d}/candidates.json"], ["{d}/candidates.json", "snapshot.candidates"]),
    ([*PLACE, "{d}/unknown-candidate.json"], ["{d}/unknown-candidate.json", "'z'"]),
    (["place", "--strategy", "RoundRobinBrokerSelector", "--extensible", "{d}/candidates.json"], ["--strategy"]),
    (["place", "--strategy", "Nearest", "{d}/candidates.json"], ["--strategy", "Nearest"]),
    ([*PLACE, "--bundle", "t/ns/0x00000000_0xffffffff", "{d}/deep.json"], ["{d}/deep.json", "nested too deeply"]),
    # throttle
    (["throttle", "{d}/missing.json"], ["{d}/missing.json", "cannot read"]),
    (["throttle", "{d}/throttle-name.json"], ["{d}/throttle-name.json", "topics[0].name"]),
    (["throttle", "{d}/throttle-periods.json"], ["{d}/throttle-periods.json", "periods"]),
    (["throttle", "{d}/throttle-topics.json"], ["{d}/throttle-topics.json", "topics"]),
    (["throttle", "{d}/deep.json"], ["{d}/deep.json", "nested too deeply"]),
    # simulate
    ([*SIM, "--cluster", "{d}/missing.toml"], ["{d}/missing.toml", "cannot read"]),
    ([*SIM, "--cluster", "{d}/cluster-broken.toml"], ["{d}/cluster-broken.toml", "not valid TOML"]),
    ([*SIM, "--cluster", "{d}/cluster-nobrokers.toml"], ["{d}/cluster-nobrokers.toml", "brokers: missing"]),
    ([*SIM, "--cluster", "{d}/cluster-1ms.toml"], ["{d}/cluster-1ms.toml", "step", "at least 1s"]),
    ([*SIM, "--cluster", "{d}/cluster-ticks.toml"], ["{d}/cluster-ticks.toml", "duration", "17,280,000 ticks"]),
    (
        [*SIM, "--cluster", "{d}/cluster-bundels.toml"],
        ["{d}/cluster-bundels.toml", "namespaces[0].bundels", "did you mean 'bundles'"],
    ),
    (
        [*SIM, "--cluster", "{d}/cluster-cpucore.toml"],
        ["{d}/cluster-cpucore.toml", "broker_defaults.cpu_core", "did you mean 'cpu_cores'"],
    ),
    (
        [*SIM, "--cluster", "{d}/cluster-burst.toml"],
        ["{d}/cluster-burst.toml", "workload.bursts[0].factr", "did you mean 'factor'"],
    ),
    (
        [*SIM, "--cluster", "{d}/cluster-event.toml"],
        ["{d}/cluster-event.toml", "events[0].down", "did you mean 'down_for'"],
    ),
    ([*SIM, "--cluster", "{d}/deep.toml"], ["{d}/deep.toml", "nested too deeply"]),
    ([*SIM, "--config", "{d}/binary.conf"], ["{d}/binary.conf", "not UTF-8"]),
    (["simulate", "--strategy", "NoSuchShedder"], ["--strategy", "NoSuchShedder"]),
    ([*SIM, "--out", "{d}/out-full"], ["{d}/out-full", "--out", "pass --overwrite"]),
    ([*SIM, "--out", "{d}/a-file/out"], ["{d}/a-file/out", "--out", "is a file, not a folder"]),
    ([*SIM, "--workload", "{d}/fake.parquet"], ["{d}/fake.parquet", "not a readable Parquet file"]),
    # sweep: everything checked before Spark starts
    (["sweep", "--grid", "strategy=OverloadShedder", "--out", "{d}/a-file/x.parquet"], ["--out", "is a file"]),
    (["sweep", "--grid", "strategy=OverloadShedder", "--out", "{d}/a-file"], ["{d}/a-file", "--out", "exists"]),
    (["sweep", "--grid", "many"], ["--grid", "KEY=V1,V2"]),
    (["sweep", "--grid", "loadBalancerFoo=1,2"], ["--grid", "loadBalancerFoo"]),
    (["sweep", "--grid", "strategy=OverloadShedder", "--master", "bogus"], ["--master", "'bogus'"]),
    (["sweep", "--grid", "strategy=OverloadShedder", "--workload", "{d}/fake.parquet"], ["{d}/fake.parquet"]),
    # pipeline: before Spark starts
    (["pipeline", "--input", "{d}/missing"], ["{d}/missing", "no such file"]),
    (["pipeline", "--input", "{d}/fake.parquet"], ["{d}/fake.parquet", "not a readable Parquet file"]),
    (["pipeline", "--input", "{d}/trace.csv", "--master", "yarn-ish"], ["--master", "'yarn-ish'"]),
    (["pipeline", "--input", "{d}/trace.csv", "--master", "spark://127.0.0.1:1"], ["--master", "no Spark master"]),
    (["pipeline", "--input", "{d}/trace.csv", "--bundles", "500"], ["--bundles", "expected 1 to 128"]),
    (["pipeline", "--input", "{d}/trace.csv", "--bundles-file", "{d}/deep.json"], ["{d}/deep.json", "too deeply"]),
    (["pipeline", "--input", "{d}/trace.csv", "--out", "{d}/out-full"], ["{d}/out-full", "--out", "--overwrite"]),
    (["pipeline", "--input", "{d}/trace.csv", "--timestamp", "noon"], ["--timestamp", "ISO-8601"]),
    (
        ["pipeline", "--input", "{d}/trace.csv", "--format", "trace", "--input-format", "prometheus"],
        ["--format", "--input-format"],
    ),
    (["pipeline", "--input", "{d}/trace.csv", "--config", "{d}/binary.conf"], ["{d}/binary.conf", "not UTF-8"]),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, content in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return tmp_path


def check(code: int, out: str, err: str, words: list[str], d: Path) -> None:
    assert "Traceback" not in err and "Exception" not in err, err
    assert (code, out) == (2, ""), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: "), err
    for w in words:
        assert w.format(d=d) in err, (w, err)


def test_the_suite_covers_every_command_with_at_least_60_cases() -> None:
    commands = {argv[0] for argv, _ in CASES}
    assert commands == {"bundle", "split", "split-check", "shed", "place", "throttle", "simulate", "sweep", "pipeline"}
    assert len(CASES) + len(SPARK_CASES) >= 60


def _starts_spark(argv: list[str]) -> bool:
    """``sweep --workload`` reads its trace with Spark before it can refuse it."""
    return argv[0] == "sweep" and "--workload" in argv


@pytest.mark.parametrize(
    ("argv", "words"),
    [pytest.param(a, w, marks=[pytest.mark.spark] if _starts_spark(a) else []) for a, w in CASES],
    ids=[" ".join(a)[:70] for a, _ in CASES],
)
def test_bad_input_is_one_error_line_and_exit_2(
    folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    code = main([a.format(d=folder) for a in argv])
    out, err = capsys.readouterr()
    check(code, out, err, words, folder)


SPARK_CASES: list[tuple[list[str], list[str]]] = [
    (
        ["pipeline", "--input", "{d}/rejected.csv"],
        ["{d}/rejected.csv", "no valid record: all 3 rows rejected; most frequent reasons: timestamp:"],
    ),
    (
        ["pipeline", "--input", "{d}/header-only.csv"],
        ["{d}/header-only.csv", "no valid record: the input holds no rows"],
    ),
    (["pipeline", "--input", "{d}/types.parquet"], ["{d}/types.parquet", "no valid record: all 2 rows rejected"]),
    (
        [*SIM, "--workload", "{d}/rejected.csv"],
        ["{d}/rejected.csv", "no valid record: all 3 rows rejected; most frequent reasons: timestamp:"],
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize(("argv", "words"), SPARK_CASES, ids=[" ".join(a)[:70] for a, _ in SPARK_CASES])
def test_input_without_a_valid_record_exits_2_naming_the_reasons(
    spark: object, folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    # a Parquet trace whose columns have the wrong types: a struct timestamp, list rates
    table = pa.table(
        {"timestamp": [{"a": 1}, {"a": 2}], "topic": ["persistent://t/ns/a"] * 2, "msgRateIn": [[1.0]] * 2}
    )
    pq.write_table(table, folder / "types.parquet")
    code = main([a.format(d=folder) for a in argv])
    out, err = capsys.readouterr()
    progress = ("[", "  stage ")  # the pipeline's progress lines come before the error
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith(progress))
    check(code, out, err, words, folder)
