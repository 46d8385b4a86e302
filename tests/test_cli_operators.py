"""What operators have, and what they are told (issue 12 items 1 and 2).

* ``shed``/``place``/``split-check`` read what ``pulsar-admin broker-stats load-report`` prints: one report per
  file, several files, a directory, a JSON array — the three real-shaped reports in ``examples/``;
* ``--format admin`` prints the ``pulsar-admin`` commands that carry the decisions out, with every broker's
  load projected after them; ``--format table`` and ``admin`` say why nothing happens when nothing does;
* ``bundle --bundles-file`` reads ``pulsar-admin namespaces bundles``; ``--format table`` everywhere.

Expected figures follow Pulsar's formulas on the examples: broker-1 at cpu 684/800 = 85.50 %, broker-2
356/800 = 44.50 %, broker-3 138/800 = 17.25 %; ThresholdShedder's average 49.08 %, so broker-1 offloads
(85.50 - 49.08 - 10 + 5) % = 31.42 % of its 80 MB/s = 25.13 MB/s: its 20 and 18 MB/s bundles.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bundlewise.algorithms.projection import project
from bundlewise.cli.inputs import read_inputs
from bundlewise.cli.main import main
from bundlewise.config import Config
from bundlewise.model.admin import split_command, unload_command
from bundlewise.model.decisions import Unload
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageMessageData
from bundlewise.model.resources import ResourceUsage, SystemResources

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPORTS = EXAMPLES / "load-reports"
B1, B2, B3 = "broker-1.pulsar:8080", "broker-2.pulsar:8080", "broker-3.pulsar:8080"
EVENLY = (  # the advisor's note: which brokers the placement filters left out (issue 28)
    "#   placement: distribute bundles evenly (loadBalancerDistributeBundlesEvenlyEnabled) left out "
    f"{B1} (85.50%): owns 4 bundles of acme/orders, the fewest is 2"
)
HEAD = "# step 0 at 2023-11-14T22:13:21.457Z (1700000001457)"
ADMIN = f"""\
{HEAD}: ThresholdShedder unloads 2 bundles
# acme/orders/0x00000000_0x20000000: {B1} -> {B3}: ThresholdShedder: usage history 85.50% (now cpu 85.50%) >= \
average 49.08% + threshold 10.00%; offload at least 25.13 MB/s = 31.42% (history - average - threshold + 5%) of \
80.00 MB/s; bundle short-term throughput 20.00 MB/s
{EVENLY}
pulsar-admin namespaces unload acme/orders --bundle 0x00000000_0x20000000 --destinationBroker {B3}
# acme/orders/0x20000000_0x40000000: {B1} -> {B3}: ThresholdShedder: usage history 85.50% (now cpu 85.50%) >= \
average 49.08% + threshold 10.00%; offload at least 25.13 MB/s = 31.42% (history - average - threshold + 5%) of \
80.00 MB/s; bundle short-term throughput 18.00 MB/s
{EVENLY}
pulsar-admin namespaces unload acme/orders --bundle 0x20000000_0x40000000 --destinationBroker {B3}
# projected after these moves (load: weighted max resource usage; a bundle takes its share of its broker's \
throughput with it):
#   broker                  load       after     msg/s         after   MB/s      after
#   {B1}  85.50%  ->  44.89%  81,920.0  ->  43,008.0  80.00  ->  42.00
#   {B3}  17.25%  ->  57.86%   9,216.0  ->  48,128.0   9.00  ->  47.00
#   {B2}  44.50%  ->  44.50%  33,792.0  ->  33,792.0  33.00  ->  33.00
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- item 1: the load reports pulsar-admin prints --------------------------------------------------


def test_shed_format_admin_on_the_three_example_reports_prints_the_pulsar_admin_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [str(REPORTS / f"broker-{i}.json") for i in (1, 2, 3)]
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", "--format", "admin", *files)
    assert (code, err) == (0, "")
    assert out == ADMIN


