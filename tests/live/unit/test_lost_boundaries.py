"""A namespace's boundaries the store lost (a store restarted empty), on the in-memory store: a broker that still
knows them writes them back on the next lookup or admin call instead of answering "Namespace does not exist"
until its cache happens to be dropped (the campaign's store-wiped then broker-kill runs: the dead broker's
bundles were never owned again); the other brokers read them back; a namespace no broker knew is still a 404."""

from __future__ import annotations

import asyncio

import pytest
from live_support import run

from bundlewise.live.broker import values
from bundlewise.live.broker.namespace import committed_bundles, require_bundle
from bundlewise.live.broker.outcomes import RestError
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.store import JSON, layout
from bundlewise.live.store.backends.memory import MemoryServer
from bundlewise.model.bundles import Bundle, NamespaceBundles

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


def test_the_check_of_the_served_bundles_after_a_loss_reads_the_last_boundaries_not_the_defaults() -> None:
    """The campaign's store-wiped on etcd x extensible: the leader's first check of its served bundles after the
    empty restart (``committed_bundles``: the cache dropped, then read) re-created the namespace with its default
    four bundles and unloaded all of its split children; two of the campaign's topics were not served again."""

    async def body() -> None:
        server = MemoryServer()
        async with await server.connect(session_timeout=4.0) as a:
            path = layout.local_policies(NS)
            await a.put(path, JSON.encode(values.local_policies(SPLIT)))
            cache = BundlesCache(a, 4)
            try:
                read = await cache.get(NS)
                del server.nodes[path]  # lost without a notification
                current = await committed_bundles(cache, NS)
                assert current == set(NamespaceBundles.of(NS, SPLIT).bundles)  # the split ones, not the default four
                stored = await a.get(path)
                assert stored is not None and values.boundaries_of(JSON.decode(stored.value)) == SPLIT
                # a split this broker committed is what it gives back after the next loss
                again = await cache.get(NS)
                parent = Bundle.parse(f"{NS}/0x00000000_0x40000000")
                new, _ = again.bundles.split(parent, [0x20000000])
                await cache.write_split(NS, again.version, new)
                del server.nodes[path]
                assert await committed_bundles(cache, NS) == set(new.bundles)
                assert len(new.bundles) == 5 and set(new.bundles) != set(read.bundles.bundles)
            finally:
                cache.close()

    run(body())
