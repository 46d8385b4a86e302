"""Broker events mean what they say: the first event decides how a broker starts; an event that changes nothing
is dropped with a warning; ``remove`` then ``add`` drains and refills a broker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main
from bundlewise.sim.events import initial_brokers, transitions
from bundlewise.sim.scenario import Event, parse_scenario

DRAIN_AND_REFILL = """
name = "drain-and-refill"
duration = "6h"
step = "1m"
seed = 3
[[brokers]]
name = "broker-1"
[[brokers]]
name = "broker-2"
[[brokers]]
name = "broker-3"
[[namespaces]]
name = "t/ns"
bundles = 24
topics = 240
msg_rate = 360000
[[events]]
at = "1h"
action = "remove"
broker = "broker-3"
[[events]]
at = "4h"
action = "add"
broker = "broker-3"
"""

H = 3_600_000


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *args: str) -> tuple[Path, str]:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(text)
    out = tmp_path / "out"
    code = main(["simulate", "--no-progress", "--cluster", str(cluster), "--out", str(out), *args])
    _, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_remove_then_add_drains_and_refills_the_broker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = _run(tmp_path, capsys, DRAIN_AND_REFILL, "--strategy", "ThresholdShedder")
    assert "warning" not in err
    rows = [r for r in pq.read_table(out / "timeline.parquet").to_pylist() if r["broker"] == "broker-3"]
    by_tick = {r["tick"]: r for r in rows}
    # up from the start (its first event is a remove) with its share of the bundles
    assert by_tick[0]["up"] and by_tick[59]["up"] and by_tick[59]["bundles"] >= 6
    # drained at 1h: down, no bundles, until 4h
    assert all(not by_tick[t]["up"] and by_tick[t]["bundles"] == 0 for t in range(60, 240))
    # back at 4h, empty at first, then refilled
    assert by_tick[240]["up"] and by_tick[359]["bundles"] >= 4 and by_tick[359]["true_load"] > 0.1
    decisions = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    lost = by_tick[59]["bundles"]
    drained = [d for d in decisions if d["type"] == "assignment" and d["time_ms"] == 1 * H]
    assert len(drained) == lost and all(d["broker"] in ("broker-1", "broker-2") for d in drained)
    assert not [
        d for d in decisions if 1 * H <= d["time_ms"] < 4 * H and "broker-3" in (d["broker"], d.get("destination"))
    ]
    refilled = [d for d in decisions if d["time_ms"] >= 4 * H and d.get("destination") == "broker-3"]
    assert refilled and refilled[0]["type"] == "unload"
    summary = json.loads((out / "summary.json").read_text())["strategies"]["ThresholdShedder"]
    events = [(e["time_ms"], e["action"], e["broker"]) for e in summary["events"]]
    assert events == [(0, "start", None), (1 * H, "remove", "broker-3"), (4 * H, "add", "broker-3")]
    add = summary["events"][2]
    assert add["reach_50_minutes"] is not None and add["reach_80_minutes"] >= add["reach_50_minutes"]
    assert summary["events"][1]["reach_50_minutes"] is None  # a broker that stops refills nothing
    html = (out / "report.html").read_text()
    assert "<h2>Settling and refill after each event</h2>" in html
    assert "4h add broker-3" in html and "1h remove broker-3" in html
    for key in ("repeat_unloads", "saturated_broker_minutes", "undelivered_bytes", "backlog_age_max_minutes"):
        assert f"<th class='k' title='{key}'>" in html


def test_a_first_add_means_the_broker_starts_absent() -> None:
    doc = {
        "brokers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "events": [
            {"at": "2h", "action": "add", "broker": "b"},
            {"at": "1h", "action": "remove", "broker": "b"},  # first in time: b starts up
            {"at": "3h", "action": "add", "broker": "c"},
            {"at": "1h", "action": "add", "broker": "d"},  # unlisted: absent until added
        ],
    }
    sc = parse_scenario(doc, "c.toml")
    assert sc.initial == ("a", "b")
    assert [b.name for b in sc.brokers] == ["a", "b", "c", "d"]
    assert sc.warnings == ()


def test_events_that_change_nothing_are_dropped_with_a_warning() -> None:
    doc = {
        "brokers": [{"name": "a"}, {"name": "b"}],
        "events": [
            {"at": "20m", "action": "remove", "broker": "b"},
            {"at": "30m", "action": "restart", "broker": "b"},  # b is down: no restart, no return
            {"at": "40m", "action": "restart", "broker": "a", "down_for": "30m"},
            {"at": "50m", "action": "add", "broker": "a"},  # early: the restart's return changes nothing
            {"at": "60m", "action": "add", "broker": "a"},  # a is up
        ],
    }
    sc = parse_scenario(doc, "c.toml")
    assert sc.initial == ("a", "b")
    assert sc.warnings == (
        "warning: c.toml: events[1] (restart b at 30m): b is not up; the event changes nothing",
        "warning: c.toml: events[4] (add a at 1h): a is already up; the event changes nothing",
        "warning: c.toml: events[2] (restart a at 40m): a is up again before its return at 1h10m; the return"
        " changes nothing",
    )
    applied, _ = transitions(sc.initial, sc.events)
    assert [(t.at // 60_000, t.action, t.broker) for t in applied] == [
        (20, "remove", "b"),
        (40, "restart", "a"),
        (50, "add", "a"),
    ]


def test_a_return_comes_before_an_event_at_the_same_time() -> None:
    events = [Event(0, "restart", "a", 60_000), Event(60_000, "remove", "a")]
    applied, warnings = transitions(initial_brokers(["a"], events), events)
    assert [(t.at, t.action) for t in applied] == [(0, "restart"), (60_000, "return"), (60_000, "remove")]
    assert warnings == []


def test_the_command_prints_the_event_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "duration = '10m'\n[[brokers]]\nname = 'a'\n[[brokers]]\nname = 'b'\n"
    text += "[[events]]\nat = '2m'\naction = 'remove'\nbroker = 'a'\n"
    text += "[[events]]\nat = '5m'\naction = 'remove'\nbroker = 'a'\n"
    _, err = _run(tmp_path, capsys, text, "--strategy", "OverloadShedder")
    assert err.count("events[1] (remove a at 5m): a is not up; the event changes nothing") == 1


def _metrics(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return doc