@pytest.mark.parametrize("given", [["load-reports"], ["load-reports.json"], ["load-reports/broker-2.json", "."]])
def test_a_directory_an_array_file_and_single_files_give_the_same_decisions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, given: list[str]
) -> None:
    shutil.copytree(REPORTS, tmp_path / "load-reports")
    shutil.copy(EXAMPLES / "load-reports.json", tmp_path / "load-reports.json")
    if given[-1] == ".":  # a file and a directory holding the other two
        (tmp_path / "rest").mkdir()
        for i in (1, 3):
            shutil.copy(REPORTS / f"broker-{i}.json", tmp_path / "rest")
        given = [given[0], "rest"]
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", *given)
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert [(u["broker"], u["bundle"], u["destination"]) for u in doc["unload"]] == [
        (B1, "acme/orders/0x00000000_0x20000000", B3),
        (B1, "acme/orders/0x20000000_0x40000000", B3),
    ]
    assert doc["timestamp"] == 1700000001457  # the latest report's lastUpdate


def test_the_readme_example_file_holds_the_three_reports() -> None:
    array = json.loads((EXAMPLES / "load-reports.json").read_text())
    assert array == [json.loads((REPORTS / f"broker-{i}.json").read_text()) for i in (1, 2, 3)]


def _report(**fields: Any) -> dict[str, Any]:
    return {"cpu": {"usage": 100, "limit": 800}, "bundles": [], **fields}


@pytest.mark.parametrize(
    ("name", "doc", "broker"),
    [
        ("a.json", _report(brokerId="b-1:8080", webServiceUrl="http://x:8080"), "b-1:8080"),
        ("a.json", _report(webServiceUrl="https://broker-7.example:8443/"), "broker-7.example:8443"),
        ("a.json", _report(lookupData={"webServiceUrl": "http://lk:8080"}), "lk:8080"),
        ("b9:8080@1700000000000.json", _report(webServiceUrl="http://x:8080"), "b9:8080"),
        ("broker-4.json", _report(), "broker-4"),
        ("w.json", {"broker": "wrapped:8080", "timestamp": 5, "report": _report()}, "wrapped:8080"),
    ],
)
def test_a_report_is_named_by_its_own_fields_or_its_file(tmp_path: Path, name: str, doc: Any, broker: str) -> None:
    (tmp_path / name).write_text(json.dumps(doc))
    [step] = read_inputs([str(tmp_path / name)])
    assert step.from_reports and list(step.doc["brokers"]) == [broker]


def test_reports_of_two_moments_become_two_steps(tmp_path: Path) -> None:
    for broker, t in (("a", 1000), ("b", 1500), ("a", 61000), ("b", 61200)):
        (tmp_path / f"{broker}@{t}.json").write_text(json.dumps(_report()))
    steps = read_inputs([str(tmp_path)])
    assert [(s.doc["timestamp"], list(s.doc["brokers"]), s.where) for s in steps] == [
        (1500, ["a", "b"], "steps[0]"),
        (61200, ["a", "b"], "steps[1]"),
    ]


@pytest.mark.parametrize(
    ("files", "argv", "message"),
    [
        (
            {"r.json": _report(), "s.json": {"brokers": {}}},
            ["shed", "--strategy", "OverloadShedder"],
            "holds load reports while",
        ),
        (
            {"r.json": _report()},
            ["shed", "--strategy", "TransferShedder"],
            "TransferShedder reads extensible snapshots",
        ),
        (
            {"r.json": _report(cpu={"usage": "hot", "limit": 8})},
            ["shed", "--strategy", "OverloadShedder"],
            "report.cpu.usage: expected a number",
        ),
        ({"r.json": _report()}, ["place", "--strategy", "LeastLongTermMessageRate"], "missing 'bundle'"),
        ({"r.json": [1, 2]}, ["shed", "--strategy", "OverloadShedder"], "an array of load reports"),
    ],
)
def test_bad_report_inputs_are_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, Any], argv: list[str], message: str
) -> None:
    for name, doc in files.items():
        (tmp_path / name).write_text(json.dumps(doc))
    code, out, err = run(capsys, *argv, *(str(tmp_path / n) for n in files))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {tmp_path}/") and message in err and err.count("\n") == 1, err


