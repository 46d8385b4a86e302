"""The columnar scan of Parquet traces gives exactly what Spark's reader and the general path give.

Each test runs the whole job twice on the same Parquet files — ``columnar=True`` (Arrow in the Spark tasks,
``pipeline.columnar``) and ``columnar=False`` (Spark's Parquet reader, validation and ``transforms.resolve``)
— and compares every output dataset row for row, and the summaries.
"""

from __future__ import annotations

import math
import os
import random

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.testing import assertDataFrameEqual

from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.pipeline import fragments, jobs
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.locations import Location

pytestmark = pytest.mark.spark

UNEVEN = Boundaries(
    Boundaries.of_count(4).default, {"public/default": (0, 0x20000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF)}
)
CLEAN = [
    "persistent://t/ns/a",
    "persistent://t/ns/b",
    "persistent://t/ns/c-partition-0",
    "persistent://t/ns/c-partition-1",
    "non-persistent://t/ns/d",
    "persistent://public/default/e",
    "persistent://other/ns/f",
]
OTHER = [
    # valid, but not in full form: the general path names them
    "my-topic",
    "t/ns/a",
    "persistent://p/c/ns/x",
    " persistent://t/ns/a",
    # invalid names: rejected
    "persistent://t//bad",
    "",
    "bogus://t/ns/a",
    None,
]


def _row(ts, topic, i, broker):
    return {
        "timestamp": ts,
        "topic": topic,
        "msgRateIn": 100.0 * (i + 1),
        "msgRateOut": 50.0 * i,
        "msgThroughputIn": 1e5 * (i + 1),
        "msgThroughputOut": 2e5 * i,
        "producerCount": i % 3,
        "consumerCount": 2 * i,
        "broker": broker,
    }


def _write(path, rows, schema=None, row_group_size=None):
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)


def _trace(tmp_path, with_others):
    """Two files of several row groups; the first repeats its topics in the same order per timestamp."""
    d = tmp_path / "trace"
    d.mkdir()
    first = [_row(ts, t, i, f"b{i % 2}:8080") for ts in (0, 60_000, 120_000) for i, t in enumerate(CLEAN)]
    second = [
        _row(ts, t, i, None if i == 3 else "b1:8080")
        for ts in (180_000, 240_000)
        for i, t in enumerate(reversed(CLEAN))
    ]
    if with_others:
        second += [_row(240_000, t, i, "b0:8080") for i, t in enumerate(OTHER)]
        bad = _row(240_000, "persistent://t/ns/a", 1, "b0:8080")
        second += [
            {**bad, "timestamp": None},
            {**bad, "timestamp": -5},
            {**bad, "msgRateIn": math.nan},
            {**bad, "msgRateOut": math.inf},
            {**bad, "msgThroughputIn": -1.0},
            {**bad, "producerCount": -2},
            {**bad, "msgRateIn": None},  # an absent rate counts as 0: valid
            {**bad, "consumerCount": None},
        ]
    _write(d / "part-0.parquet", first, row_group_size=len(CLEAN))
    _write(d / "part-1.parquet", second, row_group_size=5)
    return d


def _both(spark, tmp_path, trace, boundaries, counts_known=False):
    results = {}
    for label, flag in (("columnar", True), ("general", False)):
        out = tmp_path / label
        summary = jobs.run_pipeline(
            spark, str(trace), "trace", boundaries, Config(), str(out), bundle_counts_known=counts_known, columnar=flag
        )
        results[label] = (summary, out)
    return results


def _assert_same_outputs(spark, results):
    (s1, out1), (s2, out2) = results["columnar"], results["general"]
    for name in ("topic_samples", "bundle_load", "broker_load", "split_candidates", "namespaces", "rejects"):
        got, want = spark.read.parquet(str(out1 / name)), spark.read.parquet(str(out2 / name))
        assert sorted(got.columns) == sorted(want.columns), name
        assertDataFrameEqual(got.select(*want.columns), want, rtol=1e-12)
    j1, j2 = s1.to_json(), s2.to_json()
    for j in (j1, j2):
        j.pop("seconds"), j.pop("outputs")
    assert _rounded(j1) == _rounded(j2)  # the sums' order differs: equal to 12 significant digits


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.mark.parametrize("boundaries", [Boundaries.of_count(4), UNEVEN], ids=["equal", "uneven"])
def test_a_clean_trace_gives_the_same_outputs_as_the_general_path(spark, tmp_path, boundaries):
    results = _both(spark, tmp_path, _trace(tmp_path, with_others=False), boundaries, counts_known=True)
    _assert_same_outputs(spark, results)
    summary, out = results["columnar"]
    assert (summary.rows_in, summary.rows_rejected) == (5 * len(CLEAN), 0)
    files = sorted(str(p) for p in (tmp_path / "trace").iterdir())
    plan = fragments.plan(Location.of(str(tmp_path / "trace")), "trace", files, 2)
    assert isinstance(plan, fragments.Plan) and plan.kind == "parquet"
    assert {p.name for p in (out / "topic_samples").iterdir() if p.suffix == ".parquet"} == {
        f"part-{i:05d}-columnar.parquet" for i in range(len(plan.fragments))
    }


