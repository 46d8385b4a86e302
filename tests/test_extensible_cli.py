"""The extensible commands end to end: ``shed --strategy TransferShedder``, ``place --extensible`` and
``split-check --extensible`` (docs/commands.md), through ``bundlewise.cli.main.main``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from bundlewise.cli.inputs import Document
from bundlewise.cli.main import main
from bundlewise.cli.shed_extensible import run_extensible
from bundlewise.config import Config
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER

E1 = "t/ns-e/0x00000000_0x10000000"
D1 = "t/ns-d/0x00000000_0x10000000"


def broker(cpu: float, out: float, **extra: Any) -> dict[str, Any]:
    return {"cpu": {"usage": cpu, "limit": 100}, "msgThroughputIn": 1, "msgThroughputOut": out, **extra}


def top(ns: str, small: float, large: float) -> dict[str, Any]:
    return {
        "topBundlesLoadData": [
            {"bundleName": f"t/{ns}/0x00000000_0x10000000", "stats": {"msgThroughputOut": small}},
            {"bundleName": f"t/{ns}/0x10000000_0xffffffff", "stats": {"msgThroughputOut": large}},
        ]
    }


def cluster(**extra: Any) -> dict[str, Any]:
    """The A4.7 cluster (CPU 2/4/6/80/90 %), without timestamps: each step is one shedding interval later."""
    spec = [
        ("b1", 2, "ns-a", 1e6, 2e6),
        ("b2", 4, "ns-b", 1e6, 3e6),
        ("b3", 6, "ns-c", 2e6, 4e6),
        ("b4", 80, "ns-d", 2e6, 6e6),
        ("b5", 90, "ns-e", 2e6, 7e6),
    ]
    return {
        "brokers": {b: broker(c, s + lg) for b, c, _, s, lg in spec},
        "topBundles": {b: top(ns, s, lg) for b, _, ns, s, lg in spec},
        **extra,
    }


def shed(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any, *flags: str) -> list[dict[str, Any]]:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    assert main(["shed", "--strategy", "TransferShedder", *flags, str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_multi_step_run_carries_hit_counts_and_cool_downs(tmp_path, capsys):
    out = shed(tmp_path, capsys, {"steps": [cluster() for _ in range(8)]})
    assert [o["counters"] for o in out] == [
        {"Skip.HitCount": 1},
        {"Skip.HitCount": 1},
        {"Skip.HitCount": 1},  # hits 1..3 <= threshold 3
        {"Success.Overloaded": 2},  # 4th consecutive hit
        {"Skip.CoolDown": 1},
        {"Skip.CoolDown": 1},  # 60 s, 120 s < 180 s after
        {"Skip.HitCount": 1},
        {"Skip.HitCount": 1},  # cool-down over, counting anew
    ]
    assert out[3]["unload"] == [
        {"broker": "b5", "bundle": E1, "destination": "b1", "reason": "Overloaded"},
        {"broker": "b4", "bundle": D1, "destination": "b2", "reason": "Overloaded"},
    ]
    assert out[3]["stats"]["avg"] == pytest.approx(0.364) and out[3]["stats"]["std"] == pytest.approx(0.3983, abs=1e-4)
    assert out[3]["stats"]["finalStd"] == pytest.approx(0.2438, abs=1e-4)
    assert [o["timestamp"] for o in out] == [None] * 8
    assert out[4]["stats"] == {"avg": 0.0, "std": 0.0, "finalStd": 0.0}


def test_recently_unloaded_bundles_stay_put_for_the_grace_period(tmp_path, capsys):
    cfg = {"loadBalancerSheddingConditionHitCountThreshold": 0, "loadBalanceSheddingDelayInSeconds": 0}
    out = shed(tmp_path, capsys, {"steps": [cluster(config=cfg), cluster(), cluster()]})
    assert [u["bundle"] for u in out[0]["unload"]] == [E1, D1]
    assert all(u["bundle"] not in (E1, D1) for o in out[1:] for u in o["unload"])


def test_plan_only_uses_the_snapshot_maps_as_given(tmp_path, capsys):
    cfg = {"loadBalancerSheddingConditionHitCountThreshold": 0}
    doc = {
        "steps": [
            cluster(config=cfg, timestamp=1_000_000),
            cluster(timestamp=1_060_000),
            cluster(timestamp=1_120_000, recentlyUnloadedBrokers={"b1": 1_100_000}),
        ]
    }
    out = shed(tmp_path, capsys, doc, "--plan-only")
    assert [o["counters"] for o in out] == [{"Success.Overloaded": 2}, {"Success.Overloaded": 2}, {"Skip.CoolDown": 1}]
    assert out[0]["timestamp"] == 1_000_000


def test_cycle_does_not_run_with_one_broker_or_shedding_disabled(tmp_path, capsys):
    one = {"brokers": {"b1": broker(99, 1)}}
    off = cluster(config={"loadBalancerSheddingEnabled": False})
    out = shed(tmp_path, capsys, {"steps": [one, off]})
    assert out == [
        {"step": 0, "timestamp": None, "unload": [], "stats": None, "counters": {}},
        {"step": 1, "timestamp": None, "unload": [], "stats": None, "counters": {}},
    ]


def test_empty_brokers_plan_only_is_no_brokers(tmp_path, capsys):
    assert shed(tmp_path, capsys, {"brokers": {}}, "--plan-only")[0]["counters"] == {"Skip.NoBrokers": 1}


def test_outdated_data_through_the_cli(tmp_path, capsys):
    doc = cluster(timestamp=10_000_000)
    for b in doc["brokers"].values():
        b["updatedAt"] = 10_000_000 - 1_800_001
    assert shed(tmp_path, capsys, doc, "--plan-only")[0]["counters"] == {"Skip.OutDatedData": 1}


def test_run_extensible_directly_and_table_format(capsys):
    args = argparse.Namespace(strategy="TransferShedder", plan_only=True, format="table")
    cfg = Config().with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})
    assert run_extensible(args, cfg, [Document(cluster(), "mem", "snapshot")]) == 0
    text = capsys.readouterr().out
    assert "Success.Overloaded=2" in text
    assert [line.split() for line in text.splitlines()[-2:]] == [
        ["b5", E1, "b1", "Overloaded"],
        ["b4", D1, "b2", "Overloaded"],
    ]


def test_pulsar_class_name_of_the_strategy_is_accepted(tmp_path, capsys):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(cluster()))
    name = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"
    assert main(["shed", "--strategy", name, "--plan-only", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["counters"] == {"Skip.HitCount": 1}


@pytest.mark.parametrize(
    "doc, needle",
    [
        ({"brokers": {}, "bundleData": {}}, "mixed modular/extensible"),
        ({"brokers": {"b1": {"lastStats": {}}}}, "mixed modular/extensible"),
        ({"topBundles": {}}, "missing 'brokers'"),
        ({"brokers": {"b1": {"cpu": {"usage": "high", "limit": 100}}}}, "snapshot.brokers.b1.cpu.usage"),
    ],
)
def test_bad_input_exits_2_with_one_error_line(tmp_path, capsys, doc, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["shed", "--strategy", "TransferShedder", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err and str(path) in err


def place(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any, *flags: str) -> list[dict[str, Any]]:
    path = tmp_path / "place.json"
    path.write_text(json.dumps(doc))
    assert main(["place", "--strategy", "LeastResourceUsageWithWeight", "--extensible", *flags, str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_place_extensible_picks_the_least_loaded_and_reports_best(tmp_path, capsys):
    doc = {
        "bundle": "t/ns/0x00000000_0xffffffff",
        "brokers": {"a": {"weightedMaxEMA": 0.8}, "b": {"weightedMaxEMA": 0.1}, "c": {"weightedMaxEMA": 0.15}},
    }
    (out,) = place(tmp_path, capsys, doc)
    assert out["best"] == ["b", "c"] and out["selected"] in out["best"]  # avg 0.35: 0.1 and 0.15 are 10 % below


def test_place_extensible_filters_and_candidates(tmp_path, capsys):
    lookup = {
        "a": {"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER},
        "b": {"loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"},
    }
    base = {"brokers": {"a": {"weightedMaxEMA": 0.9}, "b": {"weightedMaxEMA": 0.1}}, "lookupData": lookup}
    steps = [
        {**base, "bundle": "t/ns/0x00000000_0xffffffff"},
        {**base, "bundle": "t/ns/0x00000000_0xffffffff", "candidates": ["a", "b"]},
        {"brokers": {}, "bundle": "t/ns/0x00000000_0xffffffff"},
    ]
    out = place(tmp_path, capsys, {"steps": steps}, "--seed", "7")
    assert out == [
        {"step": 0, "selected": "a", "best": ["a"]},
        {"step": 1, "selected": "b", "best": ["b"]},
        {"step": 2, "selected": None, "best": []},
    ]


def test_place_extensible_missing_bundle_exits_2(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"brokers": {}}))
    assert main(["place", "--strategy", "LeastResourceUsageWithWeight", "--extensible", str(path)]) == 2
    assert "bundle" in capsys.readouterr().err


def split_check(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any, *flags: str) -> list[dict[str, Any]]:
    path = tmp_path / "split.json"
    path.write_text(json.dumps(doc))
    assert main(["split-check", "--extensible", *flags, str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_split_check_extensible_counts_hits_per_broker(tmp_path, capsys):
    hot = {"topics": 2000, "msgRateIn": 50_000}
    step = {
        "brokers": {"b1": {}, "b2": {}},
        "topBundles": {
            "b1": {"t/ns/0x00000000_0x80000000": hot},
            "b2": {"t/ns/0x80000000_0xffffffff": {"topics": 5, "msgRateIn": 40_000}},
        },
    }
    out = split_check(tmp_path, capsys, {"steps": [step] * 5})
    assert [o["split"] for o in out[:3]] == [[], [], []]
    assert out[3]["split"] == [
        {"bundle": "t/ns/0x00000000_0x80000000", "broker": "b1", "reasons": ["Topics"]},
        {"bundle": "t/ns/0x80000000_0xffffffff", "broker": "b2", "reasons": ["MsgRate"]},
    ]
    assert out[4]["split"] == []


def test_split_check_extensible_bundle_counts_cap_the_namespace(tmp_path, capsys):
    step = {"brokers": {"b1": {}}, "topBundles": {"b1": {"t/ns/0x00000000_0x80000000": {"topics": 2000}}}}
    cfg = {"loadBalancerNamespaceBundleSplitConditionHitCountThreshold": 0}
    out = split_check(tmp_path, capsys, {"steps": [{**step, "config": cfg}]}, "--bundle-counts", "t/ns=128")
    assert out == [{"step": 0, "split": []}]
    out = split_check(tmp_path, capsys, {"steps": [{**step, "config": cfg}]}, "--bundle-counts", "t/ns=127")
    assert out[0]["split"][0]["bundle"] == "t/ns/0x00000000_0x80000000"


def test_split_check_extensible_needs_bundle_ranges(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"brokers": {}, "topBundles": {"b1": {"bundle-1": {"topics": 5}}}}))
    assert main(["split-check", "--extensible", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bundle-1" in err


# -- all or nothing: a bad step prints no good step before the error ----------------------------------


@pytest.mark.parametrize(
    ("argv", "good"),
    [
        (["shed", "--strategy", "TransferShedder"], cluster()),
        (["shed", "--strategy", "TransferShedder", "--plan-only"], cluster()),
        (["place", "--strategy", "LeastResourceUsageWithWeight", "--extensible"], {**cluster(), "bundle": E1}),
        (["split-check", "--extensible"], {"brokers": {}, "topBundles": {}}),
    ],
)
def test_a_bad_later_step_prints_nothing_before_the_error(tmp_path, capsys, argv, good):
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"steps": [good, good, {"bundle": E1, "brokers": {"b1": {"cpu": "busy"}}}]}))
    assert main([*argv, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "steps[2].brokers.b1.cpu: expected a JSON object" in err