def test_a_report_without_cpu_is_taken_as_zero_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = json.loads((REPORTS / "broker-3.json").read_text())
    del doc["cpu"]
    (tmp_path / "broker-3.json").write_text(json.dumps(doc))
    shutil.copy(REPORTS / "broker-1.json", tmp_path)
    code, _, err = run(capsys, "shed", "--strategy", "OverloadShedder", str(tmp_path))
    assert code == 0
    assert err == (
        f"warning: {tmp_path}: {B3} reports no cpu: taken as 0 % CPU (a broker's load report always has one)\n"
    )


# -- item 2: why nothing happens -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "settings", "reason"),
    [
        (
            "ThresholdShedder",
            ["loadBalancerBrokerThresholdShedderPercentage=40"],
            "no broker's usage history reaches average 49.08% + threshold 40.00% = 89.08% "
            f"(loadBalancerBrokerThresholdShedderPercentage); the highest, {B1} at 85.50%, is 3.58 points below",
        ),
        (
            "ThresholdShedder",
            ["loadBalancerBundleUnloadMinThroughputThreshold=30"],
            f"{B1} at 85.50% would offload only 25.13 MB/s < loadBalancerBundleUnloadMinThroughputThreshold 30.00 MB/s",
        ),
        (
            "OverloadShedder",
            ["loadBalancerBrokerOverloadedThresholdPercentage=90"],
            "no broker's max resource usage reaches loadBalancerBrokerOverloadedThresholdPercentage 90.00%; the "
            f"highest, {B1} at 85.50% (cpu), is 4.50 points below",
        ),
        (
            "UniformLoadShedder",
            [
                "loadBalancerMsgRateDifferenceShedderThreshold=900",
                "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold=10",
            ],
            f"msg rates differ by 788.89% ({B1} 81920.00 vs {B3} 9216.00 msg/s), not above "
            f"loadBalancerMsgRateDifferenceShedderThreshold 900%, and throughputs by 8.89x ({B1} 80.00 MB/s vs "
            f"{B3} 9.00 MB/s), not above loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold 10x",
        ),
        (
            "AvgShedder",
            [],
            f"{B1} (85.50) and {B3} (17.25) differ by 68.25 points: 1 of loadBalancerAvgShedderHitCountHighThreshold 2 "
            "consecutive hits above 40 points, 1 of loadBalancerAvgShedderHitCountLowThreshold 8 above 15",
        ),
        (
            "AvgShedder",
            ["loadBalancerAvgShedderLowThreshold=70"],
            "no pair of brokers differs by loadBalancerAvgShedderLowThreshold 70 points or more: the highest score is "
            f"85.50 ({B1}), the lowest 17.25 ({B3})",
        ),
    ],
)
@pytest.mark.parametrize("fmt", ["admin", "table"])
def test_when_nothing_is_unloaded_the_reason_carries_the_values_and_settings(
    capsys: pytest.CaptureFixture[str], strategy: str, settings: list[str], reason: str, fmt: str
) -> None:
    sets = [a for s in settings for a in ("--set", s)]
    code, out, _ = run(capsys, "shed", "--strategy", strategy, "--format", fmt, *sets, str(REPORTS))
    assert code == 0
    if fmt == "admin":
        assert out == f"{HEAD}: {strategy} unloads nothing: {reason}\n"
    else:
        assert out == f"{HEAD[2:]}\n  no unload: {reason}\n"


