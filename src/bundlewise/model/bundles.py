"""Bundles: ranges of the topic hash, and a namespace's set of bundles.

Pulsar rules followed (``NamespaceBundles``, ``NamespaceBundleFactory``, ``NamespaceBundle``):

* A namespace's bundles are given by sorted boundaries ``p0 < p1 < ... < pn``; bundle i is
  ``[p_i, p_{i+1})`` and the last one is closed when it ends at ``0xffffffff``.
* A bundle is named ``<namespace>/0xLLLLLLLL_0xUUUUUUUU`` (lower-case, 8 hex digits); parsing accepts
  upper-case hex and old-style ``property/cluster/namespace`` prefixes.
* ``N`` initial bundles: ``seg = 2**32 // N``, boundaries ``k * seg`` for k < N, then ``0xffffffff``.
* Lookup binary-searches the boundaries.  A hash below ``p0`` (or above ``pn``) is out of range, as
  Pulsar's ``IndexOutOfBoundsException``.  A hash of exactly ``0xffffffff`` belongs to the closed
  last bundle (docs/model.md); Pulsar's own lookup overruns its array there, a bug we do not copy.
* A bundle splits only if ``upper - lower > 1``; explicit split boundaries must lie strictly inside it.
* Adjacent bundles merge back into the one range they tile (``NamespaceBundles#merge``, bundlewise's own:
  Pulsar has no merge); ``merge(split(b)) == b``.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bundlewise.model.errors import HashOutOfRange, InputError
from bundlewise.model.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND, crc32_hash
from bundlewise.model.names import NamespaceName, TopicName


def format_range(lower: int, upper: int) -> str:
    return f"0x{lower:08x}_0x{upper:08x}"


def parse_position(text: str) -> int:
    """A hash position as Pulsar writes and reads one: ``0x``-hex (either case) or decimal; ``ValueError``
    otherwise.  The one reader of bundle bounds, split positions and boundary lists."""
    t = text.strip()
    return int(t[2:], 16) if t[:2] in ("0x", "0X") else int(t, 10)


def _parse_bound(text: str, name: str) -> int:
    try:
        value = parse_position(text)
    except ValueError:
        raise InputError(f"bundle {name!r}: {text!r} is not a 0x-hex bound") from None
    if not FULL_LOWER_BOUND <= value <= FULL_UPPER_BOUND:
        raise InputError(f"bundle {name!r}: bound {text!r} is outside 0x00000000..0xffffffff")
    return value


@dataclass(frozen=True, slots=True, order=True)
class Bundle:
    """One bundle: the hash range ``[lower, upper)`` of a namespace (closed at ``0xffffffff``)."""

    namespace: str
    lower: int
    upper: int

    def __post_init__(self) -> None:
        if not FULL_LOWER_BOUND <= self.lower < self.upper <= FULL_UPPER_BOUND:
            raise InputError(
                f"bundle range {format_range(self.lower, self.upper)} is empty or outside 0x00000000..0xffffffff"
            )

    @classmethod
    def parse(cls, name: str) -> Bundle:
        """Parse ``tenant/ns/0x..._0x...`` (or ``property/cluster/ns/0x..._0x...``)."""
        ns, sep, rng = name.strip().rpartition("/")
        lo, us, hi = rng.partition("_")
        if not sep or not us:
            raise InputError(f"bundle {name!r} is not 'tenant/namespace/0xLLLLLLLL_0xUUUUUUUU'")
        NamespaceName.parse(ns)
        return cls(ns, _parse_bound(lo, name), _parse_bound(hi, name))

    @property
    def upper_closed(self) -> bool:
        return self.upper == FULL_UPPER_BOUND

    @property
    def range_name(self) -> str:
        return format_range(self.lower, self.upper)

    @property
    def name(self) -> str:
        return f"{self.namespace}/{self.range_name}"

    def __str__(self) -> str:
        return self.name

    def overlaps(self, other: Bundle) -> bool:
        """Same namespace and intersecting hash ranges (a bundle and its split children or merged parent)."""
        return self.namespace == other.namespace and self.lower < other.upper and other.lower < self.upper

    def covers(self, other: Bundle) -> bool:
        """Same namespace and ``other``'s range inside this one's (a bundle covers itself and its split children)."""
        return self.namespace == other.namespace and self.lower <= other.lower and other.upper <= self.upper

    def includes_hash(self, h: int) -> bool:
        return self.lower <= h < self.upper or (self.upper_closed and h == self.upper)

    def includes(self, topic: str | TopicName) -> bool:
        t = topic if isinstance(topic, TopicName) else TopicName.parse(topic)
        return str(t.namespace) == self.namespace and self.includes_hash(crc32_hash(str(t)))

    @property
    def can_split(self) -> bool:
        """Pulsar's ``canSplitBundle``: the range holds more than one hash."""
        return self.upper - self.lower > 1

    def split_at(self, boundaries: Iterable[int]) -> list[Bundle]:
        """Children ``[lower,b1), [b1,b2), ..., [bk, upper)`` for boundaries strictly inside the range."""
        points = sorted(set(boundaries))
        if not points:
            raise InputError(f"split of {self.name}: no boundary given")
        for b in points:
            if not self.lower < b < self.upper:
                raise InputError(
                    f"split of {self.name}: boundary 0x{b:08x} must lie strictly inside "
                    f"({self.lower:#010x}, {self.upper:#010x})"
                )
        edges = [self.lower, *points, self.upper]
        return [Bundle(self.namespace, a, b) for a, b in itertools.pairwise(edges)]

    def split_equally(self, parts: int) -> list[Bundle]:
        """Pulsar's equal division into ``parts`` children; the last absorbs the remainder."""
        if parts < 2:
            raise InputError(f"split of {self.name}: need at least 2 parts, got {parts}")
        seg = (self.upper - self.lower) // parts
        if seg < 1:
            raise InputError(f"split of {self.name}: range too small for {parts} parts")
        return self.split_at(self.lower + k * seg for k in range(1, parts))


