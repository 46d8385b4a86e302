"""Both leaders' periodic work, one step at a time, on brokers in this process (``inproc``).

Each test starts the brokers, lets their traffic be reported, and then runs ONE step of the leader's
work by hand (``ModularLoadManagerImpl#doLoadShedding``, ``#writeBundleDataOnZooKeeper``,
``#checkNamespaceBundleSplit``; the extensible ``UnloadScheduler#execute`` and ``SplitScheduler#execute``)
instead of waiting for its period: what it decides, logs and carries out through the admin client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from inproc import EXTENSIBLE, Cluster, cluster, create_namespace, read
from live_support import eventually, run

from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.live.broker.modular.manager import ModularLoadManager
from bundlewise.live.broker.service import Broker
from bundlewise.live.store import layout
from bundlewise.model.bundles import Bundle
from bundlewise.traffic.workload import GeneratedWorkload, NamespaceSpec, WorkloadSpec

NS = "public/default"
QUARTERS = [0, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF]
BUNDLES = [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000", f"{NS}/0x80000000_0xc0000000"]
BUNDLES.append(f"{NS}/0xc0000000_0xffffffff")
# 40 topics at 40000 msg/s of 1 KiB in and out: 41 MB/s each way, two thirds of a 500 Mbit/s NIC
WORKLOAD = GeneratedWorkload([NamespaceSpec(NS, topics=40, msg_rate=40000.0)], WorkloadSpec(), seed=1)


def modular(b: Broker) -> ModularLoadManager:
    assert isinstance(b.manager, ModularLoadManager)
    return b.manager


def extensible(b: Broker) -> ExtensibleLoadManager:
    assert isinstance(b.manager, ExtensibleLoadManager)
    return b.manager


async def one_broker_holding_everything(c: Cluster) -> tuple[Broker, Broker]:
    """Broker 8081 (the leader) owns the namespace's four bundles and carries all the traffic; 8082 is idle."""
    hot = await c.start(8081, workload=WORKLOAD, nic_mbps=500.0)
    await create_namespace(hot.store, NS, QUARTERS)
    for bundle in BUNDLES:
        await hot.namespace.find(bundle, authoritative=True)
    idle = await c.start(8082, workload=WORKLOAD, nic_mbps=500.0)
    assert sorted(hot.namespace.served()) == BUNDLES and idle.namespace.served() == []
    return hot, idle


# -- modular ---------------------------------------------------------------------------------------


async def reported(*brokers: Broker) -> None:
    """Each broker writes its load report now, and the notifications reach every broker."""
    for b in brokers:
        await modular(b).reporter.write(force=True)
    await asyncio.sleep(0.05)


async def aggregated(hot: Broker, idle: Broker) -> ModularLoadManager:
    """Both brokers reported and the leader's load data read them; the leader's manager."""
    await reported(hot, idle)
    leader = modular(hot)
    await leader.data.update_all()
    return leader


