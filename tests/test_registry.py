"""The one registry: a strategy registered in one line runs in ``shed``, ``simulate`` and ``sweep``; the
families' rules (AvgShedder as placement) are the same for every caller."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from bundlewise.algorithms.families import ExtensibleFamily, ModularFamily
from bundlewise.algorithms.registry import SHEDDING, make_family, register_shedding, shedding_entry, shedding_names
from bundlewise.cli.main import main
from bundlewise.config import Config
from bundlewise.model.decisions import SplitReason, Unload, UnloadReason
from bundlewise.model.errors import InputError
from bundlewise.model.load import LoadData

SMALL = """
name = "small"
duration = "20m"
step = "1m"
seed = 3
[[brokers]]
name = "a"
[[brokers]]
name = "b"
[[namespaces]]
name = "t/ns"
bundles = 8
topics = 80
msg_rate = 20000
owner = "a"
"""


class ToyShedder:
    """Each cycle, the first bundle not recently unloaded of the broker owning the most bundles (the first
    such broker), when it owns more than one."""

    name = "ToyShedder"

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]:
        if not load.brokers:
            return []
        broker, data = max(load.brokers.items(), key=lambda kv: len(kv[1].localData.bundles))
        movable = [b for b in data.localData.bundles if b not in load.recentlyUnloadedBundles]
        if len(data.localData.bundles) < 2 or not movable:
            return []
        return [Unload(broker, movable[0], "ToyShedder: the broker owning the most bundles")]

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        """Stateless."""


@pytest.fixture
def toy() -> Iterator[None]:
    register_shedding("ToyShedder", ModularFamily, ToyShedder)  # the one line
    yield
    SHEDDING.pop("ToyShedder")


def _cluster(tmp_path: Path) -> str:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return str(path)


def test_registered_strategy_is_listed_and_resolved(toy: None) -> None:
    assert shedding_names()[-1] == "ToyShedder"
    assert shedding_entry("com.example.ToyShedder").family is ModularFamily
    family = make_family("ToyShedder", Config())
    assert isinstance(family, ModularFamily) and family.placement.strategy.name == "LeastLongTermMessageRate"


def test_registered_strategy_runs_in_shed(toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"brokers": {"a": {"bundles": ["t/ns/x1", "t/ns/x2"]}, "b": {"bundles": []}}}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    assert main(["shed", "--strategy", "ToyShedder", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unload"] == [
        {
            "broker": "a",
            "bundle": "t/ns/x1",
            "destination": "b",
            "reason": "ToyShedder: the broker owning the most bundles",
        }
    ]


def test_registered_strategy_runs_in_simulate(toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--no-progress", "--cluster", _cluster(tmp_path), "--strategy", "ToyShedder"])
    assert code == 0
    metrics = json.loads(capsys.readouterr().out)["strategies"]["ToyShedder"]
    # a owns all 8 bundles: one unload a minute, 8/0 -> 4/4, then a (the first of the tied) gives one more;
    # b then owns the most, all of them unloaded within the 30-minute grace period: nothing more moves
    assert metrics["unloads"] == 5 and metrics["flaps"] == 0


@pytest.mark.spark
def test_registered_strategy_runs_in_sweep(
    toy: None, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark import cloudpickle  # the tasks carry the strategy's class by value, as a user's plug-in module's

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        code = main(
            [
                "sweep",
                "--cluster",
                _cluster(tmp_path),
                "--master",
                "local[2]",
                "--grid",
                "strategy=ToyShedder,OverloadShedder",
            ]
        )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["strategy"], r["unloads"]) for r in rows] == [("ToyShedder", 5), ("OverloadShedder", 0)]


def test_unknown_strategy_in_sweep_fails_before_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--cluster", _cluster(tmp_path), "--grid", "strategy=ToyShedder"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--grid: unknown shedding strategy 'ToyShedder'" in err


# -- one AvgShedder rule for every caller ----------------------------------------------------------------


def test_avg_shedder_placement_needs_avg_shedder_shedding_in_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _cluster(tmp_path)
    args = ["simulate", "--no-progress", "--cluster", cluster, "--set", "loadBalancerLoadPlacementStrategy=AvgShedder"]
    code = main([*args, "--strategy", "ThresholdShedder"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "requires loadBalancerLoadSheddingStrategy to be AvgShedder too (got ThresholdShedder)" in err
    assert main([*args, "--strategy", "AvgShedder"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_avg_shedder_with_another_placement_warns_in_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--no-progress", "--cluster", _cluster(tmp_path), "--strategy", "AvgShedder"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: AvgShedder's planned destinations are used only when")


def test_avg_shedder_serves_both_roles_with_one_instance() -> None:
    cfg = Config().with_values({"loadBalancerLoadPlacementStrategy": "AvgShedder"})
    family = make_family("AvgShedder", cfg)
    assert isinstance(family, ModularFamily) and family.placement.strategy is family.shedder and family.notes == ()
    plain = make_family("AvgShedder", Config())
    assert isinstance(plain, ModularFamily) and plain.placement.strategy is not plain.shedder
    assert plain.notes and "destinations come from LeastLongTermMessageRate" in plain.notes[0]
    with pytest.raises(InputError, match="requires loadBalancerLoadSheddingStrategy to be AvgShedder"):
        make_family("UniformLoadShedder", cfg)


def test_transfer_shedder_has_the_extensible_family() -> None:
    family = make_family("org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder", Config())
    assert isinstance(family, ExtensibleFamily) and family.name == "TransferShedder"
    assert family.notes == ()


# -- the families run on what Pulsar's nodes have ----------------------------------------------------------


def test_the_modular_family_runs_on_the_reports_a_leader_reads() -> None:
    """Reports in (``LocalBrokerData``), the leader's bookkeeping, then assignment, shedding and splits."""
    from bundlewise.algorithms.leader import LeaderBundleData
    from bundlewise.model.load import BrokerData, LocalBrokerData, NamespaceBundleStats
    from bundlewise.model.resources import ResourceUsage, SystemResources

    def report(cpu: float, stats: dict[str, NamespaceBundleStats]) -> LocalBrokerData:
        return LocalBrokerData.of_stats(SystemResources(cpu=ResourceUsage(cpu, 100.0)), stats)

    hot = {f"t/ns/0x{i:08x}_0x{i + 1:08x}": NamespaceBundleStats(msgThroughputIn=40e6, topics=3) for i in range(3)}
    split_me = {"t/big/0x00000000_0xffffffff": NamespaceBundleStats(topics=2000)}
    reports = {"a": report(95.0, hot), "b": report(5.0, split_me)}
    load = LeaderBundleData().refresh(LoadData({name: BrokerData(r) for name, r in reports.items()}))
    family = make_family("OverloadShedder", Config())
    assert isinstance(family, ModularFamily)
    cycle = family.shed(load, Config(), 60_000, random.Random(0))
    assert [(u.broker, u.destination, u.cause) for u in cycle.unloaded] == [("a", "b", UnloadReason.OVERLOADED)]
    assignment = family.assign("t/new/0x00000000_0xffffffff", load, Config(), random.Random(0))
    assert assignment.broker == "b" and "t/new/0x00000000_0xffffffff" in load.brokers["b"].preallocatedBundleData
    (split,) = family.leader_splits(load, Config(), {"t/big": 1})
    assert (split.bundle, split.broker, split.reasons) == ("t/big/0x00000000_0xffffffff", "b", (SplitReason.TOPICS,))


