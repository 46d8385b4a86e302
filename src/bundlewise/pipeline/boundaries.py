"""Where each namespace's bundle boundaries come from (pure Python; used by the transforms).

Sources, first match wins for a topic (docs/pipeline.md):

1. the bundle range carried by the input itself (broker-stats/topics dumps, load reports);
2. a bundles file: Pulsar's ``{"boundaries": ["0x00000000", …, "0xffffffff"]}`` (``BundlesData``, applied to
   every namespace), or a map ``{"tenant/ns": {"boundaries": […]} | […], …}`` per namespace;
3. ``--bundles N``: ``initial_boundaries(N)`` (Pulsar ``PoliciesUtil#getBundles``) for every other namespace;
   without it, ``defaultNumberOfNamespaceBundles``.

Boundaries are integers or ``0x`` hex strings, strictly increasing, from 0x00000000 to 0xffffffff.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model.bundles import initial_boundaries, parse_boundaries_data
from bundlewise.model.errors import InputError
from bundlewise.model.names import NamespaceName


@dataclass(frozen=True)
class Boundaries:
    """``default`` applies to every namespace not in ``per_namespace``."""

    default: tuple[int, ...]
    per_namespace: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of_count(cls, n: int) -> Boundaries:
        return cls(tuple(initial_boundaries(n)))

    def for_namespace(self, namespace: str) -> tuple[int, ...]:
        return self.per_namespace.get(namespace, self.default)

    def bundle_count(self, namespace: str) -> int:
        return len(self.for_namespace(namespace)) - 1


def _boundaries(value: Any, where: str) -> tuple[int, ...]:
    return parse_boundaries_data(dict(value) if isinstance(value, Mapping) else value, where)


def parse_bundles_doc(doc: Any, default: Boundaries, source: str = "bundles file") -> Boundaries:
    """A bundles file's JSON → ``Boundaries`` (namespaces it does not list keep ``default``)."""
    try:
        if isinstance(doc, Mapping) and "boundaries" in doc:
            return Boundaries(_boundaries(doc, "bundles"))
        if not isinstance(doc, Mapping):
            raise InputError('expected {"boundaries": [...]} or {"tenant/ns": {"boundaries": [...]}}')
        per: dict[str, tuple[int, ...]] = {}
        for ns, value in doc.items():
            NamespaceName.parse(ns)
            per[ns] = _boundaries(value, ns)
        return Boundaries(default.default, per)
    except InputError as e:
        raise e.within(source) from None
