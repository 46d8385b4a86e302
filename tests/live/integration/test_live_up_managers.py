"""``bundlewise live up --managers modular,extensible``: the same scenario on both load managers, side by side.

One store (etcd), real broker processes: one broker serves everything for the first minutes, then two more
join, so ThresholdShedder (modular) and TransferShedder (extensible) both have a hot broker to relieve.  The
outputs hold both runs, each named ``MANAGER/STRATEGY``; every process the command started is gone after it.

Splitting is off: a broker that keeps splitting removes its own load records every 10 Pulsar seconds (as
Pulsar's reporters do on each ``Splitting`` record), and at 60x on a loaded machine the next report came late
enough that TransferShedder's cycles saw no record for the hot broker (``Skip.NoLoadData``) through the whole
run -- the scenario is about shedding, not about splits.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from broker_harness import leftovers

from bundlewise.results.catalogue import LIVE_METRIC_KEYS, METRIC_KEYS
from bundlewise.results.decisions import FIELDS

SCENARIO = """
name = "tiny-scale-out"
duration = "16m"
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
msg_rate = 400000
zipf = 0.8
[[events]]
at = "4m"
action = "add"
broker = "broker-2"
[[events]]
at = "4m"
action = "add"
broker = "broker-3"
[balancer]
loadBalancerAutoBundleSplitEnabled = false
loadBalancerSheddingIntervalMinutes = 1
loadBalancerSheddingGracePeriodMinutes = 2
"""
RUNS = ["modular/ThresholdShedder", "extensible/TransferShedder"]
# UnloadDecision.Reason of TransferShedder's unloads (Pulsar's UnloadDecision)
TRANSFER_REASONS = {"Overloaded", "Underloaded", "Unknown"}


def test_both_managers_play_the_same_scenario_side_by_side(tmp_path: Path) -> None:
    scenario = tmp_path / "scale.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--cluster", str(scenario)]
    cmd += ["--managers", "modular,extensible", "--time-scale", "60", "--out", str(out), "--no-progress"]
    cmd += ["--keep-logs", str(tmp_path / "logs")]  # a failure prints the brokers' logs (tests/live/conftest.py)
    cmd += ["--set", "metadataStoreSessionTimeoutMillis=4000"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    stores = re.findall(r"^store: (\S+)$", proc.stderr, re.M)
    assert len(stores) == 2  # one run after the other, each on its own store
    for store in stores:
        assert leftovers(store) == []

    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS", "decisions.jsonl", "lookups.parquet", "report.html", "summary.json", "timeline.parquet",
    ]  # fmt: skip
    doc = json.loads((out / "summary.json").read_text())
    assert doc == json.loads(proc.stdout)
    assert doc["scenario"] == "tiny-scale-out" and list(doc["strategies"]) == RUNS
    for key in RUNS:
        m = doc["strategies"][key]
        assert list(m) == [*METRIC_KEYS, *LIVE_METRIC_KEYS, "events"]
        assert m["double_owner_observations"] == 0
        assert m["lookups"] > 0 and m["lookups_failed"] == 0
        assert [e["action"] for e in m["events"]] == ["start", "add", "add"]
        assert m["max_load_p99"] > 1.0  # the one broker at the start carries more than its capacity

    rows = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    assert [r["strategy"] for r in rows] == sorted((r["strategy"] for r in rows), key=RUNS.index)  # runs in order
    for key in RUNS:
        mine = [r for r in rows if r["strategy"] == key]
        m = doc["strategies"][key]
        assert sum(1 for r in mine if r["type"] == "assignment") == m["assignments"] >= 8
        assert sum(1 for r in mine if r["type"] == "unload" and r["label"] == "Success") == m["unloads"]
        assert all(0 <= r["time_ms"] <= 16 * 60_000 for r in mine)
    unloads = [r for r in rows if r["strategy"] == RUNS[1] and r["type"] == "unload"]
    assert unloads, "TransferShedder relieved the first broker"
    for r in unloads:
        assert r["label"] in ("Success", "Skip") and r["cause"] in TRANSFER_REASONS
        # a planned unload the source could no longer carry out (its owner split or lost the bundle meanwhile)
        # is logged as skipped with the failure as its reason (live.broker.extensible.leader)
        failed = r["label"] == "Skip" and r["reason"].startswith("the unload failed: ")
        assert r["reason"] == r["cause"] or failed, r
        if failed:  # a skipped decision carries no destination (Unload.skipped), as Pulsar's Skip has none
            assert r["destination"] is None, r
        else:
            assert r["destination"] is not None and r["destination"] != r["broker"]  # a transfer: pre-chosen
    assert any(r["label"] == "Success" for r in unloads), "at least one transfer carried out"
    modular = [r for r in rows if r["strategy"] == RUNS[0] and r["type"] == "unload"]
    assert all(r["cause"] in ("Overloaded", "Underloaded") for r in modular)  # ThresholdShedder's causes
    assert all(list(r) == list(FIELDS[r["type"]]) for r in rows)  # one row shape for both managers

    timeline = pq.read_table(out / "timeline.parquet").to_pylist()
    lookups = pq.read_table(out / "lookups.parquet").to_pylist()
    for key in RUNS:
        ticks = [r for r in timeline if r["strategy"] == key]
        assert len(ticks) == 16 * 3
        first = [r for r in ticks if r["broker"] == "broker-1"]
        assert all(r["up"] for r in first) and max(r["true_load"] for r in first) > 1.0
        assert max(r["reported_load"] for r in first) > 0  # read from the manager's own load records
        assert sum(1 for r in lookups if r["strategy"] == key) == doc["strategies"][key]["lookups"]

    html = (out / "report.html").read_text()
    assert all(f"<h3>{key}</h3>" in html for key in RUNS)
    assert "fits this workload best" in html


def test_an_unknown_or_repeated_manager_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for managers in ("modular,foo", "extensible,extensible", ""):
        cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--managers", managers, "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr == (
            f"error: --managers: expected distinct names among modular, extensible, comma-separated, got {managers!r}\n"
        )
        assert not out.exists()


def test_an_extensible_strategy_under_the_modular_manager_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--managers", "modular,extensible"]
    cmd += ["--strategy", "TransferShedder", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "error: --strategy: TransferShedder is not a strategy of the modular load manager\n"
    assert not out.exists()
