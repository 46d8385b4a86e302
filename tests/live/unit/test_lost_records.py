"""A channel record the store lost (a store restarted without its data), in process on the in-memory store:
a lookup through another broker does not assign the bundle anew while its former owner may still re-claim
it (``ServiceUnitStateChannel.vanished_owner``); it answers the former owner once its record is back, and
assigns only after a session timeout when nobody re-creates it (docs/live/guarantees.md §17.1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from inproc import EXTENSIBLE, SESSION_S, cluster, create_namespace
from live_support import run

from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.live.broker.extensible.records import RECORDS
from bundlewise.live.broker.service import Broker
from bundlewise.live.store import layout

NS = "public/default"
HALVES = [0, 0x80000000, 0xFFFFFFFF]
BUNDLE = f"{NS}/0x00000000_0x80000000"


def extensible(b: Broker) -> ExtensibleLoadManager:
    assert isinstance(b.manager, ExtensibleLoadManager)
    return b.manager


def test_a_lookup_waits_for_the_former_owner_to_re_create_a_lost_record(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            owner = await c.start(8081)
            await create_namespace(owner.store, NS, HALVES)
            await owner.namespace.find(BUNDLE, authoritative=True)
            other = await c.start(8082)
            assert BUNDLE in owner.namespace.served()
            path = layout.service_unit_state(BUNDLE)
            store = await c.client()
            try:
                found = await store.get(path)
                assert found is not None
                record = RECORDS.decode(found.value)
                await store.delete(path)  # what a store restarted empty shows
                await asyncio.sleep(0.1)  # the other broker's mirror hears of it
                resolver = extensible(other).resolver
                lookup = asyncio.ensure_future(resolver.get_or_select_owner(BUNDLE))
                await asyncio.sleep(1.0)
                assert not lookup.done()  # not assigned anew while the former owner may re-claim it
                assert await store.get(path) is None
                await store.put(path, RECORDS.encode(record), -1)  # the former owner re-creates it
                assert await asyncio.wait_for(lookup, 5) == owner.identity.broker_id

                await store.delete(path)  # lost again, and nobody re-creates it this time
                await asyncio.sleep(0.1)
                started = asyncio.get_running_loop().time()
                chosen = await asyncio.wait_for(resolver.get_or_select_owner(BUNDLE), SESSION_S + 10)
                waited = asyncio.get_running_loop().time() - started
                assert waited >= SESSION_S - 0.5  # assigned anew only after a session timeout
                assert chosen in (owner.identity.broker_id, other.identity.broker_id)
            finally:
                await store.close()

    run(body())
