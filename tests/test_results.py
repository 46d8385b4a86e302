"""The run-results contract (``bundlewise.results``): one decisions row, one catalogue, one writer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from bundlewise.model.decisions import (
    Assignment,
    Label,
    Logged,
    MergeDecision,
    SplitDecision,
    SplitReason,
    Unload,
    UnloadReason,
)
from bundlewise.results.catalogue import (
    CLIENT_METRIC_KEYS,
    DEFS,
    DISPATCH_METRIC_KEYS,
    LIVE_METRIC_KEYS,
    METRIC_KEYS,
    metric_keys,
)
from bundlewise.results.decisions import FIELDS, decision_row, read_row
from bundlewise.results.record import RunResult
from bundlewise.results.write import TIMELINE_COLUMNS, timeline_table, write_run

B = "t/ns/0x00000000_0x40000000"


def test_a_logged_decision_is_one_line_of_decisions_jsonl() -> None:
    unload = Logged("ThresholdShedder", 3, 180_000, Unload("a", B, "why", "b"), throughput=5.0, flap=False)
    assert decision_row(unload) == {
        "strategy": "ThresholdShedder",
        "tick": 3,
        "time_ms": 180_000,
        "time": "3m",
        "type": "unload",
        "bundle": B,
        "broker": "a",
        "destination": "b",
        "throughput": 5.0,
        "flap": False,
        "reason": "why",
        "label": "Success",
        "cause": "Overloaded",
        "leader": None,
    }
    assert list(decision_row(unload)) == list(FIELDS["unload"])
    split = Logged(
        "x", 1, 60_000, SplitDecision(B, "a", (SplitReason.TOPICS,), "Topics (3 topics > 2)").done("r", ["c"])
    )
    row = decision_row(split)
    assert row["reason"] == "split: Topics (3 topics > 2)" and row["children"] == ["c"] and row["cause"] == "Topics"
    noted = Logged("x", 1, 60_000, SplitDecision(B, "a", (SplitReason.TOPICS,), "T"), note="; children unloaded")
    assert decision_row(noted)["reason"] == "split: T; children unloaded"
    lookup = Logged("x", 0, 0, Assignment(B, "a", ("a", "b"), "lookup of an unowned bundle: X picked a"), leader="a")
    row = decision_row(lookup)
    assert list(row) == list(FIELDS["assignment"])
    assert (row["best"], row["label"], row["cause"], row["leader"]) == (["a", "b"], None, None, "a")


def test_every_row_reads_back_to_the_same_row() -> None:
    merge = MergeDecision(
        "t/ns/0x80000000_0xffffffff", "b", ("t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"), ("a", "b"), B
    )
    loggeds = [
        Logged("s", 2, 120_000, Unload("a", B, "CoolDown", None, Label.SKIP, UnloadReason.COOL_DOWN), leader="a"),
        Logged("s", 2, 120_000, Unload.of("a", B, UnloadReason.UNDERLOADED, "c"), throughput=1.5, flap=True),
        Logged("s", 4, 240_000, SplitDecision(B, "a", (SplitReason.MSG_RATE,), "d").done("r", ["c1", "c2"]), note="!"),
        Logged("s", 5, 300_000, merge.done(["a", "b"], "b", " (n)")),
        Logged("s", 6, 360_000, Assignment(B, None, (), "no broker")),
    ]
    for logged in loggeds:
        row = decision_row(logged)
        assert list(row) == list(FIELDS[row["type"]])
        again = read_row(json.loads(json.dumps(row)))
        assert again is not None and decision_row(again) == row
    shifted = read_row(decision_row(loggeds[0]), origin_ms=20_000)
    assert shifted is not None and shifted.time_ms == 100_000
    assert read_row({"type": "cycle", "bundle": B, "broker": "a"}) is None


def test_the_catalogue_defines_every_metric_a_summary_can_hold() -> None:
    grouped = {*METRIC_KEYS, "merges", *DISPATCH_METRIC_KEYS, *LIVE_METRIC_KEYS, *CLIENT_METRIC_KEYS}
    assert {d.key for d in DEFS} == grouped
    assert {d.key for d in DEFS if d.concern == "live"} == set(LIVE_METRIC_KEYS)
    assert {d.key for d in DEFS if d.concern == "clients"} == set(CLIENT_METRIC_KEYS)
    assert {d.key for d in DEFS if d.concern == "dispatch"} == set(DISPATCH_METRIC_KEYS)
    live_doc = {"scenario": "x", "strategies": {"s": {"lookups": 3}}}
    assert metric_keys(live_doc) == METRIC_KEYS + LIVE_METRIC_KEYS
    with_clients = {"scenario": "x", "strategies": {"s": {"lookups": 3, "client_reconnects": 0}}}
    assert metric_keys(with_clients) == METRIC_KEYS + LIVE_METRIC_KEYS + CLIENT_METRIC_KEYS


def _run(name: str, measured: bool) -> RunResult:
    up = np.array([[True, False], [True, True]])
    load = np.array([[0.5, 0.0], [0.25, 0.75]])
    return RunResult(
        name,
        {"unloads": 0},
        np.array([0, 60_000]),
        ["a", "b"],
        load,
        load,
        np.array([[2, 0], [1, 1]]),
        up,
        delivered_load=load if measured else None,
        backlog_bytes=np.zeros_like(load) if measured else None,
    )


def test_one_timeline_for_a_run_that_measures_delivery_and_one_that_does_not(tmp_path: Path) -> None:
    table = timeline_table([_run("sim", True), _run("live", False)])
    assert tuple(table.column_names) == TIMELINE_COLUMNS
    rows = table.to_pylist()
    assert [r["delivered_load"] for r in rows] == [0.5, None, 0.25, 0.75, None, None, None, None]
    assert [r["backlog_bytes"] for r in rows] == [0.0, 0.0, 0.0, 0.0, None, None, None, None]
    assert [r["true_load"] for r in rows[4:]] == [0.5, None, 0.25, 0.75]
    doc = {"scenario": "x", "strategies": {"sim": {"unloads": 0}}}
    paths = write_run(tmp_path / "out", doc, [_run("sim", True)])
    assert sorted(paths) == ["decisions.jsonl", "summary.json", "timeline.parquet"]
    assert pq.read_table(paths["timeline.parquet"]).schema == table.schema
