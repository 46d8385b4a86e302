"""The candidate pipeline of the modular load manager's placement (``ModularLoadManagerImpl#selectBroker``).

Every function takes the candidates as an ordered sequence and returns a NEW list (Pulsar's
``LoadManagerShared`` helpers and ``BrokerFilter``s edit one shared ``Set`` in place; here nothing
is mutated).  Order is the input's broker order, where Pulsar iterates a hash set.

* ``topic_type_candidates`` / ``policy_candidates`` (step 3, ``LoadManagerShared#applyNamespacePolicies``):
  without an isolation policy for the bundle's namespace, every available shared broker (no policy's
  primary) that accepts the bundle's topic type (``nonPersistentTopicsEnabled`` for a bundle flagged
  non-persistent, ``persistentTopicsEnabled`` otherwise); with one, its primaries (plus secondaries
  on failover), ``algorithms.placement.constraints``.
* ``filter_max_topics`` (step 4, ``filterBrokersWithLargeTopicCount``): keep brokers with
  ``numTopics + Σ preallocated topics ≤ loadBalancerBrokerMaxTopics``; if none is left, keep all.
* ``filter_anti_affinity`` (step 5, ``filterAntiAffinityGroupOwnedBrokers``): for a namespace in an
  anti-affinity group, the brokers (and, with ``failureDomainsEnabled``, failure domains) owning the
  fewest namespaces of the group, counted over each broker's bundles and preallocations.
* ``filter_distribute_evenly`` (step 6, ``removeMostServicingBrokersForNamespace``): keep the
  brokers owning the fewest distinct bundles of the bundle's namespace (owned + preallocated), counted by
  ``namespace_counts.NamespaceBundleCounts`` (Pulsar's incrementally kept ``brokerToNamespaceToBundleRange``).
* ``filter_load_manager_class`` (step 7, ``BrokerLoadManagerClassFilter``): drop brokers whose
  reported ``loadManagerClassName`` differs from ours.
* ``filter_broker_version`` (step 7, ``BrokerVersionFilter``): with ``preferLaterVersions``, keep
  only the brokers running the newest semantic version; a missing or invalid version raises
  ``BrokerFilterError`` (the caller then resets to the step-3 set).
* ``is_overloaded`` (step 9): weighted max usage strictly above the overload threshold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from bundlewise.algorithms.placement import constraints
from bundlewise.algorithms.placement.namespace_counts import NamespaceBundleCounts
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.config.views import PlacementSettings
from bundlewise.model.load import LoadData
from bundlewise.model.names import SYSTEM_NAMESPACE
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.model.semver import InvalidVersion, Version, latest


class BrokerFilterError(Exception):
    """A filter of the pipeline could not decide (Pulsar ``BrokerFilterException``)."""


def topic_type_candidates(load: LoadData, *, non_persistent: bool = False) -> list[str]:
    """The available brokers that accept the bundle's topic type, in input order."""
    out = []
    for name, broker in load.brokers.items():
        local = broker.localData
        accepts = local.nonPersistentTopicsEnabled if non_persistent else local.persistentTopicsEnabled
        if accepts:
            out.append(name)
    return out


def policy_candidates(
    bundle: str,
    load: LoadData,
    policies: PlacementPolicies = NO_POLICIES,
    *,
    non_persistent: bool = False,
    accepting: Collection[str] | None = None,
) -> list[str]:
    """Step 3: ``applyNamespacePolicies`` over the available brokers (the topic type checked on the shared path;
    ``accepting``: ``topic_type_candidates`` when the caller has them already)."""
    if accepting is None:
        accepting = set(topic_type_candidates(load, non_persistent=non_persistent))
    return constraints.apply_namespace_policies(
        namespace_of(bundle), list(load.brokers), policies.isolation, accepting.__contains__
    )


def owned_by_broker(load: LoadData) -> dict[str, frozenset[str]]:
    """broker -> namespaces it owns or has preallocated bundles of (``brokerToNamespaceToBundleRange``)."""
    return constraints.owned_namespaces(
        {name: [*b.localData.bundles, *b.preallocatedBundleData] for name, b in load.brokers.items()}
    )


def filter_max_topics(candidates: Sequence[str], load: LoadData, max_topics: int) -> list[str]:
    """Step 4: brokers whose topics (own + preallocated bundles') are at most ``max_topics``.

    If every broker is above the limit, the original candidates are kept.  A broker without load
    data counts 0 topics, as in Pulsar.
    """
    brokers = load.brokers
    kept = []
    for name in candidates:  # broker_topics, inlined: one pass per placement over every candidate
        broker = brokers.get(name)
        topics = 0
        if broker is not None:
            pre = broker.preallocatedBundleData
            topics = broker.localData.numTopics + (sum(d.topics for d in pre.values()) if pre else 0)
        if topics <= max_topics:
            kept.append(name)
    return kept if kept else list(candidates)


