"""Recipes on the protocol, on every backend (the in-memory store, ZooKeeper, etcd): election, locks,
read-modify-write, table view."""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from live_support import SESSION_TIMEOUT, eventually, run
from test_store_backend import expire_session

from bundlewise.live.store import (
    JSON,
    BadVersionError,
    ConflictError,
    GetResult,
    LeaderElection,
    LeaderElectionState,
    LockBusyError,
    LockManager,
    MetadataStore,
    MetadataStoreTableView,
    NotFoundError,
    ResourceLock,
    connect,
    layout,
    read_modify_write,
)


async def open_store(url: str) -> MetadataStore:
    return await connect(url, session_timeout=SESSION_TIMEOUT)


def leader(broker: str) -> dict[str, str]:
    return {"brokerId": broker, "serviceUrl": f"http://{broker}"}


def test_election_first_leads_second_follows_and_takes_over_when_the_leader_closes(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            seen_b: list[LeaderElectionState] = []
            ea = LeaderElection(a, layout.LEADER)
            eb = LeaderElection(b, layout.LEADER, on_state_change=seen_b.append)
            assert await ea.elect(leader("b1:8080")) is LeaderElectionState.Leading
            assert await eb.elect(leader("b2:8080")) is LeaderElectionState.Following
            assert await eb.read_leader() == leader("b1:8080")
            await ea.close()  # deletes the node conditionally: b hears Deleted and re-elects
            await eventually(lambda: eb.state is LeaderElectionState.Leading, 10, "b to lead")
            assert seen_b == [LeaderElectionState.Following, LeaderElectionState.Leading]
            assert await ea.read_leader() == leader("b2:8080")
            await eb.close()
            assert not await a.exists(layout.LEADER)

    run(body())


def test_election_replaces_our_own_value_left_by_an_older_session(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as old, await open_store(store_url) as new:
            await old.put(layout.LEADER, json.dumps(leader("b1:8080")).encode(), -1, ephemeral=True)
            election = LeaderElection(new, layout.LEADER)
            assert await election.elect(leader("b1:8080")) is LeaderElectionState.Leading
            got = await new.get(layout.LEADER)
            assert got is not None and got.stat.created_by_self
            other = LeaderElection(old, layout.LEADER)
            assert await other.elect(leader("b9:8080")) is LeaderElectionState.Following

    run(body())


def test_election_revalidates_after_the_session_is_reestablished(backend: str, store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a:
            election = LeaderElection(a, layout.LEADER)
            assert await election.elect(leader("b1:8080")) is LeaderElectionState.Leading
            old_session = a.session_id
            await expire_session(backend, a, store_url)

            async def re_won() -> bool:
                got = await a.get(layout.LEADER)
                return got is not None and got.stat.created_by_self and a.session_id != old_session

            await eventually(re_won, 20, "the leader node re-created by the new session")
            assert election.state is LeaderElectionState.Leading

    run(body())


def test_lock_is_busy_for_another_session_and_released_conditionally(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            ma, mb = LockManager(a), LockManager(b)
            path = layout.ownership("public/default/0x00000000_0x40000000")
            lock = await ma.acquire(path, {"owner": "a"})
            assert lock.version == 0 and lock.is_valid
            assert lock.fencing_deadline() > time.monotonic()
            with pytest.raises(LockBusyError):
                await mb.acquire(path, {"owner": "b"})
            assert await mb.read(path) == {"owner": "a"}
            await lock.update({"owner": "a", "load": 1})
            assert lock.version == 1
            await lock.release()
            assert lock.expired.done() and not await b.exists(path)
            taken = await mb.acquire(path, {"owner": "b"})
            assert taken.is_valid
            await mb.close()
            assert not await a.exists(path)

    run(body())


def test_lock_deleted_behind_its_back_is_recreated_by_revalidation(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            lock = await LockManager(a).acquire("/locks/x", {"owner": "a"})
            await b.delete("/locks/x")

            async def back() -> bool:
                got = await b.get("/locks/x")
                return got is not None and json.loads(got.value) == {"owner": "a"} and got.stat.is_ephemeral

            await eventually(back, 10, "the lock node re-created")
            assert lock.is_valid and not lock.expired.done()

    run(body())


@contextlib.contextmanager
def after_first_read(store: MetadataStore, action: Callable[[], Awaitable[None]]) -> Iterator[None]:
    """Run ``action`` once, right after ``store``'s next ``get`` returns: an interleaving forced between a
    read and what its caller does next (the real store otherwise)."""
    read = store.get

    async def get(path: str) -> GetResult | None:
        store.get = read  # type: ignore[method-assign]
        res = await read(path)
        await action()
        return res

    store.get = get  # type: ignore[method-assign]
    try:
        yield
    finally:
        store.get = read  # type: ignore[method-assign]


def test_lock_left_by_our_older_session_is_taken_when_that_session_expires_mid_revalidation(store_url: str) -> None:
    """A restarted broker re-registers while its previous session's node is still there: revalidation
    reads the stale node, and that session expires (taking the node) before the conditional delete."""

    async def body() -> None:
        old = await open_store(store_url)
        async with await open_store(store_url) as new:
            await old.put("/locks/w", json.dumps({"owner": "a"}).encode(), -1, ephemeral=True)
            with after_first_read(new, old.close):  # the old session's ephemeral node goes with it
                lock = await LockManager(new).acquire("/locks/w", {"owner": "a"})
            got = await new.get("/locks/w")
            assert got is not None and got.stat.created_by_self and got.stat.is_ephemeral
            assert lock.is_valid and lock.version == got.stat.version == 0

    run(body())


def test_lock_left_by_our_older_session_and_taken_by_another_meanwhile_is_busy(store_url: str) -> None:
    async def body() -> None:
        old = await open_store(store_url)
        async with await open_store(store_url) as new, await open_store(store_url) as other:
            await old.put("/locks/v", json.dumps({"owner": "a"}).encode(), -1, ephemeral=True)

            async def lose_the_node_to_another_session() -> None:
                await old.close()
                await other.put("/locks/v", json.dumps({"owner": "b"}).encode(), -1, ephemeral=True)

            with after_first_read(new, lose_the_node_to_another_session), pytest.raises(LockBusyError):
                await LockManager(new).acquire("/locks/v", {"owner": "a"})
            got = await new.get("/locks/v")
            assert got is not None and json.loads(got.value) == {"owner": "b"} and not got.stat.created_by_self

    run(body())


def test_lock_release_leaves_the_node_another_session_created_again_at_the_same_version(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            lock: ResourceLock[Any] = ResourceLock(a, "/locks/u", JSON, operator.eq)  # no manager: no revalidation
            await lock.update({"owner": "a"})
            assert lock.version == 0 and lock.created == (await a.get("/locks/u")).stat.created  # type: ignore[union-attr]
            await b.delete("/locks/u")
            await b.put("/locks/u", json.dumps({"owner": "b"}).encode(), -1, ephemeral=True)
            await lock.release()  # version 0 again, but another creation: not ours to delete
            got = await b.get("/locks/u")
            assert got is not None and json.loads(got.value) == {"owner": "b"} and got.stat.created_by_self
            assert lock.expired.done() and not lock.is_valid

    run(body())


def test_lock_taken_by_another_session_expires(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            manager = LockManager(a)
            lock = await manager.acquire("/locks/y", {"owner": "a"})
            # b deletes the node and takes it with its own value; a's revalidation may re-create it first
            # (Deleted -> missing -> re-create), so b tries again until its create wins
            for _ in range(50):
                with contextlib.suppress(NotFoundError):
                    await b.delete("/locks/y")
                try:
                    await b.put("/locks/y", json.dumps({"owner": "b"}).encode(), -1, ephemeral=True)
                    break
                except BadVersionError:
                    continue
            else:
                raise AssertionError("b never took /locks/y")
            await asyncio.wait_for(asyncio.shield(lock.expired), 10)
            assert not lock.is_valid and lock.fencing_deadline() == 0.0
            assert "/locks/y" not in manager.locks
            got = await a.get("/locks/y")
            assert got is not None and json.loads(got.value) == {"owner": "b"} and not got.stat.created_by_self

    run(body())


def test_lock_is_revalidated_under_the_new_session_after_expiry(backend: str, store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            lock = await LockManager(a).acquire("/locks/z", {"owner": "a"})
            old_session = a.session_id
            await expire_session(backend, a, store_url)

            async def recreated() -> bool:
                got = await b.get("/locks/z")
                return got is not None and got.stat.is_ephemeral and a.session_id not in (0, old_session)

            await eventually(recreated, 20, "the lock re-created in the new session")
            await eventually(lambda: lock.session_id == a.session_id, 10, "the lock to follow the new session")
            assert lock.is_valid and lock.fencing_deadline() > 0

    run(body())


def test_read_modify_write_counts_every_increment_from_two_clients(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:

            async def bump(s: MetadataStore) -> None:
                for _ in range(15):
                    await read_modify_write(s, "/counter", lambda v: {"n": (v or {"n": 0})["n"] + 1})

            await asyncio.gather(bump(a), bump(b))
            got = await a.get("/counter")
            assert got is not None and json.loads(got.value) == {"n": 30} and got.stat.version == 29

    run(body())


def keep_left(existing: dict[str, Any] | None, proposed: dict[str, Any]) -> bool:
    """A channel-like resolver: a record must carry versionId = previous + 1 (1 for a new key)."""
    previous = existing["versionId"] if existing is not None else 0
    return bool(proposed["versionId"] != previous + 1)


def test_table_views_converge_under_concurrent_cas_puts_with_a_resolver(store_url: str) -> None:
    bundles = [f"public/default/0x{i:08x}_0x{i + 1:08x}" for i in range(12)]

    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            await a.put(layout.service_unit_state(bundles[0]), json.dumps({"versionId": 1, "dst": "pre"}).encode())
            views = []
            for s in (a, b):
                v: MetadataStoreTableView[Any] = MetadataStoreTableView(
                    s,
                    layout.SERVICE_UNIT_STATE_ROOT,
                    should_keep_left=keep_left,
                    path_filter=lambda p: bool(layout.SERVICE_UNIT_STATE_PATH.match(p)),
                )
                existing: list[str] = []
                v.add_existing_listener(lambda k, _v, seen=existing: seen.append(k))
                await v.start()
                assert existing == [bundles[0]]
                views.append(v)
            tails: list[tuple[str, Any]] = []
            views[1].add_tail_listener(lambda k, val: tails.append((k, val)))

            async def claim(view: MetadataStoreTableView[Any], who: str) -> list[str]:
                won = []
                for bundle in bundles[1:]:
                    try:
                        await view.put(bundle, {"versionId": 1, "dst": who})
                        won.append(bundle)
                    except ConflictError:
                        pass
                return won

            won_a, won_b = await asyncio.gather(claim(views[0], "a"), claim(views[1], "b"))
            assert sorted(won_a + won_b) == sorted(bundles[1:])  # every key has exactly one winner
            assert not set(won_a) & set(won_b)
            with pytest.raises(ConflictError):
                await views[0].put(bundles[0], {"versionId": 1, "dst": "late"})
            await views[0].put(bundles[0], {"versionId": 2, "dst": "next"})

            def converged() -> bool:
                return views[0].items() and sorted(views[0].items(), key=str) == sorted(views[1].items(), key=str)

            await eventually(lambda: len(views[1]) == len(bundles) and bool(converged()), 15, "views to converge")
            for bundle in bundles[1:]:
                assert views[0].get(bundle) == {"versionId": 1, "dst": "a" if bundle in won_a else "b"}
            assert views[1].get(bundles[0]) == {"versionId": 2, "dst": "next"}
            assert (bundles[0], {"versionId": 2, "dst": "next"}) in tails
            await views[1].delete(bundles[0])
            await eventually(lambda: bundles[0] not in views[0], 10, "the deletion to reach the other view")
            for v in views:
                await v.close()

    run(body())
