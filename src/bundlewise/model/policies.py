"""Placement constraints an operator sets on a Pulsar cluster (docs/placement.md, "Constraints").

* **Namespace isolation policies** (``pulsar-admin ns-isolation-policy set``; stored per cluster at
  ``/admin/clusters/{cluster}/namespaceIsolationPolicies`` as a map ``name -> NamespaceIsolationData``,
  the very JSON ``ns-isolation-policy list`` prints).  A policy names namespace regexes, primary and
  secondary broker regexes and an auto-failover policy (``min_available``: ``min_limit`` and
  ``usage_threshold``).  Regexes match whole strings (Java's ``Pattern#matches``); broker regexes match
  the broker's HOST, without the port (``LoadManagerShared#applyNamespacePolicies`` reads
  ``new URL("http://" + broker).getHost()``).  ``NamespaceIsolationPolicies``:

  - ``policy_for(ns)``: the first policy (in the map's order) with a namespace regex matching ``ns``
    (``#getPolicyByNamespace``); ``present(ns)`` whether there is one (``#areIsolationPoliciesPresent``);
  - ``is_primary(ns, host)`` / ``is_secondary(ns, host)``: the namespace's policy lists the host;
  - ``is_shared(host)``: no policy names the host as a PRIMARY (a secondary of some policy stays shared,
    ``#isSharedBroker``);
  - ``should_failover(ns, primaries)``: ``primaries < min_limit`` (``MinAvailablePolicy#shouldFailoverToSecondary``).
    ``usage_threshold`` is kept and validated; Pulsar reads it only in ``MinAvailablePolicy#isBrokerAvailable``,
    which the simple load manager uses -- the modular and extensible managers count primaries alone.

* **Anti-affinity groups** (``pulsar-admin namespaces set-anti-affinity-group``; stored in the
  namespace's local policies ``/admin/local-policies/{tenant}/{ns}`` as ``namespaceAntiAffinityGroup``).
  Groups compare case-insensitively (``equalsIgnoreCase``).
* **Failure domains** (``pulsar-admin clusters create-failure-domain``; stored at
  ``/admin/clusters/{cluster}/failureDomain/{domain}`` as ``{"brokers": [...]}``); they count only with
  ``failureDomainsEnabled``.  A broker in no domain is in ``default``.

``PlacementPolicies.from_json`` reads a ``--policies`` file: ``{"namespaceIsolationPolicies": {...},
"antiAffinityGroups": {ns: group}, "failureDomains": {domain: {"brokers": [...]}}}`` (each optional), or
the bare output of ``ns-isolation-policy list``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model import fields
from bundlewise.model.errors import InputError

MIN_AVAILABLE = "min_available"
DEFAULT_DOMAIN = "default"
_SECTIONS = ("namespaceIsolationPolicies", "antiAffinityGroups", "failureDomains")


def _patterns(d: Mapping[str, Any], key: str, where: str, *, required: bool) -> tuple[re.Pattern[str], ...]:
    values = fields.str_list(d, key, where)
    if required and not values:
        raise InputError("expected a non-empty list of regular expressions", field=f"{where}.{key}")
    out = []
    for k, v in enumerate(values):
        try:
            out.append(re.compile(v))
        except re.error as e:
            raise InputError(f"not a regular expression ({e})", field=f"{where}.{key}[{k}]") from None
    return tuple(out)


def _int_parameter(d: Mapping[str, Any], key: str, where: str) -> int:
    value = d.get(key)
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value) if isinstance(value, int) else int(str(value).strip())
    except (TypeError, ValueError):
        raise InputError(f"expected a whole number, got {value!r}", field=f"{where}.{key}") from None


@dataclass(frozen=True, slots=True)
class AutoFailoverPolicy:
    """``auto_failover_policy``: Pulsar's only type, ``min_available``."""

    min_limit: int = 1
    usage_threshold: int = 100

    def should_failover(self, primaries: int) -> bool:
        """``MinAvailablePolicy#shouldFailoverToSecondary``: fewer primaries than ``min_limit``."""
        return primaries < self.min_limit

    @classmethod
    def from_json(cls, value: Any, where: str) -> AutoFailoverPolicy:
        d = fields.obj(value, where)
        kind = fields.text(d, "policy_type", where)
        if kind is None or kind.lower() != MIN_AVAILABLE:
            raise InputError(f"expected policy_type {MIN_AVAILABLE!r}, got {kind!r}", field=f"{where}.policy_type")
        pw = f"{where}.parameters"
        params = fields.obj(d.get("parameters"), pw)
        for key in ("min_limit", "usage_threshold"):
            if key not in params:
                raise InputError(f"missing {key!r}", field=pw)
        limit = _int_parameter(params, "min_limit", pw)
        threshold = _int_parameter(params, "usage_threshold", pw)
        if limit < 0:
            raise InputError(f"expected min_limit >= 0, got {limit}", field=f"{pw}.min_limit")
        if not 0 <= threshold <= 100:
            raise InputError(f"expected usage_threshold in 0..100, got {threshold}", field=f"{pw}.usage_threshold")
        return cls(limit, threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "policy_type": MIN_AVAILABLE,
            "parameters": {"min_limit": str(self.min_limit), "usage_threshold": str(self.usage_threshold)},
        }