def broker_topics(name: str, load: LoadData) -> int:
    """A broker's topics as step 4 counts them: its own plus its preallocated bundles' (0 without data)."""
    broker = load.brokers.get(name)
    if broker is None:
        return 0
    pre = broker.preallocatedBundleData
    return broker.localData.numTopics + (sum(d.topics for d in pre.values()) if pre else 0)


def filter_anti_affinity(
    candidates: Sequence[str],
    bundle: str,
    load: LoadData,
    policies: PlacementPolicies = NO_POLICIES,
    config: Config | None = None,
) -> list[str]:
    """Step 5: ``filterAntiAffinityGroupOwnedBrokers`` (a copy when the namespace has no group)."""
    ns = namespace_of(bundle)
    if policies.group_of(ns) is None:
        return list(candidates)
    domains = config is not None and config.view(PlacementSettings).failure_domains
    return constraints.filter_anti_affinity(candidates, ns, owned_by_broker(load), policies, domains)


def namespace_bundle_counts(brokers: Sequence[str], load: LoadData, namespace: str) -> dict[str, int]:
    """broker -> distinct bundles of ``namespace`` it owns or has preallocated (Pulsar's
    ``brokerToNamespaceToBundleRange``); a broker without load data owns none."""
    return NamespaceBundleCounts().counts(brokers, load, namespace)


def filter_distribute_evenly(
    candidates: Sequence[str], bundle: str, load: LoadData, counts: NamespaceBundleCounts | None = None
) -> list[str]:
    """Step 6: the candidates owning the fewest bundles of the bundle's namespace (all ties kept).

    ``counts`` is the placement flow's incremental map (``namespace_counts``); without one, the counts are taken
    from ``load`` afresh."""
    return distribute_evenly(candidates, bundle, load, counts)[0]


def distribute_evenly(
    candidates: Sequence[str], bundle: str, load: LoadData, counts: NamespaceBundleCounts | None = None
) -> tuple[list[str], dict[str, int]]:
    """``filter_distribute_evenly`` and the per-candidate counts it compared (for the trace's reasons)."""
    if not candidates:
        return [], {}
    per_broker = (counts or NamespaceBundleCounts()).counts(candidates, load, namespace_of(bundle))
    least = min(per_broker.values())
    return [b for b in candidates if per_broker[b] == least], per_broker


def distribute_evenly_applies(bundle: str, config: Config) -> bool:
    """``loadBalancerDistributeBundlesEvenlyEnabled``, or always for the system namespace."""
    return config.view(PlacementSettings).distribute_evenly or namespace_of(bundle) == SYSTEM_NAMESPACE


def filter_load_manager_class(candidates: Sequence[str], load: LoadData, config: Config) -> list[str]:
    """Step 7a: drop brokers that report a different ``loadManagerClassName``.

    Names are compared by their short class name.  A broker whose snapshot omits the field is
    taken to run the configured load manager (the snapshot default; Pulsar would see a real
    broker's name there and drops brokers reporting none).
    """
    configured = config.view(PlacementSettings).load_manager_class
    ours = short_class_name(configured)
    out = []
    for name in candidates:
        broker = load.brokers.get(name)
        reported = broker.localData.loadManagerClassName if broker is not None else None
        if reported is None or reported == configured or short_class_name(reported) == ours:
            out.append(name)
    return out


def _version_of(name: str, load: LoadData) -> Version:
    broker = load.brokers.get(name)
    if broker is None:
        raise BrokerFilterError(f"no broker data for broker {name!r}")
    text = broker.localData.brokerVersionString
    if not text:
        raise BrokerFilterError(f"no version string in the load report of broker {name!r}")
    try:
        return Version.parse(text)
    except InvalidVersion as e:
        raise BrokerFilterError(str(e)) from None


def filter_broker_version(candidates: Sequence[str], load: LoadData, config: Config) -> list[str]:
    """Step 7b: with ``preferLaterVersions``, keep the brokers whose version equals the newest.

    The newest is found in build-aware order; equality ignores build metadata (``model.semver``).  An
    empty set or a missing/invalid version raises ``BrokerFilterError``.
    """
    if not config.view(PlacementSettings).prefer_later_versions:
        return list(candidates)
    if not candidates:
        raise BrokerFilterError("cannot determine the newest version of an empty broker set")
    versions = {name: _version_of(name, load) for name in candidates}
    newest = latest(list(versions.values()))
    return [name for name in candidates if versions[name] == newest]


def is_overloaded(broker: str, load: LoadData, config: Config) -> bool:
    """Step 9: the broker's weighted max usage is strictly above the overload threshold."""
    data = load.brokers.get(broker)
    if data is None:
        return False
    return data.localData.weighted_max_usage(config.weights()) > config.view(PlacementSettings).overload_threshold
