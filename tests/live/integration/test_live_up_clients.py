"""``bundlewise live up`` with real clients: the official client's producers and consumers through a rolling
restart, under both load managers side by side (issue: real clients; docs/live/up.md "Real clients").

The scenario's ``[clients]`` starts two producers and two consumers (Failover) of Apache Pulsar's own client;
every broker is SIGKILLed and restarted in turn, so the owner of every client topic dies once while the
clients run.  What the clients saw lands in ``summary.json`` (``CLIENT_METRIC_KEYS``) for each manager.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bundlewise.results.catalogue import CLIENT_METRIC_KEYS, LIVE_METRIC_KEYS, METRIC_KEYS

SESSION_S = 4
PRODUCERS, RATE, KILLS = 2, 50, 3
SCENARIO = f"""
name = "clients-rolling"
duration = "12m"
step = "1m"
seed = 5
[[brokers]]
name = "broker-1"
[[brokers]]
name = "broker-2"
[[brokers]]
name = "broker-3"
[[namespaces]]
name = "acme/orders"
bundles = 4
topics = 40
msg_rate = 4000
[[events]]
at = "2m"
action = "restart"
broker = "broker-1"
down_for = "1m"
[[events]]
at = "5m"
action = "restart"
broker = "broker-2"
down_for = "1m"
[[events]]
at = "8m"
action = "restart"
broker = "broker-3"
down_for = "1m"
[balancer]
loadBalancerSheddingEnabled = false
[clients]
producers = {PRODUCERS}
consumers = 2
rate = {RATE}
message_size = 512
subscription = "Failover"
"""


def test_live_up_measures_what_real_clients_see_through_a_rolling_restart(tmp_path: Path) -> None:
    scenario = tmp_path / "clients.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--cluster", str(scenario)]
    cmd += ["--set", f"metadataStoreSessionTimeoutMillis={SESSION_S * 1000}", "--no-progress"]
    cmd += ["--time-scale", "30", "--managers", "modular,extensible", "--out", str(out)]
    cmd += ["--keep-logs", str(tmp_path / "logs")]  # a failure prints the brokers' logs (tests/live/conftest.py)
    env = {**os.environ, "BUNDLEWISE_CACHE_DIR": str(tmp_path / "cache")}  # the command's log file: the clients' log
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def client_log() -> str:
        """What the official client logged beyond the routine (printed when an assertion fails)."""
        lines = [line for f in sorted((tmp_path / "cache").rglob("*.log")) for line in f.read_text().splitlines()]
        return "\n".join(line for line in lines if " INFO " not in line or "reconnect" in line.lower())[-6000:]

    doc = json.loads((out / "summary.json").read_text())
    assert list(doc["strategies"]) == ["modular/ThresholdShedder", "extensible/TransferShedder"]
    for name, m in doc["strategies"].items():
        print(name, {k: m[k] for k in CLIENT_METRIC_KEYS})
        assert list(m)[: len(METRIC_KEYS) + len(LIVE_METRIC_KEYS) + len(CLIENT_METRIC_KEYS)] == [
            *METRIC_KEYS,
            *LIVE_METRIC_KEYS,
            *CLIENT_METRIC_KEYS,
        ]
        assert m["double_owner_observations"] == 0
        assert m["publish_failures"] == 0, (name, client_log())  # every send acknowledged, through three owner kills
        # 12 Pulsar minutes at 30x is 24 s; the producers start once the brokers answer, a few seconds in
        assert PRODUCERS * RATE * 10 <= m["messages_published"] <= PRODUCERS * RATE * 24
        assert m["messages_received"] > 0
        # file storage (live up's default with real clients): no acknowledged message is lost to a killed owner
        assert m["messages_lost"] == 0, (name, client_log())
        assert m["messages_received"] - m["messages_duplicated"] <= m["messages_published"] + m["publish_failures"]
        assert m["client_reconnects"] >= 1  # the first kill takes a client topic's owner at least
        p50, p99, p999 = (m[f"publish_latency_ms_{q}"] for q in ("p50", "p99", "p999"))
        assert 0 < p50 <= p99 <= p999
        # per kill of its topic's owner, a producer's topic is served again within a session timeout and the
        # reassignment, and the client's doubling reconnection backoff tries again at most that long after
        assert 0 <= m["client_unavailable_seconds"] <= PRODUCERS * KILLS * 2 * (SESSION_S + 6)
    html = (out / "report.html").read_text()
    assert "publish latency, p99" in html and "client reconnections" in html
