"""Hash-range overlap between brokers: no two brokers may serve overlapping ranges of one namespace.

Comparing bundle names cannot see a parent ``ns/0xe0000000_0xffffffff`` on one broker and its child
``ns/0xe0000000_0xefffffff`` on another; comparing ranges does. A bundle is ``[lower, upper)`` of its
namespace (``Bundle``); two bundles overlap iff they share a namespace and ``a.lower < b.upper`` and
``b.lower < a.upper``. Overlap on the same broker (a parent and its child during a split) is no violation.
The one implementation of this check: the ``live up`` fault observer and the tests both use it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError


class Overlap(NamedTuple):
    """Two claims of intersecting ranges by different brokers (``a`` <= ``b`` by (broker, bundle))."""

    a_broker: str
    a_bundle: str
    b_broker: str
    b_bundle: str


def parsed(item: str | Bundle) -> Bundle | None:
    """The bundle ``item`` names, or None when it names none."""
    return item if isinstance(item, Bundle) else _parsed_name(item)


@functools.lru_cache(maxsize=1 << 16)
def _parsed_name(name: str) -> Bundle | None:
    """A name's bundle, parsed once (a ``Bundle`` is immutable): an observer reads the same names every round."""
    try:
        return Bundle.parse(name)
    except InputError:
        return None  # not a bundle name (a broker's answer is read as it is): it claims no range


def claimed(owned: Mapping[str, Iterable[str | Bundle]]) -> list[tuple[Bundle, str]]:
    """Each (bundle, broker) claim of ``owned`` (broker -> bundles); a name that is no bundle claims nothing."""
    out: list[tuple[Bundle, str]] = []
    for broker, bundles in owned.items():
        for item in bundles:
            b = parsed(item)
            if b is not None:
                out.append((b, broker))
    return out


def overlaps(owned: Mapping[str, Iterable[str | Bundle]]) -> list[Overlap]:
    """Every pair of bundles served by two different brokers whose hash ranges overlap (sorted)."""
    by_namespace: dict[str, list[tuple[int, int, str, str]]] = {}
    for b, broker in claimed(owned):
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
