"""``bundlewise broker`` with several ``--web``: the per-broker options, and bad input refused in one line naming the
option before anything starts (``cli.broker_slots``)."""

from __future__ import annotations

import pytest

from bundlewise.cli.broker_slots import BrokerSlot, broker_slots
from bundlewise.cli.main import main

STORE = ["--store", "etcd://127.0.0.1:1/p"]
TWO = ["--web", "127.0.0.1:1", "--web", "127.0.0.1:2", "--broker-service-port", "5", "--broker-service-port", "6"]


def test_one_web_keeps_todays_defaults() -> None:
    assert broker_slots(["127.0.0.1:8080"], None, None, None, None, None) == [
        BrokerSlot("127.0.0.1", 8080, None, 8.0, 10000.0, None, None)
    ]


def test_options_given_once_go_to_every_broker_and_repeated_ones_in_order() -> None:
    slots = broker_slots(["h:1", "h:2"], [11, 12], [4.0], [100.0, 200.0], ["d.jsonl"], ["a", "b"])
    assert slots == [
        BrokerSlot("h", 1, 11, 4.0, 100.0, "d.jsonl", "a"),
        BrokerSlot("h", 2, 12, 4.0, 200.0, "d.jsonl", "b"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [
                "--web",
                "127.0.0.1:1",
                "--web",
                "127.0.0.1:1",
                "--broker-service-port",
                "5",
                "--broker-service-port",
                "6",
            ],
            "error: --web: expected distinct HOST:PORT values, got '127.0.0.1:1' twice",
        ),
        (
            ["--web", "127.0.0.1:1", "--web", "127.0.0.1:2"],
            "error: --broker-service-port: expected one per --web (2), got 0",
        ),
        (
            ["--web", "127.0.0.1:1", "--web", "127.0.0.1:2", "--broker-service-port", "5"],
            "error: --broker-service-port: expected one per --web (2), got 1",
        ),
        (
            [
                "--web",
                "127.0.0.1:1",
                "--web",
                "127.0.0.1:2",
                "--broker-service-port",
                "5",
                "--broker-service-port",
                "5",
            ],
            "error: --broker-service-port: expected a port no other broker of this process uses, got 5 twice "
            "(also --broker-service-port)",
        ),
        (
            [
                "--web",
                "127.0.0.1:1",
                "--web",
                "127.0.0.1:2",
                "--broker-service-port",
                "2",
                "--broker-service-port",
                "5",
            ],
            "error: --broker-service-port: expected a port no other broker of this process uses, got 2 twice "
            "(also --web)",
        ),
        (
            [*TWO, "--cores", "1", "--cores", "2", "--cores", "3"],
            "error: --cores: expected once, or once per --web (2), got 3 values",
        ),
        (
            [*TWO, "--decisions", "a", "--decisions", "b", "--decisions", "c"],
            "error: --decisions: expected once, or once per --web (2), got 3 values",
        ),
        (
            ["--web", "127.0.0.1:1", "--web", "nohost", "--broker-service-port", "5", "--broker-service-port", "6"],
            "error: --web: expected HOST:PORT, got 'nohost'",
        ),
        (
            ["--web", "127.0.0.1:1", "--broker-service-port", "70000"],
            "error: --broker-service-port: expected a port from 1 to 65535, got 70000",
        ),
        (
            [*TWO, "--cores", "0"],
            "error: --cores: expected a number from",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_option(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["broker", *STORE, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1 and "Traceback" not in err
