"""Configuration keys, defaults and loading (docs/configuration.md; Pulsar ``ServiceConfiguration``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlewise.config import ALL_KEYS, Config, load_config, parse_config_text, short_class_name, to_broker_conf
from bundlewise.model.errors import InputError


def test_defaults_follow_pulsar() -> None:
    c = Config()
    assert c["loadBalancerLoadSheddingStrategy"] == "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"
    assert c.shedding_strategy == "ThresholdShedder"
    assert c.placement_strategy == "LeastLongTermMessageRate"
    assert c["loadBalancerBrokerOverloadedThresholdPercentage"] == 85 and c.overload_threshold == 0.85
    assert c["loadBalancerHistoryResourcePercentage"] == 0.9
    assert c["loadBalancerNamespaceBundleMaxBandwidthMbytes"] == 100
    assert c["maxUnloadBundleNumPerShedding"] == -1
    assert c["defaultNumberOfNamespaceBundles"] == 4
    assert c["loadBalancerSheddingExcludedNamespaces"] == []
    assert len(c["supportedNamespaceBundleSplitAlgorithms"]) == 4


def test_broker_conf_is_java_properties(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# a real broker.conf holds many unrelated keys\n"
        "zookeeperServers=zk1:2181,zk2:2181\n"
        "! another comment style\n"
        "loadBalancerBrokerThresholdShedderPercentage = 5\n"
        "lowerBoundarySheddingEnabled=true\n"
        "loadBalancerSheddingExcludedNamespaces=a/b,\\\n  c/d\n"
        "loadBalancerHistoryResourcePercentage: 0.5\n"
    )
    warnings: list[str] = []
    c = load_config(str(conf), ["maxUnloadPercentage=0.5"], warnings)
    assert c["loadBalancerBrokerThresholdShedderPercentage"] == 5
    assert c["lowerBoundarySheddingEnabled"] is True
    assert c["loadBalancerSheddingExcludedNamespaces"] == ["a/b", "c/d"]
    assert c["loadBalancerHistoryResourcePercentage"] == 0.5
    assert c["maxUnloadPercentage"] == 0.5
    assert warnings == []  # unrelated keys are ignored silently


def test_json_and_toml(tmp_path: Path) -> None:
    j = tmp_path / "c.json"
    j.write_text('{"loadBalancerSheddingIntervalMinutes": 3, "lowerBoundarySheddingEnabled": true}')
    t = tmp_path / "c.toml"
    t.write_text("loadBalancerSheddingIntervalMinutes = 3\nlowerBoundarySheddingEnabled = true\n")
    assert load_config(str(j)) == load_config(str(t))
    assert load_config(str(j))["loadBalancerSheddingIntervalMinutes"] == 3


def test_unknown_balancer_key_warns_with_closest_name() -> None:
    warnings: list[str] = []
    Config().with_values({"loadBalancerBrokerThresholdShederPercentage": 5, "somethingElse": 1}, "x.conf", warnings)
    assert warnings == [
        "warning: x.conf: unknown key loadBalancerBrokerThresholdShederPercentage "
        "(did you mean loadBalancerBrokerThresholdShedderPercentage?)"
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("loadBalancerSheddingIntervalMinutes", "abc"),
        ("loadBalancerSheddingIntervalMinutes", "1.5"),
        ("loadBalancerSheddingIntervalMinutes", "0"),
        ("loadBalancerHistoryResourcePercentage", "1.5"),
        ("lowerBoundarySheddingEnabled", "yes"),
        ("maxUnloadPercentage", "nan"),
        ("defaultNamespaceBundleSplitAlgorithm", "halve"),
    ],
)
def test_bad_values_are_rejected(key: str, value: str) -> None:
    with pytest.raises(InputError) as e:
        Config().with_values({key: value}, "broker.conf")
    assert key in str(e.value) and "broker.conf" in str(e.value)


def test_deprecated_bandwidth_spelling_precedence() -> None:
    # Pulsar: the new name if != 1.0, else the old spelling if != 1.0, else 1.0.
    assert Config().with_values({"loadBalancerBandwithInResourceWeight": 3}).weights().bandwidth_in == 3.0
    both = Config().with_values({"loadBalancerBandwithInResourceWeight": 3, "loadBalancerBandwidthInResourceWeight": 2})
    assert both.weights().bandwidth_in == 2.0
    assert Config().with_values({"loadBalancerBandwithOutResourceWeight": 0.5}).weights().bandwidth_out == 0.5


def test_class_names_short_and_long() -> None:
    assert short_class_name("org.apache.pulsar.broker.loadbalance.impl.AvgShedder") == "AvgShedder"
    assert short_class_name("AvgShedder") == "AvgShedder"


def test_malformed_files(tmp_path: Path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text("{oops")
    with pytest.raises(InputError, match=r"c\.json: malformed JSON"):
        load_config(str(bad))
    with pytest.raises(InputError, match="cannot read"):
        load_config(str(tmp_path / "missing.conf"))
    with pytest.raises(InputError, match="KEY=VALUE"):
        load_config(None, ["novalue"])


def _value(key: str) -> st.SearchStrategy[object]:
    k = ALL_KEYS[key]
    if k.type == "bool":
        return st.booleans()
    if k.type == "int":
        return st.integers(int(k.minimum if k.minimum is not None else -5), int(k.maximum or 10**6))
    if k.type == "float":
        return st.floats(k.minimum or 0.0, k.maximum or 1e6, allow_nan=False).map(lambda f: round(f, 6))
    if k.type == "list":
        return st.lists(st.sampled_from(["a/b", "tenant/ns", "public/default", "x1/y2"]), max_size=3, unique=True)
    if k.allowed:
        return st.sampled_from(k.allowed)
    return st.sampled_from(["x", "org.example.Strategy", "LeastLongTermMessageRate", "a.b.C1"])


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_config_round_trips_through_broker_conf(data: st.DataObject) -> None:
    keys = data.draw(
        st.lists(
            st.sampled_from(sorted(k for k in ALL_KEYS if ALL_KEYS[k].default is not None)), unique=True, max_size=12
        )
    )
    values = {k: data.draw(_value(k)) for k in keys}
    config = Config().with_values(values)
    text = to_broker_conf(config)
    assert Config().with_values(parse_config_text(text, "broker.conf")) == config


# -- views per concern ---------------------------------------------------------------------------------


def test_every_view_builds_from_the_defaults_with_pulsars_units() -> None:
    from bundlewise.config.views import ALL_VIEWS, LeaderSettings, PlacementSettings, SplitSettings, TransferSettings

    c = Config().check()
    assert all(c.view(kind) is c.view(kind) for kind in ALL_VIEWS)  # built once per Config
    leader = c.view(LeaderSettings)
    assert (leader.shedding_interval_ms, leader.grace_period_ms, leader.shedding_active) == (60_000, 1_800_000, True)
    assert c.view(PlacementSettings).overload_threshold == 0.85
    assert c.view(SplitSettings).max_bandwidth_bytes == 100 * 1024 * 1024
    assert c.view(TransferSettings).shedding_delay_ms == 180_000
    changed = c.with_values({"loadBalancerSheddingIntervalMinutes": 3})
    assert changed.view(LeaderSettings).shedding_interval_ms == 180_000 and c.view(LeaderSettings) is leader


def test_a_misspelt_key_in_a_view_fails_when_the_configuration_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import dataclass

    from bundlewise.config import config as config_module

    @dataclass(frozen=True)
    class Misspelt:
        value: int

        @classmethod
        def of(cls, c: object) -> Misspelt:
            return cls(c["loadBalancerSheddingIntervalMinute"])  # type: ignore[index]

    monkeypatch.setattr(config_module, "ALL_VIEWS", (*config_module.ALL_VIEWS, Misspelt))
    with pytest.raises(KeyError, match="loadBalancerSheddingIntervalMinute"):
        load_config(None)
