"""Placement constraints read from the store where Pulsar keeps them, on real brokers of both load managers
(docs/placement.md, "Constraints"): an isolation policy at ``/admin/clusters/{cluster}/namespaceIsolationPolicies``
keeps a namespace's bundles on its primaries (``BrokerIsolationPoliciesFilterTest``), and no other namespace
lands on them (a policy's primaries are not shared brokers)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from broker_harness import EXT, cluster, lookup, one_topic_per_bundle

from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import connect

ISO, SHARED = "iso/ns", "shared/ns"


def write_store(url: str, path: str, value: object) -> None:
    async def body() -> None:
        async with await connect(url, session_timeout=10) as s:
            await s.put(path, json.dumps(value).encode(), None)

    asyncio.run(body())


@pytest.mark.parametrize(  # each manager on one store, the stores taking turns
    ("backend", "settings"), [("zk", {}), ("etcd", EXT)], ids=["zk-modular", "etcd-extensible"], indirect=["backend"]
)
def test_an_isolated_namespace_is_owned_by_its_primaries_only(
    server: ServerProcess, tmp_path: Path, settings: dict[str, object]
) -> None:
    with cluster(server, 3, tmp_path, settings) as c:
        primaries = [b.broker_id for b in c.brokers[:2]]
        policy = {
            "iso-policy": {
                "namespaces": ["iso/.*"],
                "primary": [p.replace(".", r"\.") for p in primaries],
                "secondary": [],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": "1", "usage_threshold": "80"},
                },
            }
        }
        write_store(c.store_url, "/admin/clusters/standalone/namespaceIsolationPolicies", policy)
        time.sleep(1.0)  # the brokers' caches hear of the change (a notification) and re-read it
        web = {b.web_url: b.broker_id for b in c.brokers}
        for t in one_topic_per_bundle(ISO):
            data, _ = lookup(c.brokers[2], t)
            assert web[data["httpUrl"]] in primaries, (t, data)
        for t in one_topic_per_bundle(SHARED):
            data, _ = lookup(c.brokers[0], t)
            assert web[data["httpUrl"]] == c.brokers[2].broker_id, (t, data)
