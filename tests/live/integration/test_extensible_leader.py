"""The extensible leader and split scheduler on real broker processes (ExtensibleLoadManagerImplTest,
TransferShedderTest, SplitSchedulerTest): a broker that comes back empty is refilled by TransferShedder's
transfers, within its cool-down rules, read from the leader's decisions log; the owner of a hot bundle
splits it on its own and keeps the children."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    EXT,
    decisions,
    get,
    leader_of,
    load_data,
    lookup_url,
    observed,
    read_store,
    served_by,
    steady_trace,
    wait_until,
)

from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import ServerProcess

NS = "refill/ns"
TOPICS = [f"persistent://{NS}/topic-{i}" for i in range(32)]
SCALE = 60  # Pulsar time runs 60 times faster: a shedding interval of 1 min is 1 s
GRACE_MIN = 30  # loadBalancerSheddingGracePeriodMinutes (default)
DELAY_S = 180  # loadBalanceSheddingDelayInSeconds (default)
SETTINGS = {
    **EXT,
    "defaultNumberOfNamespaceBundles": 8,
    "loadBalancerSheddingEnabled": "true",
    "loadBalancerTransferEnabled": "true",
    "loadBalancerReportUpdateMinIntervalMillis": 1000,
    "loadBalancerSheddingGracePeriodMinutes": GRACE_MIN,
    "loadBalanceSheddingDelayInSeconds": DELAY_S,
}


def shed_replay(snapshots: list[dict[str, Any]], strategy: str, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """``bundlewise shed`` on the leader's logged extensible snapshots, one step per cycle."""
    args = [sys.executable, "-m", "bundlewise.cli.main", "shed", "--strategy", strategy, "-"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    drop = ("cycle", "leader", "counters", "stats")
    doc = {"steps": [{k: v for k, v in s.items() if k not in drop} for s in snapshots]}
    out = subprocess.run(args, input=json.dumps(doc), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)  # one store each: the leader's work reads no session state
def test_a_returning_broker_is_refilled_by_transfers_within_the_cool_down(
    server: ServerProcess, tmp_path: Path
) -> None:
    trace = steady_trace(tmp_path / "trace.jsonl", NS, len(TOPICS), 250.0)
    c = LocalCluster(
        3,
        store_url=server.url,
        settings=SETTINGS,
        time_scale=SCALE,
        workload=str(trace),
        work_dir=tmp_path,
        broker_args=("--nic-mbps", "100"),
    )
    try:
        c.start()
        leader = c.broker(wait_until(lambda: leader_of(c), 10, "a leader"))
        for i, t in enumerate(TOPICS):
            r = get(lookup_url(c.brokers[i % 3], t), timeout=30)
            assert r.status_code == 200, r.text
        with observed(c):
            returning = next(b for b in c.brokers if b is not leader)
            returning.stop()  # graceful: its bundles are handed over to the others
            others = [b for b in c.brokers if b is not returning]
            wait_until(lambda: len(set().union(*(served_by(b) for b in others))) == 8, 10, "all bundles served")
            returning.start()
            assert read_store(c.store_url, f"/loadbalance/brokers/{returning.broker_id}") is not None
            assert served_by(returning) == set()

            def refilled() -> list[dict[str, object]]:
                return [
                    d
                    for d in decisions(leader)
                    if d["type"] == "unload" and d.get("label") == "Success" and d["destination"] == returning.broker_id
                ]

            moved = wait_until(refilled, 60, "a transfer to the returning broker")
            wait_until(lambda: served_by(returning), 10, "the returning broker serves a bundle")
            time.sleep(1.0)
        logged = decisions(leader)
        cycles = load_data(leader)
    finally:
        c.stop()

    shed = [d for d in logged if d["type"] == "unload" and d.get("strategy") == "TransferShedder"]
    done = [d for d in shed if d["label"] == "Success"]
    assert moved[0]["reason"] in ("Underloaded", "Overloaded")
    assert all(d["broker"] != returning.broker_id for d in done)  # it only receives
    assert all(d["destination"] is not None for d in done)  # transfers: the destination is pre-assigned
    # the cool-downs: a bundle moves at most once per grace period, and a cycle that moves load comes at
    # least the shedding delay after the previous one (the sources' fresh load data must be newer)
    by_bundle: dict[str, list[int]] = {}
    for d in done:
        by_bundle.setdefault(str(d["bundle"]), []).append(int(d["time_ms"]))
    for times in by_bundle.values():
        assert all(b - a > GRACE_MIN * 60_000 for a, b in itertools.pairwise(times))
    started = {int(row["cycle"]): int(row["timestamp"]) for row in cycles}  # each cycle's Pulsar time
    success_cycles = sorted({int(d["tick"]) for d in done})
    for a, b in itertools.pairwise(success_cycles):
        assert started[b] - started[a] >= DELAY_S * 1000, (a, b, started[b] - started[a])
    # the leader's logged inputs, replayed through ``bundlewise shed``, give its decisions back cycle for cycle
    replay = shed_replay(cycles, "TransferShedder", SETTINGS)
    assert len(replay) == len(cycles)
    for step, snap in zip(replay, cycles, strict=True):
        mine = sorted((d["broker"], d["bundle"], d["destination"]) for d in done if d["tick"] == snap["cycle"])
        assert sorted((u["broker"], u["bundle"], u["destination"]) for u in step["unload"]) == mine, snap["cycle"]
    # every cycle before the first transfer waited for the hit count (Skip.HitCount) or had nothing to do
    first = success_cycles[0]
    assert first > 3, "TransferShedder needs more than loadBalancerSheddingConditionHitCountThreshold hits"
    assert any(row.get("counters", {}).get("Skip.HitCount") for row in cycles if row["cycle"] < first)


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_the_owners_split_scheduler_splits_a_hot_bundle_and_keeps_the_children(
    server: ServerProcess, tmp_path: Path
) -> None:
    ns = "hotx/ns"
    trace = steady_trace(tmp_path / "trace.jsonl", ns, 10, 10.0)
    settings = {
        **EXT,
        "defaultNumberOfNamespaceBundles": 1,
        "loadBalancerAutoBundleSplitEnabled": "true",
        "loadBalancerNamespaceBundleMaxTopics": 3,
        "loadBalancerReportUpdateMinIntervalMillis": 1000,
    }
    c = LocalCluster(
        2, store_url=server.url, settings=settings, time_scale=SCALE, workload=str(trace), work_dir=tmp_path
    )
    try:
        c.start()
        topics = [f"persistent://{ns}/topic-{i}" for i in range(10)]
        r = get(lookup_url(c.brokers[1], topics[0]), timeout=30)
        assert r.status_code == 200, r.text
        owner = next(b for b in c.brokers if b.web_url == r.json()["httpUrl"])
        parent = f"{ns}/0x00000000_0xffffffff"
        with observed(c):
            split = wait_until(
                lambda: next((d for d in decisions(owner) if d["type"] == "split"), None), 30, "a split decision"
            )
            # every split cycle (1 min = 1 s) counts a hit; the 4th hit (> threshold 3) splits
            assert split["bundle"] == parent and split["broker"] == owner.broker_id
            assert split["reason"] == "split: Topics (10 topics > 3)"
            assert split["children"] == [f"{ns}/0x00000000_0x7fffffff", f"{ns}/0x7fffffff_0xffffffff"]
            assert split["tick"] >= 4
            stored = read_store(c.store_url, f"/admin/local-policies/{ns}")
            assert stored["bundles"]["boundaries"][:2] == ["0x00000000", "0x7fffffff"]
            wait_until(lambda: set(split["children"]) <= served_by(owner), 10, "children owned in place")
        assert all(d["type"] != "split" for d in decisions(next(b for b in c.brokers if b is not owner)))
        metrics = get(f"{owner.web_url}/metrics").text
        line = next(x for x in metrics.splitlines() if x.startswith("pulsar_lb_bundles_split_total{"))
        assert int(float(line.rsplit(" ", 1)[1])) >= 1
    finally:
        c.stop()
