"""Placement constraints as pure functions over candidate lists (Pulsar ``LoadManagerShared``).

Both load managers share them (the extensible filters call the same helpers in Pulsar).  Candidates are
ordered sequences; every function returns a NEW list in the input order.

* ``apply_namespace_policies`` (``#applyNamespacePolicies``): for a namespace with an isolation policy,
  its primary brokers, plus its secondaries when fewer primaries than ``min_limit`` are available
  (``should_failover``); for any other namespace, the shared brokers (no policy's primary) that accept the
  bundle's topic type.  Pulsar checks the topic type only on that shared path.  A policy's broker regex
  names a broker by its host or by its broker id ``host:port``
  (``BrokerIsolationPoliciesFilterTest#testFilterWithNamespaceIsolationPoliciesUsingBrokerIds``).
* ``anti_affinity_counts`` (``#getAntiAffinityNamespaceOwnedBrokers``): per broker, how many namespaces of
  the bundle's anti-affinity group it owns bundles of (brokers owning none are absent); None when the
  namespace has no group.
* ``filter_anti_affinity`` (``#filterAntiAffinityGroupOwnedBrokers``): with failure domains enabled, first
  keep the brokers of the domains owning the fewest group namespaces (``default`` for a broker in no
  domain; skipped without any domain); then keep the brokers owning the fewest: with a candidate owning
  none, every candidate owning some is removed.
* ``should_anti_affinity_unload`` (``#shouldAntiAffinityNamespaceUnload``): a bundle of a group namespace is
  unloaded only when some candidate owns fewer group namespaces than its owner, or not all candidates own
  the same number -- otherwise it would come back where it was.
* ``should_policies_unload`` (``ModularLoadManagerImpl#shouldNamespacePoliciesUnload``): not when the
  isolation candidates are exactly the current owner.
* ``can_move_isolated`` / ``can_move_anti_affinity`` (``TransferShedder#canTransferWithIsolationPoliciesToBroker``,
  ``AntiAffinityGroupPolicyHelper#canUnload``): the candidates without the source must be non-empty for an
  unload and contain the destination for a transfer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from bundlewise.model.names import bundle_namespace
from bundlewise.model.policies import NamespaceIsolationPolicies, PlacementPolicies

Owned = Mapping[str, Collection[str]]  # broker -> the namespaces it owns bundles of


def broker_host(broker: str) -> str:
    """The host of a broker id (``host:port`` -> ``host``), what isolation regexes are matched against."""
    host, sep, port = broker.rpartition(":")
    return host if sep and port.isdigit() else broker


def apply_namespace_policies(
    namespace: str,
    available: Sequence[str],
    isolation: NamespaceIsolationPolicies,
    accepts_topic_type: Callable[[str], bool] = lambda broker: True,
) -> list[str]:
    """``LoadManagerShared#applyNamespacePolicies``: the brokers the namespace may live on."""
    if not isolation:  # no policy at all: every broker is shared (one pass, no regex per broker)
        return [b for b in available if accepts_topic_type(b)]
    policy = isolation.policy_for(namespace)
    if policy is None:
        return [b for b in available if accepts_topic_type(b) and _named(isolation.is_shared, b, every=True)]
    primaries = [b for b in available if _named(policy.is_primary, b)]
    if not policy.auto_failover.should_failover(len(primaries)):
        return primaries
    chosen = set(primaries)
    chosen.update(b for b in available if b not in chosen and _named(policy.is_secondary, b))
    return [b for b in available if b in chosen]


def _named(test: Callable[[str], bool], broker: str, *, every: bool = False) -> bool:
    """A policy names a broker by its host or by its broker id (``host:port``, as ``brokers list`` prints)."""
    host = broker_host(broker)
    if host == broker:
        return test(broker)
    return (test(host) and test(broker)) if every else (test(host) or test(broker))


