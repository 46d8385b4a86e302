"""``bundlewise place`` through the command line (docs/commands.md, docs/formats.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundlewise.cli.main import main

NS = "t/ns"
B0 = f"{NS}/0x00000000_0x40000000"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def write(tmp_path: Path, doc: Any, name: str = "in.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def ta(rate: float) -> dict[str, float]:
    return {"longTermMsgRateIn": rate}


def lltmr_steps() -> dict[str, Any]:
    """Pulsar's testLeastLongTermMessageRate as three steps on the candidates 1, 2, 3."""

    def snap(r1: float, cpu2: float) -> dict[str, Any]:
        return {
            "bundle": B0,
            "candidates": ["1", "2", "3"],
            "brokers": {
                "1": {"timeAverageData": ta(r1)},
                "2": {"timeAverageData": ta(200), "cpu": {"usage": cpu2, "limit": 100}},
                "3": {"timeAverageData": ta(300)},
            },
        }

    return {"steps": [snap(100, 0), snap(400, 0), snap(400, 90)]}


def test_least_long_term_message_rate_sequence(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", write(tmp_path, lltmr_steps()))
    assert (code, err) == (0, "")
    assert out == [
        {"step": 0, "selected": "1", "best": ["1"]},
        {"step": 1, "selected": "2", "best": ["2"]},
        {"step": 2, "selected": "3", "best": ["3"]},
    ]


def test_per_step_config_applies_from_that_step_on(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = lltmr_steps()
    doc["steps"][2]["config"] = {"loadBalancerBrokerOverloadedThresholdPercentage": 95}
    _, out, _ = run(
        capsys,
        "place",
        "--strategy",
        "org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate",
        write(tmp_path, doc),
    )
    assert [o["selected"] for o in out] == ["1", "2", "2"]  # cpu 90% is no longer overloaded


def test_round_robin_position_carries_across_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    step = {"bundle": B0, "candidates": ["a", "b", "c"], "brokers": {}}
    lines = "\n".join(json.dumps(step) for _ in range(4))
    path = tmp_path / "in.jsonl"
    path.write_text(lines + "\n")
    _, out, _ = run(capsys, "place", "--strategy", "RoundRobinBrokerSelector", str(path))
    assert out == [{"step": i, "selected": s, "best": [s]} for i, s in enumerate("abca")]


def usage(u: float, owned: str) -> dict[str, Any]:
    r = {"usage": u, "limit": 100}
    return {"cpu": r, "bandwidthIn": r, "bandwidthOut": r, "msgRateIn": 100, "msgRateOut": 100, "bundles": [owned]}


def test_least_resource_usage_history_carries_across_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = {
        "loadBalancerHistoryResourcePercentage": 0.5,
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 5,
    }
    steps = [
        {
            "bundle": B0,
            "candidates": ["1", "2", "3"],
            "brokers": {
                "1": usage(a, "x/y/0x00000000_0x40000000"),
                "2": usage(b, "x/y/0x40000000_0x80000000"),
                "3": usage(c, "x/y/0x80000000_0xffffffff"),
            },
        }
        for a, b, c in [(10, 30, 60), (20, 30, 50), (30, 30, 40), (30, 30, 40), (35, 20, 45)]
    ]
    steps[0]["config"] = cfg
    code, out, err = run(
        capsys, "place", "--strategy", "LeastResourceUsageWithWeight", write(tmp_path, {"steps": steps})
    )
    assert (code, err) == (0, "")
    assert [o["best"] for o in out] == [["1"], ["1"], ["1"], ["1"], ["2"]]
    # without history (a fresh instance on step 3 alone) 30/30/40 has no broker 5 points under the
    # average 33.3, so every candidate is best; with history (0.2625/0.3/0.4375) only broker 1 is
    _, out, _ = run(
        capsys, "place", "--strategy", "LeastResourceUsageWithWeight", write(tmp_path, {**steps[3], "config": cfg})
    )
    assert out[0]["best"] == ["1", "2", "3"]


def test_full_flow_without_candidates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = {
        "bundle": B0,
        "brokers": {
            "a": {"bundles": [f"{NS}/0x40000000_0x80000000"], "timeAverageData": ta(1)},
            "b": {"timeAverageData": ta(50)},
            "c": {"timeAverageData": ta(50)},
        },
    }
    code, out, _ = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", "--seed", "3", write(tmp_path, doc))
    assert code == 0 and out[0]["best"] == ["b", "c"] and out[0]["selected"] in ("b", "c")
    # the same seed gives the same pick
    _, again, _ = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", "--seed", "3", write(tmp_path, doc))
    assert again == out


def test_full_flow_with_leader_bundle_data(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No bundleData/timeAverageData: the leader computes them from lastStats (``LeaderBundleData``)."""
    stats = {f"{NS}/0x40000000_0x80000000": {"msgRateIn": 1000}}
    doc = {
        "bundle": B0,
        "config": {"loadBalancerDistributeBundlesEvenlyEnabled": False},
        "brokers": {"busy": {"lastStats": stats}, "idle": {}},
    }
    _, out, _ = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", write(tmp_path, doc))
    assert out == [{"step": 0, "selected": "idle", "best": ["idle"]}]


def test_avg_shedder_as_placement(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = {"bundle": B0, "candidates": ["c", "a", "b"], "brokers": {"a": {}, "b": {}, "c": {}}}
    code, out, _ = run(capsys, "place", "--strategy", "AvgShedder", "--seed", "1", write(tmp_path, doc))
    assert code == 0 and out[0]["best"] == ["a", "b", "c"] and out[0]["selected"] in ("a", "b", "c")


def test_empty_brokers_yield_null(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, out, _ = run(
        capsys, "place", "--strategy", "LeastLongTermMessageRate", write(tmp_path, {"bundle": B0, "brokers": {}})
    )
    assert out == [{"step": 0, "selected": None, "best": []}]


def test_table_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["place", "--strategy", "LeastLongTermMessageRate", "--format", "table", write(tmp_path, lltmr_steps())]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].split() == ["step", "bundle", "owner", "selected", "best"]
    assert lines[3].split() == ["2", B0, "-", "3", "3"]  # no broker owns B0 in these snapshots


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"brokers": {"a": {}}}, "snapshot.bundle: missing 'bundle'"),
        ({"bundle": 3, "brokers": {"a": {}}}, "snapshot.bundle: expected the name of the bundle to place, a string"),
        ({"bundle": B0, "candidates": "a", "brokers": {"a": {}}}, "snapshot.candidates: expected an ordered list"),
        ({"bundle": B0, "candidates": ["a", "a"], "brokers": {"a": {}}}, "listed twice"),
        ({"bundle": B0, "candidates": ["a", "zz"], "brokers": {"a": {}}}, "candidate broker 'zz' has no load data"),
        ({"bundle": B0}, "missing 'brokers'"),
        ({"bundle": B0, "brokers": {"a": {"weightedMaxEMA": 1}}}, "extensible"),
    ],
)
def test_bad_input_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, doc: Any, message: str
) -> None:
    path = write(tmp_path, doc)
    code, out, err = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", path)
    assert code == 2 and out == []
    assert err.startswith(f"error: {path}: ") and message in err and err.count("\n") == 1


def test_a_bundle_on_two_reports_counts_on_both_with_one_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """B1 moved from a to b; a's report still lists it.  Each report is read as reported: b's long-term
    message rate counts B1 (the default prior of a bundle without data), so c alone is least loaded."""
    b1 = f"{NS}/0x40000000_0x80000000"
    doc = {"bundle": B0, "brokers": {"a": {"bundles": [b1]}, "b": {"bundles": [b1]}, "c": {"bundles": []}}}
    path = write(tmp_path, doc)
    code, out, err = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", path)
    assert code == 0 and out == [{"step": 0, "selected": "c", "best": ["c"]}]
    assert err == (
        f"warning: {path}: snapshot: bundle {b1} is listed by a and b; reports are not taken at one instant, so"
        " each broker's report is read as reported, as Pulsar's leader reads it\n"
    )
    doc["brokers"]["b"]["bundles"] = []
    code, out, err = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", write(tmp_path, doc, "one.json"))
    assert code == 0 and err == "" and out[0]["best"] == ["b", "c"]


def test_unknown_strategy_is_a_one_line_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "place", "--strategy", "Fastest", write(tmp_path, {"bundle": B0, "brokers": {}}))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: --strategy: unknown placement strategy 'Fastest'; expected one of ")


def test_missing_strategy_and_malformed_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "place", write(tmp_path, {"bundle": B0, "brokers": {}}))
    assert code == 2 and "--strategy" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"bundle": ')
    code, _, err = run(capsys, "place", "--strategy", "RoundRobinBrokerSelector", str(bad))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_extensible_reads_extensible_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # --extensible parses the extensible shape: an empty broker-load store places nothing
    path = write(tmp_path, {"bundle": B0, "brokers": {}})
    code, out, err = run(capsys, "place", "--extensible", "--strategy", "LeastResourceUsageWithWeight", path)
    assert (code, err) == (0, "") and out == [{"step": 0, "selected": None, "best": []}]


def test_extensible_places_with_its_own_strategy_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(
        capsys,
        "place",
        "--extensible",
        "--strategy",
        "LeastLongTermMessageRate",
        write(tmp_path, {"bundle": B0, "brokers": {}}),
    )
    assert code == 2 and out == [] and err.count("\n") == 1
    assert "--strategy: the extensible load manager places with LeastResourceUsageWithWeight only" in err


def test_non_persistent_bundle_needs_a_broker_accepting_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    brokers = {"p": {"nonPersistentTopicsEnabled": False}, "n": {"timeAverageData": ta(999)}}
    _, out, _ = run(
        capsys,
        "place",
        "--strategy",
        "LeastLongTermMessageRate",
        write(
            tmp_path,
            {"steps": [{"bundle": B0, "brokers": brokers}, {"bundle": B0, "nonPersistent": True, "brokers": brokers}]},
        ),
    )
    assert [o["selected"] for o in out] == ["p", "n"]
    code, _, err = run(
        capsys,
        "place",
        "--strategy",
        "LeastLongTermMessageRate",
        write(tmp_path, {"bundle": B0, "nonPersistent": "yes", "brokers": brokers}),
    )
    assert code == 2 and "snapshot.nonPersistent: expected true or false" in err


def test_a_bad_later_step_prints_nothing_before_the_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = {"bundle": B0, "brokers": {"a": {}}}
    path = write(tmp_path, {"steps": [good, good, {"brokers": {"a": {}}}]})
    code, out, err = run(capsys, "place", "--strategy", "LeastLongTermMessageRate", path)
    assert code == 2 and out == [] and "steps[2].bundle: missing 'bundle'" in err and err.count("\n") == 1
