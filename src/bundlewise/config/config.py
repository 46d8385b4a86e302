"""The ``Config`` mapping, value coercion and per-concern views."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, Self, TypeVar

from bundlewise.config.keys import JAVA_LONG_MAX, Key, registry
from bundlewise.config.keys_balanced import BALANCED_KEYS
from bundlewise.config.keys_extensible import EXTENSIBLE_KEYS
from bundlewise.config.keys_live import LIVE_KEYS
from bundlewise.config.keys_modular import MODULAR_KEYS
from bundlewise.config.keys_sim import SIM_KEYS
from bundlewise.config.keys_throttling import THROTTLING_KEYS
from bundlewise.config.views import ALL_VIEWS, LeaderSettings, PlacementSettings
from bundlewise.model.errors import InputError
from bundlewise.model.fields import shown
from bundlewise.model.resources import ResourceWeights

ALL_KEYS: dict[str, Key] = registry(MODULAR_KEYS, EXTENSIBLE_KEYS, THROTTLING_KEYS, SIM_KEYS, LIVE_KEYS, BALANCED_KEYS)
WATCHED_PREFIXES = ("loadBalancer", "dispatchThrottling", "dispatcher")


def short_class_name(value: str) -> str:
    """``org.apache...impl.ThresholdShedder`` -> ``ThresholdShedder``."""
    return value.strip().rsplit(".", 1)[-1]


def _coerce(key: Key, raw: Any, where: str) -> Any:
    def bad(expect: str) -> InputError:
        return InputError(f"expected {expect}, got {raw!r}", source=where, field=key.name)

    if raw is None or (isinstance(raw, str) and raw.strip() == "" and key.type not in ("str", "list")):
        if key.default is None:
            return None
        raise bad(f"a {key.type} value")
    if key.type == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise bad("true or false")
    if key.type in ("int", "float"):
        if isinstance(raw, bool):
            raise bad(f"a number ({key.unit})")
        try:
            value = float(raw.strip()) if isinstance(raw, str) else float(raw)
        except (TypeError, ValueError):
            raise bad(f"a number ({key.unit})") from None
        if math.isnan(value) or math.isinf(value):
            raise bad("a finite number")
        if key.type == "int":
            if value != int(value):
                raise bad(f"a whole number ({key.unit})")
            value = int(value)
            if not -JAVA_LONG_MAX - 1 <= value <= JAVA_LONG_MAX:
                raise bad(f"a whole number within Java's long ({key.unit})")
        if key.minimum is not None and value < key.minimum:
            raise bad(f"a value >= {shown(key.minimum)} ({key.unit})")
        if key.maximum is not None and value > key.maximum:
            raise bad(f"a value <= {shown(key.maximum)} ({key.unit})")
        return value
    if key.type == "list":
        if isinstance(raw, str):
            return [p.strip() for p in raw.split(",") if p.strip()]
        if isinstance(raw, list | tuple) and all(isinstance(v, str) for v in raw):
            return list(raw)
        raise bad("a comma-separated list")
    if not isinstance(raw, str):
        raise bad("a string")
    text = raw.strip()
    if key.allowed is not None and text not in key.allowed:
        raise bad("one of " + ", ".join(key.allowed))
    return text


class _View(Protocol):
    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Self: ...


V = TypeVar("V", bound=_View)


def closest_key(name: str) -> str | None:
    match = difflib.get_close_matches(name, list(ALL_KEYS), n=1, cutoff=0.6)
    return match[0] if match else None


class Config(Mapping[str, Any]):
    """Every known key with its value; immutable, derive changed copies with ``with_values``."""

    __slots__ = ("_values", "_views")

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self._views: dict[type, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        return ALL_KEYS[name].default

    def __iter__(self) -> Iterator[str]:
        return iter(ALL_KEYS)

    def __len__(self) -> int:
        return len(ALL_KEYS)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and dict(self) == dict(other)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, repr(v)) for k, v in self._values.items())))

    def __repr__(self) -> str:
        return f"Config({self._values!r})"

    @property
    def explicit(self) -> dict[str, Any]:
        """The keys set explicitly (not defaulted)."""
        return dict(self._values)

    def with_values(self, raw: Mapping[str, Any], source: str = "config", warnings: list[str] | None = None) -> Config:
        """A copy with ``raw`` applied: values coerced and validated, unknown keys ignored or warned about."""
        values = dict(self._values)
        for name, value in raw.items():
            key = ALL_KEYS.get(name)
            if key is None:
                if name.startswith(WATCHED_PREFIXES) and warnings is not None:
                    hint = closest_key(name)
                    warnings.append(
                        f"warning: {source}: unknown key {name}" + (f" (did you mean {hint}?)" if hint else "")
                    )
                continue
            values[name] = _coerce(key, value, source)
        return Config(values)

    # -- views -------------------------------------------------------------------------------

    def view(self, kind: type[V]) -> V:
        """The per-concern settings ``kind`` (``config.views``), built once per ``Config``."""
        found = self._views.get(kind)
        if found is None:
            found = self._views[kind] = kind.of(self)
        return found

    def check(self) -> Config:
        """Build every view once, so a key a view misspells fails now rather than mid-run."""
        for kind in ALL_VIEWS:
            self.view(kind)
        self.weights()
        return self

    def _bandwidth_weight(self, new: str, old: str) -> float:
        """Pulsar's getter: the new name if != 1.0, else the deprecated spelling if != 1.0, else 1.0."""
        if self[new] != 1.0:
            return float(self[new])
        if self[old] != 1.0:
            return float(self[old])
        return 1.0

    def weights(self) -> ResourceWeights:
        """``loadBalancer*ResourceWeight`` (with Pulsar's getters for the deprecated spellings)."""
        found = self._views.get(ResourceWeights)
        if found is None:
            found = self._views[ResourceWeights] = ResourceWeights(
                cpu=float(self["loadBalancerCPUResourceWeight"]),
                direct_memory=float(self["loadBalancerDirectMemoryResourceWeight"]),
                bandwidth_in=self._bandwidth_weight(
                    "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwithInResourceWeight"
                ),
                bandwidth_out=self._bandwidth_weight(
                    "loadBalancerBandwidthOutResourceWeight", "loadBalancerBandwithOutResourceWeight"
                ),
                memory=float(self["loadBalancerMemoryResourceWeight"]),
            )
        weights: ResourceWeights = found
        return weights

    @property
    def overload_threshold(self) -> float:
        """``loadBalancerBrokerOverloadedThresholdPercentage`` as a fraction."""
        return self.view(PlacementSettings).overload_threshold

    @property
    def shedding_strategy(self) -> str:
        """The short name of ``loadBalancerLoadSheddingStrategy``."""
        return short_class_name(self.view(LeaderSettings).shedding_strategy)

    @property
    def placement_strategy(self) -> str:
        """The short name of ``loadBalancerLoadPlacementStrategy``."""
        return short_class_name(self.view(PlacementSettings).strategy)
