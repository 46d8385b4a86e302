"""The fast path on CSV, JSON Lines and dump inputs gives exactly what Spark's readers and the general path give.

Each test runs the whole job twice — the fast path (pyarrow in the Spark tasks) and ``columnar=False`` (Spark's
own readers, native validation and resolution) — and compares every output dataset and the summary.  The text
inputs mix clean rows with every kind of line the fast path must leave to Spark (number forms, quoting,
escapes, blank and short lines, ISO and fractional timestamps, bad values), cut into many small fragments and
blocks so lines meet every boundary.
"""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("pyspark")

from pyspark.testing import assertDataFrameEqual
from tests.test_pipeline_columnar import UNEVEN, _rounded
from tests.test_pipeline_fixtures import PROMETHEUS, load_report, topics_dump_broker1, topics_dump_broker2

from bundlewise.config import Config
from bundlewise.pipeline import fragments, jobs
from bundlewise.pipeline.boundaries import Boundaries

pytestmark = pytest.mark.spark

HEADER = "timestamp,topic,msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut,producerCount,consumerCount,broker"
TOPICS = [f"persistent://t{i % 3}/ns{i % 4}/x{i}" for i in range(30)] + ["non-persistent://t0/ns0/live"]
ODD_CSV = [
    '60000,persistent://t/ns/a,"",1,1,1,1,1,b0',  # quoted empty: not a number
    "60000,persistent://t/ns/a,,1,1,1,1,1,b0",  # empty: 0
    "60000, persistent://t/ns/a,1,1,1,1,1,1,b0",  # spaces around the topic
    "60000,my-topic,1e3,+1,.5,5.,1,2,b1",  # a short name; number forms
    "60000,persistent://t/ns/a,inf,1,1,1,1,1,b1",
    "60000,persistent://t/ns/a,NaN,1,1,1,1,1,b1",
    "2023-11-14T22:13:20Z,persistent://t/ns/a,1,1,1,1,1,1,b1",
    "-5,persistent://t/ns/a,1,1,1,1,1,1,b1",
    "1.5,persistent://t/ns/b,1,1,1,1,1,1,b1",
    "60000,persistent://t/ns/a,1,1,1,1,2.5,1,b0",
    "60000,persistent://t/ns/a,1,1,1,1,2.0,1,b0",
    "60000,persistent://t/ns/a,1,1,1,1,1",  # short row
    "60000,persistent://t/ns/a,1,1,1,1,1,1,b0,extra",
    '60000,"persistent://t/ns/q,x",1,1,1,1,1,1,b0',
    "60000,persistent://t/ns/a\\x,1,1,1,1,1,1,b0",
    '60000,"persistent://t/ns/a""b",1,1,1,1,1,1,b0',
    "",
    "   ",
    "99999999999999999999,persistent://t/ns/a,1,1,1,1,1,1,b0",
    "9007199254740993,persistent://t/ns/a,1,1,1,1,1,1,b0",
    ",persistent://t/ns/a,1,1,1,1,1,1,b0",
    "60000,,1,1,1,1,1,1,b0",
    "60000,persistent://t/ns/a,fast,1,1,1,1,1,b0",
    "60000,persistent://t//bad,1,1,1,1,1,1,b0",
    "60000,persistent://t/ns/a,-1,1,1,1,1,1,",
    "60000,persistent://t/ns/a,1,1,1,1,-2,1,b0",
    "60000,persistent://t/ns/a,1,1,1,1,1e20,1,b0",  # a count past a long
    "60000,persistent://t/ns/a,1,1,1,1,9007199254740993,1,b0",  # a count past 2^53: Spark reads it
]
ODD_JSON = [
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "msgRateIn": "12", "broker": "b0"}',
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "msgRateIn": 1.5, "producerCount": 2.0}',
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "producerCount": 2.5}',
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "msgRateIn": NaN}',
    '{"timestamp": 60000, "topic": "my-topic", "msgRateIn": null, "extra": {"x": [1, 2]}}',
    '{"timestamp": "2023-11-14T22:13:20Z", "topic": "persistent://t/ns/a"}',
    '{"timestamp": 1.5e4, "topic": "persistent://t/ns/a"}',
    '{"timestamp": -5, "topic": "persistent://t/ns/a"}',
    '{"timestamp": 60000, "topic": 5}',
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "broker": 7}',
    '{"timestamp": 60000, "topic": "persistent://t/ns/a", "msgRateIn": true}',
    '{"timestamp": 60000, "topic": "persistent://t//bad"}',
    '{"timestamp": 60000, "topic": " persistent://t/ns/a"}',
    "{not json",
    "[1, 2]",
    "",
    "  ",
    '{"timestamp": 60000}',
    '{"topic": "persistent://t/ns/a"}',
    '{"timestamp": 9007199254740993, "topic": "persistent://t/ns/a"}',
]


