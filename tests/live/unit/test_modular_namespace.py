"""The modular namespace service's rules, case by case, on brokers in this process (``inproc``).

Lookup (``NamespaceService#findBrokerServiceUrl``, ``#searchForCandidateBroker``), unload
(``NamespacesBase#internalUnloadNamespaceBundleAsync``, ``OwnedBundle#handleUnloadRequest``) and the
split's retry rule (``NamespaceService#splitAndOwnBundle``: 7 tries, 100 ms apart).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from inproc import Cluster, cluster, create_namespace, read
from live_support import run

from bundlewise.live.broker import values
from bundlewise.live.broker.modular.namespace import SPLIT_RETRY_DELAY, SPLIT_RETRY_LIMIT, ModularNamespaceService
from bundlewise.live.broker.outcomes import Connect, Redirect, RedirectError, RestError, ServerError
from bundlewise.live.broker.service import Broker
from bundlewise.live.store import GetResult, MetadataStore, layout
from bundlewise.model.bundles import Bundle

NS = "public/default"
HALVES = [0, 0x80000000, 0xFFFFFFFF]
LOW = f"{NS}/0x00000000_0x80000000"
HIGH = f"{NS}/0x80000000_0xffffffff"


def service(b: Broker) -> ModularNamespaceService:
    ns = b.namespace
    assert isinstance(ns, ModularNamespaceService)
    return ns


async def two_brokers(c: Cluster) -> tuple[Broker, Broker]:
    """A leader (the first to start) and a follower, both registered and known to each other."""
    leader = await c.start(8081)
    follower = await c.start(8082)
    assert leader.manager.is_leader() and not follower.manager.is_leader()
    for b in (leader, follower):
        await service(b).manager.list_brokers()
    await wait_for(lambda: sorted(follower.manager.active_brokers()) == ["127.0.0.1:8081", "127.0.0.1:8082"])
    await wait_for(lambda: sorted(leader.manager.active_brokers()) == ["127.0.0.1:8081", "127.0.0.1:8082"])
    await create_namespace(leader.store, NS, HALVES)
    return leader, follower


async def one_broker(c: Cluster, owning: str | None = None) -> tuple[Broker, ModularNamespaceService]:
    """The leader 8081 alone, with the namespace in halves; owning ``owning`` when given."""
    leader = await c.start(8081)
    await create_namespace(leader.store, NS, HALVES)
    if owning is not None:
        await service(leader).find(owning, authoritative=False)
    return leader, service(leader)


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


# -- lookup ----------------------------------------------------------------------------------------


def test_the_leader_assigns_an_unowned_bundle_and_a_second_lookup_is_answered_from_the_cache(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c)
            answer = await ns.find(LOW, authoritative=False)
            assert answer == Connect("pulsar://127.0.0.1:6650", "http://127.0.0.1:8081")
            assert await read(leader.store, layout.ownership(LOW)) == values.namespace_ephemeral_data(leader.identity)
            assert await ns.find(LOW, authoritative=False) == answer
            assert (ns.counters.answers, ns.counters.redirects, ns.counters.failures) == (2, 0, 0)
            assert ns.served() == [LOW]

    run(body())


def test_a_follower_forwards_an_unowned_bundle_to_the_leader_not_authoritatively(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            _, follower = await two_brokers(c)
            answer = await service(follower).find(LOW, authoritative=False)
            assert answer == Redirect("http://127.0.0.1:8081", False)
            assert await follower.store.get(layout.ownership(LOW)) is None
            assert service(follower).counters.redirects == 1

    run(body())


def test_an_authoritative_lookup_takes_the_bundle_on_the_broker_it_reaches(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            _, follower = await two_brokers(c)
            answer = await service(follower).find(LOW, authoritative=True)
            assert answer == Connect("pulsar://127.0.0.1:6650", "http://127.0.0.1:8082")
            owner = await read(follower.store, layout.ownership(LOW))
            assert owner["httpUrl"] == "http://127.0.0.1:8082"

    run(body())


def test_an_owned_bundle_is_answered_with_its_owner_by_every_broker(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, follower = await two_brokers(c)
            await service(follower).find(HIGH, authoritative=True)
            answer = await service(leader).find(HIGH, authoritative=False)
            assert answer == Connect("pulsar://127.0.0.1:6650", "http://127.0.0.1:8082")

    run(body())


def test_a_read_only_lookup_of_an_unowned_bundle_answers_nothing_and_assigns_nothing(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader = await c.start(8081)
            await create_namespace(leader.store, NS, HALVES)
            assert await service(leader).find(LOW, authoritative=False, read_only=True) is None
            assert await leader.store.get(layout.ownership(LOW)) is None
            assert service(leader).counters.answers == 0

    run(body())


def test_while_the_leader_is_not_registered_a_broker_decides_the_lookup_itself(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            gone = await c.client()
            await gone.put(layout.LEADER, b'{"brokerId":"gone:1","serviceUrl":"http://gone:1"}', -1)
            broker = await c.start(8082)
            assert not broker.manager.is_leader() and broker.manager.leader_id() == "gone:1"
            await create_namespace(broker.store, NS, HALVES)
            answer = await service(broker).find(LOW, authoritative=False)
            assert answer == Connect("pulsar://127.0.0.1:6650", "http://127.0.0.1:8082")
            await gone.close()

    run(body())


def test_a_bundle_being_unloaded_fails_the_lookup(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            _, ns = await one_broker(c, owning=LOW)
            assert ns.ownership.disable(LOW)  # the first step of an unload
            with pytest.raises(ServerError, match=f"Namespace bundle {LOW} is being unloaded"):
                await ns.find(LOW, authoritative=False)
            assert ns.counters.failures == 1

    run(body())


# -- unload ----------------------------------------------------------------------------------------


def test_unload_of_a_bundle_nobody_owns_does_nothing_and_a_missing_namespace_is_404(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader = await c.start(8081)
            ns = service(leader)
            with pytest.raises(RestError) as missing:
                await ns.unload(Bundle.parse(LOW), None, False)
            assert (missing.value.status, missing.value.reason) == (404, "Namespace does not exist")
            await create_namespace(leader.store, NS, HALVES)
            with pytest.raises(RestError) as not_current:
                await ns.unload(Bundle.parse(f"{NS}/0x00000000_0x40000000"), None, False)
            assert not_current.value.status == 404
            await ns.unload(Bundle.parse(LOW), None, False)
            assert await leader.store.get(layout.ownership(LOW)) is None

    run(body())


def test_the_owner_unloads_once_and_a_second_unload_of_the_same_ownership_fails(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            await ns.unload(Bundle.parse(LOW), None, False)
            assert await leader.store.get(layout.ownership(LOW)) is None and ns.served() == []
            with pytest.raises(ServerError, match="is not currently owned"):
                await ns.unload_owned(LOW)

    run(body())


def test_a_non_owner_redirects_the_unload_to_the_owner_authoritatively_iff_it_leads(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, follower = await two_brokers(c)
            await service(follower).find(LOW, authoritative=True)
            with pytest.raises(RedirectError) as on_leader:
                await service(leader).unload(Bundle.parse(LOW), None, False)
            assert on_leader.value.redirect == Redirect("http://127.0.0.1:8082", True, drop=("destinationBroker",))
            await service(leader).find(HIGH, authoritative=True)
            with pytest.raises(RedirectError) as on_follower:
                await service(follower).unload(Bundle.parse(HIGH), None, False)
            assert on_follower.value.redirect == Redirect("http://127.0.0.1:8081", False, drop=("destinationBroker",))

    run(body())


def test_an_unload_with_a_destination_needs_a_registered_broker_and_the_leader_records_the_affinity(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, follower = await two_brokers(c)
            await service(leader).find(LOW, authoritative=True)
            with pytest.raises(RestError) as unknown:
                await service(leader).unload(Bundle.parse(LOW), "http://127.0.0.1:9999", False)
            assert (unknown.value.status, unknown.value.reason) == (
                409,
                "Destination broker 127.0.0.1:9999 is not active",
            )
            with pytest.raises(RedirectError) as to_leader:
                await service(follower).unload(Bundle.parse(LOW), "127.0.0.1:8082", False)
            assert to_leader.value.redirect == Redirect("http://127.0.0.1:8081", False)
            await service(leader).unload(Bundle.parse(LOW), "http://127.0.0.1:8082", False)
            assert await leader.manager.select_broker(LOW) == "127.0.0.1:8082"  # the affinity, consumed once

    run(body())


# -- split -----------------------------------------------------------------------------------------


def after_each_read(store: MetadataStore, path: str, action: Callable[[], Awaitable[None]]) -> None:
    """Run ``action`` right after every read of ``path`` through ``store`` (a forced interleaving)."""
    original = store.get

    async def read(p: str) -> GetResult | None:
        got = await original(p)
        if p == path:
            await action()
        return got

    store.get = read  # type: ignore[method-assign]


def test_a_split_that_lost_the_race_for_the_bundles_retries_after_100_ms_and_lands(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            await leader.bundles.get(NS)  # cached at version 0
            other = await c.client()
            policies = await other.get(layout.local_policies(NS))
            assert policies is not None
            await other.put(layout.local_policies(NS), policies.value, 0)  # another writer: version 1
            started = time.monotonic()
            children = await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            assert time.monotonic() - started >= SPLIT_RETRY_DELAY
            assert [b.name for b in children or []] == [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]
            stored = await read(other, layout.local_policies(NS))
            assert stored["bundles"]["boundaries"] == ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"]
            assert sorted(ns.served()) == [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]
            await other.close()

    run(body())


def test_a_split_that_loses_the_race_seven_times_fails_and_leaves_the_bundles_alone(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            other = await c.client()
            path = layout.local_policies(NS)
            writes = 0

            async def another_writer() -> None:
                nonlocal writes
                got = await other.get(path)
                assert got is not None
                await other.put(path, got.value, got.stat.version)
                writes += 1

            after_each_read(leader.store, path, another_writer)
            with pytest.raises(ServerError, match=f"the bundles changed {SPLIT_RETRY_LIMIT} times in a row"):
                await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            assert SPLIT_RETRY_LIMIT == 7 and writes >= SPLIT_RETRY_LIMIT
            stored = await read(other, path)
            assert stored["bundles"]["boundaries"] == ["0x00000000", "0x80000000", "0xffffffff"]
            # the parent is still owned and served; the children's locks taken by the attempts stay taken
            assert sorted(ns.served()) == [f"{NS}/0x00000000_0x40000000", LOW, f"{NS}/0x40000000_0x80000000"]
            await other.close()

    run(body())


def test_an_unload_racing_the_owners_split_is_refused_until_the_boundaries_are_committed(tmp_path: Path) -> None:
    # issue 23 item 1: the parent must stay owned until the split's boundary write lands
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            refusals: list[str] = []

            async def unload_now() -> None:
                try:
                    await ns.unload_owned(LOW)  # the owner's unload path (after the redirect)
                except ServerError as e:
                    refusals.append(str(e))

            after_each_read(leader.store, layout.local_policies(NS), unload_now)
            leader.bundles.invalidate(NS)  # the split reads the boundaries from the store
            children = await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            assert refusals and refusals[0] == f"Bundle {LOW} is being split; unload it after the split"
            assert [b.name for b in children or []] == [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]
            assert sorted(ns.served()) == [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]
            assert await leader.store.get(layout.ownership(LOW)) is None

    run(body())


def test_a_split_that_lost_its_parent_aborts_writes_nothing_and_releases_the_children(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)

            async def lose_parent() -> None:
                await ns.ownership.release(LOW)

            after_each_read(leader.store, layout.local_policies(NS), lose_parent)
            leader.bundles.invalidate(NS)  # the split reads the boundaries from the store
            with pytest.raises(
                ServerError, match=f"Failed to split {LOW}: the bundle was unloaded or lost by this broker"
            ):
                await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            stored = await read(leader.store, layout.local_policies(NS))
            assert stored["bundles"]["boundaries"] == ["0x00000000", "0x80000000", "0xffffffff"]
            assert ns.served() == []

    run(body())


def test_an_assignment_of_a_bundle_the_boundaries_no_longer_contain_answers_404(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            with pytest.raises(RestError, match=f"Namespace bundle {LOW} not found"):
                await ns.find(LOW, authoritative=False)
            assert await leader.store.get(layout.ownership(LOW)) is None
            assert LOW not in ns.served()

    run(body())


def test_a_bundle_the_committed_boundaries_no_longer_contain_is_dropped_at_once(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c, owning=LOW)
            await ns.find(HIGH, authoritative=False)
            assert sorted(ns.served()) == [LOW, HIGH]
            # a split of LOW committed by another broker (this one still holds LOW): the boundaries move on
            await create_namespace(leader.store, NS, [0, 0x40000000, 0x80000000, 0xFFFFFFFF])
            await wait_for(lambda: LOW not in ns.served())
            assert ns.served() == [HIGH]  # still contained: kept
            assert await leader.store.get(layout.ownership(LOW)) is None
            assert await ns.drop_outside(NS) == []

    run(body())


def test_the_owners_own_split_keeps_its_children_while_the_boundaries_change(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            _, ns = await one_broker(c, owning=LOW)
            children = await ns.split_and_own(Bundle.parse(LOW), "range_equally_divide", None, False)
            assert children is not None
            await asyncio.sleep(0.2)  # the split's own notification has been heard
            assert sorted(ns.served()) == sorted(ch.name for ch in children)
            assert await ns.drop_outside(NS) == []

    run(body())


def test_a_change_of_a_namespace_leaves_the_bundles_of_a_longer_namespace_alone(tmp_path: Path) -> None:
    """``pulsar/standalone``'s boundaries say nothing of ``pulsar/standalone/{broker}``'s heartbeat bundle."""

    async def body() -> None:
        async with cluster(tmp_path) as c:
            leader, ns = await one_broker(c)
            heartbeat = "pulsar/standalone/127.0.0.1:8081/0x00000000_0xffffffff"
            assert heartbeat in ns.ownership.owned()
            await create_namespace(leader.store, "pulsar/standalone", HALVES)
            await asyncio.sleep(0.2)
            assert await ns.drop_outside("pulsar/standalone") == []
            assert heartbeat in ns.ownership.owned()

    run(body())
