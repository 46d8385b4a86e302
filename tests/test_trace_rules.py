"""The trace's rules (``traffic.rules``) and the reading without a JVM (``traffic.readers``) equal the pipeline's
Spark reading: Spark's expressions (``pipeline.ingest.validate_trace``, ``pipeline.transforms.with_topic_names``)
and Spark's CSV and JSON readers stand in for them on a cluster, so every row must get the same verdict — the same
sample, or the same reject reason — both ways."""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlewise.traffic import readers, rules

SPARK_SETTINGS = settings(  # each example is a Spark job; BUNDLEWISE_RULE_EXAMPLES=300 for a deeper search
    max_examples=int(os.environ.get("BUNDLEWISE_RULE_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


# -- the grammars, by example --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1.0),
        (" 1 ", 1.0),
        ("\t1\n", 1.0),
        ("1d", 1.0),
        ("1.5F", 1.5),
        ("+.5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("0x1p3", 8.0),
        ("0X1.8P1d", 3.0),
        ("Infinity", math.inf),
        ("-inf", -math.inf),
        ("INFINITY", math.inf),
        ("1e400", math.inf),
        ("0x1p2000", math.inf),
        ("1e-400", 0.0),
        ("0x10", None),
        ("1_0", None),
        ("-nan", None),
        ("NaNd", None),
        ("\u00a01", None),
        ("", None),
        (".", None),
        ("1e", None),
    ],
)
def test_text_numbers_are_read_as_the_jvm_reads_them(text: str, value: float | None) -> None:
    assert rules.text_number(text) == value


def test_nan_texts_are_numbers_that_are_not_finite() -> None:
    for text in ("NaN", "nan", "-NaN", " NAN "):
        got = rules.text_number(text)
        assert got is not None and math.isnan(got)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1700000000000", 1_700_000_000_000),
        ("1.9", 1),
        ("1e3", 1000),
        ("2024-01-05", 1_704_412_800_000),
        ("2024-01-05T10:00:00", 1_704_448_800_000),
        ("2024-01-05 10:00:00Z", 1_704_448_800_000),
        ("2024-01-05T10:00:00.123456789Z", 1_704_448_800_123),
        ("2024-01-05T10:00:00+01:30", 1_704_443_400_000),
        ("2024-01-05T10:00:00-18:00", 1_704_513_600_000),
        ("-1", None),
        ("1969-12-31T23:59:59Z", None),  # before the epoch
        ("2024-1-5", None),  # not ISO-8601
        ("10:00:00", None),  # a time without a date (Spark would take today's date)
        ("2024-01-05T10:00", None),
        ("2024-02-30", None),
        ("2024-01-05T10:00:00+18:01", None),
        ("2024-01-05T10:00:00 Europe/Paris", None),
        ("9.2e18", None),
    ],
)
def test_timestamps_are_ms_or_iso_8601(text: str, ms: int | None) -> None:
    assert rules.text_timestamp(text) == ms


def test_names_are_stripped_of_pythons_whitespace_and_quoted_as_written() -> None:
    from bundlewise.model.errors import InputError
    from bundlewise.model.names import BLANKS, TopicName

    assert set(BLANKS) == {chr(i) for i in range(0x110000) if chr(i).isspace()}
    assert str(TopicName.parse("\u2003\ta\u00a0")) == "persistent://public/default/a"
    with pytest.raises(InputError, match=r"^topic 'x://it's': domain must be one of"):
        TopicName.parse("x://it's")


# -- every row's verdict, both ways --------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 10**20).map(str),
    st.from_regex(r"[ \t]?[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,3})?[dDfF]?[ ]?", fullmatch=True),
    st.from_regex(r"[+-]?0[xX][0-9a-f]{0,3}(\.[0-9a-f]{0,2})?[pP][+-]?[0-9]{1,3}", fullmatch=True),
    st.sampled_from(["inf", "NaN", "-nan", "Infinity", "+INF", "1_0", "", " ", "0x10", "1e400", "9.2e18", "abc"]),
)
TIMESTAMPS = st.one_of(
    st.integers(-10, 2**63).map(str),
    st.floats(-1, 1e19).map(repr),
    st.datetimes().map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S") + "Z"),
    st.from_regex(
        r"(19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]([T ][0-2][0-9]:[0-6][0-9]:[0-6][0-9](\.[0-9]{1,10})?"
        r"(Z|[+-][0-2][0-9]:[0-6][0-9])?)?",
        fullmatch=True,
    ),
    NUMBERS,
)
TOPIC_PIECES = st.sampled_from(
    [
        "persistent://",
        "non-persistent://",
        "x://",
        "t",
        "ns",
        "/",
        " ",
        "a",
        "-",
        "é",
        "\t",
        "'",
        "\\",
        "\u00a0",
        "\u2003",
    ]
)
TOPICS = st.one_of(st.lists(TOPIC_PIECES, max_size=7).map("".join), st.just(""))
ROW = st.fixed_dictionaries(
    {"timestamp": st.none() | TIMESTAMPS, "topic": st.none() | TOPICS},
    optional={f: st.none() | NUMBERS for f in ("msgRateIn", "msgThroughputOut", "producerCount", "consumerCount")},
)


