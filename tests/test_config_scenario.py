"""``--config CLUSTER.toml``: a scenario file's ``[balancer]`` table is the configuration; any other table in a
configuration file is refused with one line (never silently ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlewise.cli.main import main
from bundlewise.config import load_config
from bundlewise.model.errors import InputError

SCENARIO = """
duration = "1h"
[[brokers]]
name = "broker-1"
[[namespaces]]
name = "t/ns"
bundles = 8
[balancer]
loadBalancerNamespaceBundleMaxMsgRate = 100000
loadBalancerSheddingIntervalMinutes = 3
"""


def test_a_scenario_file_gives_its_balancer_table(tmp_path: Path) -> None:
    (tmp_path / "cluster.toml").write_text(SCENARIO)
    config = load_config(str(tmp_path / "cluster.toml"))
    assert config["loadBalancerNamespaceBundleMaxMsgRate"] == 100000
    assert config["loadBalancerSheddingIntervalMinutes"] == 3
    assert config["loadBalancerNamespaceBundleMaxTopics"] == 1000  # Pulsar's default


def test_a_scenario_file_without_a_balancer_table_gives_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "cluster.toml").write_text('[[brokers]]\nname = "b"\n')
    assert load_config(str(tmp_path / "cluster.toml"))["loadBalancerNamespaceBundleMaxMsgRate"] == 30000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[loadbalancer]\nx = 1\n", "loadbalancer: expected a configuration key = value; a table is read only"),
        ('balancer = "fast"\n', "balancer: expected a table of configuration keys, got 'fast'"),
    ],
)
def test_other_tables_are_refused(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(InputError, match=message):
        load_config(str(tmp_path / "c.toml"))


def test_the_cli_refuses_a_stray_table_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.json").write_text('{"sheddingSettings": {"loadBalancerSheddingIntervalMinutes": 3}}')
    (tmp_path / "t.csv").write_text("timestamp,topic\n0,a\n")
    code = main(["pipeline", "--input", str(tmp_path / "t.csv"), "--config", str(tmp_path / "c.json")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (
        f"error: {tmp_path / 'c.json'}: sheddingSettings: expected a configuration key = value; "
        "a table is read only as a scenario's [balancer]\n"
    )
