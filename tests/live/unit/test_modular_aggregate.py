"""The modular load-data aggregator (``ModularLoadManagerImpl#updateAll``), case by case, on brokers in
this process (``inproc``): where a bundle's data starts, dead brokers' and unreported bundles' nodes,
and preallocations."""

from __future__ import annotations

import asyncio
from pathlib import Path

from inproc import cluster, read
from live_support import run
from test_leaders import BUNDLES, aggregated, modular, one_broker_holding_everything, reported

from bundlewise.live.store import JSON, layout
from bundlewise.model.bundles import Bundle
from bundlewise.model.load import NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES, BundleData, NamespaceBundleStats


def test_a_bundles_data_starts_from_its_node_else_its_resource_quota_else_the_default(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            broker = await c.start(8081)
            data = modular(broker).data
            stored = BundleData.default(NamespaceBundleStats(msgRateIn=7.0, msgThroughputIn=700.0))
            await broker.store.put(layout.bundle_data(BUNDLES[0]), JSON.encode(stored.to_json()))
            quota = {"msgRateIn": 12.0, "msgRateOut": 34.0, "bandwidthIn": 5600.0, "bandwidthOut": 7800.0}
            await broker.store.put(layout.resource_quota(BUNDLES[1]), JSON.encode(quota))

            assert (await data.stored_bundle_data(BUNDLES[0])).to_json() == stored.to_json()
            from_quota = await data.stored_bundle_data(BUNDLES[1])
            for window, samples in (
                (from_quota.shortTermData, NUM_SHORT_SAMPLES),
                (from_quota.longTermData, NUM_LONG_SAMPLES),
            ):
                assert (window.msgRateIn, window.msgRateOut, window.msgThroughputIn, window.msgThroughputOut) == (
                    12.0,
                    34.0,
                    5600.0,
                    7800.0,
                )
                assert window.numSamples == samples
            assert (await data.stored_bundle_data(BUNDLES[2])).to_json() == BundleData.default().to_json()

    run(body())


def test_the_leader_deletes_the_time_average_of_a_broker_that_left(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            await leader.leader_work.write_bundle_data()
            assert await hot.store.exists(layout.broker_time_average("127.0.0.1:8082"))
            await c.stop(idle)
            await asyncio.sleep(0.05)
            await leader.data.update_all()
            assert leader.data.listed == ["127.0.0.1:8081"] and sorted(leader.data.load.brokers) == ["127.0.0.1:8081"]
            assert not await hot.store.exists(layout.broker_time_average("127.0.0.1:8082"))
            assert await hot.store.exists(layout.broker_time_average("127.0.0.1:8081"))

    run(body())


def test_the_leader_deletes_the_data_of_a_bundle_no_broker_reports_any_more(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            await leader.leader_work.write_bundle_data()
            assert await read(hot.store, layout.bundle_data(BUNDLES[3])) is not None
            await hot.namespace.unload(Bundle.parse(BUNDLES[3]), None, False)
            await reported(hot)
            await leader.data.update_all()
            assert BUNDLES[3] not in leader.data.load.bundleData
            assert await hot.store.get(layout.bundle_data(BUNDLES[3])) is None
            for kept in BUNDLES[:3]:
                assert await hot.store.exists(layout.bundle_data(kept))

    run(body())


def test_a_preallocation_to_a_broker_that_left_is_reaped(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            hot, idle = await one_broker_holding_everything(c)
            leader = await aggregated(hot, idle)
            await hot.namespace.unload(Bundle.parse(BUNDLES[0]), None, False)
            assert await leader.select_broker(BUNDLES[0]) == "127.0.0.1:8082"  # the idle broker
            assert leader.data.preallocated == {BUNDLES[0]: "127.0.0.1:8082"}
            assert await leader.select_broker(BUNDLES[0]) == "127.0.0.1:8082"  # the preallocation answers again
            await c.stop(idle)
            await asyncio.sleep(0.05)
            await leader.data.update_all()
            assert leader.data.preallocated == {}

    run(body())
