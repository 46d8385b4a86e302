"""Prometheus dumps as Pulsar writes them: one file is one scrape, whatever the lines' own timestamps say.

Pulsar 2.x's ``PrometheusMetricsGenerator`` stamps every line with the time it wrote it, so the stamps tick
during one scrape; ``NamespaceStatsAggregator`` writes a cluster-level default line (only a ``cluster`` label)
before each metric's topic lines; ``splitTopicAndPartitionLabel`` moves a partition's index to a ``partition``
label.  The scrapes below are written that way.
"""

from __future__ import annotations

import pytest

from bundlewise.config import Config
from bundlewise.pipeline import dumps, jobs
from bundlewise.pipeline.boundaries import Boundaries

T0 = 1700000000000
METRICS = (
    "pulsar_rate_in",
    "pulsar_rate_out",
    "pulsar_throughput_in",
    "pulsar_throughput_out",
    "pulsar_producers_count",
    "pulsar_consumers_count",
)
PLAIN = [f"persistent://tenant/ns-{i % 3}/topic-{i}" for i in range(24)]
PARTITIONED = "persistent://tenant/ns-0/orders"


def _value(metric: int, topic: int, scrape: int) -> float:
    """Metric ``metric`` of topic ``topic`` in scrape ``scrape`` (counts are whole)."""
    if metric >= 4:
        return float((topic + scrape + metric) % 5)
    return round(10.0 * (topic + 1) + 0.25 * scrape + 1000.0 * metric, 2)


def scrape(scrape_index: int, start: int) -> str:
    """One Pulsar 2.x scrape of 24 topics and an 8-partition topic; every line stamped as written (ticking)."""
    clock = start
    lines = []
    for m, metric in enumerate(METRICS):
        lines.append(f"# TYPE {metric} gauge")
        lines.append(f'{metric}{{cluster="standalone"}} 0 {clock}')
        for t, topic in enumerate(PLAIN):
            ns = topic.split("//")[1].rsplit("/", 1)[0]
            labels = f'cluster="standalone",namespace="{ns}",topic="{topic}"'
            lines.append(f"{metric}{{{labels}}} {_value(m, t, scrape_index)} {clock}")
            clock += 1  # the stamps tick during the scrape
        for p in range(8):
            labels = f'cluster="standalone",namespace="tenant/ns-0",topic="{PARTITIONED}",partition="{p}"'
            lines.append(f"{metric}{{{labels}}} {_value(m, 24 + p, scrape_index)} {clock}")
            clock += 1
        lines.append(
            f'pulsar_storage_size{{cluster="standalone",namespace="tenant/ns-0",topic="{PLAIN[0]}"}} 7 {clock}'
        )
    lines.append(f'pulsar_topics_count{{cluster="standalone",namespace="tenant/ns-0"}} 17 {clock}')
    return "\n".join(lines) + "\n"


def _names() -> list[str]:
    return PLAIN + [f"{PARTITIONED}-partition-{p}" for p in range(8)]


def test_one_file_is_one_sample_per_topic_at_the_scrape_time():
    for s in range(3):
        rows, rejects = dumps.parse_prometheus(
            f"/d/broker-1:8080@{T0 + 60_000 * s}.prom", scrape(s, T0 + 60_000 * s + 3)
        )
        assert rejects == []
        assert len(rows) == 32
        assert {r[0] for r in rows} == {T0 + 60_000 * s}  # the file name's time, not the ticking stamps
        got = {r[2]: r[4:10] for r in rows}
        assert sorted(got) == sorted(_names())
        for t, name in enumerate(_names()):
            assert got[name] == tuple(_value(m, t, s) for m in range(6)), name


def test_a_file_without_a_time_in_its_name_takes_its_earliest_stamp():
    rows, rejects = dumps.parse_prometheus("/d/metrics.prom", scrape(0, T0 + 17))
    assert rejects == [] and len(rows) == 32
    assert {(r[0], r[1]) for r in rows} == {(T0 + 17, None)}


def test_a_scrape_with_no_time_at_all_rejects_its_topic_lines():
    text = 'pulsar_rate_in{cluster="c"} 0\npulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/a"} 1\n'
    rows, rejects = dumps.parse_prometheus("/d/metrics.prom", text)
    assert rows == []
    assert [r[2].split(":")[0] for r in rejects] == ["no timestamp"]


@pytest.mark.spark
def test_the_pipeline_reads_three_scrapes_as_three_samples_of_32_topics(spark, tmp_path):
    d = tmp_path / "scrapes"
    d.mkdir()
    for s in range(3):
        (d / f"broker-1:8080@{T0 + 60_000 * s}.prom").write_text(scrape(s, T0 + 60_000 * s + 3))
    out = tmp_path / "out"
    summary = jobs.run_pipeline(spark, str(d), None, Boundaries.of_count(4), Config(), str(out))
    assert (summary.rows_in, summary.rows_rejected) == (96, 0)
    assert summary.time_span == (T0, T0 + 120_000)
    samples = spark.read.parquet(str(out / "topic_samples"))
    assert samples.count() == 96
    assert sorted(r[0] for r in samples.select("timestamp").distinct().collect()) == [T0, T0 + 60_000, T0 + 120_000]
    row = samples.where(f"topic = '{PARTITIONED}-partition-3' and timestamp = {T0 + 60_000}").collect()
    assert [(r["msgRateIn"], r["producerCount"], r["broker"]) for r in row] == [
        (_value(0, 27, 1), int(_value(4, 27, 1)), "broker-1:8080")
    ]
    loads = spark.read.parquet(str(out / "bundle_load")).select("timestamp").distinct().count()
    assert loads == 3