def test_the_leader_s_own_reasons_explain_an_empty_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "shed",
        "--strategy",
        "OverloadShedder",
        "--format",
        "admin",
        "--set",
        "loadBalancerSheddingExcludedNamespaces=acme/orders",
        str(REPORTS),
    )
    assert code == 0
    assert out == (
        f"{HEAD}: OverloadShedder unloads nothing: every planned unload was skipped (1)\n"
        f"# skipped acme/orders/0x00000000_0x20000000 on {B1}: namespace acme/orders is in "
        "loadBalancerSheddingExcludedNamespaces\n"
    )
    code, out, _ = run(
        capsys, "shed", "--strategy", "OverloadShedder", "--format", "admin", str(REPORTS / "broker-1.json")
    )
    assert out == (
        "# step 0 at 2023-11-14T22:13:20.123Z (1700000000123): OverloadShedder unloads nothing: "
        "fewer than 2 brokers available: no shedding\n"
    )


def test_place_bundle_admin_moves_the_bundle_and_projects_the_load(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "place",
        "--strategy",
        "LeastLongTermMessageRate",
        "--format",
        "admin",
        "--bundle",
        "acme/orders/0x00000000_0x20000000",
        str(REPORTS),
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        f"{HEAD}: LeastLongTermMessageRate places acme/orders/0x00000000_0x20000000 (owned by {B1}) on {B3}",
        f"pulsar-admin namespaces unload acme/orders --bundle 0x00000000_0x20000000 --destinationBroker {B3}",
    ]
    assert out.splitlines()[4:6] == [
        f"#   {B1}  85.50%  ->  64.12%  81,920.0  ->  61,440.0  80.00  ->  60.00",
        f"#   {B3}  17.25%  ->  38.62%   9,216.0  ->  29,696.0   9.00  ->  29.00",
    ]


@pytest.mark.parametrize(("auto_unload", "suffix"), [("true", " --unload"), ("false", "")])
def test_split_check_admin_and_table_carry_value_and_threshold(
    capsys: pytest.CaptureFixture[str], auto_unload: str, suffix: str
) -> None:
    sets = ["--set", "loadBalancerNamespaceBundleMaxMsgRate=20000"]
    sets += ["--set", f"loadBalancerAutoUnloadSplitBundlesEnabled={auto_unload}"]
    code, out, _ = run(capsys, "split-check", "--format", "admin", *sets, str(REPORTS))
    assert code == 0
    assert out == (
        f"{HEAD}: 1 bundle to split\n"
        f"# acme/orders/0x00000000_0x20000000 on {B1}: MsgRate (long-term 20,480 msg/s > 20,000)\n"
        f"pulsar-admin namespaces split-bundle acme/orders --bundle 0x00000000_0x20000000{suffix}\n"
    )
    code, out, _ = run(capsys, "split-check", "--format", "table", *sets, str(REPORTS))
    assert out.splitlines()[1:] == [
        "  bundle                             broker                conditions (value > threshold)",
        f"  acme/orders/0x00000000_0x20000000  {B1}  MsgRate (long-term 20,480 msg/s > 20,000)",
    ]
    code, out, _ = run(capsys, "split-check", str(REPORTS), *sets)
    assert json.loads(out) == {
        "step": 0,
        "split": [{"bundle": "acme/orders/0x00000000_0x20000000", "broker": B1, "reasons": ["MsgRate"]}],
    }


