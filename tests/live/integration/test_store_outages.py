"""Recovery from a store outage without a person, on both stores and both load managers: the store
paused (SIGSTOP) past the brokers' session timeout then resumed, killed (SIGKILL) and restarted on its
data directory, and killed and restarted EMPTY (its data directory wiped); each fault under each manager,
the stores taking turns.

After each, every broker re-establishes its session, registers again and re-publishes what the store
lost (its registration and load data; the ownership it still holds: an ephemeral lock, or a channel
record re-asserted in the new session), so that every bundle with topics is served again within
``SESSION + 10`` s of the store answering again (docs/live/guarantees.md), while an observer sampling
every broker at 20+ Hz never sees one bundle served by two brokers (``observed``).

Small on purpose: 2 brokers, 4 bundles, a 4 s session."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from broker_harness import EXT, SESSION_MS, cluster, get, lookup, observed, one_topic_per_bundle, served_by, wait_until

from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer, ServerProcess
from bundlewise.model.bundles import NamespaceBundles

NS = "outage/ns"
BUNDLES = [b.name for b in NamespaceBundles.initial(NS, 4).bundles]
TOPICS = one_topic_per_bundle(NS)
SESSION = SESSION_MS / 1000
BOUND = SESSION + 10  # after the store answers again


def _serving(c: LocalCluster) -> set[str]:
    return set().union(*(served_by(b) for b in c.brokers))


def _assign_all(c: LocalCluster) -> None:
    for i, topic in enumerate(TOPICS):
        lookup(c.brokers[i % len(c.brokers)], topic)
    wait_until(lambda: set(BUNDLES) <= _serving(c), 10, "every bundle served")


def _wipe(server: ServerProcess) -> None:
    """Lose the store's data: what the server keeps in its data directory (not our lock or log)."""
    shutil.rmtree(server.data_dir / ("member-data" if isinstance(server, EtcdServer) else "data"))


def _outage(server: ServerProcess, fault: str) -> None:
    if fault == "pause":
        server.pause()
        try:
            time.sleep(SESSION + 1)
        finally:
            server.resume()
        return
    server.kill()
    time.sleep(SESSION + 1)
    if fault == "wipe":
        _wipe(server)
    server.start()


# each fault under each manager once, the stores taking turns (every store x manager x fault cell, 20 runs
# each, is the fault campaign's: ``python -m bench faults``, bench/results/faults.md)
CELLS = [
    ("zk", "modular", "pause"),
    ("etcd", "extensible", "pause"),
    ("etcd", "modular", "restart"),
    ("zk", "extensible", "restart"),
    ("zk", "modular", "wipe"),
    ("etcd", "extensible", "wipe"),
]


@pytest.mark.parametrize(("backend", "manager", "fault"), CELLS, indirect=["backend"])
def test_every_bundle_is_served_again_after_a_store_outage(
    fresh_server: ServerProcess, tmp_path: Path, fault: str, manager: str
) -> None:
    settings = EXT if manager == "extensible" else {}
    with cluster(fresh_server, 2, tmp_path, settings) as c, observed(c):
        _assign_all(c)
        _outage(fresh_server, fault)
        back = time.monotonic()
        wait_until(lambda: set(BUNDLES) <= _serving(c), BOUND + 20, "every bundle served again")
        took = time.monotonic() - back
        store = fresh_server.name
        print(f"{store} {manager} {fault}: all served again {took:.2f} s after the store was back (bound {BOUND})")
        assert took <= BOUND
        for b in c.brokers:
            wait_until(
                lambda b=b: b.broker_id in get(f"{b.web_url}/admin/v2/brokers/standalone", timeout=5).json(),
                5,
                f"{b.broker_id} registered again",
            )
