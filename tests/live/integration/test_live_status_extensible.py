"""``live status`` on the project's own extensible cluster: the leader from ``/loadbalance/extension/leader`` and
each broker's owned bundles from the channel's ``/service_unit_state`` records, the same counts the brokers
themselves answer (``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from broker_harness import EXT, cluster, leader_of, lookup, one_topic_per_bundle, served_by, wait_until

from bundlewise.live.harness.servers import ServerProcess

NS = "status/ns"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def test_status_of_an_extensible_cluster_shows_its_leader_and_owned_bundles(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path, EXT) as c:
        for t in one_topic_per_bundle(NS):
            lookup(c.brokers[0], t)
        leader = wait_until(lambda: leader_of(c), 10, "a leader")
        wait_until(lambda: sum(len(served_by(b)) for b in c.brokers) == 4, 10, "four bundles served")
        p = cli("live", "status", "--store", c.store_url, "--format", "json")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["leader"]["brokerId"] == leader
        rows = {r["broker"]: r for r in doc["brokers"]}
        assert set(rows) == {b.broker_id for b in c.brokers}
        for b in c.brokers:
            assert rows[b.broker_id]["ownedBundles"] == len(served_by(b)), b.broker_id
        assert doc["ownedBundles"] == 4


def test_status_of_a_wrong_chroot_is_an_error(server: ServerProcess) -> None:
    p = cli("live", "status", "--store", f"{server.url}/no-such-cluster", "--format", "json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and "no Pulsar metadata" in p.stderr and len(p.stderr.splitlines()) == 1
