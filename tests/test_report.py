"""The report answers the operator's question (issue 12 item 5): a verdict built from the metrics, every metric
with its definition and unit from one table (also the terminal table's and the docs'), events marked,
decisions with their reasons, and the page rendered whole in headless Chromium."""

from __future__ import annotations

import re
import struct
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import pytest

from bundlewise.report.html import render_report
from bundlewise.report.verdict import concern_scores, ranking, verdict
from bundlewise.results.catalogue import DEFS, comparison_table, format_value, markdown_table, metric_def
from bundlewise.sim.run import run_info, simulate, summary
from bundlewise.sim.scenario import parse_scenario

ROOT = Path(__file__).resolve().parent.parent


def metrics(**m: Any) -> dict[str, Any]:
    base = {
        "load_std_mean": 0.1,
        "load_std_p95": 0.15,
        "load_spread_mean": 0.3,
        "max_load_p99": 0.7,
        "overloaded_broker_minutes": 0.0,
        "unloads": 10,
        "splits": 5,
        "assignments": 20,
        "throughput_moved_bytes": 1048576.0 * 100,
        "flaps": 1,
        "settle_minutes": None,
        "topic_unavailable_seconds": 100.0,
        "wall_seconds": 0.1,
    }
    return {**base, **m}


# Three strategies as the default scenario shows them: one never acts, one balances at a high price,
# one balances almost as well for little.
DOC = {
    "scenario": "s",
    "strategies": {
        "Idle": metrics(
            load_std_mean=0.16,
            load_std_p95=0.2,
            load_spread_mean=0.5,
            max_load_p99=0.9,
            overloaded_broker_minutes=30.0,
            unloads=0,
            flaps=0,
            throughput_moved_bytes=0.0,
            topic_unavailable_seconds=600.0,
        ),
        "Busy": metrics(
            load_std_mean=0.09,
            load_std_p95=0.12,
            load_spread_mean=0.25,
            max_load_p99=0.7,
            unloads=90,
            flaps=30,
            throughput_moved_bytes=1048576.0 * 3000,
            topic_unavailable_seconds=1500.0,
        ),
        "Calm": metrics(
            load_std_mean=0.1,
            load_std_p95=0.13,
            load_spread_mean=0.28,
            max_load_p99=0.68,
            unloads=40,
            flaps=5,
            throughput_moved_bytes=1048576.0 * 400,
            topic_unavailable_seconds=900.0,
        ),
    },
}


def test_the_verdict_weighs_balance_and_overload_against_churn_and_impact() -> None:
    scores = concern_scores(DOC["strategies"])
    assert scores["Idle"]["overload"] == 1.0 and scores["Idle"]["churn"] == 0.0  # the never-acting one
    assert [name for name, _ in ranking(DOC["strategies"])] == ["Calm", "Busy", "Idle"]
    assert verdict(DOC) == [
        "Calm fits this workload best: a load std-dev of 10.00 pp on average (Busy reaches 9.00 pp), no broker "
        "overloaded and the busiest broker at 68.00 % at p99, for 40 unloads (5 flaps) and 900 topic-seconds "
        "of unavailability.",
        "Busy balances tighter (9.00 pp) but needs 90 unloads (30 flaps) and 1,500 topic-seconds of unavailability.",
        "Idle never unloads, so it costs no churn, but leaves the load uneven (16.00 pp, spread 50.00 pp).",
        "Balance and churn (traffic moved by unloads) of each: Idle 16.00 pp with 0.0 MB/s moved; Busy 9.00 pp "
        "with 3,000.0 MB/s moved; Calm 10.00 pp with 400.0 MB/s moved.",
    ]


def test_a_single_strategy_gets_one_sentence() -> None:
    doc = {"scenario": "s", "strategies": {"Calm": DOC["strategies"]["Calm"]}}
    assert verdict(doc) == [
        "Only Calm was simulated: load std-dev 10.00 pp on average, no broker overloaded and the busiest broker "
        "at 68.00 % at p99, for 40 unloads (5 flaps) and 900 topic-seconds of unavailability."
    ]


def test_numbers_are_written_the_same_in_the_terminal_and_on_the_page() -> None:
    assert format_value("load_std_mean", 0.0983912) == "9.84"
    assert format_value("throughput_moved_bytes", 2.983e9) == "2,844.8"
    assert format_value("topic_unavailable_seconds", 1500.0) == "1,500"
    assert format_value("settle_minutes", None) == "never"
    rows = {line.split()[0]: line.split()[1:] for line in comparison_table(DOC).splitlines()[3:]}
    assert rows["load_std_mean"] == ["pp", "16.00", "9.00", "10.00"]
    assert rows["throughput_moved_bytes"] == ["MB/s", "0.0", "3,000.0", "400.0"]
    assert rows["settle_minutes"] == ["min", "never", "never", "never"]