def owned_namespaces(ownership: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """broker -> namespaces of the bundles it owns (``brokerToNamespaceToBundleRange``'s keys)."""
    return {broker: frozenset(bundle_namespace(b) for b in bundles) for broker, bundles in ownership.items()}


def anti_affinity_counts(namespace: str, owned: Owned, policies: PlacementPolicies) -> dict[str, int] | None:
    """``#getAntiAffinityNamespaceOwnedBrokers``: broker -> namespaces of the group it owns; None without a group."""
    group = policies.group_of(namespace)
    if group is None:
        return None
    counts: dict[str, int] = {}
    for broker, namespaces in owned.items():
        n = sum(1 for ns in namespaces if policies.group_of(ns) == group)
        if n:
            counts[broker] = n
    return counts


def _least_domains(candidates: Sequence[str], counts: Mapping[str, int], policies: PlacementPolicies) -> list[str]:
    """``#filterDomainsNotHavingLeastNumberAntiAffinityNamespaces``."""
    if not policies.broker_domains:
        return list(candidates)
    per_domain: dict[str, int] = {}
    for b in candidates:
        d = policies.domain_of(b)
        per_domain[d] = per_domain.get(d, 0) + counts.get(b, 0)
    if not per_domain:
        return []
    least = min(per_domain.values())
    return [b for b in candidates if per_domain[policies.domain_of(b)] == least]


def filter_anti_affinity(
    candidates: Sequence[str], namespace: str, owned: Owned, policies: PlacementPolicies, domains_enabled: bool
) -> list[str]:
    """``LoadManagerShared#filterAntiAffinityGroupOwnedBrokers`` (module docstring)."""
    if not candidates:
        return []
    counts = anti_affinity_counts(namespace, owned, policies)
    if counts is None:
        return list(candidates)
    kept = _least_domains(candidates, counts, policies) if domains_enabled else list(candidates)
    least = min((counts.get(b, 0) for b in kept), default=0)
    return [b for b in kept if counts.get(b, 0) == least]


def should_anti_affinity_unload(
    namespace: str, current: str, owned: Owned, candidates: Sequence[str], policies: PlacementPolicies
) -> bool:
    """``LoadManagerShared#shouldAntiAffinityNamespaceUnload`` (module docstring)."""
    counts = anti_affinity_counts(namespace, owned, policies)
    if not counts:
        return True
    per = [counts.get(b, 0) for b in candidates]
    least = min(per, default=2**31 - 1)
    mine = counts.get(current, 0) if current in candidates else 0
    if least == 0 or mine > least:
        return True
    return len(candidates) != sum(1 for n in per if n == least)


def should_policies_unload(candidates: Sequence[str], current: str) -> bool:
    """``#shouldNamespacePoliciesUnload``: not when the owner is the only broker the policies allow."""
    return not (len(candidates) == 1 and candidates[0] == current)


def _movable(candidates: Sequence[str], source: str, destination: str | None) -> bool:
    rest = [b for b in candidates if b != source]
    return bool(rest) if destination is None else destination in rest


def can_move_isolated(
    bundle: str, available: Sequence[str], source: str, destination: str | None, policies: PlacementPolicies
) -> bool:
    """``TransferShedder#canTransferWithIsolationPoliciesToBroker``: true without a policy."""
    ns = bundle_namespace(bundle)
    if not policies.isolation.present(ns):
        return True
    return _movable(apply_namespace_policies(ns, available, policies.isolation), source, destination)


def can_move_anti_affinity(
    bundle: str,
    available: Sequence[str],
    source: str,
    destination: str | None,
    owned: Owned,
    policies: PlacementPolicies,
    domains_enabled: bool,
) -> bool:
    """``AntiAffinityGroupPolicyHelper#canUnload``: true without a group."""
    ns = bundle_namespace(bundle)
    if policies.group_of(ns) is None:
        return True
    return _movable(filter_anti_affinity(available, ns, owned, policies, domains_enabled), source, destination)
