"""The fast path (``pipeline.keyed``) gives exactly what the general resolution gives."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName
from bundlewise.pipeline import jobs, keyed, schemas, transforms
from bundlewise.pipeline.boundaries import Boundaries

pytestmark = pytest.mark.spark

UNEVEN = (0x00000000, 0x20000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF)
NAMES = [
    "persistent://t/ns/x",
    "non-persistent://t/ns/x",
    "persistent://t/ns/x-partition-3",
    "persistent://t/ns/x ",
    "persistent://t/ns/",
    "persistent://t//x",
    "persistent:///ns/x",
    "persistent://t/ns/a/b",
    "persistent://t/ns",
    "persistent://p/c/ns/x",
    "PERSISTENT://t/ns/x",
    "my-topic",
    "t/ns/x",
    " persistent://t/ns/x",
    "",
    "persistent://租户/命名空间/主题",
    "persistent://t/ns/café",
    "http://t/ns/x",
    "persistent://a://t/ns/x",
    "persistent://t/ns/x/",
    "persistent://t/ns//x",
]


def _parsed(name: str) -> tuple[str, str] | None:
    try:
        t = TopicName.parse(name)
    except InputError:
        return None
    return str(t), str(t.namespace)


def test_canonical_names_are_their_own_full_name_and_every_full_name_is_canonical(spark):
    ok, namespace = keyed.canonical(F.col("topic"))
    rows = (
        spark.createDataFrame([(n,) for n in NAMES], "topic string")
        .select("topic", ok.alias("ok"), namespace.alias("ns"))
        .collect()
    )
    got = {r["topic"]: (r["ok"], r["ns"] if r["ok"] else None) for r in rows}
    for name in NAMES:
        parsed = _parsed(name)
        full_form = parsed is not None and parsed[0] == name and name.count("/") == 4
        assert got[name] == ((True, parsed[1]) if full_form else (False, None)), name
    assert got["persistent://t/ns/x"] == (True, "t/ns")


@pytest.mark.parametrize("bounds", [Boundaries.of_count(4).default, Boundaries.of_count(7).default, UNEVEN])
def test_bundle_index_equals_the_general_bundle_range(spark, bounds):
    hashes = sorted(
        {
            0,
            1,
            0xFFFFFFFE,
            0xFFFFFFFF,
            *bounds,
            *[b - 1 for b in bounds if b],
            *[b + 1 for b in bounds if b < 0xFFFFFFFF],
            123456789,
            0x7FFFFFFF,
        }
    )
    df = spark.createDataFrame([(h,) for h in hashes], "h long")
    lower, upper = transforms.bundle_range(F.lit("t/ns"), F.col("h"), Boundaries(bounds))
    idx = keyed.bundle_index(F.col("h"), bounds)
    got = df.select(
        transforms.bundle_name(F.lit("t/ns"), lower, upper).alias("general"),
        keyed.bundle_name(F.lit("t/ns"), idx, bounds).alias("fast"),
    ).collect()
    assert [r["fast"] for r in got] == [r["general"] for r in got]
    assert got[-1]["fast"] == f"t/ns/0x{bounds[-2]:08x}_0xffffffff"


def _samples(spark):
    topics = [
        "persistent://t/ns/a",
        "persistent://t/ns/b",
        "persistent://t/ns/a-partition-0",
        "my-topic",
        "persistent://public/default/my-topic",
        "t/ns/a",
        "persistent://p/c/ns/x",
        "persistent://t//bad",
        "non-persistent://t/ns/c",
    ]
    rows = []
    for ts in (0, 60_000):
        for i, t in enumerate(topics):
            rows.append((ts, f"b{i % 2}", t, None, float(i + 1), 2.0 * i, 10.0 * i, 0.5, i, 2, 1))
        rows.append((ts, "b1", None, "t/ns/0x00000000_0x40000000", 3.0, 1.0, 5.0, 5.0, 1, 1, 4))
        rows.append((ts, None, None, None, 1.0, 1.0, 1.0, 1.0, 0, 0, 1))
    return spark.createDataFrame(rows, schemas.TOPIC_SAMPLES)


@pytest.mark.parametrize("bounds", [Boundaries.of_count(4).default, UNEVEN])
def test_keyed_sums_give_the_general_bundle_samples_and_rejects(spark, bounds):
    samples, boundaries = _samples(spark), Boundaries(bounds)
    resolved, want_rejects = transforms.resolve(samples, boundaries, "in")
    want = transforms.bundle_load(transforms.partial_bundle_sums(resolved), Config())
    tagged = keyed.tag(samples, bounds)
    fast, other_rows = keyed.split_sums(keyed.keyed_sums(tagged), bounds)
    good, rejects = transforms.resolve(keyed.others(tagged), boundaries, "in")
    got = transforms.bundle_load(fast.unionByName(transforms.partial_bundle_sums(good)), Config())
    assertDataFrameEqual(got, want)
    assertDataFrameEqual(rejects, want_rejects)
    assert want.count() > 4 and want_rejects.count() == 4
    assert other_rows == 12 == keyed.others(tagged).count()


def test_rows_split_gives_the_general_resolved_rows(spark):
    bounds = UNEVEN
    samples, boundaries = _samples(spark), Boundaries(bounds)
    want, want_rejects = transforms.resolve(samples, boundaries, "in")
    fast_rows, others = keyed.rows_split(keyed.tag(samples, bounds), bounds)
    good, rejects = transforms.resolve(others, boundaries, "in")
    assertDataFrameEqual(fast_rows.unionByName(good), want)
    assertDataFrameEqual(rejects, want_rejects)
    assert fast_rows.count() == 10


@pytest.mark.parametrize("mixed", [False, True])
def test_run_pipeline_gives_the_same_outputs_with_and_without_topic_samples(spark, tmp_path, mixed):
    topics = ["persistent://t/ns/a", "persistent://t/ns/b", "non-persistent://t/ns2/c"]
    if mixed:
        topics += ["my-topic", "t/ns/a", "persistent://t//bad"]  # short, tenant/ns/local, invalid
    rows = [
        {
            "timestamp": ts,
            "topic": t,
            "msgRateIn": 1.0 + i,
            "msgRateOut": 2.0,
            "msgThroughputIn": 3.0,
            "msgThroughputOut": 4.0,
            "producerCount": 1,
            "consumerCount": i,
            "broker": f"b{i % 2}",
        }
        for ts in (0, 60_000)
        for i, t in enumerate(topics)
    ]
    trace = tmp_path / "trace"
    trace.mkdir()
    pd.DataFrame(rows).to_parquet(trace / "part-0.parquet")
    summaries, loads = [], []
    for with_samples in (True, False):
        out = tmp_path / f"out-{with_samples}"
        s = jobs.run_pipeline(
            spark, str(trace), "trace", Boundaries(UNEVEN), Config(), str(out), write_topic_samples=with_samples
        )
        summaries.append((s.rows_in, s.rows_rejected, s.bundles, s.brokers, s.time_span, s.reject_reasons))
        loads.append(spark.read.parquet(str(out / "bundle_load")))
    assert summaries[0] == summaries[1]
    assert summaries[0][:2] == ((12, 2) if mixed else (6, 0))
    assertDataFrameEqual(loads[1], loads[0])


@pytest.mark.parametrize(("mixed", "kind"), [(False, "parquet"), (True, "parquet"), (True, "csv")])
def test_topic_samples_written_by_the_fast_path_equal_the_general_resolution(spark, tmp_path, mixed, kind):
    """The clean Parquet input's one-pass write (no second pass) and the appended other rows give the rows
    and rejects ``transforms.resolve`` gives for the whole input."""
    topics = ["persistent://t/ns/a", "persistent://t/ns/b-partition-1", "non-persistent://t/ns2/c"]
    if mixed:
        topics += ["my-topic", "t/ns/a", "persistent://t//bad"]
    rows = [
        {
            "timestamp": ts,
            "topic": t,
            "msgRateIn": 1.0 + i,
            "msgRateOut": 2.0,
            "msgThroughputIn": 3.0,
            "msgThroughputOut": 4.0,
            "producerCount": 1,
            "consumerCount": i,
            "broker": f"b{i % 2}",
        }
        for ts in (0, 60_000)
        for i, t in enumerate(topics)
    ]
    if mixed:
        rows.append({**rows[0], "msgRateIn": -1.0})  # a validation reject
    trace = tmp_path / "trace"
    trace.mkdir()
    frame = pd.DataFrame(rows)
    if kind == "parquet":
        frame.to_parquet(trace / "part-0.parquet")
    else:
        frame.to_csv(trace / "part-0.csv", index=False)
    boundaries = Boundaries(UNEVEN)
    data = jobs.read_input(spark, str(trace), "trace")
    want, want_rejects = transforms.resolve(data.samples, boundaries, str(trace))
    out = tmp_path / "out"
    s = jobs.run_pipeline(spark, str(trace), "trace", boundaries, Config(), str(out))
    assertDataFrameEqual(spark.read.parquet(str(out / "topic_samples")), want)
    assertDataFrameEqual(spark.read.parquet(str(out / "rejects")), want_rejects.unionByName(data.rejects))
    assert (s.rows_in, s.rows_rejected) == ((13, 3) if mixed else (6, 0))