def test_a_metric_without_a_definition_slots_in_unjudged() -> None:
    new = "metric_added_later"
    doc = {"scenario": "s", "strategies": {k: {**m, new: 3} for k, m in DOC["strategies"].items()}}
    d = metric_def(new)
    assert (d.label, d.unit, d.definition, d.lower_is_better) == (new, "", "(no definition yet)", None)
    assert ranking(doc["strategies"]) == ranking(DOC["strategies"])  # nobody judges it yet
    assert format_value(new, 3) == "3"


def test_the_docs_metric_table_is_generated_from_the_definitions() -> None:
    text = (ROOT / "docs" / "formats.md").read_text()
    block = re.search(r"<!-- metric-definitions: begin[^>]*-->\n(.*?)<!-- metric-definitions: end -->", text, re.S)
    assert block is not None and block.group(1) == markdown_table()
    assert {d.key for d in DEFS} >= {"load_std_mean", "unloads", "flaps", "topic_unavailable_seconds", "wall_seconds"}


SCENARIO = """
name = "small"
duration = "2h"
step = "1m"
[[brokers]]
name = "a"
[[brokers]]
name = "b"
cpu_cores = 4
[[brokers]]
name = "c"
[[namespaces]]
name = "t/ns"
bundles = 4
topics = 60
msg_rate = 150000
zipf = 1.2
owner = "a"
[[events]]
at = "40m"
action = "restart"
broker = "c"
down_for = "5m"
[workload]
bursts = [{namespace = "t/ns", at = "1h", duration = "20m", factor = 4}]
"""


@pytest.fixture(scope="module")
def page() -> tuple[str, dict[str, Any]]:
    import tomllib

    scenario = parse_scenario(tomllib.loads(SCENARIO), "small.toml")
    results = simulate(scenario, ["OverloadShedder", "ThresholdShedder"])
    doc = summary(scenario, results)
    return render_report(run_info(scenario), results, doc), doc


def test_the_page_opens_with_the_verdict_and_defines_every_metric(page: tuple[str, dict[str, Any]]) -> None:
    html, doc = page
    h = html.index
    assert h("<h2>Verdict</h2>") < h("<h2>Summary</h2>") < h("<h2>What the metrics mean</h2>")
    assert f"<div class='verdict'>{escape(' '.join(verdict(doc)))}</div>" in html
    for d in DEFS[:13]:  # every metric of summary.json (no [dispatch] here), with its unit
        row = f"<td class='m'>{d.key}</td><td class='u'>{escape(d.unit)}</td><td class='t'>{escape(d.definition)}</td>"
        assert row in html


def test_the_page_shows_the_numbers_the_terminal_shows(page: tuple[str, dict[str, Any]]) -> None:
    html, doc = page
    terminal = comparison_table(doc).splitlines()
    row = next(line for line in terminal if line.startswith("load_std_mean"))
    cells = re.search(r"title='load_std_mean'>.*?</th><td class='u'>pp</td>(.*?)</tr>", html)
    assert cells is not None
    assert re.findall(r"<td>(.*?)</td>", cells.group(1)) == row.split()[2:]


def test_events_are_listed_and_decisions_carry_their_reasons(page: tuple[str, dict[str, Any]]) -> None:
    html, _ = page
    assert "<tr><td>40m</td><td class='t'>c restarts (down 5m, back empty)</td></tr>" in html
    assert "<tr><td>1h</td><td class='t'>burst: t/ns traffic x4 for 20m</td></tr>" in html
    assert "function sortBy(th)" in html and "<table id='decisions' class='decisions'>" in html
    assert "ThresholdShedder: usage history" in html  # an unload's own reason
    assert html.count("data:image/png;base64,") == 3  # the std-dev of both, then each strategy's load


@pytest.mark.slow
def test_the_screenshot_covers_the_whole_page(tmp_path: Path) -> None:
    out = tmp_path / "out"
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "bundlewise"), "simulate", "--no-progress", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [str(ROOT / "scripts" / "screenshot_report.sh"), str(out / "report.html"), str(tmp_path / "shot.png")],
        check=True,
        capture_output=True,
        text=True,
    )
    width, height = (int(x) for x in re.search(r"\((\d+)x(\d+)\)", done.stdout).groups())  # type: ignore[union-attr]
    head = (tmp_path / "shot.png").read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (width, height) == (1280, height)
    assert height > 2600  # the old fixed window stopped there, halfway down the page