def test_bundle_reads_pulsar_admin_namespaces_bundles(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "bundles.json"
    f.write_text('{"boundaries":["0x00000000","0x40000000","0x80000000","0xc0000000","0xffffffff"],"numBundles":4}')
    code, out, _ = run(capsys, "bundle", "--bundles-file", str(f), "my-topic", "t/ns/b")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "topic": "persistent://public/default/my-topic",
            "hash": 732775927,
            "bundle": "public/default/0x00000000_0x40000000",
        },
        # zlib.crc32(b"persistent://t/ns/b") == 0x3f5f2394
        {"topic": "persistent://t/ns/b", "hash": 1063199636, "bundle": "t/ns/0x00000000_0x40000000"},
    ]
    code, out, _ = run(capsys, "bundle", "--bundles-file", str(f), "--format", "table", "my-topic")
    assert out == (
        "topic                                 hash        bundle\n"
        "persistent://public/default/my-topic  0x2bad45f7  public/default/0x00000000_0x40000000\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"boundaries":["0x00000000","0x40000000"],"numBundles":1}',
            "bundles: boundaries must start at 0x00000000 and end at 0xffffffff (a namespace's bundles cover every "
            "hash), got 0x00000000..0x40000000",
        ),
        (
            '{"boundaries":["0x00000000","0x80000000","0xffffffff"],"numBundles":4}',
            "bundles: numBundles is 4 but the boundaries make 2 bundles",
        ),
        (
            '{"boundaries":["0x00000000","zz","0xffffffff"]}',
            "bundles.boundaries[1]: expected an integer or 0x-hex boundary, got 'zz'",
        ),
    ],
)
def test_a_bundles_file_that_stops_short_is_one_correct_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    f = tmp_path / "bundles.json"
    f.write_text(content)
    code, out, err = run(capsys, "bundle", "--bundles-file", str(f), "t")
    assert (code, out) == (2, "")
    assert err == f"error: {f}: {message}\n"


def test_split_table_lists_the_children(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "split",
        "--algorithm",
        "range_equally_divide",
        "--bundle",
        "t/ns/0x00000000_0x20000000",
        "--format",
        "table",
    )
    assert (code, out) == (
        0,
        "range_equally_divide splits t/ns/0x00000000_0x20000000 at 0x10000000\n"
        "  child                       lower       upper            hashes\n"
        "  t/ns/0x00000000_0x10000000  0x00000000  0x10000000  268,435,456\n"
        "  t/ns/0x10000000_0x20000000  0x10000000  0x20000000  268,435,456\n",
    )


def test_pulsar_admin_commands_are_spelt_as_pulsar_admin_spells_them() -> None:
    assert (
        unload_command("t/ns/0x00000000_0x40000000")
        == "pulsar-admin namespaces unload t/ns --bundle 0x00000000_0x40000000"
    )
    assert (
        unload_command("prop/cl/ns/0X40000000_0X80000000", "b:8080")
        == "pulsar-admin namespaces unload prop/cl/ns --bundle 0x40000000_0x80000000 --destinationBroker b:8080"
    )
    assert unload_command("bundle-1", "b") is None  # an opaque key inside a snapshot
    assert unload_command("t/ns/0x00000000_0x40000000", "b;rm -rf /").endswith("--destinationBroker 'b;rm -rf /'")
    assert (
        split_command("t/ns/0x00000000_0x40000000", unload=True)
        == "pulsar-admin namespaces split-bundle t/ns --bundle 0x00000000_0x40000000 --unload"
    )


def test_the_projection_moves_usage_in_each_broker_s_own_units() -> None:
    mb = 1048576.0

    def broker(cpu: float, cores: float, tput: float, bundles: list[str]) -> BrokerData:
        res = SystemResources(cpu=ResourceUsage(cpu, cores * 100))
        local = LocalBrokerData(resources=res, msgThroughputIn=tput, msgThroughputOut=0.0, msgRateIn=tput / 1024)
        local.bundles = bundles
        return BrokerData(local)

    short = TimeAverageMessageData(10, 10, msgThroughputIn=25 * mb, msgRateIn=25 * mb / 1024)
    load = LoadData(
        {"big": broker(400, 8, 100 * mb, ["x"]), "small": broker(50, 2, 10 * mb, [])},
        {"x": BundleData(short, short.copy(), 3)},
    )
    [big, small] = project(load, [Unload("big", "x", "r", "small")], Config())
    # a quarter of big's traffic takes a quarter of its 400 % CPU (100 % = one core) to a 2-core broker
    assert (big.load, big.load_after) == (0.5, 0.375)
    assert (small.load, small.load_after) == (0.25, 0.75)
    assert (small.throughput_after, big.msg_rate_after) == (35 * mb, 75 * 1024.0)