@dataclass(frozen=True, slots=True)
class NamespaceIsolationPolicy:
    """One ``NamespaceIsolationData``: namespace regexes, primary and secondary broker regexes."""

    name: str
    namespaces: tuple[re.Pattern[str], ...]
    primary: tuple[re.Pattern[str], ...]
    secondary: tuple[re.Pattern[str], ...] = ()
    auto_failover: AutoFailoverPolicy = AutoFailoverPolicy()

    def applies_to(self, namespace: str) -> bool:
        return any(p.fullmatch(namespace) for p in self.namespaces)

    def is_primary(self, host: str) -> bool:
        return any(p.fullmatch(host) for p in self.primary)

    def is_secondary(self, host: str) -> bool:
        return any(p.fullmatch(host) for p in self.secondary)

    @classmethod
    def from_json(cls, name: str, value: Any, where: str) -> NamespaceIsolationPolicy:
        d = fields.obj(value, where)
        if "auto_failover_policy" not in d:
            raise InputError("missing 'auto_failover_policy'", field=where)
        return cls(
            name,
            _patterns(d, "namespaces", where, required=True),
            _patterns(d, "primary", where, required=True),
            _patterns(d, "secondary", where, required=False),
            AutoFailoverPolicy.from_json(d["auto_failover_policy"], f"{where}.auto_failover_policy"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "namespaces": [p.pattern for p in self.namespaces],
            "primary": [p.pattern for p in self.primary],
            "secondary": [p.pattern for p in self.secondary],
            "auto_failover_policy": self.auto_failover.to_json(),
        }


@dataclass(frozen=True, slots=True)
class NamespaceIsolationPolicies:
    """A cluster's isolation policies, in the order of the stored map (``NamespaceIsolationPolicies``)."""

    policies: tuple[NamespaceIsolationPolicy, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.policies)

    def policy_for(self, namespace: str) -> NamespaceIsolationPolicy | None:
        return next((p for p in self.policies if p.applies_to(namespace)), None)

    def present(self, namespace: str) -> bool:
        return self.policy_for(namespace) is not None

    def is_primary(self, namespace: str, host: str) -> bool:
        p = self.policy_for(namespace)
        return p is not None and p.is_primary(host)

    def is_secondary(self, namespace: str, host: str) -> bool:
        p = self.policy_for(namespace)
        return p is not None and p.is_secondary(host)

    def is_shared(self, host: str) -> bool:
        return not any(p.is_primary(host) for p in self.policies)

    def should_failover(self, namespace: str, primaries: int) -> bool:
        p = self.policy_for(namespace)
        return p is not None and p.auto_failover.should_failover(primaries)

    @classmethod
    def from_json(cls, value: Any, where: str) -> NamespaceIsolationPolicies:
        d = fields.obj(value, where)
        return cls(tuple(NamespaceIsolationPolicy.from_json(str(k), v, f"{where}.{k}") for k, v in d.items()))

    def to_json(self) -> dict[str, Any]:
        return {p.name: p.to_json() for p in self.policies}


def _groups(value: Any, where: str) -> dict[str, str]:
    d = fields.obj(value, where)
    out = {}
    for ns, group in d.items():
        if not isinstance(group, str) or not group.strip():
            raise InputError(f"expected a group name, got {group!r}", field=f"{where}.{ns}")
        out[str(ns)] = group
    return out


def _domains(value: Any, where: str) -> dict[str, str]:
    d = fields.obj(value, where)
    out: dict[str, str] = {}
    for domain, data in d.items():
        dw = f"{where}.{domain}"
        for broker in fields.str_list(fields.obj(data, dw), "brokers", dw):
            out[broker] = str(domain)
    return out


@dataclass(frozen=True, slots=True)
class PlacementPolicies:
    """Everything placement and shedding must honour besides load: isolation, anti-affinity, domains."""

    isolation: NamespaceIsolationPolicies = NamespaceIsolationPolicies()
    anti_affinity: Mapping[str, str] = field(default_factory=dict)  # namespace -> group
    broker_domains: Mapping[str, str] = field(default_factory=dict)  # broker -> failure domain

    def __bool__(self) -> bool:
        return bool(self.isolation or self.anti_affinity)

    def group_of(self, namespace: str) -> str | None:
        """``LocalPolicies#namespaceAntiAffinityGroup`` (blank = none), lower-cased for comparison."""
        group = self.anti_affinity.get(namespace)
        return group.lower() if group and group.strip() else None

    def domain_of(self, broker: str) -> str:
        return self.broker_domains.get(broker, DEFAULT_DOMAIN)

    def has_policies(self, namespace: str) -> bool:
        """An isolation policy or an anti-affinity group applies (``TopKBundles``' exclusion)."""
        return self.isolation.present(namespace) or self.group_of(namespace) is not None

    @classmethod
    def from_json(cls, value: Any, where: str = "policies") -> PlacementPolicies:
        d = fields.obj(value, where)
        if not any(k in d for k in _SECTIONS):
            return cls(NamespaceIsolationPolicies.from_json(d, where))  # a bare `ns-isolation-policy list`
        unknown = [k for k in d if k not in _SECTIONS]
        if unknown:
            raise InputError(f"unknown section {unknown[0]!r}; expected one of {', '.join(_SECTIONS)}", field=where)
        return cls(
            NamespaceIsolationPolicies.from_json(d.get("namespaceIsolationPolicies", {}), f"{where}.{_SECTIONS[0]}"),
            _groups(d.get("antiAffinityGroups", {}), f"{where}.{_SECTIONS[1]}"),
            _domains(d.get("failureDomains", {}), f"{where}.{_SECTIONS[2]}"),
        )


NO_POLICIES = PlacementPolicies()
