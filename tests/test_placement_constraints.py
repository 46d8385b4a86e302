"""Isolation policies, anti-affinity groups, failure domains and pinned namespaces, case by case against
Pulsar's ``BrokerIsolationPoliciesFilterTest``, ``AntiAffinityNamespaceGroupTest`` /
``AntiAffinityNamespaceGroupExtensionTest`` and ``LoadManagerSharedTest``."""

from __future__ import annotations

import random

import pytest

from bundlewise.algorithms.extensible.placement import FilterContext, anti_affinity_filter, isolation_filter
from bundlewise.algorithms.placement import constraints, filters
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.least_long_term_message_rate import LeastLongTermMessageRate
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import BrokerLookupData
from bundlewise.model.load import BrokerData, LoadData, LocalBrokerData
from bundlewise.model.names import pinned_broker
from bundlewise.model.policies import PlacementPolicies

NS = "my-tenant/my-ns"
BUNDLE = f"{NS}/0x00000000_0xffffffff"


def isolation(primary: list[str], secondary: list[str], min_limit: int, namespaces: tuple[str, ...] = (NS,)) -> dict:
    """One policy as ``pulsar-admin ns-isolation-policy list`` prints it."""
    return {
        "policy-1": {
            "namespaces": list(namespaces),
            "primary": primary,
            "secondary": secondary,
            "auto_failover_policy": {
                "policy_type": "min_available",
                "parameters": {"min_limit": str(min_limit), "usage_threshold": "80"},
            },
        }
    }


def ctx(policies: PlacementPolicies, lookup: dict[str, BrokerLookupData] | None = None, **kw) -> FilterContext:
    return FilterContext({}, lookup, Config(), policies=policies, **kw)


# -- BrokerIsolationPoliciesFilterTest ----------------------------------------------------------------


def test_filter_with_namespace_isolation_policies_for_primary_and_secondary_brokers():
    """``BrokerIsolationPoliciesFilterTest#testFilterWithNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers``:
    primary broker1, secondary broker2, broker3 shared."""
    one = PlacementPolicies.from_json(isolation(["broker1"], ["broker2"], 1))
    b1, b2, b3 = "broker1:8080", "broker2:8080", "broker3:8080"
    assert isolation_filter((b1, b2, b3), BUNDLE, ctx(one)) == (b1,)  # 1a
    assert isolation_filter((b2, b3), BUNDLE, ctx(one)) == (b2,)  # 1b
    assert isolation_filter((b3,), BUNDLE, ctx(one)) == ()  # 1c
    two = PlacementPolicies.from_json(isolation(["broker1"], ["broker2"], 2))
    assert isolation_filter((b1, b2, b3), BUNDLE, ctx(two)) == (b1, b2)  # 2a
    assert isolation_filter((b2, b3), BUNDLE, ctx(two)) == (b2,)  # 2b
    assert isolation_filter((b3,), BUNDLE, ctx(two)) == ()  # 2c


def test_filter_with_namespace_isolation_policies_using_broker_ids():
    """``BrokerIsolationPoliciesFilterTest#testFilterWithNamespaceIsolationPoliciesUsingBrokerIds``."""
    p = PlacementPolicies.from_json(isolation(["broker1:8080"], ["broker2:8080"], 1))
    assert isolation_filter(("broker1:8080", "broker2:8080", "broker3:8080"), BUNDLE, ctx(p)) == ("broker1:8080",)
    assert isolation_filter(("broker2:8080", "broker3:8080"), BUNDLE, ctx(p)) == ("broker2:8080",)


def test_filter_with_persistent_or_non_persistent_disabled():
    """``BrokerIsolationPoliciesFilterTest#testFilterWithPersistentOrNonPersistentDisabled``: no policy for the
    namespace, every broker shared; the topic type decides."""
    none = PlacementPolicies()
    both = BrokerLookupData()
    persistent_only = BrokerLookupData(persistentTopicsEnabled=True, nonPersistentTopicsEnabled=False)
    non_persistent_only = BrokerLookupData(persistentTopicsEnabled=False, nonPersistentTopicsEnabled=True)
    brokers = ("broker1:8080", "broker2:8080", "broker3:8080")
    all_both = dict.fromkeys(brokers, both)
    assert isolation_filter(brokers, BUNDLE, ctx(none, all_both, non_persistent=True)) == brokers
    mixed = {"broker1:8080": persistent_only, "broker2:8080": persistent_only, "broker3:8080": both}
    assert isolation_filter(brokers, BUNDLE, ctx(none, mixed, non_persistent=True)) == ("broker3:8080",)
    assert isolation_filter(brokers, BUNDLE, ctx(none, all_both)) == brokers
    first_off = {**all_both, "broker1:8080": non_persistent_only}
    assert isolation_filter(brokers, BUNDLE, ctx(none, first_off)) == ("broker2:8080", "broker3:8080")


