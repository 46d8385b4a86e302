"""Broker versions as both of Pulsar's ``BrokerVersionFilter``s read them (``com.github.zafarkhaja.semver`` 0.9).

Parsing (``Version#valueOf``): ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``, nothing around it.

* MAJOR, MINOR, PATCH and numeric pre-release identifiers are ``0`` or start with 1-9 (a leading zero is
  invalid); the three numbers are Java ints.
* Identifiers are non-empty runs of ``[0-9A-Za-z-]`` separated by dots; an identifier with a letter or
  hyphen is alphanumeric, any digits are allowed in it.  Build identifiers may have leading zeros.

Order (``Version#compareTo``): the three numbers, then the pre-release, a release ranking above each of
its pre-releases.  Identifiers are compared pairwise: when both read as a Java int (``Integer.parseInt``,
so ``-1`` counts) by their difference (Java int arithmetic), otherwise as strings (``String#compareTo``);
when all shared ones are equal the longer list ranks higher.  ``equals`` is this order's equality, so
build metadata does not count.  ``BUILD_AWARE_ORDER`` breaks a tie by build metadata the same way, with a
version that has build metadata above one that has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from bundlewise.model.javamath import INT_MAX, INT_MIN, int32_sub

_NUMBER = r"(?:0|[1-9][0-9]*)"
_PRE_ID = rf"(?:{_NUMBER}|[0-9A-Za-z-]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = r"[0-9A-Za-z-]+"
_VERSION = re.compile(
    rf"({_NUMBER})\.({_NUMBER})\.({_NUMBER})(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?(?:\+({_BUILD_ID}(?:\.{_BUILD_ID})*))?"
)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


class InvalidVersion(ValueError):
    """Not a version ``Version#valueOf`` accepts."""


def _as_int(identifier: str) -> int | None:
    """``Integer.parseInt``'s value, or None where it would throw."""
    if not _JAVA_INT.fullmatch(identifier):
        return None
    value = int(identifier)
    return value if INT_MIN <= value <= INT_MAX else None


def compare_identifiers(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """``MetadataVersion#compareTo`` of two non-empty identifier lists (negative, 0 or positive)."""
    for x, y in zip(a, b, strict=False):
        ix, iy = _as_int(x), _as_int(y)
        result = int32_sub(ix, iy) if ix is not None and iy is not None else (x > y) - (x < y)
        if result != 0:
            return result
    return len(a) - len(b)


def _compare_metadata(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Absent metadata (an empty tuple) ranks above any present (the release above its pre-releases)."""
    if not a or not b:
        return (not a) - (not b)
    return compare_identifiers(a, b)


@total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        m = _VERSION.fullmatch(text)
        if m is None:
            raise InvalidVersion(f"invalid version string {text!r}")
        numbers = [int(m.group(k)) for k in (1, 2, 3)]
        if any(n > INT_MAX for n in numbers):
            raise InvalidVersion(f"invalid version string {text!r}: a number exceeds a Java int")
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        build = tuple(m.group(5).split(".")) if m.group(5) else ()
        return cls(numbers[0], numbers[1], numbers[2], pre, build)

    def compare(self, other: Version) -> int:
        """``Version#compareTo``: build metadata ignored."""
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        return _compare_metadata(self.pre, other.pre)

    def compare_build_aware(self, other: Version) -> int:
        """``Version.BUILD_AWARE_ORDER``: on a tie, build metadata decides (present above absent)."""
        result = self.compare(other)
        if result != 0:
            return result
        if not self.build or not other.build:
            return (not other.build) - (not self.build)
        return compare_identifiers(self.build, other.build)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.compare(other) == 0

    def __lt__(self, other: Version) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def latest(versions: list[Version]) -> Version:
    """The newest in ``BUILD_AWARE_ORDER``; the first of equals (``BrokerVersionFilter#getLatestVersionNumber``)."""
    best = versions[0]
    for v in versions[1:]:
        if best.compare_build_aware(v) < 0:
            best = v
    return best
