"""Every native Spark expression that stands in for a model rule equals the model's scalar function, on
generated inputs (hypothesis): the CRC-32 hash, topic-name parsing (general and keyed paths), the bundle
lookup (array search, arithmetic, comparison tree), and the number forms the fast path reads from text.

Each example is a batch of values evaluated in one Spark query, so a few examples cover thousands of values.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyspark.sql import functions as F

from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import FULL_UPPER_BOUND, crc32_hash
from bundlewise.model.names import TopicName
from bundlewise.pipeline import columnar, ingest, keyed, transforms
from bundlewise.pipeline.boundaries import Boundaries

pytestmark = pytest.mark.spark
SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

PIECES = st.sampled_from(
    [
        "persistent",
        "non-persistent",
        "http",
        "://",
        "/",
        "//",
        " ",
        "t",
        "ns",
        "public",
        "default",
        "x-partition-3",
        "café",
        "租户",
        "🚀",
        "a",
        "-",
        ".",
        "PERSISTENT",
        ":",
    ]
)
NAMES = st.lists(PIECES, min_size=0, max_size=9).map("".join)


@st.composite
def _boundaries(draw: st.DrawFn) -> tuple[int, ...]:
    inner = draw(st.lists(st.integers(1, FULL_UPPER_BOUND - 1), min_size=0, max_size=12, unique=True))
    return (0, *sorted(inner), FULL_UPPER_BOUND)


def _model(name: str) -> tuple[str, str] | None:
    try:
        t = TopicName.parse(name)
    except InputError:
        return None
    return str(t), str(t.namespace)


@SETTINGS
@given(st.lists(st.text(max_size=40), min_size=1, max_size=300))
def test_native_crc32_equals_the_model_hash(spark, texts):
    df = spark.createDataFrame([(t,) for t in texts], "name string")
    got = [r["h"] for r in df.select(transforms.topic_hash(F.col("name")).alias("h")).collect()]
    assert got == [crc32_hash(t) for t in texts]


@SETTINGS
@given(st.lists(NAMES, min_size=1, max_size=300))
def test_native_name_parsing_equals_topic_name_parse(spark, names):
    df = transforms.with_topic_names(spark.createDataFrame([(n,) for n in names], "topic string"))
    ok, namespace = keyed.canonical(F.col("topic"))
    rows = df.select("topic", "_full", "_ns", "_err", ok.alias("ok"), namespace.alias("kns")).collect()
    for r in rows:
        parsed = _model(r["topic"])
        assert (r["_full"], r["_ns"]) == (parsed if parsed else (None, None)), r["topic"]
        assert (r["_err"] is None) == (parsed is not None), r["topic"]
        canonical = parsed is not None and parsed[0] == r["topic"] and r["topic"].count("/") == 4
        assert (r["ok"], r["kns"] if r["ok"] else None) == (canonical, parsed[1] if canonical else None), r["topic"]


@SETTINGS
@given(_boundaries(), st.lists(st.integers(0, FULL_UPPER_BOUND), min_size=1, max_size=300), st.integers(1, 64))
def test_native_bundle_lookups_equal_namespace_bundles(spark, bounds, hashes, n):
    model = NamespaceBundles.of("t/ns", bounds)
    equal = Boundaries.of_count(n)
    model_equal = NamespaceBundles.of("t/ns", equal.default)
    hashes = [*hashes, 0, FULL_UPPER_BOUND, *bounds]
    df = spark.createDataFrame([(h,) for h in hashes], "h long")
    cols = []
    for label, b in (("arr", Boundaries(Boundaries.of_count(2).default, {"t/ns": bounds})), ("eq", equal)):
        lo, hi = transforms.bundle_range(F.lit("t/ns"), F.col("h"), b)
        cols.append(transforms.bundle_name(F.lit("t/ns"), lo, hi).alias(label))
    cols.append(keyed.bundle_name(F.lit("t/ns"), keyed.bundle_index(F.col("h"), bounds), bounds).alias("tree"))
    rows = df.select("h", *cols).collect()
    for r in rows:
        assert r["arr"] == r["tree"] == model.bundle_for_hash(r["h"]).name
        assert r["eq"] == model_equal.bundle_for_hash(r["h"]).name


DECIMALS = st.one_of(
    st.floats(min_value=0, allow_nan=False, allow_infinity=False).map(repr),
    st.integers(0, 10**20).map(str),
    st.from_regex(r"[+-]?[0-9]{0,6}(\.[0-9]{0,6})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["inf", "NaN", "Infinity", " 1", "1 ", "0x10", "1d", "", "-0", "+.5", "5.", "1e400", "1e20"]),
)


@SETTINGS
@given(st.lists(DECIMALS, min_size=1, max_size=300))
def test_text_numbers_the_fast_path_reads_equal_sparks_reading(spark, texts):
    """A CSV number the fast path takes as clean has the value Spark's general path reads; the text it does
    not take is left to Spark (never read differently)."""
    table = pa.table({"msgRateIn": pa.array(texts, pa.string()), "producerCount": pa.array(texts, pa.string())})
    rate, rate_ok = columnar._numbers(table, "msgRateIn")
    count, count_ok = columnar._numbers(table, "producerCount")
    raw = spark.createDataFrame([(t, t) for t in texts], "msgRateIn string, producerCount string")
    good, bad = ingest.validate_trace(
        raw.withColumn("timestamp", F.lit("0")).withColumn("topic", F.lit("persistent://t/ns/a")), "x.csv"
    )
    rows = raw.select(
        ingest._number_expr(raw, "msgRateIn").alias("r"), ingest._number_expr(raw, "producerCount").alias("c")
    ).collect()
    for i, text in enumerate(texts):
        spark_rate = rows[i]["r"]
        if rate_ok[i]:
            assert spark_rate is not None and math.isfinite(spark_rate) and spark_rate >= 0, text
            assert rate.to_pylist()[i] == spark_rate, text
        if count_ok[i]:
            assert rows[i]["c"] == count.to_pylist()[i], text
        if text == "":
            continue
        try:
            value = float(text)
        except ValueError:
            value = None
        if rate_ok[i]:
            assert value == rate.to_pylist()[i], text  # and Python's own reading of the decimal
    assert good.count() + bad.count() == len(texts)
