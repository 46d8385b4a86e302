"""Several brokers in one ``bundlewise broker`` process (``--web`` repeated): each a whole broker on a real store,
with its own ready line, HTTP and binary ports, ownership and metrics; SIGTERM stops them all gracefully."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from broker_harness import EXT, FAST, children, follow, get, leftovers, wait_until

from bundlewise.live.harness.broker_group import SharedProcessError
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer, ServerProcess, free_port
from bundlewise.live.store import layout

NS = "multi/ns"
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(24)]


def _read_lines(proc: subprocess.Popen[str], n: int, timeout: float) -> list[dict[str, object]]:
    """The first ``n`` lines of ``proc``'s stdout, parsed, or AssertionError after ``timeout``."""
    lines: list[dict[str, object]] = []

    def read() -> None:
        assert proc.stdout is not None
        while len(lines) < n:
            line = proc.stdout.readline()
            if not line:
                return
            lines.append(json.loads(line))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    assert len(lines) == n, f"{len(lines)} ready lines of {n} within {timeout} s"
    return lines


@pytest.mark.parametrize(
    ("server_fixture", "settings"),
    [("etcd_server", FAST), ("zk_server", EXT)],
    ids=["etcd-modular", "zk-extensible"],
)
def test_three_brokers_in_one_process_serve_own_and_stop_together(
    server_fixture: str, settings: dict[str, object], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server: ServerProcess = request.getfixturevalue(server_fixture)
    store = f"{server.url}/t-multi-{os.getpid()}-{time.monotonic_ns()}"
    webs = [free_port() for _ in range(3)]
    binaries = [free_port() for _ in range(3)]
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", "--store", store]
    for w, b in zip(webs, binaries, strict=True):
        cmd += ["--web", f"127.0.0.1:{w}", "--broker-service-port", str(b)]
    for key, value in {**settings, "defaultNumberOfNamespaceBundles": 16}.items():
        cmd += ["--set", f"{key}={value}"]
    log = tmp_path / "brokers.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            ready = _read_lines(proc, 3, 60)
            ids = {f"127.0.0.1:{w}" for w in webs}
            assert {str(r["brokerId"]) for r in ready} == ids
            assert {r["pid"] for r in ready} == {proc.pid}
            assert {str(r["webServiceUrl"]) for r in ready} == {f"http://{i}" for i in ids}
            assert sorted(children(store, layout.BROKERS_ROOT)) == sorted(ids)

            owners: dict[str, str] = {}
            for i, topic in enumerate(TOPICS):  # through each broker in turn, redirects followed
                r, _ = follow(lookup_url_of(f"http://127.0.0.1:{webs[i % 3]}", topic))
                assert r.status_code == 200, r.text
                owners[topic] = r.json()["httpUrl"]
            assert set(owners.values()) <= {f"http://{i}" for i in ids}
            assert len(set(owners.values())) >= 2, owners  # ownership spread over the brokers of the process
            for topic, owner in owners.items():  # the owner answers its own bundles itself
                r = get(lookup_url_of(owner, topic))
                assert r.status_code == 200 and r.json()["httpUrl"] == owner, (topic, owner, r.status_code)
                port = int(owner.rsplit(":", 1)[1])
                assert r.json()["brokerUrl"] == f"pulsar://127.0.0.1:{binaries[webs.index(port)]}"

            for w in webs:  # every broker's metrics on its own port, naming its own load
                r = get(f"http://127.0.0.1:{w}/metrics")
                assert r.status_code == 200 and "pulsar_lb_cpu_usage" in r.text
                assert "bundlewise_metadata_store_puts" in r.text
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
    assert code == 0, log.read_text()[-2000:]
    assert children(store, layout.BROKERS_ROOT) == []
    text = log.read_text()
    for w in webs:  # each log line names the broker whose work wrote it
        assert f" 127.0.0.1:{w} INFO " in text, text[-2000:]
    wait_until(lambda: not children(store, "/namespace/multi/ns"), 5, "the bundles' ownership nodes released")


def lookup_url_of(web_url: str, topic: str) -> str:
    domain, rest = topic.split("://")
    return f"{web_url}/lookup/v2/topic/{domain}/{rest}"


def test_one_broker_failing_to_start_stops_the_others_with_one_line(etcd_server: EtcdServer) -> None:
    store = f"{etcd_server.url}/t-multi-fail-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        webs = [free_port(), port, free_port()]
        cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", "--store", store]
        for w in webs:
            cmd += ["--web", f"127.0.0.1:{w}", "--broker-service-port", str(free_port())]
        cmd += ["--set", "metadataStoreSessionTimeoutMillis=4000"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.splitlines()[-1].startswith(f"error: --web: cannot serve on 127.0.0.1:{port}")
    assert "Traceback" not in out.stderr
    assert len(out.stdout.splitlines()) <= 2  # the first broker may have said it was ready before the others failed
    assert children(store, layout.BROKERS_ROOT) == []


def test_a_local_cluster_runs_its_brokers_two_to_a_process(etcd_server: EtcdServer, tmp_path: Path) -> None:
    c = LocalCluster(5, store_url=etcd_server.url, settings=FAST, work_dir=tmp_path, brokers_per_process=2)
    try:
        c.start()
        assert len(c.brokers) == 5 and [len(g.members) for g in c.groups] == [2, 2, 1]
        assert [b.pid for b in c.brokers] == [g.pid for g in c.groups for _ in g.members]
        assert sorted(children(c.store_url, layout.BROKERS_ROOT)) == sorted(b.broker_id for b in c.brokers)
        r, _ = follow(lookup_url_of(c.brokers[3].web_url, TOPICS[0]))
        assert r.status_code == 200 and r.json()["httpUrl"] in {b.web_url for b in c.brokers}
        with pytest.raises(SharedProcessError):
            c.brokers[0].kill()
        assert all(b.is_running for b in c.brokers)
    finally:
        c.stop()
    assert not any(g.is_running for g in c.groups)
    assert children(c.store_url, layout.BROKERS_ROOT) == []


def test_live_up_runs_its_brokers_two_to_a_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--brokers", "4", "--brokers-per-process", "2"]
    cmd += ["--duration", "6m", "--no-progress", "--set", "metadataStoreSessionTimeoutMillis=4000"]
    cmd += ["--keep-logs", str(logs)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    m = next(iter(json.loads(out.stdout)["strategies"].values()))
    assert m["lookups"] > 0 and m["lookups_failed"] == 0 and m["double_owner_observations"] == 0
    processes = sorted((logs / "cluster-0").glob("*.log"))
    ready = [json.loads(line) for p in processes for line in p.read_text().splitlines() if line.startswith("{")]
    assert len(processes) == 2 and len(ready) == 4  # two processes, two ready lines each
    assert sorted(len({r["brokerId"] for r in ready if r["pid"] == pid}) for pid in {r["pid"] for r in ready}) == [2, 2]
    assert len(list((logs / "cluster-0").glob("decisions-*.jsonl"))) == 4
    assert leftovers(re.search(r"^store: (\S+)$", out.stderr, re.M).group(1)) == []  # type: ignore[union-attr]
