"""Broker selection of the extensible load manager (Pulsar ``ExtensibleLoadManagerImpl#selectAsync``).

Filter chain (``ExtensibleLoadManagerImpl`` builds it from ``extensions/filter/*``), each filter
returning a NEW candidate tuple (input order kept):

1. load-manager class: keep brokers whose registered ``loadManagerClassName`` equals ours (a missing
   one is removed);
2. max topics: drop brokers with ``topics >= loadBalancerBrokerMaxTopics`` (no load data: kept);
3. version (only with ``preferLaterVersions``): keep the brokers whose version equals the newest
   (``model.semver``: newest in build-aware order, equality ignoring build metadata); a missing or
   invalid version makes the filter fail;
4. anti-affinity group (``AntiAffinityGroupPolicyFilter``): for a namespace with a group, the brokers (and
   failure domains, with ``failureDomainsEnabled``) owning the fewest namespaces of the group
   (``constraints.filter_anti_affinity``; ownership from the context's ``owned`` map);
5. isolation (``BrokerIsolationPoliciesFilter``): ``applyNamespacePolicies`` -- the namespace's primaries
   (secondaries on failover), or without a policy the shared brokers that support the bundle's topic kind
   (``nonPersistentTopicsEnabled`` for a bundle with non-persistent topics, else ``persistentTopicsEnabled``;
   shedding assumes persistent; without ``lookupData`` every broker supports both).

A bundle of a heartbeat or SLA-monitor namespace is placed on its own broker when that broker is available,
else nowhere (``ExtensibleLoadManagerImpl#selectAsync``'s ``getHeartbeatOrSLAMonitorBrokerId``).

A filter that fails is ignored (Pulsar logs the error and keeps whatever the filters left). Filters
reading the registry need ``lookupData``; without it they have nothing to compare and pass all.

Strategy (``extensions.strategy.LeastResourceUsageWithWeight``): ``avg`` of ``weightedMaxEMA`` over the
candidates with load data; ``best`` = those with ``EMA + diff <= avg`` (``diff`` =
``loadBalancerAverageResourceUsageDifferenceThresholdPercentage/100``); when ``best`` is empty, all
candidates (also those without data); the pick is uniformly random over ``best`` with the given rng.
Bundles of ``loadBalancerSheddingExcludedNamespaces`` are placed round-robin instead (PIP-380), by the
modular ``RoundRobinBrokerSelector``, which Pulsar's ``RoundRobinBrokerSelectionStrategy`` wraps.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from bundlewise.algorithms.placement import constraints
from bundlewise.algorithms.placement.base import Selection
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.config import Config
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.config.views import PlacementSettings
from bundlewise.model.extensible import BrokerLoadData, BrokerLookupData, ExtensibleSnapshot
from bundlewise.model.load import BundleData, LoadData
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.names import pinned_broker
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.model.semver import InvalidVersion, Version, latest

Candidates = tuple[str, ...]


class FilterError(Exception):
    """A broker filter could not run (Pulsar ``BrokerFilterException``); the chain ignores it."""


@dataclass(frozen=True, slots=True)
class FilterContext:
    """What the filters read: load data, registry records (or None) and the config."""

    load: Mapping[str, BrokerLoadData]
    lookup: Mapping[str, BrokerLookupData] | None
    config: Config
    non_persistent: bool = False  # the bundle holds non-persistent topics
    policies: PlacementPolicies = NO_POLICIES
    owned: Mapping[str, Collection[str]] = field(default_factory=dict)  # broker -> namespaces it owns


def expected_load_manager_class(config: Config) -> str:
    """Our own class: the configured one when set explicitly, else the extensible load manager."""
    explicit = config.view(PlacementSettings).explicit_load_manager_class
    return EXTENSIBLE_LOAD_MANAGER if explicit is None else explicit


def _lookup(ctx: FilterContext, broker: str) -> BrokerLookupData:
    assert ctx.lookup is not None
    return ctx.lookup.get(broker, BrokerLookupData())


def load_manager_class_filter(c: Candidates, bundle: str, ctx: FilterContext) -> Candidates:
    if ctx.lookup is None:
        return c
    mine = expected_load_manager_class(ctx.config)
    return tuple(b for b in c if _lookup(ctx, b).loadManagerClassName == mine)


def max_topic_count_filter(c: Candidates, bundle: str, ctx: FilterContext) -> Candidates:
    limit = ctx.config.view(PlacementSettings).max_topics
    return tuple(b for b in c if b not in ctx.load or ctx.load[b].topics < limit)


def _version(ctx: FilterContext, broker: str) -> Version:
    text = _lookup(ctx, broker).brokerVersion
    if not text:
        raise FilterError(f"no version string in the lookup data of broker {broker!r}")
    try:
        return Version.parse(text)
    except InvalidVersion as e:
        raise FilterError(str(e)) from None


def version_filter(c: Candidates, bundle: str, ctx: FilterContext) -> Candidates:
    if not ctx.config.view(PlacementSettings).prefer_later_versions or not c:
        return c
    if ctx.lookup is None:
        raise FilterError("no broker versions (lookupData) to compare")
    versions = {b: _version(ctx, b) for b in c}
    newest = latest(list(versions.values()))
    return tuple(b for b in c if versions[b] == newest)


def anti_affinity_filter(c: Candidates, bundle: str, ctx: FilterContext) -> Candidates:
    ns = namespace_of(bundle)
    if ctx.policies.group_of(ns) is None:
        return c
    domains = ctx.config.view(PlacementSettings).failure_domains
    return tuple(constraints.filter_anti_affinity(c, ns, ctx.owned, ctx.policies, domains))


def _accepts_topic_type(ctx: FilterContext) -> Callable[[str], bool]:
    if ctx.lookup is None:
        return lambda broker: True
    if ctx.non_persistent:
        return lambda broker: _lookup(ctx, broker).nonPersistentTopicsEnabled
    return lambda broker: _lookup(ctx, broker).persistentTopicsEnabled


def isolation_filter(c: Candidates, bundle: str, ctx: FilterContext) -> Candidates:
    accepts = _accepts_topic_type(ctx)
    return tuple(constraints.apply_namespace_policies(namespace_of(bundle), c, ctx.policies.isolation, accepts))


def owned_from_top_bundles(snapshot: ExtensibleSnapshot) -> dict[str, frozenset[str]]:
    """broker -> namespaces of its reported top bundles: the ownership an extensible snapshot shows."""
    return constraints.owned_namespaces(
        {b: [e.bundleName for e in top.topBundlesLoadData] for b, top in snapshot.top_bundles.items()}
    )


Filter = Callable[[Candidates, str, FilterContext], Candidates]
_NO_DATA = BundleData.default()
_NO_LOAD = LoadData()  # the round-robin selector reads neither
FILTER_CHAIN: tuple[Filter, ...] = (
    load_manager_class_filter,
    max_topic_count_filter,
    version_filter,
    anti_affinity_filter,
    isolation_filter,
)


def apply_filters(candidates: Sequence[str], bundle: str, ctx: FilterContext) -> Candidates:
    out = tuple(candidates)
    for f in FILTER_CHAIN:
        try:
            out = f(out, bundle, ctx)
        except FilterError:
            continue
    return out


def least_resource_usage_with_weight(
    candidates: Sequence[str], load: Mapping[str, BrokerLoadData], config: Config, rng: random.Random
) -> Selection:
    if not candidates:
        return Selection.none()
    with_data = [b for b in candidates if b in load]
    best: list[str] = []
    if with_data:
        avg = sum(load[b].weightedMaxEMA for b in with_data) / len(with_data)
        diff = config.view(PlacementSettings).usage_difference
        best = [b for b in with_data if load[b].weightedMaxEMA + diff <= avg]
    if not best:
        best = list(candidates)
    return Selection(best[rng.randrange(len(best))], tuple(best))


@dataclass(slots=True)
class ExtensiblePlacement:
    """The assignment flow: filters, then LeastResourceUsageWithWeight (round-robin for excluded namespaces)."""

    round_robin: RoundRobinBrokerSelector = field(default_factory=RoundRobinBrokerSelector)

    def select(
        self,
        bundle: str,
        available: Sequence[str],
        ctx: FilterContext,
        rng: random.Random,
        candidates: Sequence[str] | None = None,
        chooser: Callable[[Sequence[str]], Selection] | None = None,
    ) -> Selection:
        """Without ``candidates`` the full flow; with them, the strategy alone on exactly that list.
        ``chooser``: the strategy step in place of LeastResourceUsageWithWeight (an own strategy's placement)."""
        pinned = pinned_broker(namespace_of(bundle))
        if pinned is not None and candidates is None:
            return Selection(pinned, (pinned,)) if pinned in available else Selection.none()
        pool = tuple(candidates) if candidates is not None else apply_filters(available, bundle, ctx)
        if namespace_of(bundle) in ctx.config.view(PlacementSettings).excluded_namespaces:
            return self.round_robin.select(pool, bundle, _NO_DATA, _NO_LOAD, ctx.config, rng)
        if chooser is not None:
            return chooser(pool) if pool else Selection.none()
        return least_resource_usage_with_weight(pool, ctx.load, ctx.config, rng)
