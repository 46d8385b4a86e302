"""``bundlewise shed`` through the command line (docs/commands.md) on modular snapshots."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bundlewise.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "load_reports"
MB = 1024 * 1024
IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def write(tmp_path: Path, doc: Any, name: str = "in.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def real_cluster() -> dict[str, Any]:
    """Three real-shaped ``/admin/v2/broker-stats/load-report`` responses pasted under ``brokers``."""
    brokers = {
        f"broker-{i}.pulsar.svc:8080": json.loads((FIXTURES / f"broker-{i}.json").read_text()) for i in (1, 2, 3)
    }
    return {"timestamp": 1700000060000, "brokers": brokers}


def overloaded_snapshot(timestamp: int | None = None) -> dict[str, Any]:
    """OverloadShedderTest's broker: bundle-i with i MB/s in and out, 99.9% bandwidth in; plus an idle broker."""
    bundle_data = {
        f"bundle-{i}": {"shortTermData": {"msgThroughputIn": i * MB, "msgThroughputOut": i * MB}} for i in range(1, 11)
    }
    doc: dict[str, Any] = {
        "brokers": {
            "broker-1": {
                "bandwidthIn": {"usage": 999, "limit": 1000},
                "msgThroughputIn": 55 * MB,
                "msgThroughputOut": 55 * MB,
                "bundles": list(bundle_data),
            },
            "broker-2": {"bundles": []},
        },
        "bundleData": bundle_data,
    }
    if timestamp is not None:
        doc["timestamp"] = timestamp
    return doc


# -- real load reports ---------------------------------------------------------------------------


def test_real_load_reports_load_unchanged_and_the_hot_broker_sheds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "shed", "--strategy", "ThresholdShedder", write(tmp_path, real_cluster()))
    assert (code, err) == (0, "")
    assert len(out) == 1
    assert out[0]["step"] == 0 and out[0]["timestamp"] == 1700000060000
    [unload] = out[0]["unload"]
    # usage 70% / 20% / 25%: 70% >= 38.33% + 10%; offload 26.67% of 120 MB/s = 32 MB/s; the 50 MB/s bundle covers it.
    # Destination: distribute-evenly keeps broker-2 and broker-3 (2 public/default bundles each), and
    # LeastLongTermMessageRate prefers broker-3 (6500 msg/s long-term vs 7500).
    assert {k: unload[k] for k in ("broker", "bundle", "destination")} == {
        "broker": "broker-1.pulsar.svc:8080",
        "bundle": "public/default/0x00000000_0x10000000",
        "destination": "broker-3.pulsar.svc:8080",
    }
    assert unload["reason"].startswith("ThresholdShedder: usage history 70.00% (now cpu 70.00%) >= average 38.33%")
    assert "offload at least 32.00 MB/s" in unload["reason"]


def test_heartbeat_bundles_of_real_reports_are_never_shed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = real_cluster()
    # make broker-1's heartbeat bundle the busiest: it must still be left alone (system namespace)
    hb = "pulsar/standalone/broker-1.pulsar.svc:8080/0x00000000_0xffffffff"
    stats = doc["brokers"]["broker-1.pulsar.svc:8080"]["lastStats"][hb]
    stats["msgThroughputIn"] = stats["msgThroughputOut"] = 500 * MB
    _, out, _ = run(capsys, "shed", "--plan-only", "--strategy", "ThresholdShedder", write(tmp_path, doc))
    assert [u["bundle"] for u in out[0]["unload"]] == ["public/default/0x00000000_0x10000000"]


def test_a_load_report_without_nic_speed_loads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = real_cluster()
    for report in doc["brokers"].values():
        report["bandwidthIn"] = report["bandwidthOut"] = {"usage": -1.0, "limit": -1.0}
    code, out, _ = run(capsys, "shed", "--plan-only", "--strategy", "ThresholdShedder", write(tmp_path, doc))
    assert code == 0 and [u["bundle"] for u in out[0]["unload"]] == ["public/default/0x00000000_0x10000000"]


