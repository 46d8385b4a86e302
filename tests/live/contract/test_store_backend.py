"""The backend suite: every test runs against the in-memory store, a real ZooKeeper and a real etcd
(``backend``, tests/live/contract/conftest.py)."""

from __future__ import annotations

import asyncio
import base64
import uuid

import httpx
import pytest
from kazoo.client import KazooClient
from live_support import SESSION_TIMEOUT, eventually, run

from bundlewise.live.harness.servers import EtcdServer
from bundlewise.live.store import (
    BadVersionError,
    MetadataStore,
    NotEmptyError,
    NotFoundError,
    Notification,
    NotificationType,
    SessionEvent,
    StoreUrl,
    connect,
)
from bundlewise.live.store.backends.memory import MemoryStore


async def open_store(url: str) -> MetadataStore:
    return await connect(url, session_timeout=SESSION_TIMEOUT)


def test_versions_start_at_zero_and_compare_and_set(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as s:
            assert (await s.put("/n", b"a", -1)).version == 0
            got = await s.get("/n")
            assert got is not None and got.value == b"a" and got.stat.version == 0
            assert (await s.put("/n", b"b", 0)).version == 1
            with pytest.raises(BadVersionError):
                await s.put("/n", b"c", 0)
            assert (await s.put("/n", b"d")).version == 2  # unconditional
            got = await s.get("/n")
            assert got is not None and (got.value, got.stat.version) == (b"d", 2)
            assert not got.stat.is_ephemeral and not got.stat.created_by_self

    run(body())


def test_create_must_not_exist_and_cas_on_missing_node_is_bad_version(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as s:
            await s.put("/x", b"1", -1)
            with pytest.raises(BadVersionError):
                await s.put("/x", b"2", -1)
            with pytest.raises(BadVersionError):
                await s.put("/missing", b"2", 0)
            assert await s.get("/missing") is None
            assert (await s.put("/unconditional/create", b"3")).version == 0

    run(body())


def test_parents_are_created_as_persistent_empty_nodes(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as s:
            await s.put("/a/b/c", b"leaf", -1, ephemeral=True)
            parent = await s.get("/a/b")
            assert parent is not None and parent.value == b"" and parent.stat.version == 0
            assert not parent.stat.is_ephemeral
            assert await s.get_children("/a") == ["b"]
            assert await s.get_children("/a/b") == ["c"]
            assert await s.get_children("/") == ["a"]
            assert await s.get_children("/nothing") == []
            assert await s.exists("/a") and not await s.exists("/nothing")

    run(body())


def test_delete_is_conditional_and_reports_missing_and_non_empty_nodes(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as s:
            await s.put("/d/child", b"x", -1)
            await s.put("/d/child", b"y", 0)
            with pytest.raises(NotEmptyError):
                await s.delete("/d")
            with pytest.raises(BadVersionError):
                await s.delete("/d/child", 0)
            await s.delete("/d/child", 1)
            with pytest.raises(NotFoundError):
                await s.delete("/d/child")
            await s.delete("/d")
            assert not await s.exists("/d")

    run(body())


def test_delete_of_one_creation_refuses_the_node_created_again_at_the_same_version(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as s:
            made = await s.put("/c", b"first", -1)
            first = await s.get("/c")
            assert first is not None and first.stat.created != 0 and made.created == first.stat.created
            assert (await s.put("/c", b"first!", 0)).created == first.stat.created  # an update keeps it
            assert (await s.put("/c", b"first", 1)).created == first.stat.created
            await s.delete("/c", 2)
            await s.put("/c", b"first", -1)
            first = await s.get("/c")
            assert first is not None
            await s.delete("/c")
            await s.put("/c", b"second", -1)
            second = await s.get("/c")
            assert second is not None and second.stat.version == first.stat.version == 0
            assert second.stat.created != first.stat.created
            with pytest.raises(BadVersionError):
                await s.delete("/c", 0, created=first.stat.created)
            assert await s.exists("/c")
            await s.delete("/c", 0, created=second.stat.created)
            with pytest.raises(NotFoundError):
                await s.delete("/c", 0, created=second.stat.created)

    run(body())


def test_ephemeral_flags_tell_own_session_from_others(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            await a.put("/e", b"mine", -1, ephemeral=True)
            seen_by_a, seen_by_b = await a.get("/e"), await b.get("/e")
            assert seen_by_a is not None and seen_by_b is not None
            assert seen_by_a.stat.is_ephemeral and seen_by_a.stat.created_by_self
            assert seen_by_b.stat.is_ephemeral and not seen_by_b.stat.created_by_self
            # an update keeps the node's kind and owner (ZooKeeper's setData rule)
            await b.put("/e", b"updated", 0)
            after = await a.get("/e")
            assert after is not None and after.stat.created_by_self and after.stat.version == 1

    run(body())


def test_etcd_keys_follow_pulsars_version_mapping(etcd_server: EtcdServer) -> None:
    store_url = f"{etcd_server.url}/t-{uuid.uuid4().hex[:12]}"

    async def body() -> None:
        url = StoreUrl.parse(store_url)
        host, port = url.hosts[0]
        key = base64.b64encode(f"{url.root}/m".encode()).decode()
        async with await open_store(store_url) as s, httpx.AsyncClient() as http:
            await s.put("/m", b"v0", -1)
            await s.put("/m", b"v1", 0)
            raw = (await http.post(f"http://{host}:{port}/v3/kv/range", json={"key": key})).json()["kvs"][0]
            assert int(raw["version"]) == 2  # etcd version = Pulsar version + 1
            got = await s.get("/m")
            assert got is not None and got.stat.version == 1
            # a CAS compares version == expected + 1: writing at Pulsar version 2 fails, at 1 succeeds
            with pytest.raises(BadVersionError):
                await s.put("/m", b"x", 2)
            assert (await s.put("/m", b"v2", 1)).version == 2

    run(body())


def test_notifications_reach_a_second_client_with_children_changed_on_the_parent(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as writer, await open_store(store_url) as reader:
            # the parent's own Created event must reach the reader before the listeners under test are
            # registered, or it may be delivered to them (the watch is asynchronous)
            first: list[Notification] = []
            reader.register_listener(first.append, "/watched")
            await writer.put("/watched", b"", -1)
            created = Notification(NotificationType.Created, "/watched")
            await eventually(lambda: created in first, 10, "Created /watched")
            seen: list[Notification] = []
            reader.register_listener(seen.append, "/watched")
            elsewhere: list[Notification] = []
            reader.register_listener(elsewhere.append, "/other")
            await writer.put("/watched/n", b"1", -1)
            await writer.put("/watched/n", b"2", 0)
            await writer.delete("/watched/n")
            expected = [
                Notification(NotificationType.Created, "/watched/n"),
                Notification(NotificationType.ChildrenChanged, "/watched"),
                Notification(NotificationType.Modified, "/watched/n"),
                Notification(NotificationType.Deleted, "/watched/n"),
                Notification(NotificationType.ChildrenChanged, "/watched"),
            ]
            await eventually(lambda: len(seen) >= len(expected), 10, "five notifications")
            assert seen == expected
            assert elsewhere == []
            # each client's counters (the broker's /metrics): the writer's 3 writes (2 bytes of values) and 1
            # deletion; the reader heard Created /watched and ChildrenChanged / besides the five
            assert (writer.ops.puts, writer.ops.put_bytes, writer.ops.deletes) == (3, 2, 1)
            assert (reader.ops.puts, reader.ops.deletes, reader.ops.notifications) == (0, 0, 7)

    run(body())


def test_ephemeral_disappears_when_its_client_closes(store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as b:
            deleted: list[Notification] = []
            b.register_listener(lambda n: deleted.append(n) if n.type is NotificationType.Deleted else None)
            a = await open_store(store_url)
            await a.put("/owner", b"a", -1, ephemeral=True)
            assert await b.exists("/owner")
            await a.close()
            assert not await b.exists("/owner")
            await eventually(lambda: Notification(NotificationType.Deleted, "/owner") in deleted, 10, "Deleted")

    run(body())


async def expire_session(backend: str, store: MetadataStore, url: str) -> None:
    """End ``store``'s session at the server, as a real expiry does."""
    if backend == "memory":
        assert isinstance(store, MemoryStore)
        await store.expire_session()  # the server ends the session; a new one follows, as with the others
        return
    parsed = StoreUrl.parse(url)
    if backend == "zk":
        # kazoo's own technique: a second client with the same session id and password, closed.
        session_id, password = store.kazoo_client.client_id  # type: ignore[attr-defined]
        twin = KazooClient(hosts=parsed.hosts_text, client_id=(session_id, password), timeout=SESSION_TIMEOUT)
        await asyncio.to_thread(twin.start)
        await asyncio.to_thread(twin.stop)
        await asyncio.to_thread(twin.close)
    else:
        host, port = parsed.hosts[0]
        async with httpx.AsyncClient() as http:
            resp = await http.post(f"http://{host}:{port}/v3/lease/revoke", json={"ID": str(store.session_id)})
            assert resp.status_code == 200


def test_ephemeral_disappears_when_the_session_expires_and_a_new_session_follows(backend: str, store_url: str) -> None:
    async def body() -> None:
        async with await open_store(store_url) as a, await open_store(store_url) as b:
            events: list[SessionEvent] = []
            a.register_session_listener(events.append)
            await a.put("/lease", b"a", -1, ephemeral=True)
            old_session = a.session_id
            await expire_session(backend, a, store_url)
            await eventually(lambda: SessionEvent.SessionLost in events, 10, "SessionLost")
            await eventually(lambda: _not(b.exists("/lease")), 10, "the ephemeral to vanish")
            await eventually(lambda: SessionEvent.SessionReestablished in events, 10, "SessionReestablished")
            assert events[:3] == [SessionEvent.SessionLost, SessionEvent.Reconnected, SessionEvent.SessionReestablished]
            assert a.session_id not in (0, old_session)
            # the new session can create ephemerals again, and owns them
            await a.put("/lease", b"again", -1, ephemeral=True)
            got = await a.get("/lease")
            assert got is not None and got.stat.created_by_self

    run(body())


async def _not(aw: object) -> bool:
    return not await aw  # type: ignore[misc]
