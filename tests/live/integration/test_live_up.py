"""``bundlewise live up`` end to end: a small scenario with a broker SIGKILLed and restarted, on both stores.

Real processes throughout: the store the command starts, three broker processes, the lookup clients; the
event kills one broker (SIGKILL) and starts it again.  The outputs are checked against each other and against
what happened; the processes the command started must all be gone when it returns (also after Ctrl-C).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from broker_harness import leftovers

from bundlewise.results.catalogue import LIVE_METRIC_KEYS, METRIC_KEYS

SESSION_MS = 4000
SCENARIO = """
name = "tiny-restart"
duration = "20m"
step = "1m"
seed = 3
[[brokers]]
name = "broker-1"
[[brokers]]
name = "broker-2"
[[brokers]]
name = "broker-3"
[[namespaces]]
name = "acme/orders"
bundles = 8
topics = 120
msg_rate = 60000
zipf = 0.8
[[events]]
at = "8m"
action = "restart"
broker = "broker-2"
down_for = "3m"
[balancer]
loadBalancerSheddingIntervalMinutes = 1
loadBalancerSheddingGracePeriodMinutes = 2
"""


def live_up(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SCENARIO)
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--cluster", str(scenario)]
    cmd += ["--set", f"metadataStoreSessionTimeoutMillis={SESSION_MS}", "--no-progress", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def store_of(stderr: str) -> str:
    m = re.search(r"^store: (\S+)$", stderr, re.M)
    assert m is not None, stderr
    return m.group(1)


@pytest.mark.parametrize("backend", ["etcd", "zk"])
def test_live_up_plays_a_restart_and_writes_the_simulators_files(tmp_path: Path, backend: str) -> None:
    out = tmp_path / "out"
    extra = ("--zookeeper",) if backend == "zk" else ()
    # --keep-logs under tmp_path: a failure here prints the brokers' logs (tests/live/conftest.py)
    extra += ("--keep-logs", str(tmp_path / "logs"))
    proc = live_up(tmp_path, "--time-scale", "60", "--out", str(out), "--strategy", "ThresholdShedder", *extra)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert f"logs kept in {tmp_path / 'logs'}\n" in stderr
    assert len(list((tmp_path / "logs" / "cluster-0").glob("*.log"))) >= 3  # one per broker process, and more
    assert list((tmp_path / "logs" / "cluster-0").glob("decisions-*.jsonl"))
    assert re.search(r"^admin token \(role admin, a super-user\): \S+\.\S+\.\S+$", stderr, re.M)
    assert leftovers(store_of(stderr)) == []

    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS", "decisions.jsonl", "lookups.parquet", "report.html", "summary.json", "timeline.parquet",
    ]  # fmt: skip
    doc = json.loads((out / "summary.json").read_text())
    assert doc == json.loads(stdout)
    assert doc["scenario"] == "tiny-restart" and list(doc["strategies"]) == ["ThresholdShedder"]
    m = doc["strategies"]["ThresholdShedder"]
    assert list(m) == [*METRIC_KEYS, *LIVE_METRIC_KEYS, "events"]
    assert m["double_owner_observations"] == 0
    assert m["observer_rounds_per_second"] >= 15  # sampled at 20 Hz
    # the kill is a broker loss: every bundle it served was owned again, within the session timeout + 2 s
    # plus one round of the lookup clients (one step: 1 s at --time-scale 60)
    assert m["reassign_seconds_max"] is not None
    assert m["reassign_seconds_max"] <= SESSION_MS / 1000 + 2 + 1
    assert [e["action"] for e in m["events"]] == ["start", "restart", "return"]
    assert [e["broker"] for e in m["events"]] == [None, "broker-2", "broker-2"]

    lookups = pq.read_table(out / "lookups.parquet").to_pylist()
    assert len(lookups) == m["lookups"] > 0
    assert sum(1 for r in lookups if r["result"] != "ok") == m["lookups_failed"]
    assert all(0 <= r["hops"] <= 20 for r in lookups)
    ok = sorted(r["latency_ms"] for r in lookups if r["result"] == "ok")
    assert m["lookup_latency_ms_p50"] == pytest.approx(ok[(len(ok) - 1) // 2], rel=0.5)
    owned = sorted(r["latency_ms"] for r in lookups if r["result"] == "ok" and r["hops"] == 0 and r["attempts"] == 1)
    assert owned and m["owned_lookup_latency_ms_p50"] == pytest.approx(owned[(len(owned) - 1) // 2], rel=0.5)
    assert m["owned_lookup_latency_ms_p99"] >= m["owned_lookup_latency_ms_p50"]
    assert m["lookup_calibration_ms"] is not None and 0 < m["lookup_calibration_ms"] < 1000

    timeline = pq.read_table(out / "timeline.parquet").to_pylist()
    ticks = 20  # 0..19 minutes: the tick at the duration is not run, as in simulate
    assert len(timeline) == ticks * 3
    assert {r["broker"] for r in timeline} == {"broker-1", "broker-2", "broker-3"}
    b2 = [r["up"] for r in sorted(timeline, key=lambda r: r["tick"]) if r["broker"] == "broker-2"]
    assert b2[0] and not all(b2) and b2[-1]  # up, down after the kill, up again after its return
    assert max(r["bundles"] for r in timeline if r["tick"] == ticks - 1) > 0

    rows = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    assert sum(1 for r in rows if r["type"] == "assignment") == m["assignments"] >= 8
    assert sum(1 for r in rows if r["type"] == "unload" and r.get("label") == "Success") == m["unloads"]
    assert all(r["time_ms"] >= 0 for r in rows)
    html = (out / "report.html").read_text()
    assert "ThresholdShedder" in html and "<img" in html


def test_ctrl_c_stops_everything_and_writes_nothing(tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "logs"
    proc = live_up(tmp_path, "--time-scale", "10", "--out", str(out), "--keep-logs", str(logs))
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 120
    while "admin token" not in seen and time.monotonic() < deadline:
        seen += proc.stderr.readline()
    assert "admin token" in seen, seen
    time.sleep(2)
    os.kill(proc.pid, signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in rest
    assert rest.strip().splitlines()[-1] == f"error: interrupted: {out} was left as it was"
    assert not out.exists()
    assert len(list((logs / "cluster-0").glob("*.log"))) >= 3  # the logs are kept when the run is interrupted
    assert not [p for p in os.listdir(tmp_path) if ".bundlewise-" in p]  # no staging folder left
    assert leftovers(store_of(seen)) == []


def test_an_existing_out_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    proc = live_up(tmp_path, "--out", str(out))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and "--overwrite" in stderr
    assert "store:" not in stderr  # nothing was started
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    proc = live_up(tmp_path, "--keep-logs", str(out))
    _, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr.count("\n")) == (2, 1)
    assert stderr.startswith(f"error: {out}: --keep-logs: is not empty") and "store:" not in stderr