def test_a_primary_of_another_policy_is_not_shared_but_its_secondary_is():
    """``NamespaceIsolationPolicies#isSharedBroker``: only a policy's primaries are taken out of the shared pool."""
    p = PlacementPolicies.from_json(isolation(["broker1"], ["broker2"], 1))
    assert constraints.apply_namespace_policies("other/ns", ["broker1:8080", "broker2:8080"], p.isolation) == [
        "broker2:8080"
    ]


# -- AntiAffinityNamespaceGroupTest / AntiAffinityNamespaceGroupExtensionTest ---------------------------------

GROUP_NS = [f"my-tenant/use/my-ns{i}" for i in range(5)]
GROUPS = PlacementPolicies(anti_affinity=dict.fromkeys(GROUP_NS, "my-antiaffinity"))


def owned(**brokers: str) -> dict[str, frozenset[str]]:
    return {b.replace("_", "-"): frozenset([ns]) for b, ns in brokers.items()}


def test_anti_affinity_namespace_filtering_without_domain():
    """``AntiAffinityNamespaceGroupTest#testAntiAffinityNamespaceFilteringWithoutDomain`` (and the extension
    test's same case, through the extensible ``AntiAffinityGroupPolicyFilter``)."""
    brokers = ["broker-0", "broker-1", "broker-2"]
    state: dict[str, frozenset[str]] = {}
    f = constraints.filter_anti_affinity
    assert f(brokers, GROUP_NS[0], state, GROUPS, False) == brokers
    state = owned(broker_0=GROUP_NS[0])
    assert f(brokers, GROUP_NS[1], state, GROUPS, False) == ["broker-1", "broker-2"]
    state |= owned(broker_1=GROUP_NS[1])
    assert f(brokers, GROUP_NS[2], state, GROUPS, False) == ["broker-2"]
    state |= owned(broker_2=GROUP_NS[2])
    assert f(brokers, GROUP_NS[3], state, GROUPS, False) == brokers
    extensible = ctx(GROUPS, owned=owned(broker_0=GROUP_NS[0]))
    assert anti_affinity_filter(tuple(brokers), f"{GROUP_NS[1]}/0x00000000_0xffffffff", extensible) == (
        "broker-1",
        "broker-2",
    )


def test_anti_affinity_namespace_filtering_with_domain():
    """``AntiAffinityNamespaceGroupTest#testAntiAffinityNamespaceFilteringWithDomain``: domain-0 = b0, b1;
    domain-1 = b2, b3; failureDomainsEnabled."""
    names = ["brokerName-0", "brokerName-1", "brokerName-2", "brokerName-3"]
    p = PlacementPolicies.from_json(
        {
            "antiAffinityGroups": dict.fromkeys(GROUP_NS, "my-antiaffinity"),
            "failureDomains": {"domain-0": {"brokers": names[:2]}, "domain-1": {"brokers": names[2:]}},
        }
    )
    f = constraints.filter_anti_affinity
    state: dict[str, frozenset[str]] = {}
    assert f(names, GROUP_NS[0], state, p, True) == names
    state["brokerName-0"] = frozenset([GROUP_NS[0]])
    assert f(names, GROUP_NS[1], state, p, True) == ["brokerName-2", "brokerName-3"]
    state["brokerName-2"] = frozenset([GROUP_NS[1]])
    assert f(names, GROUP_NS[2], state, p, True) == ["brokerName-1", "brokerName-3"]
    state["brokerName-1"] = frozenset([GROUP_NS[2]])
    assert f(names, GROUP_NS[3], state, p, True) == ["brokerName-3"]
    state["brokerName-3"] = frozenset([GROUP_NS[3]])
    assert f(names, GROUP_NS[4], state, p, True) == names
    # without failureDomainsEnabled the domains are ignored: after n0 -> b0 every other broker stays
    assert f(names, GROUP_NS[1], {"brokerName-0": frozenset([GROUP_NS[0]])}, p, False) == names[1:]


