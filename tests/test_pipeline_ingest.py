"""Every input format into the canonical topic-samples table, malformed records into the rejects."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")

from pyspark.testing import assertDataFrameEqual
from tests.test_pipeline_fixtures import (
    PROMETHEUS,
    load_report,
    topics_dump_broker1,
    topics_dump_broker2,
)

from bundlewise.model.errors import InputError
from bundlewise.pipeline import dumps, ingest, schemas
from bundlewise.pipeline.boundaries import Boundaries, parse_bundles_doc

T0 = 1700000000000
MY = "persistent://public/default/my-topic"
P0 = "persistent://public/default/my-topic-partition-0"


def test_topics_dump_rows_take_broker_and_time_from_the_file_name():
    rows, rejects = dumps.parse_topics_dump(f"/d/broker-1:8080@{T0}.json", json.dumps(topics_dump_broker1()))
    assert rejects == []
    assert rows == [
        (T0, "broker-1:8080", MY, "public/default/0x00000000_0x40000000", 10.0, 20.0, 1000.0, 2000.0, 1, 2, 1),
        (T0, "broker-1:8080", P0, "public/default/0x00000000_0x40000000", 5.0, 5.0, 500.0, 500.0, 2, 1, 1),
        (T0, "broker-1:8080", "persistent://t/ns/a", "t/ns/0x80000000_0xc0000000", 1.0, 0.0, 100.0, 0.0, 1, 0, 1),
        (
            T0,
            "broker-1:8080",
            "non-persistent://t/ns/live",
            "t/ns/0x80000000_0xc0000000",
            2.0,
            2.0,
            20.0,
            20.0,
            1,
            3,
            1,
        ),
    ]


def test_topics_dump_wrapper_wins_and_bad_topics_are_rejected_alone():
    dump = topics_dump_broker2()
    dump["public/default"]["0xc0000000_0xffffffff"]["persistent"]["persistent://other/ns/x"] = {"msgRateIn": 1}
    dump["public/default"]["0xc0000000_0xffffffff"]["persistent"]["persistent://public/default/neg"] = {"msgRateIn": -3}
    doc = {"broker": "broker-2:8080", "timestamp": "2023-11-14T22:13:20Z", "topics": dump}
    rows, rejects = dumps.parse_topics_dump("/d/anything.json", json.dumps(doc))
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (T0, "broker-2:8080", "persistent://public/default/my-topic-partition-2")
    ]
    assert [r[2] for r in rejects] == [
        "topic persistent://other/ns/x: topic persistent://other/ns/x is not in namespace public/default",
        "topic persistent://public/default/neg: msgRateIn: expected a finite number >= 0, got -3",
    ]
    _, rejects = dumps.parse_topics_dump("/d/nameless.json", "{}")
    assert "no timestamp" in rejects[0][2]
    _, rejects = dumps.parse_topics_dump("/d/b@1.json", "{not json")
    assert rejects[0][2].startswith("not JSON")


def test_load_report_gives_bundle_rows_and_a_broker_row():
    text = json.dumps(load_report())
    rows, rejects = dumps.parse_load_report("/d/report.json", text)
    assert rows == [
        (T0, "broker-1:8080", None, "public/default/0x00000000_0x40000000", 15.0, 25.0, 1500.0, 2500.0, 3, 3, 2)
    ]
    assert len(rejects) == 1 and "msgRateIn" in rejects[0][2] and "expected a number >= 0" in rejects[0][2]
    brows, _ = dumps.parse_load_report_broker("/d/report.json", text)
    (b,) = brows
    assert b[:4] == (T0, "broker-1:8080", 350.0, 800.0)
    assert b[12] == pytest.approx(0.4375)  # max(cpu 43.75%, bandwidthOut 20%, ...) unweighted
    assert b[13:] == (15.0, 25.0, 1500.0, 2500.0, 3, 2)


def test_prometheus_dump_pivots_the_six_metrics_per_topic():
    rows, rejects = dumps.parse_prometheus(f"/d/broker-3:8080@{T0 + 5}.prom", PROMETHEUS)
    # one file is one scrape: one row per topic at the file's time, whatever the lines' own timestamps say;
    # the cluster-level total line is skipped (neither a row nor a reject)
    assert rows == [(T0 + 5, "broker-3:8080", MY, None, 10.0, 20.0, 1000.0, 2000.0, 1, 2, 1)]
    assert [r[2].split(" (")[0] for r in rejects] == [
        "no topic label",
        "pulsar_rate_in: expected a finite value >= 0, got NaN",
    ]


def test_bundles_file_shapes():
    default = Boundaries.of_count(4)
    one = parse_bundles_doc({"boundaries": ["0x00000000", "0x80000000", "0xffffffff"]}, default)
    assert one.for_namespace("any/ns") == (0, 0x80000000, 0xFFFFFFFF)
    per = parse_bundles_doc({"t/ns": {"boundaries": [0, 0x10, 0xFFFFFFFF]}, "a/b": ["0x0", "0xffffffff"]}, default)
    assert per.for_namespace("t/ns") == (0, 0x10, 0xFFFFFFFF) and per.bundle_count("a/b") == 1
    assert per.bundle_count("x/y") == 4
    with pytest.raises(InputError, match="must start at 0x00000000"):
        parse_bundles_doc({"boundaries": ["0x10", "0xffffffff"]}, default, "b.json")
    with pytest.raises(InputError, match="strictly increasing"):
        parse_bundles_doc({"t/ns": ["0x0", "0x0", "0xffffffff"]}, default, "b.json")


@pytest.mark.spark
def test_csv_jsonl_and_parquet_traces_validate_into_samples_and_rejects(spark, tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(
        "timestamp,topic,msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut,producerCount,consumerCount,broker\n"
        f"{T0},my-topic,10,20,1000,2000,1,2,b1\n"
        f"2023-11-14T22:13:20Z,{P0},5,5,500,500,,,\n"
        f"{T0},x,-1,0,0,0,0,0,b1\n"
        f"{T0},y,abc,0,0,0,0,0,b1\n"
        f",z,1,1,1,1,1,1,b1\n"
        f"{T0},w,1,1,1,1,1.5,1,b1\n"
    )
    good, bad = ingest.validate_trace(spark.read.option("header", "true").csv(str(csv)), "t.csv")
    expected = spark.createDataFrame(
        [
            (T0, "b1", "my-topic", None, 10.0, 20.0, 1000.0, 2000.0, 1, 2, 1),
            (T0, None, P0, None, 5.0, 5.0, 500.0, 500.0, 0, 0, 1),
        ],
        schemas.TOPIC_SAMPLES,
    )
    assertDataFrameEqual(good, expected)
    assert sorted(r["reason"] for r in bad.collect()) == [
        "msgRateIn: expected a number",
        "msgRateIn: expected a number >= 0",
        "producerCount: expected a whole number",
        "timestamp: missing",
    ]
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps({"timestamp": T0, "topic": "my-topic", "msgRateIn": 1.5}) + "\n{broken\n")
    raw = spark.read.option("columnNameOfCorruptRecord", ingest.CORRUPT).json(str(jl))
    good, bad = ingest.validate_trace(raw, "t.jsonl")
    assertDataFrameEqual(
        good, spark.createDataFrame([(T0, None, "my-topic", None, 1.5, 0.0, 0.0, 0.0, 0, 0, 1)], schemas.TOPIC_SAMPLES)
    )
    assert [(r["reason"], r["record"]) for r in bad.collect()] == [("malformed record", "{broken")]
    pq = tmp_path / "t.parquet"
    spark.createDataFrame(
        [(T0, MY, 1.0, float("nan")), (T0 + 1, MY, 2.0, 3.0)],
        "timestamp long, topic string, msgRateIn double, msgRateOut double",
    ).write.parquet(str(pq))
    good, bad = ingest.validate_trace(spark.read.parquet(str(pq)), "t.parquet")
    assert [r["msgRateOut"] for r in good.collect()] == [3.0]
    assert [r["reason"] for r in bad.collect()] == ["msgRateOut: expected a finite number"]
    with pytest.raises(InputError, match="no topic column"):
        ingest.validate_trace(spark.createDataFrame([(1,)], "timestamp long"), "x.parquet")


@pytest.mark.spark
def test_dumps_are_parsed_on_spark_into_samples_rejects_and_broker_reports(spark):
    files = spark.sparkContext.parallelize(
        [
            (f"file:/d/broker-2:8080@{T0}.json", json.dumps(topics_dump_broker2()), None),
            ("file:/d/junk.json", "[1, 2", None),
        ],
        2,
    )
    got = ingest.samples_from_dumps(spark, files, "topics-stats")
    assertDataFrameEqual(
        got.samples,
        spark.createDataFrame(
            [
                (
                    T0,
                    "broker-2:8080",
                    "persistent://public/default/my-topic-partition-2",
                    "public/default/0xc0000000_0xffffffff",
                    7.0,
                    7.0,
                    70.0,
                    70.0,
                    1,
                    2,
                    1,
                )
            ],
            schemas.TOPIC_SAMPLES,
        ),
    )
    assert [r["source"] for r in got.rejects.collect()] == ["file:/d/junk.json"]
    reports = ingest.samples_from_dumps(
        spark, spark.sparkContext.parallelize([("file:/d/r.json", json.dumps(load_report()), None)], 1), "load-report"
    )
    assert reports.samples.count() == 1 and reports.rejects.count() == 1
    assert [r["broker"] for r in reports.broker_reports.collect()] == ["broker-1:8080"]
