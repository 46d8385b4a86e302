"""A burst of concurrent first lookups of unowned bundles through every broker converges on one owner,
on both stores and both load managers: every answer for a bundle names the same broker, that broker
serves the bundle afterwards and the store's arbiter (the channel record, or the ownership node) names it,
and no request of the burst fails -- without any client retry (docs/live/guarantees.md, "One answer per
bundle")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from broker_harness import (
    EXT,
    FAST,
    cluster,
    lookup_url,
    one_topic_per_bundle,
    read_store,
    record,
    served_by,
    wait_until,
)

from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash

NS = "burst/ns"
BUNDLES = NamespaceBundles.initial(NS, 4).bundles
REQUESTS = 54  # over 3 brokers and 3 bundles: 6 requests per bundle on each broker


def topic_in(bundle: str) -> str:
    return next(
        t
        for t in one_topic_per_bundle(NS)
        if NamespaceBundles.initial(NS, 4).bundle_for_hash(crc32_hash(t)).name == bundle
    )


async def _one(client: httpx.AsyncClient, url: str) -> tuple[int, dict[str, Any] | str]:
    """One client lookup, following 307s (the modular redirect chain) but never retrying a failure."""
    for _ in range(21):
        r = await client.get(url)
        if r.status_code != 307:
            return r.status_code, (r.json() if r.status_code == 200 else r.text)
        url = r.headers["location"]
    return 0, "more than 20 redirects"


async def _burst(
    c: LocalCluster, bundles: list[str], authoritative: bool | None = None
) -> list[tuple[str, int, dict[str, Any] | str]]:
    jobs = [(bundles[i % len(bundles)], c.brokers[(i // len(bundles)) % len(c.brokers)]) for i in range(REQUESTS)]
    topics = {bundle: topic_in(bundle) for bundle in bundles}
    async with httpx.AsyncClient(timeout=30.0, follow_redirects=False) as client:
        answers = await asyncio.gather(
            *(_one(client, lookup_url(b, topics[bundle], authoritative)) for bundle, b in jobs)
        )
    return [(bundle, code, body) for (bundle, _), (code, body) in zip(jobs, answers, strict=True)]


def _check(c: LocalCluster, manager: str, bundles: list[str], rows: list[tuple[str, int, Any]]) -> None:
    """0 failed requests; per bundle one answered broker, named by the store's arbiter, the only one serving it."""
    failed = [(bundle, code, body) for bundle, code, body in rows if code != 200]
    assert failed == []
    by_url = {b.web_url: b for b in c.brokers}
    for bundle in bundles:
        urls = {body["httpUrl"] for name, _, body in rows if name == bundle and isinstance(body, dict)}
        assert len(urls) == 1, (bundle, urls)  # one answer per bundle
        owner = by_url[urls.pop()]
        if manager == "extensible":
            rec = record(c.store_url, bundle)
            assert rec is not None and (rec["state"], rec["dstBroker"]) == ("Owned", owner.broker_id)
        else:
            assert read_store(c.store_url, f"/namespace/{bundle}")["httpUrl"] == owner.web_url
        wait_until(lambda o=owner, n=bundle: n in served_by(o), 5, f"{owner.broker_id} serving {bundle}")
        assert all(bundle not in served_by(b) for b in c.brokers if b is not owner)


# each manager on one store, the stores taking turns (the races are the store's compare-and-set, which
# tests/live/contract checks on both)
@pytest.mark.parametrize(("backend", "manager"), [("etcd", "modular"), ("zk", "extensible")], indirect=["backend"])
def test_a_burst_of_first_lookups_through_every_broker_gets_one_owner_per_bundle(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    settings = EXT if manager == "extensible" else FAST
    with cluster(server, 3, tmp_path, settings) as c:
        bundles = [b.name for b in BUNDLES[:3]]
        _check(c, manager, bundles, asyncio.run(_burst(c, bundles)))
        # authoritative lookups make every entry broker its own candidate (modular: each races for the
        # ownership node; the losers answer its holder instead of failing)
        last = [BUNDLES[3].name]
        _check(c, manager, last, asyncio.run(_burst(c, last, authoritative=True)))