def parse_bound_value(value: object, where: str) -> int:
    """One boundary of a JSON list: an integer, or a string ``parse_position`` reads."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError
        return value if isinstance(value, int) else parse_position(value)
    except ValueError:
        raise InputError(f"expected an integer or 0x-hex boundary, got {value!r}", field=where) from None


def parse_boundaries_data(value: object, where: str = "bundles") -> tuple[int, ...]:
    """Pulsar's ``BundlesData`` — ``{"boundaries": ["0x00000000", …, "0xffffffff"], "numBundles": n}``, as
    ``pulsar-admin namespaces bundles`` prints it — or a bare list of boundaries: integers or ``0x``-hex
    strings, strictly increasing, covering the whole hash range (``NamespacesBase#validateBundlesData``);
    ``numBundles``, when given, must count them."""
    raw = value.get("boundaries") if isinstance(value, dict) else value
    if not isinstance(raw, list):
        raise InputError('expected {"boundaries": [...]} or a list of boundaries', field=where)
    bounds = [parse_bound_value(v, f"{where}.boundaries[{i}]") for i, v in enumerate(raw)]
    if len(bounds) < 2 or any(a >= b for a, b in itertools.pairwise(bounds)):
        raise InputError("boundaries must be at least 2, strictly increasing", field=where)
    if bounds[0] != FULL_LOWER_BOUND or bounds[-1] != FULL_UPPER_BOUND:
        raise InputError(
            "boundaries must start at 0x00000000 and end at 0xffffffff (a namespace's bundles cover every hash), "
            f"got 0x{bounds[0]:08x}..0x{bounds[-1]:08x}",
            field=where,
        )
    n = value.get("numBundles") if isinstance(value, dict) else None
    if n is not None and n != len(bounds) - 1:
        raise InputError(f"numBundles is {n!r} but the boundaries make {len(bounds) - 1} bundles", field=where)
    return tuple(bounds)


MAX_LISTED_BUNDLES = 1 << 20
"""The most bundles of one namespace bundlewise lists (1,048,576, about 100 MB of boundaries).  Pulsar's own
limit is an ``int`` count in (0, 2^32] (``PulsarWebResource#getBundles``): far more than any list in memory."""


def initial_boundaries(n: int) -> list[int]:
    """Boundaries of a namespace created with ``n`` bundles (Pulsar ``PoliciesUtil#getBundles``)."""
    if n <= 0:
        raise InputError(f"number of bundles must be > 0, got {n}")
    if n > MAX_LISTED_BUNDLES:
        raise InputError(f"expected at most {MAX_LISTED_BUNDLES:,} bundles in a namespace, got {n:,}")
    seg = (FULL_UPPER_BOUND + 1) // n
    return [k * seg for k in range(n)] + [FULL_UPPER_BOUND]


@dataclass(frozen=True, slots=True)
class NamespaceBundles:
    """The bundles of one namespace, defined by strictly increasing boundaries."""

    namespace: str
    boundaries: tuple[int, ...]

    def __post_init__(self) -> None:
        b = self.boundaries
        if len(b) < 2:
            raise InputError(f"namespace {self.namespace}: need at least 2 boundaries, got {len(b)}")
        if any(x >= y for x, y in itertools.pairwise(b)):
            raise InputError(f"namespace {self.namespace}: boundaries must be strictly increasing")
        if b[0] < FULL_LOWER_BOUND or b[-1] > FULL_UPPER_BOUND:
            raise InputError(f"namespace {self.namespace}: boundaries must lie in 0x00000000..0xffffffff")

    @classmethod
    def initial(cls, namespace: str, n: int) -> NamespaceBundles:
        return cls(namespace, tuple(initial_boundaries(n)))

    @classmethod
    def of(cls, namespace: str, boundaries: Sequence[int]) -> NamespaceBundles:
        return cls(namespace, tuple(boundaries))

    @property
    def bundles(self) -> list[Bundle]:
        b = self.boundaries
        return [Bundle(self.namespace, lo, hi) for lo, hi in itertools.pairwise(b)]

    def __len__(self) -> int:
        return len(self.boundaries) - 1

    def bundle_for_hash(self, h: int) -> Bundle:
        b = self.boundaries
        if h < b[0] or h > b[-1] or (h == b[-1] and b[-1] != FULL_UPPER_BOUND):
            raise HashOutOfRange(
                f"hash 0x{h:08x} lies outside the bundles of {self.namespace} (0x{b[0]:08x}..0x{b[-1]:08x})"
            )
        i = min(bisect.bisect_right(b, h) - 1, len(b) - 2)
        return Bundle(self.namespace, b[i], b[i + 1])

    def find_bundle(self, topic: str | TopicName) -> Bundle:
        """The bundle serving ``topic``; the topic must belong to this namespace (Pulsar's assigner check)."""
        t = topic if isinstance(topic, TopicName) else TopicName.parse(topic)
        if str(t.namespace) != self.namespace:
            raise InputError(f"topic {t} does not belong to namespace {self.namespace}")
        return self.bundle_for_hash(crc32_hash(str(t)))

    def split(self, bundle: Bundle, boundaries: Iterable[int]) -> tuple[NamespaceBundles, list[Bundle]]:
        """Replace ``bundle`` by its children; returns the new set and the children."""
        if bundle not in self.bundles:
            raise InputError(f"bundle {bundle.name} is not one of the current bundles of {self.namespace}")
        children = bundle.split_at(boundaries)
        inner = [c.lower for c in children[1:]]
        new = sorted(set(self.boundaries) | set(inner))
        return NamespaceBundles(self.namespace, tuple(new)), children

    def merge(self, bundles: Iterable[Bundle]) -> tuple[NamespaceBundles, Bundle]:
        """Replace adjacent ``bundles`` by the one bundle covering them; returns the new set and that bundle.

        The inverse of ``split``, validated the same way: at least two current bundles of this namespace
        that tile one range with no gap (``merge(split(b))`` gives ``b`` back).  No Pulsar admin call does
        this; bundlewise's own strategy uses it to free a namespace at its bundle cap for a hot split."""
        parts = sorted(set(bundles))
        if len(parts) < 2:
            raise InputError(f"merge in {self.namespace}: need at least 2 bundles, got {len(parts)}")
        current = set(self.bundles)
        for b in parts:
            if b not in current:
                raise InputError(f"bundle {b.name} is not one of the current bundles of {self.namespace}")
        for a, b in itertools.pairwise(parts):
            if a.upper != b.lower:
                raise InputError(f"merge in {self.namespace}: {a.name} and {b.name} are not adjacent")
        inner = {b.lower for b in parts[1:]}
        merged = Bundle(self.namespace, parts[0].lower, parts[-1].upper)
        return NamespaceBundles(self.namespace, tuple(x for x in self.boundaries if x not in inner)), merged
