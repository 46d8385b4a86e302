"""Every route of a run gives the same outputs on the same input, and the route is chosen once, with its reason.

The four routes (``pipeline.routes``) — fast or general reading × driver or Spark finish — run on the same
inputs and every output dataset and the summary are compared for equality: a CSV trace of which exactly one
piece needs the general path (one line the scan does not take as clean), a Parquet trace of which one row group
does, and load-report dumps (``broker_reports/``) of which one file does.
"""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from pyspark.testing import assertDataFrameEqual
from tests.test_pipeline_columnar import UNEVEN, _rounded
from tests.test_pipeline_fixtures import load_report
from tests.test_pipeline_text import HEADER, _clean_rows, _csv_line, _records

from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.pipeline import fragments, jobs, routes
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.locations import Location

pytestmark = pytest.mark.spark

ROUTES = {
    "fast path, driver finish": (True, "driver"),
    "fast path, spark finish": (True, "spark"),
    "general path, driver finish": (False, "driver"),
    "general path, spark finish": (False, "spark"),
}
DATASETS = ("topic_samples", "bundle_load", "broker_load", "split_candidates", "namespaces")


def _every_route(spark, tmp_path, path, boundaries, fmt="trace"):
    """Runs the input on every route → {route: (summary, out, progress lines)}."""
    results = {}
    for i, (name, (columnar, finish)) in enumerate(ROUTES.items()):
        out = tmp_path / f"out-{i}"
        seen: list[str] = []
        summary = jobs.run_pipeline(
            spark, str(path), fmt, boundaries, Config(), str(out), seen.append, columnar=columnar, finish=finish
        )
        assert summary.route.startswith(f"{name}: "), summary.route
        assert sum(m.endswith(f"route: {summary.route}") for m in seen) == 1  # chosen once, printed once
        results[name] = (summary, out, seen)
    return results


def _assert_all_equal(spark, results, datasets=DATASETS):
    (want_summary, want_out, _), *others = results.values()
    for summary, out, _ in others:
        for name in datasets:
            got, want = spark.read.parquet(str(out / name)), spark.read.parquet(str(want_out / name))
            assert sorted(got.columns) == sorted(want.columns), name
            assertDataFrameEqual(got.select(*want.columns), want, rtol=1e-12)
        assert _records(spark.read.parquet(str(out / "rejects"))) == _records(
            spark.read.parquet(str(want_out / "rejects"))
        )
        got_j, want_j = summary.to_json(), want_summary.to_json()
        for j in (got_j, want_j):
            j.pop("seconds"), j.pop("outputs")
        assert _rounded(got_j) == _rounded(want_j)


def _handed(seen):
    """The fragments a fast route handed to the general path (its progress line), 0 when none."""
    lines = [m for m in seen if "fragments on the general path" in m]
    return int(lines[0].split("reading ")[1].split(" ")[0]) if lines else 0


@pytest.fixture
def small_fragments(monkeypatch):
    """Fragments of ~700 bytes read in blocks of ~300: a CSV of a few kB is many pieces."""
    monkeypatch.setattr(fragments, "MIN_TEXT_FRAGMENT_BYTES", 700)
    monkeypatch.setattr(fragments, "TEXT_FRAGMENT_BYTES", 700)
    monkeypatch.setattr(fragments, "TEXT_BLOCK_BYTES", 300)


def test_a_csv_with_one_piece_for_the_general_path_gives_the_same_outputs_on_every_route(
    spark, tmp_path, small_fragments
):
    rows = _clean_rows(random.Random(21))
    lines = [_csv_line(r) for r in rows]
    odd = "60000,persistent://t/ns/a, 1e3,1,1,1,1,1,b0"  # a space before the number: left to Spark's reader
    lines.insert(len(lines) - 3, odd)
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    results = _every_route(spark, tmp_path, path, UNEVEN)
    _assert_all_equal(spark, results)
    for name, (summary, _, seen) in results.items():
        assert (summary.rows_in, summary.rows_rejected) == (len(rows) + 1, 0)
        assert _handed(seen) == (1 if name.startswith("fast") else 0)
    summary, out, _ = results["fast path, driver finish"]
    plan = fragments.plan(Location.of(str(path)), "trace", [str(path)], 2)
    assert isinstance(plan, fragments.Plan) and len(plan.fragments) > 4
    samples = spark.read.parquet(str(out / "topic_samples"))
    assert samples.where("topic = 'persistent://t/ns/a'").first()["msgRateIn"] == 1000.0


