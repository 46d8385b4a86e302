"""The registry of configuration keys: Pulsar's ``ServiceConfiguration`` names, defaults, units.

Each concern lists its keys in its own module (``keys_modular``, and later ones for the
extensible load manager, throttling and the simulator); ``ALL_KEYS`` merges them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

JAVA_INT_MAX = 2**31 - 1
"""Pulsar's ``int`` keys (e.g. bundle counts) hold at most this."""
JAVA_LONG_MAX = 2**63 - 1
"""Every whole-number key is at most a Java ``long``."""

KeyType = Literal["bool", "int", "float", "str", "list"]


@dataclass(frozen=True, slots=True)
class Key:
    """One configuration key.

    ``minimum`` bounds numeric values (inclusive); ``allowed`` restricts ``str`` values;
    ``alias_of`` marks a deprecated spelling of another key.
    """

    name: str
    default: Any
    type: KeyType
    unit: str
    meaning: str
    dynamic: bool = True
    minimum: float | None = None
    maximum: float | None = None
    allowed: tuple[str, ...] | None = None
    alias_of: str | None = None


def registry(*groups: tuple[Key, ...]) -> dict[str, Key]:
    out: dict[str, Key] = {}
    for group in groups:
        for k in group:
            if k.name in out:
                raise ValueError(f"configuration key {k.name} registered twice")
            out[k.name] = k
    return out