def _clean_rows(rng):
    rows = []
    for ts in (0, 60_000, 120_000):
        for i, topic in enumerate(TOPICS):
            rows.append(
                {
                    "timestamp": ts,
                    "topic": topic,
                    "msgRateIn": round(rng.uniform(0, 1e4), 3),
                    "msgRateOut": float(rng.randint(0, 50)),
                    "msgThroughputIn": round(rng.uniform(0, 1e7), 1),
                    "msgThroughputOut": rng.choice([0, 1e6, 2.5e6]),
                    "producerCount": rng.randint(0, 4),
                    "consumerCount": rng.randint(0, 9),
                    "broker": f"b{i % 3}:8080",
                }
            )
    return rows


def _csv_line(r):
    return ",".join(str(r[c]) for c in HEADER.split(","))


def _mixed(clean, odd, rng):
    lines = list(clean) + list(odd)
    rng.shuffle(lines)
    return lines


@pytest.fixture
def small_fragments(monkeypatch):
    """Fragments of ~700 bytes read in blocks of ~300: lines meet every range and block boundary."""
    monkeypatch.setattr(fragments, "MIN_TEXT_FRAGMENT_BYTES", 700)
    monkeypatch.setattr(fragments, "TEXT_FRAGMENT_BYTES", 700)
    monkeypatch.setattr(fragments, "TEXT_BLOCK_BYTES", 300)


def _both(spark, tmp_path, path, boundaries, fmt="trace", counts_known=False, finish="auto"):
    results = {}
    for label, flag in (("fast", True), ("general", False)):
        out = tmp_path / label
        summary = jobs.run_pipeline(
            spark,
            str(path),
            fmt,
            boundaries,
            Config(),
            str(out),
            bundle_counts_known=counts_known,
            columnar=flag,
            finish=finish,
        )
        results[label] = (summary, out)
    return results


def _records(df):
    """Reject rows with their record read as JSON when it is JSON (Spark renders a number by the type it
    inferred, 1 or 1.0, from the lines it read: the values are what must agree)."""
    out = []
    for r in df.collect():
        try:
            record = json.dumps(json.loads(r["record"]), sort_keys=True) if r["record"] else r["record"]
        except ValueError:
            record = r["record"]
        out.append((r["source"], r["reason"], record))
    return sorted(out, key=repr)


def _assert_same(
    spark, results, datasets=("topic_samples", "bundle_load", "broker_load", "split_candidates", "namespaces")
):
    (s1, out1), (s2, out2) = results["fast"], results["general"]
    for name in datasets:
        got, want = spark.read.parquet(str(out1 / name)), spark.read.parquet(str(out2 / name))
        assert sorted(got.columns) == sorted(want.columns), name
        assertDataFrameEqual(got.select(*want.columns), want, rtol=1e-12)
    got_r, want_r = (
        _records(spark.read.parquet(str(out1 / "rejects"))),
        _records(spark.read.parquet(str(out2 / "rejects"))),
    )
    assert got_r == want_r
    j1, j2 = s1.to_json(), s2.to_json()
    for j in (j1, j2):
        j.pop("seconds"), j.pop("outputs")
    assert _rounded(j1) == _rounded(j2)


@pytest.mark.parametrize(
    ("boundaries", "large"),
    [(Boundaries.of_count(4), False), (UNEVEN, False), (UNEVEN, True)],
    ids=["equal", "uneven", "uneven-as-if-large"],
)
def test_a_csv_trace_gives_the_general_paths_outputs(spark, tmp_path, small_fragments, boundaries, large):
    """``large``: as a large input is run (``routes.DRIVER_ROWS``) — the scan cached, the small tables in Spark."""
    rng = random.Random(14)
    d = tmp_path / "csv"
    d.mkdir()
    clean = [_csv_line(r) for r in _clean_rows(rng)]
    lines = _mixed(clean, ODD_CSV, rng)
    half = len(lines) // 2
    (d / "a.csv").write_text(HEADER + "\n" + "\n".join(lines[:half]) + "\n")
    (d / "b.csv").write_bytes((HEADER + "\r\n" + "\r\n".join(lines[half:])).encode())  # CRLF, no final newline
    results = _both(spark, tmp_path, d, boundaries, finish="spark" if large else "auto")
    _assert_same(spark, results)
    summary, out = results["fast"]
    assert summary.route.startswith("fast path, spark finish" if large else "fast path, driver finish")
    assert summary.rows_in == len(clean) + len([x for x in ODD_CSV if x.strip()])
    reasons = spark.read.parquet(str(out / "rejects")).groupBy("reason").count().collect()
    assert {r["reason"]: r["count"] for r in reasons} == {
        "msgRateIn: expected a finite number": 2,  # inf, NaN
        "timestamp: expected ms since the epoch (>= 0) or ISO-8601": 2,  # -5, 2^66
        "msgRateIn: expected a number": 1,  # fast ("" is read as null: 0)
        "msgRateIn: expected a number >= 0": 1,
        "producerCount: expected a number >= 0": 1,
        "producerCount: expected a whole number": 1,
        "producerCount: expected a whole number below 2^63": 1,
        "timestamp: missing": 1,
        "topic: missing": 1,
        # Spark's CSV reader escapes with \, so a doubled quote stays in the name
        'topic: topic \'"persistent://t/ns/a""b"\': domain must be one of persistent, non-persistent': 1,
        "topic: topic 'persistent://t//bad' has an empty tenant, namespace or local name": 1,
    }


