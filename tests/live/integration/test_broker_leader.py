"""The modular leader on real broker processes: election and failover, the shedding cycle moving load on a
skewed cluster (decisions equal to ``bundlewise shed`` on the same LoadData), the split check."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    SESSION_MS,
    cluster,
    decisions,
    get,
    leader_of,
    load_data,
    lookup,
    owned,
    read_store,
    round_robin,
    steady_trace,
    wait_until,
)

from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.servers import ServerProcess

TOPICS = [f"persistent://skew/ns/topic-{i}" for i in range(32)]


@pytest.mark.parametrize("backend", ["zk"], indirect=True)  # etcd's: test_broker_faults (a new leader's first cycle)
def test_leader_failover_after_sigkill(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 3, tmp_path) as c:
        first = wait_until(lambda: leader_of(c), 10, "a leader")
        assert read_store(c.store_url, "/loadbalance/leader") == {"brokerId": first, "serviceUrl": f"http://{first}"}
        killed_at = time.monotonic()
        c.broker(first).kill()
        second = wait_until(
            lambda: (x := leader_of(c)) not in (None, first) and x, SESSION_MS / 1000 + 5, "a new leader"
        )
        assert time.monotonic() - killed_at < SESSION_MS / 1000 + 5
        assert second in {b.broker_id for b in c.brokers if b.is_running}
        for b in c.brokers:
            if b.is_running:
                assert get(f"{b.web_url}/admin/v2/brokers/leaderBroker").json()["brokerId"] == second
        wait_until(
            lambda: first not in get(f"{c.broker(second).web_url}/admin/v2/brokers").json(), 5, "dead broker gone"
        )


@contextmanager
def clients(c: LocalCluster, topics: list[str]) -> Iterator[list[int]]:
    """Pulsar clients: keep looking every topic up (through any live broker), so unloaded bundles get owned again."""
    count = [0]

    def ask(b: BrokerProcess, t: str) -> None:
        try:
            lookup(b, t, tries=5)
            count[0] += 1
        except AssertionError:
            pass

    with round_robin(c, topics, ask, pause=0.2):
        yield count


SKEW = {
    "metadataStoreSessionTimeoutMillis": SESSION_MS,
    "defaultNumberOfNamespaceBundles": 8,
    "loadBalancerSheddingEnabled": "true",
    "loadBalancerAutoBundleSplitEnabled": "false",
    "loadBalancerBundleUnloadMinThroughputThreshold": 0,
    "loadBalancerReportUpdateMinIntervalMillis": 1000,
}


FAILED_REQUEST = "the unload request failed"


def carried_out(logged: list[dict[str, Any]], cycle: int) -> list[dict[str, Any]]:
    """The unloads cycle ``cycle`` decided, as logged once their requests were answered: done, or refused."""
    return [
        d
        for d in logged
        if d["type"] == "unload"
        and d["tick"] == cycle
        and (d.get("label") == "Success" or (d.get("label") == "Skip" and d.get("reason") == FAILED_REQUEST))
    ]


def shed_replay(snapshots: list[dict[str, Any]], strategy: str, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """``bundlewise shed`` on the leader's logged LoadData, one step per cycle."""
    args = [sys.executable, "-m", "bundlewise.cli.main", "shed", "--strategy", strategy, "-"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    doc = {"steps": [{k: v for k, v in s.items() if k != "cycle"} for s in snapshots]}
    out = subprocess.run(args, input=json.dumps(doc), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize(
    ("backend", "strategy", "extra"),
    [  # each strategy on one store (the stores' sessions and elections have tests of their own)
        ("zk", "ThresholdShedder", {}),
        ("etcd", "AvgShedder", {"loadBalancerLoadPlacementStrategy": "AvgShedder"}),
    ],
    indirect=["backend"],
)
def test_shedding_moves_load_off_a_skewed_broker_as_bundlewise_shed_decides(
    server: ServerProcess, tmp_path: Path, strategy: str, extra: dict[str, Any]
) -> None:
    trace = steady_trace(tmp_path / "trace.jsonl", "skew/ns", 32, 250.0)
    settings = {**SKEW, "loadBalancerLoadSheddingStrategy": strategy, **extra}
    c = LocalCluster(
        1,
        store_url=server.url,
        settings=settings,
        time_scale=60,
        workload=str(trace),
        work_dir=tmp_path,
        broker_args=("--nic-mbps", "100"),
    )
    try:
        c.start()
        hot = c.brokers[0]
        for t in TOPICS:
            lookup(hot, t)
        assert len(owned(hot)) == 8
        c.add_broker()
        c.add_broker()
        with clients(c, TOPICS):
            wait_until(
                lambda: any(d["type"] == "unload" and d.get("label") == "Success" for d in decisions(hot)),
                60,
                "the leader's first unload",
            )
            wait_until(lambda: any(owned(b) for b in c.brokers[1:]), 30, "a bundle owned by another broker")
        time.sleep(1.5)
        in_store = {b.broker_id: read_store(c.store_url, f"/loadbalance/brokers/{b.broker_id}") for b in c.brokers}
        cycles = load_data(hot)
        assert cycles, "the leader logged no shedding input"
        replay = shed_replay(cycles, strategy, settings)
        assert len(replay) == len(cycles)
        # the leader keeps running until every cycle compared has carried out all it decided (a cycle's
        # input is logged before its unloads are requested, each decision once its request is answered)
        deadline = time.monotonic() + 30
        while True:
            logged = decisions(hot)
            done = all(
                len(carried_out(logged, snap["cycle"])) >= len(step["unload"])
                for step, snap in zip(replay, cycles, strict=True)
            )
            if done or time.monotonic() > deadline:  # a cycle still short after 30 s fails below, with its diff
                break
            time.sleep(0.2)
    finally:
        c.stop()
    for step, snap in zip(replay, cycles, strict=True):
        cycle = snap["cycle"]
        mine = carried_out(logged, cycle)
        # the same unloads, in the same order; a request the cluster refused (the bundle moved on under
        # the clients' lookups) is logged as a failed Skip without a destination
        assert [(u["broker"], u["bundle"]) for u in step["unload"]] == [(d["broker"], d["bundle"]) for d in mine], (
            f"cycle {cycle}"
        )
        for u, d in zip(step["unload"], mine, strict=True):
            assert d["destination"] == (u["destination"] if d["label"] == "Success" else None), f"cycle {cycle}"
    moved = [(u["bundle"], u["destination"]) for s in replay for u in s["unload"]]
    assert moved and all(d != hot.broker_id for _, d in moved)
    # the reports the leader decided on are the brokers' reports in the store: each report read back
    # equals, field for field, the one every cycle that saw its version decided on
    matched = 0
    for snap in cycles:
        for broker, report in snap["brokers"].items():
            stored = in_store[broker]
            if stored is not None and stored["lastUpdate"] == report["lastUpdate"]:
                assert {k: stored[k] for k in report if k in stored} == {k: report[k] for k in report if k in stored}
                matched += 1
    assert matched > 0


@pytest.mark.parametrize("backend", ["zk"], indirect=True)  # the split check reads no session state
def test_split_check_splits_a_hot_bundle(server: ServerProcess, tmp_path: Path) -> None:
    trace = steady_trace(tmp_path / "trace.jsonl", "hot/ns", 10, 10.0)
    settings = {
        "metadataStoreSessionTimeoutMillis": SESSION_MS,
        "defaultNumberOfNamespaceBundles": 1,
        "loadBalancerSheddingEnabled": "false",
        "loadBalancerAutoBundleSplitEnabled": "true",
        "loadBalancerNamespaceBundleMaxTopics": 3,
        "loadBalancerReportUpdateMinIntervalMillis": 1000,
    }
    c = LocalCluster(2, store_url=server.url, settings=settings, time_scale=60, workload=str(trace), work_dir=tmp_path)
    try:
        c.start()
        topics = [f"persistent://hot/ns/topic-{i}" for i in range(10)]
        lookup(c.brokers[0], topics[0])
        leader = c.broker(wait_until(lambda: leader_of(c), 10, "a leader"))
        split = wait_until(
            lambda: next((d for d in decisions(leader) if d["type"] == "split"), None), 30, "a split decision"
        )
        assert split["bundle"] == "hot/ns/0x00000000_0xffffffff"
        assert split["reason"].startswith("split: ")
        stored = read_store(c.store_url, "/admin/local-policies/hot/ns")
        assert stored["bundles"]["numBundles"] >= 2
        assert "0x7fffffff" in stored["bundles"]["boundaries"]  # range_equally_divide's cut of the full range
        assert split["reason"] == "split: Topics (10 topics > 3) (children unloaded)"
        metrics = get(f"{leader.web_url}/metrics").text
        line = next(x for x in metrics.splitlines() if x.startswith("pulsar_lb_bundles_split_total{"))
        assert line.startswith('pulsar_lb_bundles_split_total{cluster="standalone", metric="bundlesSplit"} ')
        assert int(line.rsplit(" ", 1)[1]) >= 1
    finally:
        c.stop()
