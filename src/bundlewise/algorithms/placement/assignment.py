"""The modular load manager's assignment flow (Pulsar ``ModularLoadManagerImpl#selectBroker``).

``ModularPlacement.select_broker(bundle, load, config, rng)``:

1. a bundle already preallocated to a broker (in its ``preallocatedBundleData``) goes there;
2. the bundle's data is ``load.bundleData[bundle]``, else the default prior (50 msg/s, 50000 B/s);
0. a bundle of a heartbeat or SLA-monitor namespace goes to its own broker, or nowhere when that broker
   is not available (``NamespaceService``'s heartbeat shortcut, ahead of the load manager);
3. candidates: ``applyNamespacePolicies`` with the placement's ``PlacementPolicies`` (isolation primaries,
   secondaries on failover, else the shared brokers accepting the bundle's topic type);
4. max-topics filter; 5. anti-affinity group (and failure domains); 6. distribute bundles evenly (if enabled), over the
   per-broker, per-namespace bundle counts this object keeps across calls (``namespace_counts``);
7. load-manager-class then version filter; a filter error, or an empty result, resets the
   candidates to the step-3 set (``candidate_trace`` keeps what each filter removed and why, for
   ``shed``'s advice);
8. bundles of ``loadBalancerSheddingExcludedNamespaces`` are placed by a round-robin selector
   owned by this object, all others by the configured strategy;
9. overload re-check: if the chosen broker's weighted max usage is above the overload threshold,
   the configured strategy runs again on the step-3 set (policies applied again) and its pick, if any,
   replaces the first;
10. with ``preallocate=True`` the bundle's data is recorded in the chosen broker's
    ``preallocatedBundleData`` (and in ``load.bundleData`` when absent), so that later placements in
    the same cycle see it (max-topics, distribute-evenly, the strategies' scores).  This mutation of
    the leader's own ``LoadData`` is the point of preallocation; ``preallocate=False`` (choosing a
    shedding destination, ``#doLoadShedding``) leaves ``load`` untouched.

The selection returned is the strategy's (``best`` included); a shortcut or round-robin pick has
``best == (selected,)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bundlewise.algorithms.placement import filters
from bundlewise.algorithms.placement.base import PlacementStrategy, Selection
from bundlewise.algorithms.placement.namespace_counts import NamespaceBundleCounts
from bundlewise.algorithms.placement.round_robin import RoundRobinBrokerSelector
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.load import BundleData, LoadData
from bundlewise.model.names import bundle_namespace, pinned_broker
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies


def preallocated_owner(bundle: str, load: LoadData) -> str | None:
    """The broker the bundle is preallocated to (first in input order), if any."""
    for name, broker in load.brokers.items():
        if bundle in broker.preallocatedBundleData:
            return name
    return None


@dataclass(frozen=True, slots=True)
class FilterStep:
    """What one candidate filter removed: the filter's name, the setting behind it, and per broker why."""

    name: str
    setting: str
    removed: tuple[tuple[str, str], ...]  # (broker, why), in candidate order


@dataclass(frozen=True, slots=True)
class CandidateTrace:
    """Steps 3-7 with their reasons: the final candidates, every filter that removed someone, and why the
    candidates were reset to the step-3 set, if they were."""

    candidates: list[str]
    steps: tuple[FilterStep, ...] = ()
    reset: str = ""


def _step(
    name: str, setting: str, before: Sequence[str], after: Sequence[str], why: Callable[[str], str]
) -> list[FilterStep]:
    if len(after) == len(before):  # a filter keeps a subset in order: nothing removed
        return []
    kept = set(after)
    removed = tuple((b, why(b)) for b in before if b not in kept)
    return [FilterStep(name, setting, removed)] if removed else []