def test_a_json_lines_trace_gives_the_general_paths_outputs(spark, tmp_path, small_fragments):
    rng = random.Random(15)
    d = tmp_path / "jsonl"
    d.mkdir()
    clean = [json.dumps(r) for r in _clean_rows(rng)]
    lines = _mixed(clean, ODD_JSON, rng)
    half = len(lines) // 3
    (d / "a.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (d / "b.jsonl").write_text("\n".join(lines[half:]) + "\n")
    results = _both(spark, tmp_path, d, UNEVEN)
    _assert_same(spark, results)
    summary, _ = results["fast"]
    assert summary.rows_in == len(clean) + len([x for x in ODD_JSON if x.strip()])
    assert summary.reject_reasons["malformed record"] == 2


def test_a_clean_csv_is_read_by_the_tasks_alone(spark, tmp_path):
    """No line of a clean CSV reaches Spark's reader: every row is summed in the tasks."""
    rows = _clean_rows(random.Random(16))
    (tmp_path / "t.csv").write_text(HEADER + "\n" + "\n".join(_csv_line(r) for r in rows) + "\n")
    seen = []
    summary = jobs.run_pipeline(
        spark, str(tmp_path / "t.csv"), None, Boundaries.of_count(4), Config(), str(tmp_path / "o"), seen.append
    )
    assert (summary.rows_in, summary.rows_rejected) == (len(rows), 0)
    assert any("(csv)" in m for m in seen) and not any("general path" in m for m in seen)


@pytest.mark.parametrize(
    ("fmt", "files"),
    [
        (
            "topics-stats",
            {
                "broker-1:8080@1700000000000.json": json.dumps(topics_dump_broker1()),
                "broker-2:8080@1700000000000.json": json.dumps(topics_dump_broker2()),
                "broker-2:8080@1700000060000.json": "{truncated",
            },
        ),
        ("load-report", {"r1.json": json.dumps(load_report()), "broker-9:8080@1700000000000.json": "[]"}),
        ("prometheus", {"broker-3:8080@1700000000005.prom": PROMETHEUS, "x@1700000060000.prom": PROMETHEUS}),
    ],
)
def test_dumps_give_the_general_paths_outputs(spark, tmp_path, fmt, files):
    d = tmp_path / "dumps"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    results = _both(spark, tmp_path, d, Boundaries.of_count(4), fmt)
    datasets = ("topic_samples", "bundle_load", "broker_load", "split_candidates", "namespaces")
    _assert_same(spark, results, (*datasets, "broker_reports") if fmt == "load-report" else datasets)
    assert results["fast"][0].rows_rejected >= 1


def test_the_small_tables_are_the_same_on_the_driver_and_in_spark(spark, tmp_path):
    rows = _clean_rows(random.Random(17))
    for r in rows[::7]:
        r["msgRateIn"] = 30_000.0  # some split candidates
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    outs = {}
    for finish in ("driver", "spark"):
        out = tmp_path / finish
        summary = jobs.run_pipeline(spark, str(tmp_path / "t.jsonl"), None, UNEVEN, Config(), str(out), finish=finish)
        outs[finish] = (summary, out)
    for name in ("bundle_load", "broker_load", "split_candidates", "rejects"):
        got = spark.read.parquet(str(outs["spark"][1] / name))
        want = spark.read.parquet(str(outs["driver"][1] / name))
        assertDataFrameEqual(got.select(*want.columns), want, rtol=1e-12)
    j1, j2 = outs["driver"][0].to_json(), outs["spark"][0].to_json()
    for j in (j1, j2):
        j.pop("seconds"), j.pop("outputs")
    assert _rounded(j1) == _rounded(j2)
    assert j1["splitCandidates"] > 0


def test_the_namespaces_output_keeps_the_boundaries_the_input_carried(spark, tmp_path):
    """Dumps cut by 4 bundles read with ``--bundles 2``: the dumps' own ranges are the namespace's layout."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "broker-1:8080@1700000000000.json").write_text(json.dumps(topics_dump_broker1()))
    (d / "broker-2:8080@1700000000000.json").write_text(json.dumps(topics_dump_broker2()))
    jobs.run_pipeline(spark, str(d), None, Boundaries.of_count(2), Config(), str(tmp_path / "o"))
    rows = spark.read.parquet(str(tmp_path / "o" / "namespaces")).orderBy("namespace").collect()
    assert [(r["namespace"], list(r["boundaries"]), r["bundleCount"], r["source"], r["complete"]) for r in rows] == [
        ("public/default", [0, 0x40000000, 0xC0000000, 0xFFFFFFFF], 3, "input", False),
        ("t/ns", [0x80000000, 0xC0000000], 1, "input", False),
    ]
