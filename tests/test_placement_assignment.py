"""The full assignment flow of the modular load manager (``#selectBroker``): ModularPlacement.select_broker."""

from __future__ import annotations

import copy
import random

from bundlewise.algorithms.placement.assignment import ModularPlacement, candidate_brokers
from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.placement.least_long_term_message_rate import LeastLongTermMessageRate
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.config import Config
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageBrokerData
from bundlewise.model.resources import ResourceUsage, SystemResources

NS = "t/ns"
BUNDLE = f"{NS}/0x00000000_0x40000000"
HOT = SystemResources(cpu=ResourceUsage(90, 100))


def broker(rate: float = 0.0, **local: object) -> BrokerData:
    return BrokerData(LocalBrokerData(**local), TimeAverageBrokerData(longTermMsgRateIn=rate))  # type: ignore[arg-type]


def place(
    load: LoadData,
    config: Config | None = None,
    *,
    bundle: str = BUNDLE,
    preallocate: bool = True,
    placement: ModularPlacement | None = None,
) -> Selection:
    p = placement or ModularPlacement(LeastLongTermMessageRate())
    return p.select_broker(bundle, load, config or Config(), random.Random(0), preallocate=preallocate)


def test_least_loaded_broker_is_chosen_and_preallocated() -> None:
    load = LoadData({"a": broker(300), "b": broker(100), "c": broker(200)})
    sel = place(load)
    assert sel == Selection("b", ("b",))
    assert list(load.brokers["b"].preallocatedBundleData) == [BUNDLE]
    assert load.brokers["b"].preallocatedBundleData[BUNDLE].longTermData.msgRateIn == 50.0  # default prior
    assert BUNDLE in load.bundleData


def test_preallocation_steers_the_next_placement() -> None:
    # b scores 100 first; with the preallocated default bundle (+100 msg/s long-term) it scores 200...
    load = LoadData({"b": broker(100), "c": broker(150)})
    cfg = Config().with_values({"loadBalancerDistributeBundlesEvenlyEnabled": False})
    assert place(load, cfg).selected == "b"
    # ...so the next bundle goes to c (150 < 200)
    assert place(load, cfg, bundle=f"{NS}/0x40000000_0x80000000").selected == "c"


def test_already_preallocated_bundle_returns_its_broker() -> None:
    load = LoadData({"a": broker(0), "b": broker(999)})
    load.brokers["b"].preallocatedBundleData[BUNDLE] = BundleData.default()
    assert place(load) == Selection("b", ("b",))


def test_preallocate_false_leaves_the_load_untouched() -> None:
    load = LoadData({"a": broker(300), "b": broker(100)})
    before = copy.deepcopy(load)
    assert place(load, preallocate=False).selected == "b"
    assert load == before


def test_uses_known_bundle_data() -> None:
    load = LoadData({"a": broker(0)})
    data = BundleData.default()
    data.topics = 7
    load.bundleData[BUNDLE] = data
    place(load)
    assert load.brokers["a"].preallocatedBundleData[BUNDLE] is data


def test_no_brokers_gives_no_selection() -> None:
    assert place(LoadData()) == Selection(None, ())
    only_np = LoadData({"a": broker(persistentTopicsEnabled=False)})
    assert place(only_np) == Selection(None, ())


def test_distribute_evenly_overrides_the_strategy_score() -> None:
    load = LoadData({"busy": broker(999, bundles=[]), "idle": broker(1, bundles=[f"{NS}/0x80000000_0xffffffff"])})
    assert place(load).selected == "busy"
    cfg = Config().with_values({"loadBalancerDistributeBundlesEvenlyEnabled": False})
    load.brokers["busy"].preallocatedBundleData.clear()
    assert place(load, cfg).selected == "idle"


def test_version_filter_error_resets_to_the_topic_type_set() -> None:
    prefer = Config().with_values({"preferLaterVersions": True})
    load = LoadData(
        {
            "a": broker(5, brokerVersionString="3.2.0", bundles=[f"{NS}/0x80000000_0xffffffff"]),
            "b": broker(9, brokerVersionString="3.3.0"),
        }
    )
    # distribute-evenly keeps b, version keeps b
    assert candidate_brokers(BUNDLE, load, prefer) == ["b"]
    load.brokers["b"].localData.brokerVersionString = "garbage"
    # the filter error discards ALL filtering, including distribute-evenly: back to [a, b]
    assert candidate_brokers(BUNDLE, load, prefer) == ["a", "b"]
    assert place(load, prefer).selected == "a"


def test_empty_pipeline_result_resets_to_the_topic_type_set() -> None:
    ext = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
    load = LoadData({"a": broker(5, loadManagerClassName=ext), "b": broker(1, loadManagerClassName=ext)})
    assert candidate_brokers(BUNDLE, load, Config()) == ["a", "b"]
    load.brokers["a"].localData.loadManagerClassName = None
    assert candidate_brokers(BUNDLE, load, Config()) == ["a"]


def test_overload_recheck_retries_on_the_unfiltered_set() -> None:
    # distribute-evenly leaves only the overloaded "hot"; the re-check runs the strategy on [hot, cool]
    load = LoadData({"hot": broker(1, resources=HOT), "cool": broker(500, bundles=[f"{NS}/0x80000000_0xffffffff"])})
    assert candidate_brokers(BUNDLE, load, Config()) == ["hot"]
    sel = place(load)
    assert sel == Selection("cool", ("cool",))
    assert BUNDLE in load.brokers["cool"].preallocatedBundleData


def test_overload_recheck_keeps_the_first_pick_when_all_are_overloaded() -> None:
    load = LoadData({"a": broker(1, resources=HOT), "b": broker(2, resources=HOT)})
    sel = place(load)
    assert sel.selected in ("a", "b") and sel.best == ("a", "b")


def test_excluded_namespaces_use_round_robin() -> None:
    cfg = Config().with_values(
        {"loadBalancerSheddingExcludedNamespaces": NS, "loadBalancerDistributeBundlesEvenlyEnabled": False}
    )
    load = LoadData({"a": broker(900), "b": broker(1), "c": broker(5)})
    p = ModularPlacement(LeastLongTermMessageRate())
    picks = [
        place(load, cfg, bundle=f"{NS}/0x{i:08x}_0x{i + 1:08x}", placement=p, preallocate=False).selected
        for i in range(4)
    ]
    assert picks == ["a", "b", "c", "a"]
    assert p.round_robin.count == 4
    # other namespaces still use the configured strategy
    assert place(load, cfg, bundle="x/y/0x00000000_0xffffffff", placement=p).selected == "b"


def test_one_round_robin_strategy_instance_across_calls() -> None:
    load = LoadData({"a": broker(), "b": broker()})
    cfg = Config().with_values({"loadBalancerDistributeBundlesEvenlyEnabled": False})
    p = ModularPlacement(RoundRobinBrokerSelector())
    assert [place(load, cfg, placement=p, preallocate=False).selected for _ in range(3)] == ["a", "b", "a"]