# -- plan-only vs the leader's cycle ------------------------------------------------------------


def test_plan_only_prints_the_raw_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(
        capsys, "shed", "--plan-only", "--strategy", "OverloadShedder", write(tmp_path, overloaded_snapshot(1000))
    )
    assert (code, err) == (0, "")
    assert [(u["broker"], u["bundle"], u["destination"]) for u in out[0]["unload"]] == [
        ("broker-1", "bundle-10", None),
        ("broker-1", "bundle-9", None),
    ]
    assert out[0]["timestamp"] == 1000 and set(out[0]) == {"step", "timestamp", "unload"}


def test_leader_cycle_remembers_unloaded_bundles_across_steps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    steps = {"steps": [overloaded_snapshot(), overloaded_snapshot(), overloaded_snapshot()]}
    _, out, _ = run(capsys, "shed", "--strategy", f"{IMPL}OverloadShedder", write(tmp_path, steps))
    assert [[u["bundle"] for u in o["unload"]] for o in out] == [
        ["bundle-10", "bundle-9"],
        ["bundle-8", "bundle-7"],
        ["bundle-6", "bundle-5"],
    ]
    assert [o["timestamp"] for o in out] == [None, None, None]
    assert {u["destination"] for o in out for u in o["unload"]} == {"broker-2"}
    _, out, _ = run(capsys, "shed", "--plan-only", "--strategy", "OverloadShedder", write(tmp_path, steps))
    assert [[u["bundle"] for u in o["unload"]] for o in out] == [["bundle-10", "bundle-9"]] * 3


