"""Java's arithmetic where Pulsar's results depend on it: one definition of each helper.

* ``f32``: a ``(float)`` cast, round to the nearest IEEE-754 single (``ResourceUsage#percentUsage``).
* ``java_int``: a ``(int)`` cast of a double: NaN is 0, truncation towards zero, saturating at the int
  range (``UniformLoadShedder``'s amounts).
* ``java_round``: ``Math.round(double)``: the closest long, ties towards positive infinity, NaN is 0
  (``NamespaceBundleStats#compareTo``'s resolutions, ``Consumer#getAvgMessagesPerEntry``).  Computed
  from ``floor`` and the exact remainder, so ``0.49999999999999994`` rounds to 0 as in Java 7+.
* ``java_div``: double division: ``x / 0`` is +-infinity, ``0 / 0`` and ``NaN / 0`` are NaN, never raised.
* ``java_max``: ``Math.max(double, double)``: NaN when either is NaN.
* ``java_sqrt``: ``Math.sqrt``: NaN for a negative argument.
* ``int32_sub``: ``int - int`` with Java's wrap-around (``MetadataVersion#compareIdentifiers``).
* ``java_fixed``: ``String.format("%.Nf", x)``: the shortest decimal of the double rounded HALF_UP (Java's
  ``Formatter``), where Python's own ``format`` rounds the binary value half-even (``0.125`` -> ``0.13``
  in Java, ``0.12`` in Python).
"""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_UP, Decimal

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


_SINGLE = struct.Struct("f")


def f32(x: float) -> float:
    """Round a double to the nearest IEEE-754 single, as a Java ``(float)`` cast does."""
    try:
        return float(_SINGLE.unpack(_SINGLE.pack(x))[0])
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def java_int(x: float) -> int:
    """Java's ``(int)`` cast of a double: truncation towards zero, saturating at the int range."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return INT_MAX if x > 0 else INT_MIN
    return max(INT_MIN, min(INT_MAX, int(x)))


def java_round(x: float) -> int:
    """``Math.round(double)``: the closest long, ties towards positive infinity (NaN is 0)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return LONG_MAX if x > 0 else LONG_MIN
    low = math.floor(x)
    rounded = low + 1 if x - low >= 0.5 else low
    return max(LONG_MIN, min(LONG_MAX, rounded))


def java_div(a: float, b: float) -> float:
    """Java double division: ``x / 0`` is +-inf, ``0 / 0`` and ``NaN / 0`` are NaN."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def java_max(a: float, b: float) -> float:
    """Java ``Math.max`` of doubles: NaN if either is NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def java_sqrt(x: float) -> float:
    """Java ``Math.sqrt``: NaN for a negative (or NaN) argument."""
    return math.sqrt(x) if x >= 0 else math.nan


def int32_sub(a: int, b: int) -> int:
    """``a - b`` of two Java ints, wrapping around as Java's int arithmetic does."""
    return (a - b - INT_MIN) % 2**32 + INT_MIN


def java_fixed(x: float, digits: int) -> str:
    """Java's ``%.<digits>f`` of a double: its shortest decimal rounded half up."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return f"{Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"
