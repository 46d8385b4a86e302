"""The pipeline's pure transforms on tiny inline DataFrames, checked against hand-computed results."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from bundlewise.algorithms.splitting.conditions import split_reasons
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from bundlewise.model.names import TopicName
from bundlewise.pipeline import columns, frames, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries

pytestmark = pytest.mark.spark

# public/default: the first quarter split in two by range_equally_divide (0x20000000); t/ns: 4 equal bundles.
SPLIT = (0x00000000, 0x20000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF)
BOUNDS = Boundaries.of_count(4)
BOUNDS = Boundaries(BOUNDS.default, {"public/default": SPLIT})


def sample(ts, topic, rin, rout=0.0, tin=0.0, tout=0.0, prod=0, cons=0, broker=None, bundle=None, topics=1):
    return (ts, broker, topic, bundle, float(rin), float(rout), float(tin), float(tout), prod, cons, topics)


def test_spark_crc32_equals_the_model_hash_on_utf8(spark):
    names = [
        "123456789",
        "persistent://public/default/my-topic",
        "persistent://t/ns/café-crème",
        "persistent://租户/命名空间/主题",
        "persistent://t/ns/🚀-launch",
        "non-persistent://public/default/my-topic",
        "persistent://t/ns/Ünïcödé-partition-3",
        "",
    ]
    df = spark.createDataFrame([(n,) for n in names], "name string")
    got = {r["name"]: r["h"] for r in df.select("name", transforms.topic_hash(F.col("name")).alias("h")).collect()}
    assert got == {n: crc32_hash(n) for n in names}
    assert got["123456789"] == 0xCBF43926


NAMES = [
    "my-topic",
    " spaced ",
    "persistent://public/default/my-topic-partition-2",
    "non-persistent://t/ns/x",
    "persistent://p/cluster/ns/t",
    "persistent://p//ns/t",
    "persistent://t/ns/a/b",
    "t/ns/x",
    "a/b",
    "",
    "persistent://t//bad",
    "persistent://t/ns/",
    "PERSISTENT://t/ns/x",
    "://t/ns/x",
    "persistent://a/b/c/",
    "persistent://租户/命名空间/主题-partition-0",
    "http://t/ns/x",
    "persistent://t/ns/café",
]


def test_native_topic_names_equal_the_model_topic_name(spark):
    df = transforms.with_topic_names(spark.createDataFrame([(n,) for n in NAMES], "topic string"))
    got = {r["topic"]: (r["_full"], r["_ns"], r["_err"] is None) for r in df.collect()}
    want = {}
    for n in NAMES:
        try:
            t = TopicName.parse(n)
            want[n] = (str(t), str(t.namespace), True)
        except InputError:
            want[n] = (None, None, False)
    assert got == want
    assert got["my-topic"] == ("persistent://public/default/my-topic", "public/default", True)


def test_topics_map_to_bundles_including_partitions_and_a_split_bundle(spark):
    topics = [
        "my-topic",
        "persistent://public/default/my-topic-partition-0",
        "persistent://public/default/my-topic-partition-1",
        "persistent://public/default/my-topic-partition-2",
        "persistent://public/default/my-topic-partition-3",
        "persistent://t/ns/a",
        "persistent://t/ns/b",
        "persistent://t/ns/c",
        "persistent://t//bad",
    ]
    samples = spark.createDataFrame([sample(0, t, 1) for t in topics], schemas.TOPIC_SAMPLES)
    expected = spark.createDataFrame(
        [
            ("persistent://public/default/my-topic", "public/default/0x20000000_0x40000000"),
            ("persistent://public/default/my-topic-partition-0", "public/default/0x20000000_0x40000000"),
            ("persistent://public/default/my-topic-partition-1", "public/default/0x40000000_0x80000000"),
            ("persistent://public/default/my-topic-partition-2", "public/default/0xc0000000_0xffffffff"),
            ("persistent://public/default/my-topic-partition-3", "public/default/0x80000000_0xc0000000"),
            ("persistent://t/ns/a", "t/ns/0x80000000_0xc0000000"),
            ("persistent://t/ns/b", "t/ns/0x00000000_0x40000000"),
            ("persistent://t/ns/c", "t/ns/0x40000000_0x80000000"),
        ],
        "topic string, bundle string",
    )
    for bounds in (BOUNDS,):
        good, bad = transforms.resolve(samples, bounds, "in.csv")
        assertDataFrameEqual(good.select("topic", "bundle"), expected)
        (r,) = bad.collect()
        assert (r["source"], r["reason"]) == (
            "in.csv",
            "topic: topic 'persistent://t//bad' has an empty tenant, namespace or local name",
        )
    # the same hashes through the model: crc32 of my-topic is 0x2bad45f7, in [0x20000000, 0x40000000)
    assert crc32_hash("persistent://public/default/my-topic") == 0x2BAD45F7


def test_the_last_bundle_includes_0xffffffff(spark):
    df = spark.createDataFrame([(0xFFFFFFFF,), (0xFFFFFFFE,), (0x7FFFFFFF,), (0x80000000,), (0,)], "h long")
    for bounds in (Boundaries.of_count(2), Boundaries((0, 0x80000000, 0xFFFFFFFF), {"x/y": (0, 0xFFFFFFFF)})):
        lower, upper = transforms.bundle_range(F.lit("ns"), F.col("h"), bounds)
        got = df.select("h", transforms.bundle_name(F.lit("ns"), lower, upper).alias("bundle"))
        assertDataFrameEqual(
            got,
            spark.createDataFrame(
                [
                    (0xFFFFFFFF, "ns/0x80000000_0xffffffff"),
                    (0xFFFFFFFE, "ns/0x80000000_0xffffffff"),
                    (0x7FFFFFFF, "ns/0x00000000_0x80000000"),
                    (0x80000000, "ns/0x80000000_0xffffffff"),
                    (0, "ns/0x00000000_0x80000000"),
                ],
                "h long, bundle string",
            ),
        )


def test_bundle_samples_sum_topics_per_time_and_bundle(spark):
    rows = [
        sample(0, "my-topic", 10, 20, 1000, 2000, 1, 2, "b1"),
        sample(0, "persistent://public/default/my-topic-partition-0", 5, 5, 500, 500, 1, 1, "b1"),
        sample(0, "persistent://public/default/my-topic-partition-4", 1, 0, 100, 0, 1, 0, "b1"),
        sample(0, "persistent://public/default/my-topic-partition-1", 7, 7, 70, 70, 2, 3, "b2"),
        sample(60000, "my-topic", 30, 20, 1000, 2000, 1, 2, "b2"),
        # a broker-stats/topics row carries its bundle; it wins over the computed one
        sample(60000, "persistent://t/ns/b", 2, 2, 20, 20, 0, 1, "b2", bundle="t/ns/0x00000000_0x80000000"),
        sample(60000, "persistent://t//bad", 1, 1, 1, 1),
    ]
    samples = spark.createDataFrame(rows, schemas.TOPIC_SAMPLES)
    resolved, rejects = transforms.resolve(samples, BOUNDS, "trace.csv")
    cols = (
        "timestamp long, bundle string, namespace string, broker string, msgRateIn double, msgRateOut double, "
        "msgThroughputIn double, msgThroughputOut double, topics long, producerCount long, consumerCount long, "
        "sessions long"
    )
    loaded = transforms.bundle_load(transforms.partial_bundle_sums(resolved), Config())
    got = loaded.select(*[c.split()[0] for c in cols.split(", ")])
    expected = spark.createDataFrame(
        [
            (0, "public/default/0x20000000_0x40000000", "public/default", "b1", 16.0, 25.0, 1600.0, 2500.0, 3, 3, 3, 6),
            (0, "public/default/0x40000000_0x80000000", "public/default", "b2", 7.0, 7.0, 70.0, 70.0, 1, 2, 3, 5),
            (
                60000,
                "public/default/0x20000000_0x40000000",
                "public/default",
                "b2",
                30.0,
                20.0,
                1000.0,
                2000.0,
                1,
                1,
                2,
                3,
            ),
            (60000, "t/ns/0x00000000_0x80000000", "t/ns", "b2", 2.0, 2.0, 20.0, 20.0, 1, 0, 1, 1),
        ],
        cols,
    )
    assertDataFrameEqual(got, expected)
    r = rejects.collect()
    assert [(x["source"], x["reason"][:6]) for x in r] == [("trace.csv", "topic:")]


def _model_averages(xs):
    short = TimeAverageMessageData.with_prior(NUM_SHORT_SAMPLES)
    long = TimeAverageMessageData.with_prior(NUM_LONG_SAMPLES)
    out = []
    for rin, rout, tin, tout in xs:
        s = NamespaceBundleStats(msgRateIn=rin, msgRateOut=rout, msgThroughputIn=tin, msgThroughputOut=tout)
        short.update(s)
        long.update(s)
        out.append(
            (
                short.numSamples,
                long.numSamples,
                short.msgThroughputIn,
                short.msgThroughputOut,
                short.msgRateIn,
                short.msgRateOut,
                long.msgThroughputIn,
                long.msgThroughputOut,
                long.msgRateIn,
                long.msgRateOut,
            )
        )
    return out


def _bundle_frame(per_bundle):
    rows = []
    for b, xs in per_bundle.items():
        for i, (rin, rout, tin, tout) in enumerate(xs):
            rows.append(
                {
                    "timestamp": 1000 * i,
                    "namespace": "t/ns",
                    "bundle": b,
                    "broker": "b1",
                    "msgRateIn": rin,
                    "msgRateOut": rout,
                    "msgThroughputIn": tin,
                    "msgThroughputOut": tout,
                    "topics": 2,
                    "producerCount": 1,
                    "consumerCount": 1,
                    "sessions": 2,
                    "rows": 2,
                }
            )
    return pd.DataFrame(rows)


def test_averages_frame_equals_the_model_recurrence_past_both_windows():
    rng = random.Random(5)
    xs = {
        b: [(rng.uniform(0, 1e4), rng.uniform(0, 1e4), rng.uniform(0, 1e7), rng.uniform(0, 1e7)) for _ in range(n)]
        for b, n in (("t/ns/0x00000000_0x80000000", 1105), ("t/ns/0x80000000_0xffffffff", 3))
    }
    pdf = frames.averages_frame(_bundle_frame(xs).sample(frac=1.0, random_state=1))
    for b, samples in xs.items():
        got = pdf[pdf["bundle"] == b].sort_values("timestamp")
        cols = ["shortTermSamples", "longTermSamples", *columns.AVERAGE_FIELDS]
        assert [tuple(r) for r in got[cols].itertuples(index=False)] == _model_averages(samples)  # exact
    assert pdf["shortTermSamples"].max() == 10 and pdf["longTermSamples"].max() == 1000


def test_spark_time_averages_equal_the_model_time_average_message_data(spark):
    rng = random.Random(11)
    xs = {
        "t/ns/0x00000000_0x40000000": [
            (rng.uniform(0, 500), rng.uniform(0, 500), rng.uniform(0, 5e5), rng.uniform(0, 5e5)) for _ in range(14)
        ],
        "t/ns/0x40000000_0x80000000": [(3.0, 1.0, 300.0, 100.0)],
    }
    df = spark.createDataFrame(_bundle_frame(xs))
    got = transforms.bundle_load(df, Config()).orderBy("bundle", "timestamp").collect()
    flat = [(b, *vals) for b, s in xs.items() for vals in _model_averages(s)]
    cols = ["bundle", "shortTermSamples", "longTermSamples", *columns.AVERAGE_FIELDS]
    assert [tuple(r[c] for c in cols) for r in got] == flat
    # the first sample replaces Pulsar's default prior (50 msg/s, 50000 B/s)
    one = next(r for r in got if r["bundle"] == "t/ns/0x40000000_0x80000000")
    assert (one["shortTermMsgRateIn"], one["longTermMsgThroughputOut"]) == (3.0, 100.0)
    assert np.isclose(
        got[1]["shortTermMsgRateIn"],
        (xs["t/ns/0x00000000_0x40000000"][0][0] + xs["t/ns/0x00000000_0x40000000"][1][0]) / 2,
    )


def _load_rows(spark, rows, config=None):
    pdf = pd.DataFrame(rows)
    for f in columns.AVERAGE_FIELDS:
        pdf[f] = pdf.get(f, 0.0)
    pdf["sessions"] = pdf["producerCount"] + pdf["consumerCount"]
    pdf["reasons"] = frames.split_reason_lists(pdf, frames.SplitThresholds.of(config or Config())).to_pylist()
    return spark.createDataFrame(pdf)


def test_broker_load_sums_bundles_and_their_time_averages(spark):
    base = {"namespace": "t/ns", "msgRateOut": 0.0, "msgThroughputOut": 0.0, "producerCount": 1, "consumerCount": 2}
    rows = [
        {
            **base,
            "timestamp": 0,
            "bundle": "t/ns/a",
            "broker": "b1",
            "msgRateIn": 1.0,
            "msgThroughputIn": 10.0,
            "topics": 2,
            "shortTermMsgRateIn": 1.5,
            "longTermMsgThroughputIn": 11.0,
        },
        {
            **base,
            "timestamp": 0,
            "bundle": "t/ns/b",
            "broker": "b1",
            "msgRateIn": 2.0,
            "msgThroughputIn": 20.0,
            "topics": 3,
            "shortTermMsgRateIn": 2.5,
            "longTermMsgThroughputIn": 21.0,
        },
        {
            **base,
            "timestamp": 0,
            "bundle": "t/ns/c",
            "broker": None,
            "msgRateIn": 4.0,
            "msgThroughputIn": 40.0,
            "topics": 1,
            "shortTermMsgRateIn": 4.0,
            "longTermMsgThroughputIn": 40.0,
        },
    ]
    got = transforms.broker_load(_load_rows(spark, rows)).collect()
    assert len(got) == 1
    r = got[0].asDict()
    assert (r["broker"], r["bundles"], r["topics"], r["msgRateIn"], r["msgThroughputIn"]) == ("b1", 2, 5, 3.0, 30.0)
    assert (r["producerCount"], r["consumerCount"]) == (2, 4)
    assert (r["shortTermMsgRateIn"], r["longTermMsgThroughputIn"], r["longTermMsgRateOut"]) == (4.0, 32.0, 0.0)


def test_split_reason_lists_equal_split_reasons():
    rng = random.Random(3)
    configs = [
        Config(),
        Config().with_values({"loadBalancerNamespaceBundleMaxSessions": 0, "loadBalancerNamespaceBundleMaxTopics": 5}),
    ]
    rows = []
    for i in range(300):
        topics = rng.choice([0, 1, 2, 5, 6, 1000, 1001])
        prod, cons = rng.choice([(0, 0), (500, 500), (500, 501), (1, 3)])
        rate_in = rng.choice([0.0, 15000.0, 30000.0, 30000.5, 1e6])
        tput_in = rng.choice([0.0, 100 * 1048576.0, 100 * 1048576.0 + 1, 7e9])
        rows.append(
            {
                "bundle": f"t/ns/{i:04d}",
                "topics": topics,
                "producerCount": prod,
                "consumerCount": cons,
                "longTermMsgRateIn": rate_in,
                "longTermMsgRateOut": 0.0,
                "longTermMsgThroughputIn": tput_in,
                "longTermMsgThroughputOut": 0.0,
            }
        )
    pdf = pd.DataFrame(rows)
    for cfg in configs:
        got = dict(
            zip(pdf["bundle"], frames.split_reason_lists(pdf, frames.SplitThresholds.of(cfg)).to_pylist(), strict=True)
        )
        want = {
            r["bundle"]: split_reasons(
                NamespaceBundleStats(
                    topics=r["topics"], producerCount=r["producerCount"], consumerCount=r["consumerCount"]
                ),
                r["longTermMsgRateIn"],
                r["longTermMsgThroughputIn"],
                cfg,
            )
            for r in rows
        }
        assert got == want
        assert any(got.values())


def test_split_candidates_apply_the_namespace_cap_in_broker_then_bundle_order(spark):
    hot = {
        "namespace": "t/ns",
        "msgRateIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputIn": 0.0,
        "msgThroughputOut": 0.0,
        "producerCount": 0,
        "consumerCount": 0,
        "longTermMsgRateIn": 40000.0,
    }
    rows = [
        {**hot, "timestamp": 0, "bundle": "t/ns/0x00000000_0x40000000", "broker": "b2", "topics": 3},
        {**hot, "timestamp": 0, "bundle": "t/ns/0x40000000_0x80000000", "broker": "b1", "topics": 3},
        {**hot, "timestamp": 0, "bundle": "t/ns/0x80000000_0xffffffff", "broker": "b1", "topics": 1},
    ]
    cfg = Config().with_values({"loadBalancerNamespaceMaximumBundles": 4})
    got = transforms.split_candidates(_load_rows(spark, rows, cfg), cfg)
    expected = spark.createDataFrame(
        [
            Row(
                timestamp=0,
                namespace="t/ns",
                bundle="t/ns/0x40000000_0x80000000",
                broker="b1",
                topics=3,
                sessions=0,
                longTermMsgRate=40000.0,
                longTermMsgThroughput=0.0,
                reasons=["MsgRate"],
                bundleCount=3,
                withinNamespaceCap=True,
            ),
            Row(
                timestamp=0,
                namespace="t/ns",
                bundle="t/ns/0x00000000_0x40000000",
                broker="b2",
                topics=3,
                sessions=0,
                longTermMsgRate=40000.0,
                longTermMsgThroughput=0.0,
                reasons=["MsgRate"],
                bundleCount=3,
                withinNamespaceCap=False,
            ),
        ],
        schemas.SPLIT_CANDIDATES,
    )
    assertDataFrameEqual(got, expected)
    two = Boundaries(Boundaries.of_count(4).default, {"t/ns": (0, 0x80000000, 0xFFFFFFFF)})
    with_counts = transforms.split_candidates(_load_rows(spark, rows, cfg), cfg, two)
    assert sorted(r["withinNamespaceCap"] for r in with_counts.collect()) == [True, True]