def test_load_shedding_util_with_anti_affinity_namespace():
    """``AntiAffinityNamespaceGroupTest#testLoadSheddingUtilWithAntiAffinityNamespace``."""
    brokers = ["broker-0", "broker-1", "broker-2"]
    state = owned(broker_0=GROUP_NS[0])
    assert constraints.should_anti_affinity_unload(GROUP_NS[0], "broker-0", state, brokers, GROUPS)
    state |= owned(broker_1=GROUP_NS[1])
    assert constraints.should_anti_affinity_unload(GROUP_NS[0], "broker-0", state, brokers, GROUPS)
    state |= owned(broker_2=GROUP_NS[2])
    assert not constraints.should_anti_affinity_unload(GROUP_NS[0], "broker-0", state, brokers, GROUPS)


def test_group_names_compare_case_insensitively_and_blank_is_none():
    p = PlacementPolicies(anti_affinity={"t/a": "Group", "t/b": "group", "t/c": " "})
    assert p.group_of("t/a") == p.group_of("t/b") == "group"
    assert p.group_of("t/c") is None and not p.has_policies("t/c")


# -- LoadManagerSharedTest --------------------------------------------------------------------------------


def load_with(bundles: dict[str, list[str]]) -> LoadData:
    return LoadData({b: BrokerData(LocalBrokerData(bundles=list(bs))) for b, bs in bundles.items()})


def test_remove_most_servicing_brokers_for_namespace():
    """``LoadManagerSharedTest#testRemoveMostServicingBrokersForNamespace``."""
    ns = "tenant1/ns1"
    assigned = f"{ns}/0x00000000_0x40000000"
    f = filters.filter_distribute_evenly
    assert f([], assigned, load_with({})) == []
    assert f(["broker1"], assigned, load_with({})) == ["broker1"]
    owned1 = {"broker1": [f"{ns}/0x40000000_0x80000000"]}
    assert f(["broker1"], assigned, load_with(owned1)) == ["broker1"]
    assert f(["broker1", "broker2"], assigned, load_with(owned1)) == ["broker2"]
    owned2 = {**owned1, "broker2": [f"{ns}/0x80000000_0xc0000000"]}
    assert f(["broker1", "broker2"], assigned, load_with(owned2)) == ["broker1", "broker2"]
    owned3 = {**owned1, "broker2": [f"{ns}/0x80000000_0xc0000000", f"{ns}/0xc0000000_0xd0000000"]}
    assert f(["broker1", "broker2"], assigned, load_with(owned3)) == ["broker1"]
    owned4 = {**owned3, "broker3": [f"{ns}/0xd0000000_0xffffffff"]}
    assert f(["broker1", "broker2", "broker3"], assigned, load_with(owned4)) == ["broker1", "broker3"]


# -- the modular assignment flow and the leader's unload checks ----------------------------------------


def test_modular_placement_keeps_an_isolated_namespace_on_its_primaries_and_fails_over():
    """``ModularLoadManagerImpl#selectBroker`` step 3 with a policy (``applyNamespacePolicies``)."""
    p = PlacementPolicies.from_json(isolation(["broker-1"], ["broker-2"], 1))
    placement = ModularPlacement(LeastLongTermMessageRate(), p)
    load = load_with({"broker-1:8080": [], "broker-2:8080": [], "broker-3:8080": []})
    rng = random.Random(1)
    assert placement.select_broker(BUNDLE, load, Config(), rng, preallocate=False).best == ("broker-1:8080",)
    del load.brokers["broker-1:8080"]
    assert placement.select_broker(BUNDLE, load, Config(), rng, preallocate=False).best == ("broker-2:8080",)
    other = placement.select_broker("other/ns/0x00000000_0xffffffff", load, Config(), rng, preallocate=False)
    assert set(other.best) == {"broker-2:8080", "broker-3:8080"}  # broker-2 is only a secondary: shared


def test_policies_unload_is_refused_when_the_owner_is_the_only_candidate():
    """``ModularLoadManagerImpl#shouldNamespacePoliciesUnload``."""
    assert not constraints.should_policies_unload(["broker-1"], "broker-1")
    assert constraints.should_policies_unload(["broker-1", "broker-2"], "broker-1")
    assert constraints.should_policies_unload(["broker-2"], "broker-1")


