"""A simulated run and a live run of one scenario write files of one schema (``bundlewise.results``).

The same small scenario — one broker serving everything, two more joining after 10 minutes, so the shedder has
work — is simulated (``bundlewise simulate``) and played for real (``bundlewise live up``: etcd, three broker
processes, lookup clients).  Their ``summary.json`` metric keys (the live run adds exactly the catalogue's
live-only group), ``timeline.parquet`` columns and types, and ``decisions.jsonl`` fields per decision type are
compared: equal, because one record, one row constructor and one writer produce both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from test_live_up_managers import SCENARIO as MANAGERS_SCENARIO

from bundlewise.results.catalogue import LIVE_METRIC_KEYS, METRIC_KEYS
from bundlewise.results.decisions import FIELDS

# the managers test's scenario, longer (a start-up on a loaded machine must not eat the events)
SCENARIO = MANAGERS_SCENARIO.replace('name = "tiny-scale-out"', 'name = "schema-scale-out"')
# 45 Pulsar minutes: after the joins at 10m, enough shedding cycles for an unload even when the machine is busy
SCENARIO = SCENARIO.replace('duration = "16m"', 'duration = "45m"').replace('at = "4m"', 'at = "10m"')
# with splitting: the simulator assigns only the children of splits (its first bundles start owned)
SCENARIO = SCENARIO.replace("loadBalancerAutoBundleSplitEnabled = false\n", "")


def _bundlewise(*args: str) -> str:
    cmd = [sys.executable, "-m", "bundlewise.cli.main", *args, "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr


def _files(out: Path) -> tuple[dict[str, Any], Any, list[dict[str, Any]]]:
    doc = json.loads((out / "summary.json").read_text())
    (metrics,) = doc["strategies"].values()
    rows = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    return metrics, pq.read_schema(out / "timeline.parquet"), rows


def test_a_simulated_and_a_live_run_write_one_schema(tmp_path: Path) -> None:
    scenario = tmp_path / "scale.toml"
    scenario.write_text(SCENARIO)
    sim_out, live_out = tmp_path / "sim", tmp_path / "live"
    common = ("--cluster", str(scenario), "--strategy", "ThresholdShedder")
    _bundlewise("simulate", *common, "--out", str(sim_out))
    live_log = _bundlewise("live", "up", *common, "--time-scale", "60", "--out", str(live_out), "--no-auth",
                "--set", "metadataStoreSessionTimeoutMillis=4000")  # fmt: skip

    sim, sim_timeline, sim_rows = _files(sim_out)
    live, live_timeline, live_rows = _files(live_out)
    assert list(sim) == [*METRIC_KEYS, "events"]
    assert list(live) == [*METRIC_KEYS, *LIVE_METRIC_KEYS, "events"]
    assert [k for k in live if k not in LIVE_METRIC_KEYS] == list(sim)
    assert [list(e) for e in live["events"]] == [list(e) for e in sim["events"]]
    assert [e["action"] for e in live["events"]] == ["start", "add", "add"]

    assert live_timeline == sim_timeline  # names and types, in order
    assert "delivered_load" in sim_timeline.names

    sim_types, live_types = {r["type"] for r in sim_rows}, {r["type"] for r in live_rows}
    counts = {t: sum(r["type"] == t for r in live_rows) for t in sorted(live_types)}
    deciders = sorted({r["leader"] for r in live_rows if r["type"] == "unload"})
    why = f"live decisions {counts} by {deciders}; live metrics {live}; live stderr: {live_log[-3000:]}"
    assert {"assignment", "unload"} <= sim_types & live_types, why
    for r in sim_rows + live_rows:
        assert list(r) == list(FIELDS[r["type"]]), r
    assert all(r["leader"] is None for r in sim_rows)
    assert all(isinstance(r["leader"], str) and r["leader"] for r in live_rows)  # the broker that decided
