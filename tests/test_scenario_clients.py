"""A scenario's ``[clients]`` section (traffic/clients.py): parsed with one-line errors, ignored by the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlewise.cli.main import main
from bundlewise.model.errors import InputError
from bundlewise.sim.scenario import load_scenario
from bundlewise.traffic.clients import ClientsSpec

BASE = '[[brokers]]\nname = "b1"\n[[namespaces]]\nname = "t/a"\n[[namespaces]]\nname = "t/b"\n'


def scenario(tmp_path: Path, clients: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(BASE + clients)
    return path


def test_the_section_and_its_defaults(tmp_path: Path) -> None:
    assert load_scenario(scenario(tmp_path, "")).clients is None
    spec = load_scenario(scenario(tmp_path, "[clients]\nproducers = 3\nsubscription = 'Key_Shared'\n")).clients
    assert spec == ClientsSpec(producers=3, subscription="Key_Shared")
    assert (spec.rate, spec.message_size, spec.batching, spec.topic_count) == (100.0, 1024, True, 3)
    assert spec.topic_names(("t/a", "t/b")) == [
        "persistent://t/a/bundlewise-client-0",
        "persistent://t/b/bundlewise-client-1",
        "persistent://t/a/bundlewise-client-2",
    ]
    assert not ClientsSpec().any and ClientsSpec(consumers=1).any


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[clients]\nsubscription = 'shared'\n", "clients.subscription: expected one of Exclusive, Shared"),
        ("[clients]\nproducers = -1\n", "clients.producers: expected a whole number from 0 to 1,000"),
        ("[clients]\nrate = 0\n", "clients.rate: expected a finite number > 0"),
        ("[clients]\nbatching = 'yes'\n", "clients.batching: expected true or false"),
        ("[clients]\nproducer = 1\n", "clients.producer: unknown key; did you mean 'producers'?"),
        ("[clients]\nmessage_size = 0\n", "clients.message_size: expected a whole number from 1 to 5,242,880"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        load_scenario(scenario(tmp_path, text))
    assert message in str(e.value)


def test_live_up_refuses_bad_client_flags_before_starting_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["live", "up", "--producers", "2", "--publish-rate", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--publish-rate" in err and "expected a number from 0.001" in err
