"""``bundlewise throttle`` through ``bundlewise.cli.main.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlewise.cli.main import main

T = "persistent://public/default/t"


def write(tmp_path: Path, doc: object, name: str = "in.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(p)


SCENARIO = {
    "periods": 3,
    "topics": [
        {
            "name": "t",
            "messagesPerEntry": 6,
            "entryBytes": 100,
            "namespacePolicies": {"topicDispatchRate": {"dispatchThrottlingRateInMsg": 10}},
            "subscriptions": [{"name": "s", "backlogEntries": 1000, "consumers": [{"receiverQueueSize": 10}]}],
        }
    ],
}


def counts(msgs: int, nbytes: int, entries: int, throttled: int) -> dict[str, int]:
    return {"msgs": msgs, "bytes": nbytes, "entries": entries, "throttledReads": throttled}


def test_json_output_period_by_period(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throttle", write(tmp_path, SCENARIO)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["periodSeconds"] == 1.0
    assert out["limits"] == {
        "broker": None,
        "topics": {
            T: {
                "limit": {
                    "dispatchThrottlingRateInMsg": 10,
                    "dispatchThrottlingRateInByte": -1,
                    "relativeToPublishRate": False,
                    "ratePeriodInSecond": 1,
                    "source": "namespace",
                },
                "subscriptions": {"s": None},
                "replicators": {},
            }
        },
    }
    first = out["periods"][0]
    assert (first["period"], first["start"], first["end"]) == (0, 0, 1000)
    assert first["broker"] == counts(60, 1000, 10, 0)
    assert first["topics"][T] == {
        **counts(60, 1000, 10, 1),
        "subscriptions": {"s": counts(60, 1000, 10, 0)},
        "replicators": {},
    }
    assert [p["broker"]["msgs"] for p in out["periods"]] == [60, 0, 0]
    assert out["total"]["broker"] == counts(60, 1000, 10, 0)


def test_set_overrides_the_input_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {**SCENARIO, "config": {"dispatchThrottlingRatePerSubscriptionInMsg": 1}}
    assert (
        main(
            [
                "throttle",
                "--set",
                "dispatchThrottlingRatePerSubscriptionInMsg=12",
                "--set",
                "preciseDispatcherFlowControl=true",
                write(tmp_path, doc),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["limits"]["topics"][T]["subscriptions"]["s"]["dispatchThrottlingRateInMsg"] == 12
    assert out["limits"]["topics"][T]["subscriptions"]["s"]["source"] == "broker"


def test_config_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = write(tmp_path, "dispatchThrottlingRateInMsg=5\nunrelatedKey=1\n", "broker.conf")
    doc = {"periods": 2, "topics": [{"name": "t", "subscriptions": [{"name": "s", "backlogEntries": 100}]}]}
    assert main(["throttle", "--config", conf, write(tmp_path, doc)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["broker"]["msgs"] for p in out["periods"]] == [5, 5]
    assert out["limits"]["broker"]["source"] == "broker"


def test_table_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throttle", "--format", "table", write(tmp_path, SCENARIO)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "limits: broker unlimited"
    assert lines[1] == f"  {T}: 10 msg/1s (namespace)"
    assert lines[3].split() == ["period", "level", "name", "msgs", "bytes", "entries", "throttled"]
    assert lines[4].split() == ["0", "broker", "60", "1000", "10", "0"]
    assert lines[-3].split() == ["total", "broker", "60", "1000", "10", "0"]


def test_stdin_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(SCENARIO)))
    assert main(["throttle", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["broker"]["msgs"] == 60


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "in.json: topics: expected a list of topics"),
        ({"topics": []}, "in.json: topics: expected a non-empty list of topics"),
        ({"topics": [{"name": "t"}]}, "topics[0].subscriptions: expected at least one subscription or replicator"),
        (
            {"topics": [{"name": "t", "subscriptions": [{"name": "s", "type": "Nope"}]}]},
            "topics[0].subscriptions[0].type: expected one of Shared, Key_Shared, Failover, Exclusive, got 'Nope'",
        ),
        (
            {"topics": [{"name": "t", "messagesPerEntry": 0, "subscriptions": [{"name": "s"}]}]},
            "topics[0].messagesPerEntry: expected a positive whole number or a list of them, got 0",
        ),
        (
            {"topics": [{"name": "t", "subscriptions": [{"name": "s", "dispatchRate": {"rate": 1}}]}]},
            "topics[0].subscriptions[0].dispatchRate.rate: unknown field",
        ),
        (
            {"config": {"dispatcherMaxReadBatchSize": 0}, "topics": [{"name": "t", "subscriptions": [{"name": "s"}]}]},
            "dispatcherMaxReadBatchSize: expected a value >= 1",
        ),
        ({"bogus": 1, "topics": []}, "bogus: unknown field"),
        ("not json", "in.json: malformed JSON"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, message: str
) -> None:
    assert main(["throttle", write(tmp_path, doc)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1


def test_unknown_factory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throttle", "--set", "dispatchRateLimiterFactoryClassName=Foo", write(tmp_path, SCENARIO)]) == 2
    assert "dispatchRateLimiterFactoryClassName: unknown dispatch rate limiter factory 'Foo'" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throttle", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_replicator_only_topic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "periods": 2,
        "topics": [
            {
                "name": "t",
                "messagesPerEntry": 6,
                "entryBytes": 10,
                "topicPolicies": {"replicatorDispatchRate": {"dispatchThrottlingRateInMsg": 5}},
                "replicators": [{"cluster": "west", "backlogEntries": 100}],
            }
        ],
    }
    assert main(["throttle", write(tmp_path, doc)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["limits"]["topics"][T]["replicators"]["west"]["source"] == "topic"
    period = out["periods"][1]
    assert period["broker"] == counts(0, 0, 0, 0)
    assert period["topics"][T]["replicators"] == {"west": counts(30, 50, 5, 1)}
