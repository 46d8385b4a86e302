"""Each live broker's heartbeat (``pulsar/{cluster}/{broker}``, ``pulsar/{broker}``) and SLA-monitor
(``sla-monitor/{cluster}/{broker}``) namespaces, registered at start-up as Pulsar's brokers do
(``NamespaceService#registerBootstrapNamespaces``, ``PulsarService#acquireSLANamespace``), on both stores and
both load managers: the modular broker holds their ``/namespace`` ownership nodes, the extensible broker owns
them implicitly (no channel record); any broker's lookup of such a topic answers the broker it names."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from broker_harness import EXT, FAST, cluster, follow, read_store, served_by, wait_until

from bundlewise.live.harness.cluster import BrokerProcess
from bundlewise.live.harness.servers import ServerProcess, free_port
from bundlewise.live.store import connect

FULL = "0x00000000_0xffffffff"


def namespaces(broker_id: str) -> tuple[str, str, str]:
    return f"pulsar/standalone/{broker_id}", f"pulsar/{broker_id}", f"sla-monitor/standalone/{broker_id}"


def create_policies(url: str, namespace: str) -> None:
    """``pulsar-admin namespaces create`` as far as the broker reads it: the ``/admin/policies/{ns}`` node."""

    async def body() -> None:
        async with await connect(url, session_timeout=10) as s:
            await s.put(f"/admin/policies/{namespace}", json.dumps({"bundles": {"numBundles": 1}}).encode(), -1)

    asyncio.run(body())


def lookup(broker: BrokerProcess, namespace: str) -> dict[str, Any]:
    """A client's HTTP lookup of ``{namespace}/healthcheck``: the v1 path for ``property/cluster/ns``."""
    kind = "destination" if namespace.count("/") == 2 else "topic"

    def answer() -> dict[str, Any] | None:
        r, _ = follow(f"{broker.web_url}/lookup/v2/{kind}/persistent/{namespace}/healthcheck")
        return r.json() if r.status_code == 200 else None

    found: dict[str, Any] = wait_until(answer, 10, f"a lookup of {namespace}")
    return found


def status(url: str) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", "live", "status", "--store", url, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc


@pytest.mark.parametrize(("backend", "manager"), [("etcd", "modular"), ("zk", "extensible")], indirect=["backend"])
def test_each_broker_owns_its_heartbeat_and_sla_monitor_namespaces(
    server: ServerProcess, tmp_path: Path, manager: str
) -> None:
    settings = EXT if manager == "extensible" else FAST
    with cluster(server, 1, tmp_path, settings) as c:
        port = free_port()
        create_policies(c.store_url, f"sla-monitor/standalone/127.0.0.1:{port}")  # only b's SLA namespace exists
        c.add_broker(port=port)
        a, b = c.brokers
        for owner, other in ((a, b), (b, a)):
            v1, v2, sla = namespaces(owner.broker_id)
            for ns in (v1, v2, sla) if owner is b else (v1, v2):
                data = lookup(other, ns)
                assert data["httpUrl"] == owner.web_url, (ns, data)
                node = read_store(c.store_url, f"/namespace/{ns}/{FULL}")
                if manager == "modular":
                    assert node is not None and node["httpUrl"] == owner.web_url, (ns, node)
                else:  # implicit ownership: neither an ownership node nor a channel record
                    assert node is None, (ns, node)
                    assert read_store(c.store_url, f"/service_unit_state/{ns}/{FULL}") is None, ns
            # no SLA-monitor namespace was created for a: nothing registered for it
            assert read_store(c.store_url, f"/namespace/{sla}/{FULL}") is None or owner is b
            # the broker's ownedNamespaces lists only the bundles the load manager balances
            assert not {x for x in served_by(owner) if x.startswith(("pulsar/", "sla-monitor/"))}
        doc = status(c.store_url)
        owned = {r["broker"]: r["ownedBundles"] for r in doc["brokers"]}
        # modular: live status counts the ownership nodes, as on a Pulsar ZooKeeper (2 heartbeat + b's SLA);
        # extensible: the channel holds no record of them, so nothing is counted
        expected = {a.broker_id: 2, b.broker_id: 3} if manager == "modular" else {a.broker_id: 0, b.broker_id: 0}
        assert owned == expected
