"""The advisor checks its own plan (issue 28 item 1).

``tests/fixtures/overloading_move/`` holds three load reports as ``pulsar-admin broker-stats load-report``
prints them: broker-1 at cpu 720/800 = 90.00 % with a 117 MB/s bundle (58.5 in + 58.5 out) of its 170.4 MB/s,
broker-2 at 190.4/800 = 23.80 % owning no bundle of ``acme/events``, broker-3 at 80/800 = 10.00 % owning two.
ThresholdShedder (Pulsar's defaults): average (90 + 23.8 + 10) / 3 = 41.27 %, broker-1 offloads
90 - 41.27 - 10 + 5 = 43.73 % of 170.4 MB/s = 74.52 MB/s: the 117 MB/s bundle.  The placement flow's
distribute-bundles-evenly filter (``ModularLoadManagerImpl#selectBroker`` ->
``LoadManagerShared#removeMostServicingBrokersForNamespace``) keeps only broker-2 (0 bundles of the namespace);
LeastLongTermMessageRate picks it; its load is 23.80 % so the overload re-check passes.  The projection moves
117 / 170.4 = 68.66 % of broker-1's 720 cpu = 494.4 onto broker-2: (190.4 + 494.4) / 800 = 85.60 % > 85 %.
The bundle's 117 MB/s is over ``loadBalancerNamespaceBundleMaxBandwidthMbytes`` 100: split-check splits it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlewise.algorithms.balanced.estimate import Limits
from bundlewise.algorithms.balanced.planner import Candidate, PlanLimits, plan_moves
from bundlewise.cli.main import main
from bundlewise.model.resources import ResourceWeights

FIXTURE = Path(__file__).parent / "fixtures" / "overloading_move"
B1, B2, B3 = "broker-1.pulsar.svc:8080", "broker-2.pulsar.svc:8080", "broker-3.pulsar.svc:8080"
HOT = "acme/events/0x00000000_0x40000000"
REASON = (
    "ThresholdShedder: usage history 90.00% (now cpu 90.00%) >= average 41.27% + threshold 10.00%; offload at "
    "least 74.52 MB/s = 43.73% (history - average - threshold + 5%) of 170.40 MB/s; bundle short-term throughput "
    "117.00 MB/s"
)
WARNING = (
    f"WARNING: this move takes {B2} from 23.80% to 85.60%, over loadBalancerBrokerOverloadedThresholdPercentage 85%"
)
PLACEMENT = (
    "placement: distribute bundles evenly (loadBalancerDistributeBundlesEvenlyEnabled) left out "
    f"{B1} (90.00%): owns 2 bundles of acme/events, the fewest is 0; "
    f"{B3} (10.00%): owns 2 bundles of acme/events, the fewest is 0"
)
SPLIT_COMMAND = "pulsar-admin namespaces split-bundle acme/events --bundle 0x00000000_0x40000000 --unload"
SPLIT = (
    "split-check would split this bundle (Bandwidth (long-term 117.0 MB/s > 100 MB/s)); splitting it is the "
    f"better action: {SPLIT_COMMAND}"
)
ADMIN_LINES = [
    "# step 0 at 2023-11-14T22:13:21.200Z (1700000001200): ThresholdShedder unloads 1 bundle",
    f"# {HOT}: {B1} -> {B2}: {REASON}",
    f"#   {WARNING}",
    f"#   {PLACEMENT}",
    f"#   {SPLIT}",
    f"pulsar-admin namespaces unload acme/events --bundle 0x00000000_0x40000000 --destinationBroker {B2}",
    "# projected after these moves (load: weighted max resource usage; a bundle takes its share of its broker's "
    "throughput with it):",
    "#   broker                      load       after     msg/s         after    MB/s       after",
    f"#   {B1}  90.00%  ->  28.20%  25,500.0  ->   7,500.0  170.40  ->   53.40",
    f"#   {B2}  23.80%  ->  85.60%   7,500.0  ->  25,500.0   40.00  ->  157.00",
    f"#   {B3}  10.00%  ->  10.00%   3,000.0  ->   3,000.0   14.00  ->   14.00",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_admin_flags_the_overloading_move_with_the_filters_exclusions_and_the_split(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", "--format", "admin", str(FIXTURE))
    assert (code, err) == (0, "")
    assert out.splitlines() == ADMIN_LINES


def test_the_move_stays_what_pulsar_does_and_json_carries_the_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", str(FIXTURE))
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["unload"] == [{"broker": B1, "bundle": HOT, "destination": B2, "reason": REASON}]
    overload, split = doc["warnings"]
    assert overload == {
        "kind": "overload",
        "bundle": HOT,
        "broker": B1,
        "destination": B2,
        "loadBefore": 0.238,
        "loadAfter": 0.855958,  # (190.4 + 720 * 117 / 170.4) / 800
        "threshold": 0.85,
        "placement": [PLACEMENT],
        "message": WARNING,
    }
    assert split == {
        "kind": "split",
        "bundle": HOT,
        "broker": B1,
        "reasons": ["Bandwidth"],
        "command": SPLIT_COMMAND,
        "message": SPLIT,
    }


def test_table_flags_the_move_beside_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "shed", "--strategy", "ThresholdShedder", "--format", "table", str(FIXTURE))
    assert code == 0
    lines = out.splitlines()
    at = lines.index(f"      {REASON}")
    assert lines[at + 1 : at + 4] == [f"      {WARNING}", f"      {PLACEMENT}", f"      {SPLIT}"]


def test_split_check_on_the_same_input_names_the_bundle_shed_cross_references(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "split-check", str(FIXTURE))
    assert code == 0
    assert [d["bundle"] for d in json.loads(out)["split"]] == [HOT]


def test_a_move_that_stays_under_the_threshold_is_not_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "shed",
        "--strategy",
        "ThresholdShedder",
        "--set",
        "loadBalancerBrokerOverloadedThresholdPercentage=86",
        str(FIXTURE),
    )
    assert code == 0
    assert [w["kind"] for w in json.loads(out)["warnings"]] == ["split"]


def _report(cpu: float, bundles: int) -> dict[str, object]:
    """A broker of 800 cpu whose ``bundles`` bundles each carry 16 MiB/s in and out."""
    stats = {
        "msgRateIn": 1600.0,
        "msgThroughputIn": 16 * 1048576.0,
        "msgRateOut": 1600.0,
        "msgThroughputOut": 16 * 1048576.0,
        "topics": 4,
    }
    return {
        "cpu": {"usage": cpu, "limit": 800.0},
        "msgRateIn": 1600.0 * bundles,
        "msgRateOut": 1600.0 * bundles,
        "msgThroughputIn": 16 * 1048576.0 * bundles,
        "msgThroughputOut": 16 * 1048576.0 * bundles,
        "lastStats": {f"t/{cpu:g}/0x{i:08x}_0x{i + 1:08x}": stats for i in range(bundles)},
    }


def test_balanced_plan_shedder_never_plans_a_move_that_overloads_its_destination(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """a at 100 % (ten bundles of 10 %), b and c at 80 %: the only relief moves 10 % onto an 80 % broker, which
    would end at 90 % > 85 %, so nothing is planned (before the ceiling it planned a -> b at gain 0.0199)."""
    snap = {"timestamp": 1, "brokers": {"a:8080": _report(800.0, 10), "b:8080": _report(640.0, 8)}}
    snap["brokers"]["c:8080"] = _report(640.0, 8)  # type: ignore[index]
    (tmp_path / "s.json").write_text(json.dumps(snap))
    code, out, _ = run(
        capsys, "shed", "--strategy", "BalancedPlanShedder", "--format", "admin", str(tmp_path / "s.json")
    )
    assert code == 0
    assert "unloads nothing" in out and "over the overload threshold 85%" in out
    code, out, _ = run(
        capsys,
        "shed",
        "--strategy",
        "BalancedPlanShedder",
        "--set",
        "loadBalancerBrokerOverloadedThresholdPercentage=95",
        str(tmp_path / "s.json"),
    )
    doc = json.loads(out)
    assert [(u["broker"], u["destination"]) for u in doc["unload"]] == [("a:8080", "b:8080")]
    assert "warnings" not in doc  # 90 % is under a 95 % threshold


def test_the_planner_skips_a_destination_its_move_would_overload() -> None:
    limits = {"a": Limits(100.0, 0.0, 0.0), "b": Limits(100.0, 0.0, 0.0)}
    usage = {"a": (100.0, 0.0, 0.0), "b": (80.0, 0.0, 0.0)}
    bundles = [Candidate(f"x{i}", (10.0, 0.0, 0.0), 1) for i in range(10)]
    weights = ResourceWeights()
    free = PlanLimits(1, 0.001, 0.0, 0.0)
    assert [(m.bundle, m.after) for m in plan_moves(usage, limits, lambda b: bundles, weights, free)] == [
        ("x0", (0.9, 0.9))
    ]
    capped = PlanLimits(1, 0.001, 0.0, 0.0, ceiling=0.85)
    assert plan_moves(usage, limits, lambda b: bundles, weights, capped) == []
