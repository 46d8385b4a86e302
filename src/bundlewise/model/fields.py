"""Reading typed fields out of parsed JSON, with one-line errors naming the field.

Shared by every ``from_json`` of the model so that a negative rate, a NaN or a string where a number
belongs is rejected the same way everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bundlewise.model.errors import InputError


def shown(x: float) -> str:
    """A bound in a message: whole numbers with thousands separators (``10,000,000``), others as ``%g``."""
    return f"{int(x):,}" if math.isfinite(x) and x == int(x) else f"{x:,g}"


def obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"expected a JSON object, got {type(value).__name__}", field=where)
    return value


def num(d: Mapping[str, Any], key: str, where: str, default: float = 0.0, *, signed: bool = False) -> float:
    """A finite number (non-negative unless ``signed``); absent or null gives ``default``."""
    value = d.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"expected a number, got {value!r}", field=f"{where}.{key}")
    f = float(value)
    if math.isnan(f) or math.isinf(f):
        raise InputError(f"expected a finite number, got {value!r}", field=f"{where}.{key}")
    if f < 0 and not signed:
        raise InputError(f"expected a number >= 0, got {value!r}", field=f"{where}.{key}")
    return f


_FINITE_MAX = 1.7976931348623157e308


def nonneg_numbers(d: Mapping[str, Any], keys: tuple[str, ...]) -> list[float] | None:
    """Fast path: every key absent/null (-> 0) or a finite number >= 0; ``None`` if any is not.

    Callers fall back to ``num``/``integer`` for the exact error message when this returns ``None``.
    """
    out = []
    for k in keys:
        v = d.get(k)
        if v is None:
            out.append(0.0)
            continue
        t = type(v)
        if (t is not float and t is not int) or not 0 <= v <= _FINITE_MAX:
            return None
        out.append(v)
    return out


def integer(d: Mapping[str, Any], key: str, where: str, default: int = 0, *, signed: bool = False) -> int:
    value = num(d, key, where, float(default), signed=signed)
    if value != int(value):
        raise InputError(f"expected a whole number, got {d.get(key)!r}", field=f"{where}.{key}")
    return int(value)


def text(d: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str | None:
    value = d.get(key, default)
    if value is not None and not isinstance(value, str):
        raise InputError(f"expected a string, got {value!r}", field=f"{where}.{key}")
    return value


def flag(d: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"expected true or false, got {value!r}", field=f"{where}.{key}")
    return value


def str_list(d: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = d.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("expected a list of strings", field=f"{where}.{key}")
    return list(value)