def test_other_rows_take_the_general_path_with_their_reasons(spark, tmp_path):
    results = _both(spark, tmp_path, _trace(tmp_path, with_others=True), UNEVEN)
    _assert_same_outputs(spark, results)
    summary, out = results["columnar"]
    assert summary.rows_in == 5 * len(CLEAN) + len(OTHER) + 8
    assert summary.rows_rejected == 4 + 6  # four bad names; six bad values (a null rate or count is 0)
    reasons = summary.reject_reasons
    assert reasons["msgRateIn: expected a finite number"] == 1
    assert reasons["producerCount: expected a number >= 0"] == 1
    samples = spark.read.parquet(str(out / "topic_samples"))
    assert samples.where("topic = 'persistent://public/default/my-topic'").count() == 1  # a short name, resolved
    assert samples.where("topic = 'persistent://p/c/ns/x'").first()["namespace"] == "p/c/ns"


def test_whole_double_counts_are_read_and_a_fraction_is_rejected(spark, tmp_path):
    d = tmp_path / "trace"
    d.mkdir()
    schema = pa.schema(
        [
            ("timestamp", pa.int64()),
            ("topic", pa.string()),
            ("msgRateIn", pa.float32()),
            ("producerCount", pa.float64()),
            ("consumerCount", pa.int32()),
        ]
    )
    rows = [
        {
            "timestamp": 1000,
            "topic": f"persistent://t/ns/x{i}",
            "msgRateIn": 1.5 * i,
            "producerCount": 2.5 if i == 3 else float(i),
            "consumerCount": i,
        }
        for i in range(6)
    ]
    _write(d / "only.parquet", rows, schema)
    results = _both(spark, tmp_path, d, Boundaries.of_count(2))
    _assert_same_outputs(spark, results)
    summary, _ = results["columnar"]
    assert (summary.rows_in, summary.rows_rejected) == (6, 1)
    assert summary.reject_reasons == {"producerCount: expected a whole number": 1}


def test_plan_splits_files_by_row_groups_and_leaves_other_types_to_spark(tmp_path):
    rows = [_row(ts, "persistent://t/ns/a", 0, "b") for ts in range(100)]
    _write(tmp_path / "a.parquet", rows, row_group_size=10)
    _write(tmp_path / "b.parquet", rows[:10])
    plan = fragments.plan(
        Location.of(str(tmp_path)), "trace", [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], slots=2
    )
    assert isinstance(plan, fragments.Plan)
    assert [f.row_groups for f in plan.fragments] == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), None]  # ≤ 28 rows
    text_times = pa.table({"timestamp": ["2023-11-14T22:13:20Z"], "topic": ["persistent://t/ns/a"]})
    pq.write_table(text_times, tmp_path / "iso.parquet")
    iso = str(tmp_path / "iso.parquet")
    assert fragments.plan(Location.of(str(tmp_path)), "trace", [iso], slots=2) == (
        f"{iso} has column types the scan does not read as they are"
    )


def test_an_empty_trace_is_bad_input_and_writes_nothing(spark, tmp_path):
    # issue 12: input that yields no valid record exits 2 (so cron and CI notice), and --out is left alone
    d = tmp_path / "trace"
    d.mkdir()
    pq.write_table(
        pa.table({"timestamp": pa.array([], pa.int64()), "topic": pa.array([], pa.string())}), d / "empty.parquet"
    )
    with pytest.raises(InputError) as e:
        jobs.run_pipeline(spark, str(d), "trace", Boundaries.of_count(4), Config(), str(tmp_path / "out"))
    assert str(e.value) == f"{d}: no valid record: the input holds no rows"
    assert sorted(os.listdir(tmp_path)) == ["trace"]  # no --out, no staging folder


def test_a_random_mix_gives_the_same_outputs_as_the_general_path(spark, tmp_path):
    """2,000 rows drawn from every kind of row above, in three files with uneven row groups."""
    rng = random.Random(2026)
    names = CLEAN + OTHER + [f"persistent://t{i % 3}/ns{i % 5}/x{i}" for i in range(40)]
    values = [0.0, 1.0, 2.5, 1e9, -1.0, math.nan, math.inf, None]
    d = tmp_path / "trace"
    d.mkdir()
    for f in range(3):
        rows = []
        for _ in range(rng.randint(400, 900)):
            rows.append(
                {
                    "timestamp": rng.choice([0, 60_000, 120_000, 120_000, None, -1]),
                    "topic": rng.choice(names),
                    **{
                        c: rng.choice(values) if rng.random() < 0.1 else rng.uniform(0, 1e4)
                        for c in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")
                    },
                    "producerCount": rng.choice([0, 1, 7, -3, None]) if rng.random() < 0.1 else rng.randint(0, 5),
                    "consumerCount": rng.randint(0, 9),
                    "broker": rng.choice(["b0:8080", "b1:8080", None]),
                }
            )
        schema = pa.schema(
            [
                ("timestamp", pa.int64()),
                ("topic", pa.string()),
                *[(c, pa.float64()) for c in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")],
                ("producerCount", pa.int64()),
                ("consumerCount", pa.int64()),
                ("broker", pa.string()),
            ]
        )
        _write(d / f"part-{f}.parquet", rows, schema, row_group_size=rng.randint(50, 300))
    results = _both(spark, tmp_path, d, UNEVEN)
    _assert_same_outputs(spark, results)
    summary, _ = results["columnar"]
    assert summary.rows_rejected > 100 and summary.rows_in - summary.rows_rejected > 1000
