"""The pipeline on what operators save (issue 12 items 1–3): a topics dump saved under any name and a Pulsar
3.x scrape carry no time — it comes from ``--timestamp`` or the file's modification time, and the summary says
which; a partition label is hashed as ``topic-partition-N``, as Pulsar hashes it; every dataset carries
``_SUCCESS``; ``--overwrite`` replaces ``--out`` whole; ``--input-format`` and ``--format table``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.test_pipeline_fixtures import topics_dump_broker1

from bundlewise.cli.main import main
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.names import TopicName

pytestmark = pytest.mark.spark

MTIME_MS = 1_700_000_123_000
SCRAPE = """\
# TYPE pulsar_rate_in gauge
pulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/orders",partition="0"} 10
pulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/orders",partition="1"} 20
pulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/orders",partition="2"} 30
pulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/orders",partition="3"} 40
pulsar_rate_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/plain",partition="-1"} 5
# TYPE pulsar_throughput_in gauge
pulsar_throughput_in{cluster="c",namespace="t/ns",topic="persistent://t/ns/orders",partition="0"} 1000
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["pipeline", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def samples(out: Path) -> list[tuple[str, str, int]]:
    rows = pq.read_table(out / "topic_samples").to_pylist()
    return sorted((r["topic"], r["bundle"], r["timestamp"]) for r in rows)


def test_a_pulsar_3_scrape_is_read_with_its_file_time_and_partitions_hashed_as_pulsar_does(
    spark: object, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scrape = tmp_path / "metrics.prom"  # curl -o metrics.prom http://broker:8080/metrics: no time, no broker
    scrape.write_text(SCRAPE)
    os.utime(scrape, ns=(MTIME_MS * 1_000_000, MTIME_MS * 1_000_000))
    code, out, err = run(capsys, "--input", str(scrape), "--out", str(tmp_path / "out"))
    assert code == 0, err
    bundles = NamespaceBundles.initial("t/ns", 4)
    names = [f"persistent://t/ns/orders-partition-{p}" for p in range(4)] + ["persistent://t/ns/plain"]
    assert samples(tmp_path / "out") == sorted(
        (n, bundles.find_bundle(TopicName.parse(n)).name, MTIME_MS) for n in names
    )
    # hashing the label's bare topic name would have put the partitions elsewhere
    assert {bundles.find_bundle(TopicName.parse(n)).name for n in names[:4]} != {
        bundles.find_bundle(TopicName.parse("persistent://t/ns/orders")).name
    }
    summary = json.loads(out)
    assert summary["timeFallback"] == "the file's modification time"
    assert summary["timeSpan"] == {"from": MTIME_MS, "to": MTIME_MS}
    assert "a dump file without a time of its own is at the file's modification time" in err


def test_a_topics_dump_saved_under_any_name_takes_the_given_timestamp(
    spark: object, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = tmp_path / "topics.json"  # curl -o topics.json …/admin/v2/broker-stats/topics
    dump.write_text(json.dumps(topics_dump_broker1()))
    code, out, err = run(
        capsys, "--input", str(dump), "--input-format", "topics-stats", "--timestamp", "2023-11-14T22:13:20Z"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["timeFallback"] == "--timestamp 1700000000000"
    assert summary["timeSpan"] == {"from": 1700000000000, "to": 1700000000000}
    assert summary["rowsRejected"] == 0 and summary["rowsIn"] > 0


def test_every_dataset_carries_success_and_overwrite_replaces_the_out_whole(
    spark: object, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,topic,msgRateIn\n0,persistent://t/ns/a,1\n60000,persistent://t/ns/b,2\n")
    out = tmp_path / "out"
    assert run(capsys, "--input", str(trace), "--out", str(out))[0] == 0
    datasets = ["broker_load", "bundle_load", "namespaces", "rejects", "split_candidates", "topic_samples"]
    assert sorted(os.listdir(out)) == ["_SUCCESS", *datasets]
    assert all((out / d / "_SUCCESS").is_file() for d in datasets)
    assert (out / "_SUCCESS").read_text() == "written by bundlewise\n"
    code, _, err = run(capsys, "--input", str(trace), "--out", str(out), "--no-topic-samples")
    assert (code, err) == (2, f"error: {out}: --out: is not empty; pass --overwrite to replace it\n")
    code, _, err = run(capsys, "--input", str(trace), "--out", str(out), "--no-topic-samples", "--overwrite")
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["_SUCCESS", *[d for d in datasets if d != "topic_samples"]]  # no stale one
    assert sorted(os.listdir(tmp_path)) == ["out", "t.csv"]  # no staging folder left


def test_format_chooses_the_output_and_the_old_spelling_still_names_the_input(
    spark: object, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,topic,msgRateIn\n0,persistent://t/ns/a,1\n")
    code, out, _ = run(capsys, "--input", str(trace), "--format", "table")
    assert code == 0 and out.startswith("rows in        1\nrows rejected  0\n")
    code, out, err = run(capsys, "--input", str(trace), "--format", "trace")
    assert code == 0 and json.loads(out)["rowsIn"] == 1
    assert err.splitlines()[0] == (
        "warning: --format trace is the old spelling of --input-format trace; --format now chooses the output "
        "(json or table) and will refuse input formats in the next release"
    )