def test_modular_shedding_step_unloads_from_the_overloaded_broker_and_logs_each_unload(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadBalancerSheddingEnabled": "true"}) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            assert sorted(leader.data.load.brokers) == ["127.0.0.1:8081", "127.0.0.1:8082"]
            await leader.leader_work.shed()
            lines = c.decisions(hot)
            # 65.54 % bandwidth in against an average of 34.02 % + 10 %: offload at least 20.72 MB/s, and the
            # biggest bundle (21.48 MB/s) is enough; it goes to the idle broker
            unloads = [d for d in lines if d["type"] == "unload"]
            assert [(d["bundle"], d["broker"], d["destination"], d["label"]) for d in unloads] == [
                (f"{NS}/0x80000000_0xc0000000", "127.0.0.1:8081", "127.0.0.1:8082", "Success")
            ]
            assert "offload at least 20.72 MB/s" in unloads[0]["reason"]
            assert (leader.leader_work.unload_bundle_total, leader.leader_work.unload_broker_total) == (1, 1)
            assert f"{NS}/0x80000000_0xc0000000" not in hot.namespace.served()
            assert await read(hot.store, layout.ownership(f"{NS}/0x80000000_0xc0000000")) is None
            assert await leader.select_broker(f"{NS}/0x80000000_0xc0000000") == "127.0.0.1:8082"  # the affinity

    run(body())


def test_modular_shedding_step_does_nothing_on_a_follower(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadBalancerSheddingEnabled": "true"}) as c:
            hot, idle = await one_broker_holding_everything(c)
            follower = modular(idle)
            await follower.data.update_all()
            await follower.leader_work.shed()
            assert follower.leader_work.cycles == 0 and c.decisions(idle) == []
            assert sorted(hot.namespace.served()) == BUNDLES

    run(body())


def test_modular_bundle_data_step_writes_the_top_bundles_and_every_brokers_time_averages(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            await leader.leader_work.write_bundle_data()
            written = await hot.store.get_children(layout.BUNDLE_DATA_ROOT + "/" + NS)
            assert sorted(f"{NS}/{r}" for r in written) == BUNDLES
            for broker in ("127.0.0.1:8081", "127.0.0.1:8082"):
                assert await hot.store.exists(layout.broker_time_average(broker))

    run(body())


# -- extensible ------------------------------------------------------------------------------------


def test_modular_split_step_hands_each_childs_measured_load_to_a_strategy_that_places_by_load(
    tmp_path: Path,
) -> None:
    """``#checkNamespaceBundleSplit`` with BalancedPlanShedder: the owner's split answer carries each child's load
    summed from its topics (``X-Bundlewise-Split-Children``) and the leader hands it to the strategy, which
    places the children by it.  Every child's measure adds up to its parent's reported stats."""

    async def body() -> None:
        settings = {
            "loadBalancerAutoBundleSplitEnabled": "true",
            "loadBalancerNamespaceBundleMaxTopics": 5,
            "loadBalancerLoadSheddingStrategy": "BalancedPlanShedder",
        }
        async with cluster(tmp_path, settings) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            parents = dict(leader.data.load.brokers["127.0.0.1:8081"].localData.lastStats)
            strategy = leader.leader_work.family.shedder
            assert isinstance(strategy, BalancedPlanShedder)
            await leader.leader_work.check_split()
            assert leader.leader_work.split_total == 4
            measured = {child: stats for child, (stats, _) in strategy.measured.items()}
            assert len(measured) == 8
            for parent in BUNDLES:
                kids = [m for child, m in measured.items() if Bundle.parse(child).overlaps(Bundle.parse(parent))]
                assert len(kids) == 2
                assert sum(k.topics for k in kids) == parents[parent].topics  # 9 or 11 of the 40 topics
                assert all(k.topics > 0 for k in kids)
                rate = sum(k.msgRateIn for k in kids)
                assert rate == pytest.approx(parents[parent].msgRateIn, rel=1e-9)
                tput = sum(k.msgThroughputOut for k in kids)
                assert tput == pytest.approx(parents[parent].msgThroughputOut, rel=1e-9)

    run(body())


def test_extensible_unload_step_transfers_from_the_overloaded_broker_after_the_hit_count(tmp_path: Path) -> None:
    """TransferShedder acts once more than ``loadBalancerSheddingConditionHitCountThreshold`` (3) consecutive
    cycles found the broker overloaded: the first three are ``Skip.HitCount``, the fourth transfers.

    The top bundles are computed only from bundle stats newer than the last computed (a forced report re-pushes
    the cached top-k, ``TopBundleLoadDataReporter#reportAsync``): the stats period is 1 s and the reports wait
    for the next one, so the top-k holds the bundles the hot broker owns by now."""

    async def body() -> None:
        settings = {
            "loadManagerClassName": EXTENSIBLE,
            "loadBalancerSheddingEnabled": "true",
            "statsUpdateFrequencyInSecs": "1",
        }
        async with cluster(tmp_path, settings) as c:
            hot, idle = await one_broker_holding_everything(c)
            await asyncio.sleep(1.0)
            for b in (hot, idle):
                await extensible(b).reporters.report(force=True)
            leader = extensible(hot)
            await eventually(lambda: len(leader.broker_load.items()) == 2, 5, "both brokers' load data")
            for _ in range(4):
                await leader.leader_work.shed()
            cycles = [json.loads(line) for line in (tmp_path / "load-data-8081.jsonl").read_text().splitlines()]
            assert [cycle["counters"] for cycle in cycles[:3]] == [{"Skip.HitCount": 1}] * 3
            assert cycles[3]["counters"] == {"Success.Overloaded": 2}
            done = [d for d in c.decisions(hot) if d["type"] == "unload" and d["label"] == "Success"]
            moved = {d["bundle"] for d in done}
            assert moved == {BUNDLES[0], BUNDLES[1]} and leader.leader_work.unload_bundle_total == 2
            assert {(d["broker"], d["destination"], d["reason"]) for d in done} == {
                ("127.0.0.1:8081", "127.0.0.1:8082", "Overloaded")
            }
            await eventually(lambda: moved <= set(idle.namespace.served()), 10, "the transfers to the idle broker")
            assert moved.isdisjoint(hot.namespace.served())

    run(body())


def test_extensible_split_step_splits_a_bundle_over_the_topic_limit_after_the_hit_count(tmp_path: Path) -> None:
    """Each broker's split scheduler splits a bundle it owns with more than
    ``loadBalancerNamespaceBundleMaxTopics`` topics after more than
    ``loadBalancerNamespaceBundleSplitConditionHitCountThreshold`` (3) consecutive hits."""

    async def body() -> None:
        settings = {
            "loadManagerClassName": EXTENSIBLE,
            "loadBalancerAutoBundleSplitEnabled": "true",
            "loadBalancerNamespaceBundleMaxTopics": 5,
        }
        async with cluster(tmp_path, settings) as c:
            hot, _ = await one_broker_holding_everything(c)
            scheduler = extensible(hot).split_scheduler
            totals = []
            for _ in range(4):
                await scheduler.execute()
                totals.append(scheduler.split_total)
            assert totals == [0, 0, 0, 4]  # every quarter holds 9 or 11 of the 40 topics
            splits = [d for d in c.decisions(hot) if d["type"] == "split"]
            assert [(d["bundle"], d["reason"]) for d in splits] == [
                (BUNDLES[0], "split: Topics (9 topics > 5)"),
                (BUNDLES[1], "split: Topics (9 topics > 5)"),
                (BUNDLES[2], "split: Topics (11 topics > 5)"),
                (BUNDLES[3], "split: Topics (11 topics > 5)"),
            ]
            stored = await read(hot.store, layout.local_policies(NS))
            assert stored["bundles"]["boundaries"] == [
                "0x00000000", "0x20000000", "0x40000000", "0x60000000", "0x80000000",
                "0xa0000000", "0xc0000000", "0xdfffffff", "0xffffffff",
            ]  # fmt: skip

    run(body())


def test_extensible_unload_step_with_bundlewise_s_own_strategy_transfers_to_its_planned_destination(
    tmp_path: Path,
) -> None:
    """``loadBalancerLoadSheddingStrategy = BalancedTransferShedder`` on the extensible manager: the leader runs
    bundlewise's plan (not TransferShedder) over the broker-load and top-bundles stores and carries each move out
    as a transfer to the planned destination, whose reason names the strategy, the resource and the gain."""

    async def body() -> None:
        settings = {
            "loadManagerClassName": EXTENSIBLE,
            "loadBalancerSheddingEnabled": "true",
            "loadBalancerLoadSheddingStrategy": "BalancedTransferShedder",
            "statsUpdateFrequencyInSecs": "1",
        }
        async with cluster(tmp_path, settings) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = extensible(hot)
            assert leader.leader_work.family.name == "BalancedTransferShedder"
            await asyncio.sleep(1.0)
            for b in (hot, idle):
                await extensible(b).reporters.report(force=True)
            await eventually(lambda: len(leader.broker_load.items()) == 2, 5, "both brokers' load data")
            for _ in range(4):
                await leader.leader_work.shed()
                if leader.leader_work.unload_bundle_total:
                    break
            done = [d for d in c.decisions(hot) if d["type"] == "unload" and d["label"] == "Success"]
            assert done and leader.leader_work.unload_bundle_total == len(done)
            assert {(d["broker"], d["destination"]) for d in done} == {("127.0.0.1:8081", "127.0.0.1:8082")}
            assert all(d["reason"].startswith("BalancedTransferShedder: 127.0.0.1:8081 at ") for d in done)
            assert all(" (bandwidthIn) vs fleet mean " in d["reason"] for d in done)  # the binding resource: NIC in
            moved = {d["bundle"] for d in done}
            assert len(moved) == 2  # half of four equal bundles: balance, not everything onto the idle broker
            await eventually(lambda: moved <= set(idle.namespace.served()), 10, "the transfers to the idle broker")
            assert moved.isdisjoint(hot.namespace.served())

    run(body())
