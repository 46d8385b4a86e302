"""``BalancedTransferShedder``: bundlewise's own strategy in the extensible load manager's family, on
hand-built broker-load and top-bundles stores -- the same plan as ``BalancedPlanShedder`` on the same
reports, Pulsar's waiting rules, transfers or plain unloads, its placement's burst crediting, its
registration, and the simulator's extensible engine running it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bundlewise.algorithms.balanced.extensible import BalancedTransferShedder, as_load_data
from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.extensible.transfer_shedder import ShedResult
from bundlewise.algorithms.families import ExtensibleFamily
from bundlewise.algorithms.registry import (
    PLACEMENT,
    default_shedding_names,
    extensible_entry,
    make_family,
    modular_entry,
    shedding_entry,
)
from bundlewise.config import Config
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import (
    BrokerLoadData,
    BrokerLookupData,
    BundleLoadData,
    ExtensibleSnapshot,
    TopBundlesLoadData,
)
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import ResourceUsage, SystemResources
from bundlewise.sim.run import simulate, summary
from bundlewise.sim.scenario import bundled_scenario

NS = "t/ns"
NOW = 10 * 60_000


def bundle(i: int) -> str:
    return f"{NS}/0x{i * 0x10000000:08x}_0x{(i + 1) * 0x10000000:08x}"


def data(rates: dict[str, float], at: int = NOW, cores: float = 8) -> tuple[BrokerLoadData, TopBundlesLoadData]:
    """A broker whose CPU is 1 % of one core per 1,000 msg/s of its bundles, with those bundles as its top-k."""
    rate = sum(rates.values())
    res = SystemResources(
        cpu=ResourceUsage(rate / 1000, cores * 100),
        bandwidth_in=ResourceUsage(0, 1e7),
        bandwidth_out=ResourceUsage(0, 1e7),
    )
    load = BrokerLoadData(resources=res, msgRateIn=rate, bundleCount=len(rates), updatedAt=at, weightedMaxEMA=0.5)
    top = TopBundlesLoadData(tuple(BundleLoadData(b, NamespaceBundleStats(msgRateIn=r)) for b, r in rates.items()))
    return load, top


def snapshot(
    brokers: dict[str, tuple[BrokerLoadData, TopBundlesLoadData]], available: tuple[str, ...] | None = None
) -> ExtensibleSnapshot:
    names = tuple(sorted(brokers)) if available is None else available
    return ExtensibleSnapshot(
        timestamp=NOW,
        brokers={b: d[0] for b, d in brokers.items()},
        top_bundles={b: d[1] for b, d in brokers.items()},
        available_brokers=names,
        lookup_data={b: BrokerLookupData(loadManagerClassName=EXTENSIBLE_LOAD_MANAGER) for b in names},
        recently_unloaded_bundles={},
        recently_unloaded_brokers={},
    )


# a: 60 % of 8 cores over four bundles, b: 20 %, c: 10 % -- unbalanced, nothing overloaded
SKEWED = {
    "a": data({bundle(0): 200_000, bundle(1): 120_000, bundle(2): 100_000, bundle(3): 60_000}),
    "b": data({bundle(4): 100_000, bundle(5): 60_000}),
    "c": data({bundle(6): 80_000}),
}


def plan(shedder: BalancedTransferShedder, snap: ExtensibleSnapshot, config: Config, now: int = NOW) -> ShedResult:
    return shedder.find_bundles_for_unloading(snap, config, now, {}, {})


def test_it_plans_exactly_what_the_modular_strategy_plans_on_the_same_reports() -> None:
    config = Config()
    snap = snapshot(SKEWED)
    ours, modular = BalancedTransferShedder(), BalancedPlanShedder()
    results = [plan(ours, snap, config, NOW + k * 60_000) for k in range(3)]
    expected = [
        modular.find_bundles_for_unloading(as_load_data(snap.brokers, snap, {}), config, NOW + k * 60_000)
        for k in range(3)
    ]
    assert [[(u.broker, u.bundle, u.destination, u.cause) for u in r.decisions] for r in results] == [
        [(u.broker, u.bundle, u.destination, u.cause) for u in e] for e in expected
    ]
    moves = [u for r in results for u in r.decisions]
    assert moves and all(u.broker == "a" and u.destination in ("b", "c") for u in moves)
    assert all(
        u.reason.startswith("BalancedTransferShedder: a at ") and " (cpu) vs fleet mean " in u.reason for u in moves
    )
    done = next(r for r in results if r.decisions)
    assert done.counters == {f"Success.{done.decisions[0].cause}": len(done.decisions)}


def test_it_waits_for_every_available_brokers_load_data_and_leaves_out_stale_data() -> None:
    config = Config()
    missing = snapshot(SKEWED, available=("a", "b", "c", "d"))
    r = plan(BalancedTransferShedder(), missing, config)
    assert r.decisions == () and r.counters == {"Skip.NoLoadData": 1}
    ttl_ms = 1800 * 1000  # loadBalancerBrokerLoadDataTTLInSeconds
    stale = snapshot({"a": SKEWED["a"], "b": data({bundle(4): 1.0}, at=NOW - ttl_ms - 1)})
    r = plan(BalancedTransferShedder(), stale, config)
    assert r.decisions == () and r.counters == {"Skip.OutDatedData": 1}


def test_without_transfers_each_move_is_a_plain_unload() -> None:
    config = Config().with_values({"loadBalancerTransferEnabled": "false"})
    shedder = BalancedTransferShedder()
    moves = [u for k in range(3) for u in plan(shedder, snapshot(SKEWED), config, NOW + k * 60_000).decisions]
    assert moves and all(u.destination is None for u in moves)


def test_a_burst_of_lookups_spreads_until_the_brokers_report_again() -> None:
    """Two idle equal brokers: each assignment is credited to its broker, so four equal new bundles go two and
    two (without the credit each would go to the first in name order); once a broker reports after its
    assignments, its credit is dropped."""
    config = Config()
    idle = {"x": data({bundle(0): 1000.0}), "y": data({bundle(1): 1000.0})}
    snap = snapshot(idle)
    shedder = BalancedTransferShedder()
    picks = [shedder.place(f"t/new/0x{i:08x}_0x{i + 1:08x}", ["x", "y"], snap, config).selected for i in range(4)]
    assert sorted(p or "" for p in picks) == ["x", "x", "y", "y"] and picks[0] == "x"
    reported = snapshot({"x": data({bundle(0): 1000.0}, at=NOW + 1), "y": idle["y"]})
    shedder.place("t/new/0x00000010_0x00000011", ["x", "y"], reported, config)
    assert [a.destination for a in shedder.assigned] == ["y", "y", "x"]


def test_the_family_places_through_the_filters_then_the_strategy() -> None:
    config = Config()
    family = make_family("BalancedTransferShedder", config)
    assert isinstance(family, ExtensibleFamily)
    choice = family.assign("t/new/0x00000000_0x00000001", snapshot(SKEWED), config, random.Random(1))
    assert choice.broker == "c" and choice.reason == "lookup of an unowned bundle: BalancedTransferShedder picked c"
    transfer = make_family("TransferShedder", config)
    assert isinstance(transfer, ExtensibleFamily)
    pulsar = transfer.assign("t/new/0x00000000_0x00000001", snapshot(SKEWED), config, random.Random(1))
    assert pulsar.reason.startswith("lookup of an unowned bundle: LeastResourceUsageWithWeight picked ")


def test_it_is_registered_as_an_own_extensible_strategy() -> None:
    entry = shedding_entry("BalancedTransferShedder")
    assert entry.family is ExtensibleFamily and entry.own and entry.merges is None
    assert extensible_entry("BalancedTransferShedder") is entry
    assert extensible_entry("ThresholdShedder").name == "TransferShedder"  # Pulsar's fallback
    assert extensible_entry("BalancedPlanShedder") is entry  # bundlewise's own run as their counterparts
    assert modular_entry("BalancedTransferShedder").name == "BalancedPlanShedder"
    with pytest.raises(InputError, match="TransferShedder is not a strategy of the modular load manager"):
        modular_entry("TransferShedder")
    assert "BalancedTransferShedder" not in PLACEMENT and "BalancedTransferShedder" not in default_shedding_names()


def test_the_simulator_runs_it_on_the_extensible_engine_and_it_balances_better_than_transfer_shedder() -> None:
    scenario = bundled_scenario("heterogeneous")
    doc = summary(scenario, simulate(scenario, ["TransferShedder", "BalancedTransferShedder"]))
    ours, pulsar = doc["strategies"]["BalancedTransferShedder"], doc["strategies"]["TransferShedder"]
    assert ours["unloads"] > 0
    assert ours["load_std_mean"] < pulsar["load_std_mean"] / 2
    assert ours["max_load_p99"] < pulsar["max_load_p99"]
    assert ours["overloaded_broker_minutes"] <= pulsar["overloaded_broker_minutes"]


def test_live_up_runs_the_own_strategy_under_each_manager_as_its_counterpart() -> None:
    from bundlewise.cli.live import MANAGERS, _manager_entry

    for name in ("BalancedPlanShedder", "BalancedTransferShedder"):
        assert _manager_entry(MANAGERS["modular"], name).name == "BalancedPlanShedder"
        assert _manager_entry(MANAGERS["extensible"], name).name == "BalancedTransferShedder"
    assert _manager_entry(MANAGERS["extensible"], "AvgShedder").name == "TransferShedder"


def test_live_up_takes_an_extensible_strategy_when_only_the_extensible_manager_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--strategy TransferShedder --managers extensible`` names no modular run: it is not refused as a modular
    strategy (the configured manager's run is made only without ``--managers``); the run starts (here it stops
    at the first check that needs a server: an --out that exists)."""
    from bundlewise.cli.main import main

    out = tmp_path / "out"
    out.mkdir()
    (out / "x").write_text("kept")
    cmd = ["live", "up", "--strategy", "TransferShedder", "--managers", "extensible", "--out", str(out)]
    assert main(cmd) == 2
    assert capsys.readouterr().err == f"error: {out}: --out: is not empty; pass --overwrite to replace it\n"
    assert (out / "x").read_text() == "kept"
