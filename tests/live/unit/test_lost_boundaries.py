"""A namespace's boundaries the store lost (a store restarted empty), on the in-memory store: a broker that still
knows them writes them back on the next lookup or admin call instead of answering "Namespace does not exist"
until its cache happens to be dropped (the campaign's store-wiped then broker-kill runs: the dead broker's
bundles were never owned again); the other brokers read them back; a namespace no broker knew is still a 404."""

from __future__ import annotations

import asyncio

import pytest
from live_support import run

from bundlewise.live.broker import values
from bundlewise.live.broker.namespace import require_bundle
from bundlewise.live.broker.outcomes import RestError
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.store import JSON, layout
from bundlewise.live.store.backends.memory import MemoryServer
from bundlewise.model.bundles import Bundle

NS = "campaign/ns"
SPLIT = [0, 0x40000000, 0x60000000, 0x80000000, 0xFFFFFFFF]  # a split left three bundles, not the default four


def test_known_boundaries_are_re_published_and_an_unknown_namespace_stays_a_404() -> None:
    async def body() -> None:
        server = MemoryServer()
        async with await server.connect(session_timeout=4.0) as a, await server.connect(session_timeout=4.0) as b:
            path = layout.local_policies(NS)
            await a.put(path, JSON.encode(values.local_policies(SPLIT)))
            first, second = BundlesCache(a, 4), BundlesCache(b, 4)
            try:
                assert list((await first.get(NS)).bundles.boundaries) == SPLIT
                del server.nodes[path]  # lost without a notification: a store restarted empty
                assert not await a.exists(path)
                await require_bundle(first, Bundle.parse(f"{NS}/0x40000000_0x60000000"))  # no 404
                stored = await a.get(path)
                assert stored is not None and values.boundaries_of(JSON.decode(stored.value)) == SPLIT
                await asyncio.sleep(0.05)
                assert list((await second.get(NS)).bundles.boundaries) == SPLIT  # not the default four
                with pytest.raises(RestError) as e:  # a namespace none of them knew is not created by the check
                    await require_bundle(first, Bundle.parse("campaign/never/0x00000000_0xffffffff"))
                assert (e.value.status, e.value.reason) == (404, "Namespace does not exist")
                assert await a.get(layout.local_policies("campaign/never")) is None
            finally:
                first.close()
                second.close()

    run(body())
