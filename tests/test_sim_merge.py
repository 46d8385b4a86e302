"""The simulator applies BalancedPlanShedder's merges (``Engine._merge``): a hand-made namespace at its bundle cap
where the hot bundle splits only because a cold adjacent pair merged first, in the same step.

Namespace ``t/ns`` has 4 bundles and ``loadBalancerNamespaceMaximumBundles = 4``.  Topics sit at fixed hash
positions: two of 1,000 msg/s each (in, and as much out) in bundle 0 -- over the 1,000 msg/s split threshold --,
one of 400 msg/s in bundle 1 and one each of 10 and 20 msg/s in bundles 2 and 3.  Loads are a few percent of a
broker, so no strategy sheds anything: what changes is the layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bundlewise.cli.main import main
from bundlewise.model.errors import InputError
from bundlewise.results.decisions import decision_row
from bundlewise.results.record import RunResult
from bundlewise.sim.engine import Engine
from bundlewise.sim.scenario import parse_scenario
from bundlewise.traffic.workload import Counts, Rates, Topics

POSITIONS = [0x10000000, 0x30000000, 0x50000000, 0x90000000, 0xD0000000]
RATES = [1000.0, 1000.0, 400.0, 10.0, 20.0]  # msg/s in (and as much out) per topic


class FixedWorkload:
    """Five topics of ``t/ns`` at fixed hash positions, constant rates, 1 KiB messages, one producer and consumer."""

    def __init__(self) -> None:
        self.namespaces = ["t/ns"]
        names = [f"persistent://t/ns/topic-{i}" for i in range(len(POSITIONS))]
        self.topics = Topics(names, np.zeros(len(names), dtype=np.int64), np.array(POSITIONS, dtype=np.int64))
        ones = np.ones(len(names), dtype=np.int64)
        self._counts: Counts = (ones, ones, ones)

    def counts(self, now: int) -> Counts:
        return self._counts

    def rates(self, now: int) -> Rates:
        r = np.array(RATES)
        return r, r.copy(), r * 1024, r * 1024


def scenario(owner: str | None = "a", **balancer: Any) -> Any:
    ns: dict[str, Any] = {"name": "t/ns", "bundles": 4}
    if owner is not None:
        ns["owner"] = owner
    doc = {
        "duration": "5m",
        "step": "1m",
        "brokers": [{"name": "a"}, {"name": "b"}],
        "namespaces": [ns],
        "balancer": {
            "loadBalancerNamespaceMaximumBundles": 4,
            "loadBalancerNamespaceBundleMaxMsgRate": 1000,
            **balancer,
        },
    }
    return parse_scenario(doc, "merge.toml")


def run(strategy: str, owner: str | None = "a", **balancer: Any) -> tuple[Engine, RunResult]:
    engine = Engine(scenario(owner, **balancer), FixedWorkload(), strategy)
    return engine, engine.run()


def layout(engine: Engine) -> list[tuple[str, str | None]]:
    """The namespace's current bundles in hash order, each with its owner."""
    cl = engine.cluster
    return [
        (cl.bundle_names[i], None if cl.owner[i] < 0 else cl.names[int(cl.owner[i])]) for i in cl.ns_ids[0].tolist()
    ]


BEFORE = [
    ("t/ns/0x00000000_0x40000000", "a"),
    ("t/ns/0x40000000_0x80000000", "a"),
    ("t/ns/0x80000000_0xc0000000", "a"),
    ("t/ns/0xc0000000_0xffffffff", "a"),
]


