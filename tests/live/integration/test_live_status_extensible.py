"""``live status`` on the project's own clusters: on an extensible cluster the leader from
``/loadbalance/extension/leader`` and each broker's owned bundles from the channel's ``/service_unit_state``
records, the same counts the brokers themselves answer (``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``)
and publish on ``/metrics`` (``pulsar_sunit_state_chn_owned_su_total``, ``ServiceUnitStateChannelImpl#getMetrics``);
on a modular cluster the ``/namespace`` ownership nodes: the brokers' owned bundles plus their two heartbeat
bundles each."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    EXT,
    cluster,
    get,
    leader_of,
    lookup,
    one_topic_per_bundle,
    read_store,
    served_by,
    wait_until,
)

from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.servers import ServerProcess

NS = "status/ns"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def owned_metric(b: BrokerProcess) -> int:
    """The broker's ``pulsar_sunit_state_chn_owned_su_total`` sample from its Prometheus text."""
    text = get(f"{b.web_url}/metrics").text
    found = re.findall(r"^pulsar_sunit_state_chn_owned_su_total\{[^}]*\} (\d+)$", text, re.MULTILINE)
    assert len(found) == 1, text
    return int(found[0])


def four_bundles_status(c: LocalCluster) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
    """Four bundles assigned through the first broker, then ``live status --format json`` once they are
    served: the leader, the document (its leader checked) and its rows by broker id."""
    for t in one_topic_per_bundle(NS):
        lookup(c.brokers[0], t)
    leader = wait_until(lambda: leader_of(c), 10, "a leader")
    wait_until(lambda: sum(len(served_by(b)) for b in c.brokers) == 4, 10, "four bundles served")
    p = cli("live", "status", "--store", c.store_url, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["leader"]["brokerId"] == leader
    return str(leader), doc, {r["broker"]: r for r in doc["brokers"]}


@pytest.mark.parametrize("backend", ["zk"], indirect=True)  # one store each, the stores taking turns
def test_status_of_an_extensible_cluster_shows_its_leader_and_owned_bundles(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path, EXT) as c:
        leader, doc, rows = four_bundles_status(c)
        assert set(rows) == {b.broker_id for b in c.brokers}
        for b in c.brokers:
            assert rows[b.broker_id]["ownedBundles"] == len(served_by(b)) == owned_metric(b), b.broker_id
        assert doc["ownedBundles"] == 4 == sum(owned_metric(b) for b in c.brokers)
        assert {r["report"] for r in doc["brokers"]} == {None}  # BrokerLookupData: listed without load
        table = cli("live", "status", "--store", c.store_url)
        assert table.returncode == 0, table.stderr
        assert table.stdout.splitlines()[:2] == [f"leader: {leader}", "brokers: 2"]


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_advise_on_an_extensible_cluster_sheds_with_transfer_shedder_and_checks_splits(
    server: ServerProcess, tmp_path: Path
) -> None:
    with cluster(server, 2, tmp_path, EXT) as c:
        for t in one_topic_per_bundle(NS):
            lookup(c.brokers[0], t)
        for b in c.brokers:
            wait_until(
                lambda b=b: read_store(c.store_url, f"/loadbalance/extension/broker-load/{b.broker_id}"), 20, "a load"
            )
        p = cli("live", "advise", "--store", c.store_url, "--format", "json")
        assert p.returncode == 0, p.stderr
        lines = [json.loads(line) for line in p.stdout.splitlines()]
        assert len(lines) == 2, p.stdout
        shed, split = lines
        assert shed["step"] == 0 and shed["unload"] == [] and "counters" in shed, shed  # TransferShedder: idle
        assert split == {"step": 0, "split": []}  # no bundle meets a split condition


@pytest.mark.parametrize("backend", ["zk"], indirect=True)
def test_status_of_a_modular_cluster_counts_the_ownership_nodes(server: ServerProcess, tmp_path: Path) -> None:
    with cluster(server, 2, tmp_path) as c:
        _, doc, rows = four_bundles_status(c)
        for b in c.brokers:  # its bundles and its heartbeat namespaces' (v1 and v2)
            assert rows[b.broker_id]["ownedBundles"] == len(served_by(b)) + 2, b.broker_id
        assert doc["ownedBundles"] == 4 + 2 * 2


@pytest.mark.parametrize("backend", ["etcd"], indirect=True)
def test_status_of_a_wrong_chroot_is_an_error(server: ServerProcess) -> None:
    p = cli("live", "status", "--store", f"{server.url}/no-such-cluster", "--format", "json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and "no Pulsar metadata" in p.stderr and len(p.stderr.splitlines()) == 1