def test_grace_period_follows_the_step_clock(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    steps = {"steps": [overloaded_snapshot(), overloaded_snapshot()]}
    steps["steps"][1]["config"] = {"loadBalancerSheddingIntervalMinutes": 31}  # second step at 31 min
    _, out, _ = run(capsys, "shed", "--strategy", "OverloadShedder", write(tmp_path, steps))
    assert [[u["bundle"] for u in o["unload"]] for o in out] == [["bundle-10", "bundle-9"]] * 2


def test_per_step_config_overrides_apply_from_that_step_on(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    steps = [overloaded_snapshot() for _ in range(3)]
    steps[1]["config"] = {"loadBalancerSheddingEnabled": False}
    steps[2]["config"] = {"loadBalancerBrokerOverloadedThresholdPercentage": 99}
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    _, out, _ = run(capsys, "shed", "--strategy", "OverloadShedder", str(path))
    # step 2: shedding still disabled (cumulative); nothing at all
    assert [o["unload"] for o in out] == [out[0]["unload"], [], []]
    steps[2]["config"]["loadBalancerSheddingEnabled"] = True
    path.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    _, out, _ = run(
        capsys,
        "shed",
        "--strategy",
        "OverloadShedder",
        "--set",
        "loadBalancerBrokerOverloadedThresholdPercentage=90",
        str(path),
    )
    assert "usage 99.90% (bandwidthIn) >= overload threshold 99.00%" in out[2]["unload"][0]["reason"]
    assert "overload threshold 90.00%" in out[0]["unload"][0]["reason"]


def test_destination_equal_to_the_owner_is_reported_as_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = overloaded_snapshot()
    doc["brokers"]["broker-2"]["loadManagerClassName"] = "SomethingElse"  # filtered out, then reset to all
    doc["brokers"]["broker-2"]["persistentTopicsEnabled"] = False  # but it takes no persistent topics
    _, out, _ = run(capsys, "shed", "--strategy", "OverloadShedder", write(tmp_path, doc))
    assert out[0]["unload"] == []
    assert [s["reason"] for s in out[0]["skipped"]] == ["destination broker-1 is the current owner"] * 2


# -- AvgShedder: state across steps, one instance for both roles --------------------------------


def avg_step(timestamp: int) -> dict[str, Any]:
    bundles = {"t/ns/0x00000000_0x40000000": 200, "t/ns/0x40000000_0x80000000": 150, "t/ns/0x80000000_0xc0000000": 50}
    return {
        "timestamp": timestamp,
        "brokers": {
            "hot": {"cpu": {"usage": 80, "limit": 100}, "msgRateIn": 500, "msgRateOut": 500, "bundles": list(bundles)},
            "mid": {
                "cpu": {"usage": 50, "limit": 100},
                "msgRateIn": 300,
                "msgRateOut": 300,
                "bundles": ["t/ns/0xc0000000_0xffffffff"],
            },
            "cold": {"cpu": {"usage": 20, "limit": 100}, "msgRateIn": 250, "msgRateOut": 250, "bundles": []},
        },
        "bundleData": {b: {"shortTermData": {"msgRateIn": r, "msgRateOut": 0}} for b, r in bundles.items()},
        "config": {"maxUnloadPercentage": 0.5, "minUnloadMessage": 100},
    }


def test_avg_shedder_triggers_on_the_second_step_not_the_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, {"steps": [avg_step(60_000), avg_step(120_000)]})
    code, out, err = run(capsys, "shed", "--plan-only", "--strategy", "AvgShedder", path)
    assert (code, err) == (0, "")
    assert out[0]["unload"] == []
    # (1000 - 500) x 0.5 = 250 msg/s: 200 and 50 go, planned to the least loaded broker
    assert [(u["broker"], u["bundle"], u["destination"]) for u in out[1]["unload"]] == [
        ("hot", "t/ns/0x00000000_0x40000000", "cold"),
        ("hot", "t/ns/0x80000000_0xc0000000", "cold"),
    ]
    assert "2 consecutive hits >= 2 above high threshold 40" in out[1]["unload"][0]["reason"]


def test_avg_shedder_as_placement_too_uses_its_own_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, {"steps": [avg_step(60_000), avg_step(120_000)]})
    code, out, err = run(
        capsys, "shed", "--strategy", "AvgShedder", "--set", f"loadBalancerLoadPlacementStrategy={IMPL}AvgShedder", path
    )
    assert (code, err) == (0, "")
    assert out[0]["unload"] == []
    assert [(u["bundle"], u["destination"]) for u in out[1]["unload"]] == [
        ("t/ns/0x00000000_0x40000000", "cold"),
        ("t/ns/0x80000000_0xc0000000", "cold"),
    ]


def test_avg_shedder_with_another_placement_strategy_warns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "shed", "--strategy", "AvgShedder", write(tmp_path, avg_step(0)))
    assert code == 0 and err.startswith("warning: AvgShedder's planned destinations are used only when")


def test_avg_shedder_placement_requires_avg_shedder_shedding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        "shed",
        "--strategy",
        "ThresholdShedder",
        "--set",
        "loadBalancerLoadPlacementStrategy=AvgShedder",
        write(tmp_path, avg_step(0)),
    )
    assert code == 2 and err.count("\n") == 1
    assert "requires loadBalancerLoadSheddingStrategy to be AvgShedder too" in err


# -- table, TransferShedder delegation ----------------------------------------------------------