def test_at_the_cap_a_cold_pair_merges_and_the_hot_bundle_splits_in_the_same_step() -> None:
    engine, result = run("BalancedPlanShedder", loadBalancerAutoUnloadSplitBundlesEnabled=False)
    assert layout(engine) == [
        ("t/ns/0x00000000_0x20000000", "a"),
        ("t/ns/0x20000000_0x40000000", "a"),
        ("t/ns/0x40000000_0x80000000", "a"),
        ("t/ns/0x80000000_0xffffffff", "a"),
    ]
    m = result.metrics
    assert (m["merges"], m["splits"], m["unloads"], m["topic_unavailable_seconds"]) == (1, 1, 0, 0.0)
    rows = [decision_row(d) for d in result.decisions]
    assert [(r["tick"], r["type"], r["bundle"]) for r in rows] == [
        (0, "merge", "t/ns/0x80000000_0xffffffff"),
        (0, "split", "t/ns/0x00000000_0x40000000"),
    ]
    merge = rows[0]
    assert (merge["broker"], merge["parts"], merge["owners"], merge["moved"], merge["unblocks"]) == (
        "a",
        ["t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"],
        ["a", "a"],
        [],
        "t/ns/0x00000000_0x40000000",
    )
    assert rows[1]["children"] == ["t/ns/0x00000000_0x20000000", "t/ns/0x20000000_0x40000000"]
    assert rows[1]["reason"] == "split: MsgRate (long-term 4,000 msg/s > 1,000)"
    cl = engine.cluster
    merged = cl.bundle_id["t/ns/0x80000000_0xffffffff"]
    assert cl.topics_of(merged).tolist() == [3, 4]  # the parts' topics now map to the merged bundle
    assert not cl.alive[cl.bundle_id["t/ns/0x80000000_0xc0000000"]]
    # a has not rewritten its report in 5 minutes (no change passes the report-update rules): the leader still
    # reads the parts there, keeps the merged bundle's inherited data, and merges nothing more
    assert {"t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"} <= set(engine.leader.reports[0].lastStats)
    data = engine.leader.bundle_data("t/ns/0x80000000_0xffffffff")
    assert data is not None and (data.topics, data.shortTermData.msgRateIn) == (2, pytest.approx(30.0))


def test_without_the_merge_the_hot_bundle_stays_whole() -> None:
    for strategy, extra in (("OverloadShedder", {}), ("BalancedPlanShedder", {"bundlewiseBalancedMergeFraction": 0})):
        engine, result = run(strategy, **extra)
        assert layout(engine) == BEFORE, strategy
        assert result.metrics["splits"] == 0 and [d.type for d in result.decisions] == []
    assert "merges" not in run("OverloadShedder")[1].metrics  # Pulsar's strategies never merge: no such key
    assert run("BalancedPlanShedder", bundlewiseBalancedMergeFraction=0)[1].metrics["merges"] == 0


def test_the_merged_bundle_inherits_the_sum_of_its_parts_data() -> None:
    engine = Engine(scenario(), FixedWorkload(), "BalancedPlanShedder")
    seen: dict[str, Any] = {}

    def probe(e: Engine, phase: str) -> None:
        if phase == "observe" and e.clock.tick == 0:
            lead = e.leader
            seen["parts"] = [lead.bundle_data(n) for n in ("t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff")]
        if phase == "splits" and e.clock.tick == 0:
            seen["merged"] = e.leader.bundle_data("t/ns/0x80000000_0xffffffff")
            seen["parts_after"] = e.leader.bundle_data("t/ns/0x80000000_0xc0000000")

    engine.probe = probe
    engine.run()
    merged = seen["merged"]
    assert merged is not None and seen["parts_after"] is None
    # sampled once at tick 0 from the reports: 10 and 20 msg/s each way, 1 KiB messages
    assert merged.shortTermData.msgRateIn == pytest.approx(30.0)
    assert merged.longTermData.msgThroughputOut == pytest.approx(30.0 * 1024)
    assert (merged.shortTermData.numSamples, merged.topics) == (1, 2)


