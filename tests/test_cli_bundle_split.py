"""``bundlewise bundle``, ``split`` and ``split-check`` through the command line (docs/commands.md)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bundlewise.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[object], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def test_bundle_maps_topics(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "bundle", "my-topic", "non-persistent://public/default/my-topic")
    assert code == 0
    assert out == [
        {
            "topic": "persistent://public/default/my-topic",
            "hash": 0x2BAD45F7,
            "bundle": "public/default/0x00000000_0x40000000",
        },
        {
            "topic": "non-persistent://public/default/my-topic",
            "hash": 0x831E214A,
            "bundle": "public/default/0x80000000_0xc0000000",
        },
    ]


def test_bundle_with_boundaries_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("my-topic-partition-2\n\n"))
    code, out, _ = run(capsys, "bundle", "--boundaries", "0x00000000,0x80000000,0xffffffff")
    assert code == 0 and out == [
        {
            "topic": "persistent://public/default/my-topic-partition-2",
            "hash": 0xD3452319,
            "bundle": "public/default/0x80000000_0xffffffff",
        }
    ]
    code, out, _ = run(capsys, "bundle", "--bundles", "2", "my-topic")
    assert out[0]["bundle"] == "public/default/0x00000000_0x80000000"  # type: ignore[index]


def test_split_each_algorithm(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text(
        json.dumps([{"name": "persistent://t/ns/a"}, {"name": "persistent://t/ns/b"}, {"name": "persistent://t/ns/c"}])
    )
    code, out, _ = run(capsys, "split", "--algorithm", "range_equally_divide", "--bundle", "t/ns/0x00000000_0x80000000")
    assert code == 0 and out == [
        {"boundaries": [0x40000000], "children": ["t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000"]}
    ]
    code, out, _ = run(
        capsys,
        "split",
        "--algorithm",
        "specified_positions_divide",
        "--bundle",
        "t/ns/0x00000001_0x000003e8",
        "--topics",
        str(topics),
        "--positions=-1,0,1,100,200,500,800,1000,1100",
    )
    assert out[0]["boundaries"] == [100, 200, 500, 800]  # type: ignore[index]
    code, out, _ = run(
        capsys,
        "split",
        "--algorithm",
        "topic_count_equally_divide",
        "--bundle",
        "t/ns/0x00000000_0xffffffff",
        "--topics",
        str(topics),
    )
    assert code == 0 and len(out[0]["children"]) == 2  # type: ignore[index,arg-type]
    code, out, _ = run(
        capsys,
        "split",
        "--algorithm",
        "flow_or_qps_equally_divide",
        "--bundle",
        "t/ns/0x00000000_0xffffffff",
        "--topics",
        str(topics),
    )
    assert out == [{"boundaries": None, "children": None}]  # no traffic: declines


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["split", "--algorithm", "halve", "--bundle", "t/ns/0x00000000_0xffffffff"], "--algorithm"),
        (["split", "--algorithm", "range_equally_divide", "--bundle", "t/ns/0xZZ_0x10"], "--bundle"),
        (
            ["split", "--algorithm", "specified_positions_divide", "--bundle", "t/ns/0x00000000_0x00000010"],
            "--positions",
        ),
        (
            [
                "split",
                "--algorithm",
                "specified_positions_divide",
                "--bundle",
                "t/ns/0x00000000_0x00000010",
                "--positions",
                "0x20,0x30",
            ],
            "--positions",
        ),
        (
            [
                "split",
                "--algorithm",
                "specified_positions_divide",
                "--bundle",
                "t/ns/0x00000000_0x00000010",
                "--positions",
                "ten",
            ],
            "--positions",
        ),
        (["bundle", "--bundles", "0", "t"], "--bundles"),
        (["bundle", "--boundaries", "0x10,0x05", "t"], "--boundaries"),
        (["bundle", "ftp://x/y/z"], "ftp://x/y/z"),
        (["split-check", "missing.json"], "missing.json"),
        (["split-check", "--bundle-counts", "t/ns", "x.json"], "--bundle-counts"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and needle in err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('[{"name": "a"', "malformed JSON"),
        ('[{"name": "a", "msgRateIn": -5}]', "[0].msgRateIn"),
        ('[{"name": "a", "msgRateIn": NaN}]', "NaN"),
        ('{"name": "a"}', "list of topics"),
        ('[{"msgRateIn": 1}]', "[0].name"),
    ],
)
def test_bad_topics_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, needle: str) -> None:
    f = tmp_path / "topics.json"
    f.write_text(content)
    code = main(
        [
            "split",
            "--algorithm",
            "flow_or_qps_equally_divide",
            "--bundle",
            "t/ns/0x00000000_0xffffffff",
            "--topics",
            str(f),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "topics.json" in err and needle in err
    assert err.count("\n") == 1


def test_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["split", "--bundle", "t/ns/0x00000000_0xffffffff"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_split_check_steps_and_counts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hot = {"topics": 1500, "consumerCount": 1, "producerCount": 1}
    steps = {
        "steps": [
            {
                "brokers": {
                    "b1": {
                        "lastStats": {"t/ns/0x00000000_0x80000000": hot, "t/ns/0x80000000_0xffffffff": {"topics": 3}}
                    }
                }
            },
            {
                "brokers": {"b1": {"lastStats": {"t/ns/0x00000000_0x80000000": {"topics": 3}}}},
                "config": {"loadBalancerNamespaceBundleMaxTopics": 2},
            },
        ]
    }
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(steps))
    code, out, _ = run(capsys, "split-check", str(f))
    assert code == 0 and out == [
        {"step": 0, "split": [{"bundle": "t/ns/0x00000000_0x80000000", "broker": "b1", "reasons": ["Topics"]}]},
        {"step": 1, "split": [{"bundle": "t/ns/0x00000000_0x80000000", "broker": "b1", "reasons": ["Topics"]}]},
    ]
    code, out, _ = run(capsys, "split-check", "--bundle-counts", "t/ns=128", str(f))
    assert out == [{"step": 0, "split": []}, {"step": 1, "split": []}]


def test_split_check_bad_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "snap.json"
    f.write_text(json.dumps({"timestamp": 5}))
    assert main(["split-check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "snap.json" in err and "brokers" in err


def test_split_check_prints_nothing_when_a_later_step_is_bad(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = {"brokers": {"b1": {"lastStats": {"t/ns/0x00000000_0x80000000": {"topics": 3000}}}}}
    f = tmp_path / "snap.json"
    f.write_text(json.dumps({"steps": [good, {"timestamp": 5}]}))
    assert main(["split-check", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "steps[1]: missing 'brokers'" in err


def test_split_check_reads_a_bundle_on_two_reports_as_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hot = {"topics": 3, "producerCount": 1}
    doc = {
        "brokers": {"b1": {"lastStats": {"t/ns/0x00000000_0xffffffff": hot}}, "b2": {"lastStats": {}}},
        "config": {"loadBalancerNamespaceBundleMaxTopics": 2},
    }
    doc["brokers"]["b2"]["lastStats"] = {"t/ns/0x00000000_0xffffffff": hot}
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(doc))
    code, out, err = run(capsys, "split-check", str(f))
    assert code == 0 and err.count("\n") == 1
    assert err.startswith(f"warning: {f}: snapshot: bundle t/ns/0x00000000_0xffffffff is listed by b1 and b2;")
    assert [s["broker"] for s in out[0]["split"]] == ["b1"]  # b2's listing is the same bundle: split once