def candidate_trace(
    bundle: str,
    load: LoadData,
    config: Config,
    *,
    non_persistent: bool = False,
    policies: PlacementPolicies = NO_POLICIES,
    counts: NamespaceBundleCounts | None = None,
) -> CandidateTrace:
    """Steps 3-7 (module docstring), saying what each filter removed and why (``counts``: the flow's
    per-broker, per-namespace bundle counts, kept across calls; without one they are taken from ``load``)."""
    settings = config.view(PlacementSettings)
    kind = "non-persistent" if non_persistent else "persistent"
    typed = set(filters.topic_type_candidates(load, non_persistent=non_persistent))
    base = filters.policy_candidates(bundle, load, policies, non_persistent=non_persistent, accepting=typed)
    policy = policies.isolation.policy_for(bundle_namespace(bundle))
    if policy is None:
        steps = _step(
            "topic type",
            f"{kind}TopicsEnabled",
            list(load.brokers),
            base,
            lambda b: (
                f"does not serve {kind} topics" if b not in typed else "a primary of a namespace isolation policy"
            ),
        )
    else:
        steps = _step(
            "namespace isolation policy",
            f"ns-isolation-policy {policy.name}",
            list(load.brokers),
            base,
            lambda b: "neither a primary nor a secondary (failover)" if policy.secondary else "not a primary",
        )
    cands = filters.filter_max_topics(base, load, settings.max_topics)
    steps += _step(
        "max topics",
        "loadBalancerBrokerMaxTopics",
        base,
        cands,
        lambda b: f"{filters.broker_topics(b, load):,} topics > {settings.max_topics:,}",
    )
    before, cands = cands, filters.filter_anti_affinity(cands, bundle, load, policies, config)
    steps += _step(
        "anti-affinity group",
        "namespaceAntiAffinityGroup",
        before,
        cands,
        lambda b: f"owns more namespaces of anti-affinity group {policies.group_of(bundle_namespace(bundle))}",
    )
    if filters.distribute_evenly_applies(bundle, config):
        ns = bundle_namespace(bundle)
        tracker = counts if counts is not None else NamespaceBundleCounts()
        before = cands
        cands, per_broker = filters.distribute_evenly(cands, bundle, load, tracker)
        if len(cands) < len(before):  # the reasons only when someone was removed
            least = min(per_broker.values(), default=0)
            steps += _step(
                "distribute bundles evenly",
                "loadBalancerDistributeBundlesEvenlyEnabled",
                before,
                cands,
                lambda b: (
                    f"owns {per_broker[b]} bundle{'s' if per_broker[b] != 1 else ''} of {ns}, the fewest is {least}"
                ),
            )
    try:
        before, cands = cands, filters.filter_load_manager_class(cands, load, config)
        steps += _step(
            "load manager class",
            "loadManagerClassName",
            before,
            cands,
            lambda b: f"runs {load.brokers[b].localData.loadManagerClassName}",
        )
        before, cands = cands, filters.filter_broker_version(cands, load, config)
        steps += _step(
            "broker version",
            "preferLaterVersions",
            before,
            cands,
            lambda b: f"runs {load.brokers[b].localData.brokerVersionString}, not the newest",
        )
    except filters.BrokerFilterError as e:
        return CandidateTrace(list(base), tuple(steps), f"{e}: candidates reset to every broker")
    if not cands:
        return CandidateTrace(
            list(base), tuple(steps), "every candidate was filtered out: candidates reset to every broker"
        )
    return CandidateTrace(cands, tuple(steps))


def candidate_brokers(
    bundle: str,
    load: LoadData,
    config: Config,
    *,
    non_persistent: bool = False,
    policies: PlacementPolicies = NO_POLICIES,
    counts: NamespaceBundleCounts | None = None,
) -> list[str]:
    """Steps 3-7: the filtered candidates, reset to the step-3 set on a filter error or when empty (``counts``:
    the flow's per-broker, per-namespace bundle counts, kept across calls)."""
    return candidate_trace(
        bundle, load, config, non_persistent=non_persistent, policies=policies, counts=counts
    ).candidates


class ModularPlacement:
    """The leader's placement: filters + the configured strategy (one instance, kept across calls)."""

    def __init__(self, strategy: PlacementStrategy, policies: PlacementPolicies = NO_POLICIES) -> None:
        self.strategy = strategy
        self.policies = policies
        self.round_robin = RoundRobinBrokerSelector()
        self.namespace_counts = NamespaceBundleCounts()  # brokerToNamespaceToBundleRange, kept across calls

    def select_broker(
        self,
        bundle: str,
        load: LoadData,
        config: Config,
        rng: random.Random,
        *,
        preallocate: bool = True,
        non_persistent: bool = False,
    ) -> Selection:
        pinned = pinned_broker(bundle_namespace(bundle))
        if pinned is not None:
            return Selection(pinned, (pinned,)) if pinned in load.brokers else Selection.none()
        owner = preallocated_owner(bundle, load)
        if owner is not None:
            return Selection(owner, (owner,))
        data = load.bundleData.get(bundle) or BundleData.default()
        cands = candidate_brokers(
            bundle, load, config, non_persistent=non_persistent, policies=self.policies, counts=self.namespace_counts
        )
        excluded = bundle_namespace(bundle) in config.view(PlacementSettings).excluded_namespaces
        chooser: PlacementStrategy = self.round_robin if excluded else self.strategy
        selection = chooser.select(cands, bundle, data, load, config, rng)
        chosen = selection.selected
        if chosen is None:
            return selection
        if filters.is_overloaded(chosen, load, config):
            base = filters.policy_candidates(bundle, load, self.policies, non_persistent=non_persistent)
            retry = self.strategy.select(base, bundle, data, load, config, rng)
            if retry.selected is not None:
                selection, chosen = retry, retry.selected
        if preallocate:
            load.bundleData.setdefault(bundle, data)
            load.brokers[chosen].preallocatedBundleData[bundle] = data
        return selection