def test_parts_with_two_owners_merge_to_the_hotter_ones_owner_and_the_other_moves() -> None:
    # dealt round-robin: a, b, a, b; Pulsar's default unloads the split's children, looked up at the next tick
    engine, result = run("BalancedPlanShedder", owner=None)
    assert layout(engine) == [
        ("t/ns/0x00000000_0x20000000", "b"),
        ("t/ns/0x20000000_0x40000000", "a"),
        ("t/ns/0x40000000_0x80000000", "b"),
        ("t/ns/0x80000000_0xffffffff", "b"),
    ]
    assert [(d.tick, d.type, d.decision.bundle, d.decision.broker) for d in result.decisions] == [
        (0, "merge", "t/ns/0x80000000_0xffffffff", "b"),
        (0, "split", "t/ns/0x00000000_0x40000000", "a"),
        (1, "assignment", "t/ns/0x00000000_0x20000000", "b"),
        (1, "assignment", "t/ns/0x20000000_0x40000000", "a"),
    ]
    (merge,) = [decision_row(d) for d in result.decisions if d.type == "merge"]
    assert (merge["owners"], merge["broker"], merge["moved"]) == (
        ["a", "b"],
        "b",
        ["t/ns/0x80000000_0xc0000000"],
    )
    m = result.metrics
    # 1 topic of the moved part and the 2 topics of the unloaded children, 1 s each (unloadBlipSeconds)
    assert (m["merges"], m["splits"], m["topic_unavailable_seconds"], m["repeat_unloads"]) == (1, 1, 3.0, 0)


def test_an_invalid_merge_is_an_error_not_a_skip() -> None:
    from bundlewise.model.decisions import MergeDecision

    engine = Engine(scenario(), FixedWorkload(), "BalancedPlanShedder")
    engine.run()
    m = engine.measured
    assert m is not None
    gap = MergeDecision(
        "t/ns/0x00000000_0xffffffff",
        "a",
        ("t/ns/0x00000000_0x20000000", "t/ns/0x80000000_0xffffffff"),
        ("a", "a"),
        "x",
    )
    with pytest.raises(InputError, match="are not adjacent"):
        engine._merge(gap, m)
    gone = MergeDecision(
        "t/ns/0x80000000_0xffffffff",
        "a",
        ("t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"),
        ("a", "a"),
        "x",
    )
    with pytest.raises(InputError, match="t/ns/0x80000000_0xc0000000 is not a current bundle"):
        engine._merge(gone, m)


def test_simulate_writes_merges_to_summary_decisions_and_report(tmp_path: Path) -> None:
    cluster = tmp_path / "merge.toml"
    cluster.write_text(
        "duration = '30m'\n"
        "[[brokers]]\nname = 'a'\n[[brokers]]\nname = 'b'\n"
        "[[namespaces]]\nname = 't/ns'\nbundles = 16\ntopics = 40\nmsg_rate = 20000\nzipf = 1.5\n"
        "[balancer]\nloadBalancerNamespaceMaximumBundles = 16\nloadBalancerNamespaceBundleMaxMsgRate = 3000\n"
        "bundlewiseBalancedMergeMaxChildShare = 1.0\n"  # merges for any split: this test is about the outputs
    )
    out = tmp_path / "out"
    code = main(["simulate", "--no-progress", "--cluster", str(cluster), "--strategy", "all", "--out", str(out)])
    assert code == 0
    doc = json.loads((out / "summary.json").read_text())
    own = doc["strategies"]["BalancedPlanShedder"]
    assert list(own)[list(own).index("splits") + 1] == "merges" and own["merges"] >= 1
    assert all("merges" not in m for name, m in doc["strategies"].items() if name != "BalancedPlanShedder")
    lines = [json.loads(x) for x in (out / "decisions.jsonl").read_text().splitlines()]
    merges = [x for x in lines if x["type"] == "merge"]
    assert len(merges) == own["merges"] and all(x["strategy"] == "BalancedPlanShedder" for x in merges)
    html = (out / "report.html").read_text()
    assert f"{own['merges']} merges" in html and ">merges</th>" in html
