"""BalancedPlanShedder's placement at fleet size: the estimate of a bundle without samples reads a per-report
index by namespace instead of every bundle of every broker, and the fleet's cost model and limits are computed
once per set of reports.  Both are proven equal to the plain computation (hypothesis), and a new report is seen."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlewise.algorithms.balanced.estimate import (
    ZERO,
    CostModel,
    Vector,
    _fit_cost_model,
    _fleet_limits,
    add,
    fit_cost_model,
    fleet_limits,
)
from bundlewise.algorithms.balanced.placement import unknown_bundle
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, NamespaceBundleStats
from bundlewise.model.resources import ResourceUsage, SystemResources

BOUNDS = [0x00000000, 0x40000000, 0x60000000, 0x80000000, 0xC0000000, 0xFFFFFFFF]
NAMESPACES = ["t/a", "t/b", "u/a"]


def scan(bundle: str, load: LoadData, model: CostModel) -> Vector:
    """The estimate as it was computed before the index: every bundle of every broker, in order."""
    try:
        me = Bundle.parse(bundle)
    except InputError:
        return model.of_data(BundleData.default())
    total: Vector = ZERO
    count = 0
    for broker in load.brokers.values():
        for name, s in broker.localData.lastStats.items():
            if not name.startswith(me.namespace + "/"):
                continue
            try:
                other = Bundle.parse(name)
            except InputError:
                continue
            v = model.of_stats(s)
            if other.lower <= me.lower and me.upper <= other.upper and other != me:
                share = (me.upper - me.lower) / (other.upper - other.lower)
                return (v[0] * share, v[1] * share, v[2] * share)
            total = add(total, v)
            count += 1
    if count == 0:
        return model.of_data(BundleData.default())
    return (total[0] / count, total[1] / count, total[2] / count)


names = st.builds(
    lambda ns, i, j: f"{ns}/0x{BOUNDS[min(i, j)]:08x}_0x{BOUNDS[max(i, j) + 1]:08x}",
    st.sampled_from(NAMESPACES),
    st.integers(0, len(BOUNDS) - 2),
    st.integers(0, len(BOUNDS) - 2),
) | st.just("t/a/not-a-range")
stats = st.builds(
    NamespaceBundleStats,
    msgRateIn=st.floats(0, 1e4),
    msgThroughputIn=st.floats(0, 1e7),
    msgRateOut=st.floats(0, 1e4),
    msgThroughputOut=st.floats(0, 1e7),
)
reports = st.dictionaries(names, stats, max_size=8)
loads = st.lists(reports, min_size=1, max_size=5).map(
    lambda rs: LoadData(brokers={f"b{i}": BrokerData(LocalBrokerData(lastStats=r)) for i, r in enumerate(rs)})
)


@settings(max_examples=300, deadline=None)
@given(loads, names, st.floats(1e-4, 1.0), st.floats(1e-9, 1e-5))
def test_the_indexed_estimate_equals_the_scan(load: LoadData, bundle: str, per_msg: float, per_byte: float) -> None:
    model = CostModel(per_msg, per_byte, 1.0, 1.0)
    assert unknown_bundle(bundle, load, model) == scan(bundle, load, model)
    assert unknown_bundle(bundle, load, model) == scan(bundle, load, model)  # again, from the index


def broker(cpu: float, rate: float, update: int) -> BrokerData:
    res = SystemResources(cpu=ResourceUsage(cpu, 800.0), bandwidth_in=ResourceUsage(rate * 10, 1e7))
    return BrokerData(LocalBrokerData(resources=res, msgRateIn=rate, msgThroughputIn=rate * 1000, lastUpdate=update))


def test_the_fleets_model_and_limits_follow_each_new_report() -> None:
    brokers = {"a": broker(100.0, 50.0, 1), "b": broker(300.0, 200.0, 1), "c": broker(500.0, 400.0, 1)}
    first = fit_cost_model(brokers.values())
    assert first == _fit_cost_model(list(brokers.values()))
    assert fit_cost_model(brokers.values()) is first  # the same reports: computed once
    assert dict(fleet_limits(brokers)) == _fleet_limits(brokers)
    brokers["b"] = broker(700.0, 200.0, 2)  # b reports again
    second = fit_cost_model(brokers.values())
    assert second == _fit_cost_model(list(brokers.values())) and second != first
    brokers["c"] = BrokerData(LocalBrokerData(resources=SystemResources(cpu=ResourceUsage(0.0, 1600.0))))
    assert fleet_limits(brokers)["c"].cpu == 1600.0
    del brokers["a"]
    assert dict(fleet_limits(brokers)) == _fleet_limits(brokers) and "a" not in fleet_limits(brokers)