def test_a_parquet_trace_with_one_row_group_for_the_general_path_gives_the_same_outputs_on_every_route(spark, tmp_path):
    rows = _clean_rows(random.Random(22))
    rows[40] = {**rows[40], "topic": "my-topic"}  # a short name: the general path names it
    rows[41] = {**rows[41], "msgRateIn": -1.0}  # rejected (the same row group)
    d = tmp_path / "trace"
    d.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), d / "part-0.parquet", row_group_size=10)
    results = _every_route(spark, tmp_path, d, Boundaries.of_count(4))
    _assert_all_equal(spark, results)
    for name, (summary, _, seen) in results.items():
        assert (summary.rows_in, summary.rows_rejected) == (len(rows), 1)
        assert summary.reject_reasons == {"msgRateIn: expected a number >= 0": 1}
        assert _handed(seen) == (1 if name.startswith("fast") else 0)


def test_load_reports_with_one_file_for_the_general_path_give_the_same_outputs_on_every_route(spark, tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    report = load_report()
    (d / "broker-1:8080@1700000000000.json").write_text(json.dumps(report))
    (d / "broker-1:8080@1700000060000.json").write_text(json.dumps(report))
    stats = dict(report["lastStats"])
    first = next(iter(stats))
    stats[first] = {**stats[first], "producerCount": 2**60}  # a count past 2^53: the scan leaves the file
    (d / "broker-2:8080@1700000000000.json").write_text(json.dumps({**report, "lastStats": stats}))
    (d / "broker-3:8080@1700000000000.json").write_text("{truncated")
    results = _every_route(spark, tmp_path, d, Boundaries.of_count(4), "load-report")
    _assert_all_equal(spark, results, (*DATASETS, "broker_reports"))
    for name, (summary, out, seen) in results.items():
        assert _handed(seen) == (1 if name.startswith("fast") else 0)
        assert spark.read.parquet(str(out / "broker_reports")).count() == 3
        assert summary.rows_rejected == 4  # a bad lastStats entry in each of three files, the cut file


def test_the_route_is_chosen_once_with_its_reason(spark, tmp_path, monkeypatch):
    rows = _clean_rows(random.Random(23))
    (tmp_path / "a.csv").write_text(HEADER + "\n" + "\n".join(_csv_line(r) for r in rows) + "\n")
    source = Location.of(str(tmp_path / "a.csv"))
    files, fs = [str(tmp_path / "a.csv")], Location.of(str(tmp_path)).arrow_fs()[0]

    def choose(columnar=True, finish="auto", files=files):
        return routes.choose(
            spark, source, "trace", files, fs, columnar=columnar, samples=None, finish=finish, timestamp=None
        )

    rows_known = (tmp_path / "a.csv").stat().st_size // fragments.BYTES_PER_ROW
    fast = choose()
    assert (fast.reading, fast.finish) == ("fast", "driver")
    assert fast.reason == (
        "pyarrow reads the input (1 fragments of csv); "
        f"about {rows_known:,} rows (60 bytes a row), at most 16,000,000: the partial sums are collected once"
    )
    general = choose(columnar=False, finish="spark")
    assert (general.reading, general.finish, general.plan) == ("general", "spark", None)
    assert general.reason == "--spark-reader asks for Spark's own readers; spark finish asked for"
    (tmp_path / "b.csv").write_text("timestamp,topic,broker\n1,persistent://t/ns/a,b0\n")
    mixed = choose(files=[str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    assert (mixed.reading, mixed.reason.split(";")[0]) == ("general", "the CSV files have different header lines")
    monkeypatch.setattr(routes, "DRIVER_ROWS", 10)
    large = choose()
    assert (large.reading, large.finish) == ("fast", "spark")
    assert large.reason.endswith(
        f"about {rows_known:,} rows (60 bytes a row), more than 10: the small tables are made in Spark tasks"
    )
    with pytest.raises(ValueError, match="finish must be one of auto, driver, spark"):
        choose(finish="cluster")


def test_an_input_no_route_can_read_names_the_file(spark, tmp_path):
    (tmp_path / "t.csv").write_text("timestamp,msgRateIn\n1,2\n")
    with pytest.raises(InputError, match="trace has no topic column"):
        jobs.run_pipeline(spark, str(tmp_path / "t.csv"), None, Boundaries.of_count(4), Config(), None)