def _spark_verdicts(spark: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each row's sample or reject reason, by Spark (the row's id rides in ``broker``)."""
    from pyspark.sql.types import StringType, StructField, StructType

    from bundlewise.pipeline import ingest, transforms

    cols = ["timestamp", "topic", "msgRateIn", "msgThroughputOut", "producerCount", "consumerCount", "broker"]
    schema = StructType([StructField(c, StringType(), True) for c in cols])
    df = spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows], schema)
    good, bad = ingest.validate_trace(df, "x")
    out: dict[str, Any] = {}
    for r in bad.collect():
        out[json.loads(r["record"])["broker"]] = r["reason"]
    named = transforms.with_topic_names(good)
    for r in named.collect():
        if r["_err"] is not None:
            out[r["broker"]] = f"topic: {r['_err']}"
        else:
            out[r["broker"]] = (r["timestamp"], r["_full"], r["msgRateIn"], r["msgThroughputOut"], r["producerCount"])
    return out


def _our_verdicts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cols = ["timestamp", "topic", "msgRateIn", "msgThroughputOut", "producerCount", "consumerCount", "broker"]
    table = pa.table({c: pa.array([r.get(c) for r in rows], pa.string()) for c in cols})
    checked = rules.check(table, "x")
    out: dict[str, Any] = {}
    for r in checked.samples.to_pylist():
        out[r["broker"]] = (r["timestamp"], r["topic"], r["msgRateIn"], r["msgThroughputOut"], r["producerCount"])
    for r in checked.rejects.to_pylist():
        out[json.loads(r["record"])["broker"]] = r["reason"]
    return out


@pytest.mark.spark
@settings(SPARK_SETTINGS, max_examples=max(1, SPARK_SETTINGS.max_examples // 3))
@given(st.lists(ROW, min_size=1, max_size=180))  # rows are judged one by one: a third of the jobs, as many rows
def test_every_row_gets_the_verdict_spark_gives(spark: Any, rows: list[dict[str, Any]]) -> None:
    for i, r in enumerate(rows):
        r["broker"] = str(i)
    ours, theirs = _our_verdicts(rows), _spark_verdicts(spark, rows)
    assert set(ours) == set(theirs) == {str(i) for i in range(len(rows))}
    for key in ours:
        assert _same(ours[key], theirs[key]), (rows[int(key)], ours[key], theirs[key])


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return all(
            x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)
            for x, y in zip(a, b, strict=True)
        )
    return bool(a == b)


# -- whole files: pyarrow's reading and Spark's -----------------------------------------------------------------

CSV_FIELD = st.one_of(
    NUMBERS,
    st.sampled_from(['"1"', '""', '"a,b"', "a", "persistent://t/ns/x", " t ", '"q""q"', 'x"y', "\\", '"\\"x"']),
)


@st.composite
def csv_files(draw: st.DrawFn) -> str:
    header = "timestamp,topic,msgRateIn,producerCount"
    lines = [header]
    for _ in range(draw(st.integers(1, 25))):
        width = draw(st.sampled_from([4, 4, 4, 3, 5, 1]))
        fields = [draw(st.sampled_from(["1000", "2024-01-05", "x", ""]))]
        fields.append(draw(st.sampled_from(["a", "persistent://t/ns/b", "", " c "])))
        fields += [draw(CSV_FIELD) for _ in range(max(0, width - 2))]
        lines.append(",".join(fields[:width]))
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "   "])))
    return "\n".join(lines) + "\n"


JSON_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    NUMBERS,
    st.lists(st.integers(0, 3), max_size=2),
)


@st.composite
def jsonl_files(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["row", "row", "row", "broken", "array", "literal", "trailing", "blank"]))
        if kind == "blank":
            lines.append("  ")
            continue
        if kind == "broken":
            lines.append('{"timestamp": 1000, "topic": "a" "msgRateIn": 1}')
            continue
        if kind == "array":
            lines.append("[1, 2]")
            continue
        doc = {
            "timestamp": draw(st.sampled_from([1000, 1.5e3, "1000", "2024-01-05T00:00:00Z", None, -3])),
            "topic": draw(st.sampled_from(["a", "persistent://t/ns/b", "", None, 7])),
            "msgRateIn": draw(JSON_VALUE),
            "producerCount": draw(JSON_VALUE),
        }
        text = json.dumps(doc)
        if kind == "literal":
            text = text.replace('"msgRateIn": ', '"msgRateIn": NaN, "x": ', 1)
        if kind == "trailing":
            text += " trailing"
        lines.append(text)
    return "\n".join(lines) + "\n"


def _ours(path: Path) -> tuple[Counter[Any], Counter[str]]:
    raw = readers.read_local(str(path))
    checked = rules.check_parts([(p.table, p.malformed, p.records) for p in raw.parts], str(path))
    samples = Counter(
        (r["timestamp"], r["topic"], r["msgRateIn"], r["producerCount"]) for r in checked.samples.to_pylist()
    )
    return samples, Counter(checked.rejects.column("reason").to_pylist())


def _theirs(spark: Any, path: Path) -> tuple[Counter[Any], Counter[str]]:
    from bundlewise.pipeline import transforms
    from bundlewise.pipeline.reading import read_input

    ingested = read_input(spark, str(path), "trace")
    named = transforms.with_topic_names(ingested.samples)
    samples: Counter[Any] = Counter()
    reasons = Counter(r["reason"] for r in ingested.rejects.collect())
    for r in named.select("timestamp", "_full", "_err", "msgRateIn", "producerCount").collect():
        if r["_err"] is not None:
            reasons[f"topic: {r['_err']}"] += 1
        else:
            samples[(r["timestamp"], r["_full"], r["msgRateIn"], r["producerCount"])] += 1
    return samples, reasons


@pytest.mark.spark
@SPARK_SETTINGS
@given(csv_files())
def test_a_csv_trace_is_read_as_spark_reads_it(spark: Any, tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("csv") / "trace.csv"
    path.write_text(text)
    assert _ours(path) == _theirs(spark, path), text


@pytest.mark.spark
@SPARK_SETTINGS
@given(jsonl_files())
def test_a_json_lines_trace_is_read_as_spark_reads_it(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "trace.jsonl"
    path.write_text(text)
    assert _ours(path) == _theirs(spark, path), text