def test_the_extensible_family_runs_on_the_stores() -> None:
    """The broker-load and top-bundles stores in; the leader's cycle, any broker's assignment, each
    broker's split strategy out."""
    from bundlewise.model.extensible import BrokerLoadData, BundleLoadData, ExtensibleSnapshot, TopBundlesLoadData
    from bundlewise.model.load import NamespaceBundleStats

    def stored(ema: float, tput: float) -> BrokerLoadData:
        return BrokerLoadData(msgThroughputIn=tput, weightedMaxEMA=ema, msgThroughputEMA=tput, updatedAt=1)

    def tops(ns: str, *sizes: float) -> TopBundlesLoadData:
        return TopBundlesLoadData(
            tuple(
                BundleLoadData(f"t/{ns}/0x{i:08x}_0x{i + 1:08x}", NamespaceBundleStats(msgThroughputIn=s))
                for i, s in enumerate(sizes)
            )
        )

    view = ExtensibleSnapshot(
        timestamp=1,
        brokers={"a": stored(0.9, 9e6), "b": stored(0.1, 1e6)},
        top_bundles={"a": tops("hot", 1e6, 2e6, 6e6), "b": tops("cold", 1e6)},
        available_brokers=("a", "b"),
        lookup_data=None,
        recently_unloaded_bundles={},
        recently_unloaded_brokers={},
    )
    cfg = Config().with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})
    family = make_family("TransferShedder", cfg)
    assert isinstance(family, ExtensibleFamily)
    result = family.shed(view, cfg, 1)
    assert result is not None and [(d.broker, d.destination) for d in result.decisions] == [("a", "b"), ("a", "b")]
    assert family.assign("t/new/0x00000000_0xffffffff", view, cfg, random.Random(0)).broker == "b"
    stats = {"t/hot/0x00000000_0xffffffff": NamespaceBundleStats(topics=2000)}
    counts = {"t/hot": 1}.get
    splits = [family.broker_splits("a", stats, lambda ns: counts(ns, 0), (), cfg) for _ in range(4)]
    assert [len(s) for s in splits] == [0, 0, 0, 1]  # more than three consecutive hits
