"""Hash-range overlap between brokers: the observer's check that no two brokers serve overlapping ranges.

Comparing bundle names cannot see a parent ``ns/0xe0000000_0xffffffff`` on one broker and its child
``ns/0xe0000000_0xefffffff`` on another; comparing ranges does. A bundle is ``[lower, upper)`` of its
namespace (``Bundle``); two bundles overlap iff they share a namespace and ``a.lower < b.upper`` and
``b.lower < a.upper``. Overlap on the same broker (a parent and its child during a split) is no violation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from bundlewise.model.bundles import Bundle


class Overlap(NamedTuple):
    broker_a: str
    bundle_a: str
    broker_b: str
    bundle_b: str


def overlaps(owned: Mapping[str, Sequence[str | Bundle]]) -> list[Overlap]:
    """Every pair of bundles served by two different brokers whose hash ranges overlap (sorted)."""
    by_namespace: dict[str, list[tuple[int, int, str, str]]] = {}
    for broker, bundles in owned.items():
        for item in bundles:
            b = item if isinstance(item, Bundle) else Bundle.parse(item)
            by_namespace.setdefault(b.namespace, []).append((b.lower, b.upper, broker, b.name))
    found: set[Overlap] = set()
    for entries in by_namespace.values():
        entries.sort()
        for i, (lo, hi, broker, name) in enumerate(entries):
            for lo2, hi2, broker2, name2 in entries[i + 1 :]:
                if lo2 >= hi:
                    break
                if broker2 != broker and lo < hi2:
                    first, second = sorted([(broker, name), (broker2, name2)])
                    found.add(Overlap(first[0], first[1], second[0], second[1]))
    return sorted(found)
