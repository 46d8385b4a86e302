"""A broker whose clock runs at half rate (Debian's libfaketime, ``FAKETIME="+0 x0.5"``) on etcd: its
clock check against the store's reference lease finds the disagreement, it fences itself -- serves no
bundle, says why in its log -- and stops renewing its session, so its registration goes and the other
brokers serve every bundle (docs/live/guarantees.md, "Fencing and its clock assumption")."""

from __future__ import annotations

import glob
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from broker_harness import (
    FAST,
    SESSION_MS,
    cluster,
    follow,
    get,
    lookup,
    lookup_url,
    one_topic_per_bundle,
    read_store,
    served_by,
    wait_until,
)

from bundlewise.live.harness.cluster import BrokerProcess
from bundlewise.live.harness.servers import EtcdServer, ZooKeeperServer
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash

LIBFAKETIME = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
NS = "clock/ns"


class SlowClockBroker(BrokerProcess):
    """A broker process whose clocks (monotonic and wall) run at half rate; ``env`` execs, so the PID the
    harness stops is the broker's own."""

    def _command(self) -> list[str]:
        preload = ["env", f"LD_PRELOAD={LIBFAKETIME[0]}", "FAKETIME=+0 x0.5", "FAKETIME_NO_CACHE=1"]
        return preload + super()._command()


def topic_in(bundle: str) -> str:
    return next(
        t
        for t in one_topic_per_bundle(NS)
        if NamespaceBundles.initial(NS, 4).bundle_for_hash(crc32_hash(t)).name == bundle
    )


@pytest.mark.skipif(not LIBFAKETIME, reason="needs Debian's faketime (make faketime installs it)")
def test_a_broker_with_a_half_rate_clock_fences_itself_and_its_bundles_move(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    with cluster(etcd_server, 2, tmp_path, FAST) as c:
        slow = SlowClockBroker(c.store_url, log_dir=tmp_path / "slow", settings=FAST)
        slow.start()
        try:
            reason = "fenced: the clock assumption is broken, this broker stops serving"
            wait_until(lambda: reason in slow.log_path.read_text(), 15, "the slow broker to fence itself")
            assert served_by(slow) == set()
            gone = f"/loadbalance/brokers/{slow.broker_id}"
            wait_until(lambda: read_store(c.store_url, gone) is None, SESSION_MS / 1000 + 6, "its registration gone")
            for bundle in NamespaceBundles.initial(NS, 4).bundles:
                answer, _ = lookup(c.brokers[0], topic_in(bundle.name))
                assert answer["httpUrl"] in {b.web_url for b in c.brokers}
                assert served_by(slow) == set()
        finally:
            slow.stop()


@pytest.mark.skipif(not LIBFAKETIME, reason="needs Debian's faketime (make faketime installs it)")
def test_a_half_rate_broker_resumed_after_a_pause_past_its_session_serves_nothing_queued(
    zk_server: ZooKeeperServer, tmp_path: Path
) -> None:
    """ZooKeeper has no clock check: a broker whose clock runs at half rate, stopped for the session timeout +
    2 s, saw only half of it pass and its fencing deadline had not passed when it resumed.  The request that
    queued meanwhile is answered before its session watcher can learn of the loss; the watchdog (docs/live/
    guarantees.md §17.2) makes that answer empty, and the bundle is served by the other broker."""
    with cluster(zk_server, 1, tmp_path, FAST) as c:
        slow = SlowClockBroker(c.store_url, log_dir=tmp_path / "slow", settings=FAST)
        slow.start()
        try:
            bundle = NamespaceBundles.initial(NS, 4).bundles[0].name
            topic = topic_in(bundle)
            r, _ = follow(lookup_url(slow, topic, authoritative=True))
            assert r.status_code == 200 and r.json()["httpUrl"] == slow.web_url, r.text
            wait_until(lambda: bundle in served_by(slow), 5, "the slow broker to serve its bundle")
            slow.pause()
            time.sleep(SESSION_MS / 1000 + 2)
            with ThreadPoolExecutor(1) as pool:  # asked while it is stopped: answered first thing on resuming
                owned_url = f"{slow.web_url}/admin/v2/brokers/standalone/{slow.broker_id}/ownedNamespaces"
                queued = pool.submit(get, owned_url)
                time.sleep(0.3)
                slow.resume()
                answer = queued.result(timeout=15)
            assert answer.status_code == 200 and bundle not in answer.json(), answer.text
            found, _ = lookup(c.brokers[0], topic)
            assert found["httpUrl"] == c.brokers[0].web_url
            wait_until(lambda: bundle in served_by(c.brokers[0]), 10, "the other broker to serve it")
            assert bundle not in served_by(slow)
        finally:
            slow.stop()
