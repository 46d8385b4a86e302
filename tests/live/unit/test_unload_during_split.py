"""An unload never overrides a split in progress (extensible manager), in process on the in-memory store.

A forced ``Releasing`` computed from a ``Splitting`` record passes the resolver (its version follows, and a
forced record skips the transition check): the parent was freed and assigned anew while its source went on
claiming the children and writing the new boundaries, so the parent was served beside its children (seen by the
fault campaign on etcd, ``unload-racing-split``).  The owner now refuses the unload while the record is
``Splitting``, as the modular owner does (docs/live/guarantees.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from inproc import EXTENSIBLE, Cluster, cluster, create_namespace
from live_support import run

from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.live.broker.extensible.namespace import ExtensibleNamespaceService
from bundlewise.live.broker.extensible.records import RECORDS
from bundlewise.live.broker.service import Broker
from bundlewise.live.store import layout
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData

NS = "public/default"
HALVES = [0, 0x80000000, 0xFFFFFFFF]
BUNDLE = f"{NS}/0x00000000_0x80000000"
ELSEWHERE = "127.0.0.1:9"  # a source that is no broker here, so nobody carries the split out during the test


def extensible(b: Broker) -> ExtensibleLoadManager:
    assert isinstance(b.manager, ExtensibleLoadManager)
    return b.manager


KIDS = {"0x00000000_0x40000000": None, "0x40000000_0x80000000": None}


async def owner_while_splitting(c: Cluster, source: str | None) -> tuple[Broker, ServiceUnitStateData]:
    """Broker 8081 owns ``BUNDLE``; its record is then replaced by ``Splitting(src = source)`` (the owner itself when
    None, its split handler removed so the split is held back) and the owner's mirror has it."""
    owner = await c.start(8081)
    await create_namespace(owner.store, NS, HALVES)
    await owner.namespace.find(BUNDLE, authoritative=True)
    ext = extensible(owner)
    ext.channel.split_handler = None
    path = layout.service_unit_state(BUNDLE)
    found = await owner.store.get(path)
    assert found is not None
    owned = RECORDS.decode(found.value)
    assert owned is not None and owned.state is ServiceUnitState.Owned
    splitting = ServiceUnitStateData(
        ServiceUnitState.Splitting,
        None,
        source or owner.identity.broker_id,
        split_service_unit_to_dest_broker=KIDS,
        version_id=owned.version_id + 1,
    )
    await owner.store.put(path, RECORDS.encode(splitting), found.stat.version)
    for _ in range(50):  # the owner's mirror hears of it
        if ext.channel.get(BUNDLE) == splitting:
            break
        await asyncio.sleep(0.02)
    assert ext.channel.get(BUNDLE) == splitting
    return owner, splitting


async def stored(owner: Broker) -> ServiceUnitStateData | None:
    found = await owner.store.get(layout.service_unit_state(BUNDLE))
    assert found is not None
    return RECORDS.decode(found.value)


def test_an_unload_of_a_bundle_being_split_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            owner, splitting = await owner_while_splitting(c, ELSEWHERE)
            ext = extensible(owner)
            error = await ext.unload(BUNDLE, owner.identity.broker_id, None, force=True)
            assert error is not None and "is being split by 127.0.0.1:9" in error
            assert await stored(owner) == splitting  # nothing was written
            assert ext.channel.get(BUNDLE) == splitting

    run(body())


def test_the_admin_unload_of_a_bundle_being_split_answers_500(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            owner, splitting = await owner_while_splitting(c, None)
            r = await c.http.put(f"http://{owner.identity.broker_id}/admin/v2/namespaces/{BUNDLE}/unload")
            assert r.status_code == 500 and "is being split" in r.text, r.text
            assert await stored(owner) == splitting

    run(body())


def test_the_boundary_check_leaves_the_children_a_split_has_claimed_before_committing_them(tmp_path: Path) -> None:
    """The split publishes its children's ``Owned(v = 1)`` claims, then commits their boundaries.  The owner's
    boundary check (every second) between the two found the children outside the committed boundaries and
    unloaded them (a fresh ``make test`` on etcd: both children ``Free`` at version 3 after the split)."""

    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            owner, splitting = await owner_while_splitting(c, None)
            ext = extensible(owner)
            me = owner.identity.broker_id
            children = [f"{NS}/{r}" for r in KIDS]
            for child in children:  # the split's claims; the boundaries are not written yet
                assert await ext.channel.publish(child, ServiceUnitStateData(ServiceUnitState.Owned, me, None))
            for _ in range(50):
                if set(children) <= set(ext.channel.served()):
                    break
                await asyncio.sleep(0.02)
            assert set(children) <= set(ext.channel.served())
            namespace = owner.namespace
            assert isinstance(namespace, ExtensibleNamespaceService)
            assert await namespace.release_outside(NS) == []
            for child in children:
                rec = ext.channel.get(child)
                assert rec is not None and (rec.state, rec.dst_broker, rec.version_id) == (
                    ServiceUnitState.Owned,
                    me,
                    1,
                )
            assert ext.channel.get(BUNDLE) == splitting

            # once the split has failed (the leader overrides a stuck Splitting record), the same claims are strays
            owned = ServiceUnitStateData(ServiceUnitState.Owned, me, None, version_id=splitting.version_id + 1)
            path = layout.service_unit_state(BUNDLE)
            found = await owner.store.get(path)
            assert found is not None
            await owner.store.put(path, RECORDS.encode(owned), found.stat.version)
            for _ in range(50):
                if ext.channel.get(BUNDLE) == owned:
                    break
                await asyncio.sleep(0.02)
            assert sorted(await namespace.release_outside(NS)) == sorted(children)

    run(body())