def test_table_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        [
            "shed",
            "--strategy",
            "OverloadShedder",
            "--format",
            "table",
            write(tmp_path, {"steps": [overloaded_snapshot(5), {"brokers": {}}]}),
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == "step 0 at 1970-01-01T00:00:00.005Z (5)"
    assert out[1].split() == ["broker", "bundle", "destination"]
    assert out[2].split() == ["broker-1", "bundle-10", "broker-2"]
    assert out[3].strip().startswith("OverloadShedder: max resource usage 99.90% (bandwidthIn)")
    assert out[-2:] == ["step 1", "  no unload: fewer than 2 brokers available: no shedding"]  # no timestamp


def test_transfer_shedder_runs_in_its_family_on_extensible_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a class name resolves through the registry to the extensible family: its output carries stats and
    # Pulsar's counters, and --plan-only reaches TransferShedder alone (no scheduler gate: NoBrokers)
    code, out, err = run(
        capsys, "shed", "--plan-only", "--strategy", f"{IMPL}TransferShedder", write(tmp_path, {"brokers": {}})
    )
    assert (code, err) == (0, "")
    assert out == [
        {
            "step": 0,
            "timestamp": None,
            "unload": [],
            "stats": {"avg": 0.0, "std": 0.0, "finalStd": 0.0},
            "counters": {"Skip.NoBrokers": 1},
        }
    ]


# -- bad input -----------------------------------------------------------------------------------


def bad(capsys: pytest.CaptureFixture[str], tmp_path: Path, doc: Any, strategy: str = "ThresholdShedder") -> str:
    code, out, err = run(capsys, "shed", "--strategy", strategy, write(tmp_path, doc))
    assert code == 2 and out == []
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_unknown_strategy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = bad(capsys, tmp_path, overloaded_snapshot(), strategy="LeastShedder")
    assert "--strategy: unknown shedding strategy 'LeastShedder'; expected one of OverloadShedder" in err


def test_snapshot_without_brokers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = bad(capsys, tmp_path, {"timestamp": 1, "bundleData": {}})
    assert "in.json: snapshot: missing 'brokers'" in err


def test_a_bundle_on_two_reports_is_read_as_reported_with_one_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Reports are not taken at one instant: bundle-10 moved to broker-2 and broker-1's report still lists it.
    Pulsar's leader reads each report as reported: broker-1 still sheds bundle-10 (its report says it holds it),
    and broker-2's time averages count bundle-10 too, so the placement sends both unloads to the empty broker-3
    (without the stale listing broker-2 and broker-3 would tie)."""
    doc = overloaded_snapshot()
    doc["brokers"]["broker-2"]["bundles"] = ["bundle-10"]
    doc["brokers"]["broker-3"] = {"bundles": []}
    path = write(tmp_path, {"steps": [overloaded_snapshot(), doc]})
    code, out, err = run(capsys, "shed", "--strategy", "OverloadShedder", path)
    assert code == 0
    assert err == (
        f"warning: {path}: steps[1]: bundle bundle-10 is listed by broker-1 and broker-2; reports are not taken at"
        " one instant, so each broker's report is read as reported, as Pulsar's leader reads it\n"
    )
    assert [(u["broker"], u["bundle"], u["destination"]) for u in out[1]["unload"]] == [
        ("broker-1", "bundle-8", "broker-3"),
        ("broker-1", "bundle-7", "broker-3"),
    ]
    code, out, err = run(capsys, "shed", "--strategy", "OverloadShedder", "--plan-only", write(tmp_path, doc))
    assert code == 0 and err.count("\n") == 1 and "snapshot: bundle bundle-10 is listed by" in err
    assert [u["bundle"] for u in out[0]["unload"]] == ["bundle-10", "bundle-9"]


@pytest.mark.parametrize("mix", ["topBundles", "weightedMaxEMA"])
def test_mixed_modular_and_extensible_shapes(capsys: pytest.CaptureFixture[str], tmp_path: Path, mix: str) -> None:
    doc = copy.deepcopy(overloaded_snapshot())
    if mix == "topBundles":
        doc["topBundles"] = {"broker-1": {"topBundlesLoadData": []}}
    else:
        doc["brokers"]["broker-1"]["weightedMaxEMA"] = 0.5
    err = bad(capsys, tmp_path, doc)
    assert f"'{mix}'" in err and "extensible" in err


def test_empty_brokers_is_valid_and_yields_no_decision(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for strategy in ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"):
        for extra in ([], ["--plan-only"]):
            code, out, _ = run(capsys, "shed", *extra, "--strategy", strategy, write(tmp_path, {"brokers": {}}))
            assert code == 0 and out == [{"step": 0, "timestamp": None, "unload": []}]
