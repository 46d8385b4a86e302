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

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bundlewise.model.bundles import initial_boundaries, parse_position
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND
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


def _bound(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"expected an integer or 0x-hex boundary, got {value!r}", field=where)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_position(value)
        except ValueError:
            pass
    raise InputError(f"expected an integer or 0x-hex boundary, got {value!r}", field=where)


def _boundaries(value: Any, where: str) -> tuple[int, ...]:
    raw = value.get("boundaries") if isinstance(value, Mapping) else value
    if not isinstance(raw, list):
        raise InputError('expected {"boundaries": [...]} or a list of boundaries', field=where)
    bounds = tuple(_bound(v, f"{where}.boundaries[{i}]") for i, v in enumerate(raw))
    if len(bounds) < 2 or any(a >= b for a, b in itertools.pairwise(bounds)):
        raise InputError("boundaries must be at least 2, strictly increasing", field=where)
    if bounds[0] != FULL_LOWER_BOUND or bounds[-1] != FULL_UPPER_BOUND:
        raise InputError("boundaries must start at 0x00000000 and end at 0xffffffff", field=where)
    return bounds


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