def test_isolated_and_anti_affinity_moves_for_transfer_and_unload():
    """``TransferShedder#canTransferWithIsolationPoliciesToBroker`` and ``AntiAffinityGroupPolicyHelper#canUnload``."""
    p = PlacementPolicies.from_json(isolation(["broker-1", "broker-2"], [], 1))
    avail = ["broker-1:8080", "broker-2:8080", "broker-3:8080"]
    assert constraints.can_move_isolated(BUNDLE, avail, "broker-1:8080", "broker-2:8080", p)
    assert not constraints.can_move_isolated(BUNDLE, avail, "broker-1:8080", "broker-3:8080", p)
    assert constraints.can_move_isolated(BUNDLE, avail, "broker-1:8080", None, p)
    assert not constraints.can_move_isolated(BUNDLE, avail[::2], "broker-1:8080", None, p)
    assert constraints.can_move_isolated("other/ns/0x00000000_0xffffffff", avail, "broker-1:8080", "broker-3:8080", p)
    bundle = f"{GROUP_NS[1]}/0x00000000_0xffffffff"
    state = owned(broker_0=GROUP_NS[0], broker_1=GROUP_NS[1])
    brokers = ["broker-0", "broker-1", "broker-2"]
    assert constraints.can_move_anti_affinity(bundle, brokers, "broker-1", "broker-2", state, GROUPS, False)
    assert not constraints.can_move_anti_affinity(bundle, brokers, "broker-1", "broker-0", state, GROUPS, False)


# -- heartbeat and SLA-monitor namespaces ----------------------------------------------------------------


def test_heartbeat_and_sla_namespaces_are_pinned_to_their_broker():
    assert pinned_broker("pulsar/my-cluster/broker-1:8080") == "broker-1:8080"
    assert pinned_broker("pulsar/broker-1:8080") == "broker-1:8080"
    assert pinned_broker("sla-monitor/my-cluster/broker-1:8080") == "broker-1:8080"
    assert pinned_broker("pulsar/system") is None and pinned_broker("my-tenant/my-ns") is None
    placement = ModularPlacement(LeastLongTermMessageRate())
    load = load_with({"broker-1:8080": [], "broker-2:8080": []})
    hb = "pulsar/my-cluster/broker-2:8080/0x00000000_0xffffffff"
    sel = placement.select_broker(hb, load, Config(), random.Random(0))
    assert sel.best == ("broker-2:8080",)
    del load.brokers["broker-2:8080"]
    assert placement.select_broker(hb, load, Config(), random.Random(0)).selected is None


# -- reading the policies ------------------------------------------------------------------------------------


def test_a_bare_ns_isolation_policy_list_round_trips():
    doc = isolation(["broker-[12]"], ["broker-3"], 2, namespaces=("my-tenant/.*",))
    p = PlacementPolicies.from_json(doc)
    assert p.isolation.to_json() == doc
    assert p.isolation.present("my-tenant/anything") and not p.isolation.present("other/ns")
    assert p.isolation.should_failover("my-tenant/x", 1) and not p.isolation.should_failover("my-tenant/x", 2)


@pytest.mark.parametrize(
    "doc, where",
    [
        ({"p": {"namespaces": [], "primary": ["b"], "auto_failover_policy": {}}}, "policies.p.namespaces"),
        ({"p": {"namespaces": ["t/.*"], "primary": ["b"]}}, "policies.p: missing 'auto_failover_policy'"),
        (
            {"p": {"namespaces": ["t/("], "primary": ["b"], "auto_failover_policy": {}}},
            r"policies.p.namespaces\[0\]: not a regular expression",
        ),
        (
            isolation(["b"], [], 1) | {"policy-1": {**isolation(["b"], [], 1)["policy-1"], "auto_failover_policy": {}}},
            "policy_type",
        ),
        ({"failureDomains": {"d": {"brokers": "b1"}}}, r"policies.failureDomains.d.brokers"),
        ({"antiAffinityGroups": {"t/ns": 3}}, r"policies.antiAffinityGroups.t/ns"),
        ({"antiAffinityGroups": {}, "other": {}}, "unknown section 'other'"),
    ],
)
def test_bad_policies_name_the_field(doc: dict, where: str):
    with pytest.raises(InputError, match=where):
        PlacementPolicies.from_json(doc)
