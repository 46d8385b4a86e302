"""Strategy families behind one small adapter: what the engine asks the leader's algorithms.

``Family`` answers over the leader's ``LoadData`` (``observe`` sees every running broker's live
measurements each tick, ``moved`` hears of each ownership change):

* ``assign(bundle, load, config, rng)`` — where an unowned bundle goes at lookup (spec §4.1, with
  preallocation);
* ``shed(load, config, now, rng)`` — one shedding cycle (spec §5.1), run by
  ``algorithms.leader_cycle.LeaderSheddingCycle``: grace period, the strategy's plan, excluded namespaces,
  each destination from the placement flow *without* preallocation (skipped when absent or the source);
* ``find_splits(load, config, counts, reports_changed, now)`` — split detection (modular: the leader's
  after each ``updateAll``, spec §2.1; extensible: each broker's on its own interval, A6).

``ModularFamily`` drives a modular shedder (Overload/Threshold/Uniform/Avg) with ``ModularPlacement``;
for ``AvgShedder`` the same instance is also the placement strategy, as Pulsar requires (spec §4.1).
The extensible family (TransferShedder) plugs in the same way (``make_family``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from bundlewise.algorithms.leader_cycle import LeaderSheddingCycle
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.placement.base import PlacementStrategy
from bundlewise.algorithms.placement.registry import make_placement_strategy
from bundlewise.algorithms.shedding.registry import EXTENSIBLE_SHEDDERS, MODULAR_SHEDDERS, make_shedding_strategy
from bundlewise.algorithms.splitting.detector import SplitDecision, find_bundles_to_split
from bundlewise.config import Config
from bundlewise.config.config import short_class_name
from bundlewise.model.errors import InputError
from bundlewise.model.load import LoadData, NamespaceBundleStats
from bundlewise.model.resources import SystemResources


@dataclass(frozen=True, slots=True)
class Move:
    """One unload with its destination, as decided by a shedding cycle."""

    bundle: str
    source: str
    destination: str
    reason: str


class TickView(Protocol):
    """What running brokers measure this tick (live, not what they last reported); built by the engine."""

    brokers: list[str]  # running brokers, in slot order

    def resources(self, broker: str) -> SystemResources: ...

    def totals(self, broker: str) -> tuple[float, float, float, float]: ...  # rateIn, rateOut, tputIn, tputOut

    def bundle_count(self, broker: str) -> int: ...

    def topics(self, broker: str) -> int: ...

    def stats(self, broker: str) -> dict[str, NamespaceBundleStats]: ...

    def owned_ids(self, broker: str) -> np.ndarray: ...

    def bundle_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...  # rates n×4, topics, sessions

    def stats_of(self, ids: np.ndarray) -> dict[str, NamespaceBundleStats]: ...


class Family(Protocol):
    name: str

    def observe(self, view: TickView, config: Config, now: int) -> None: ...

    def assign(self, bundle: str, load: LoadData, config: Config, rng: random.Random) -> tuple[str | None, str]: ...

    def shed(self, load: LoadData, config: Config, now: int, rng: random.Random) -> list[Move]: ...

    def moved(self, source: str, destination: str) -> None: ...

    def find_splits(
        self, load: LoadData, config: Config, counts: dict[str, int], reports_changed: bool, now: int
    ) -> list[SplitDecision]: ...


class ModularFamily:
    """A modular shedding strategy + the modular placement flow + the modular split detector."""

    def __init__(self, name: str, config: Config) -> None:
        self.shedder = make_shedding_strategy(name)
        self.name = short_class_name(name)
        if self.name == "AvgShedder":
            placement: PlacementStrategy = self.shedder  # type: ignore[assignment]
        else:
            placement = make_placement_strategy(config.placement_strategy)
        self.placement = ModularPlacement(placement)
        self._rng = random.Random(0)
        self.cycle = LeaderSheddingCycle(self.shedder, self._destination)

    def assign(self, bundle: str, load: LoadData, config: Config, rng: random.Random) -> tuple[str | None, str]:
        sel = self.placement.select_broker(bundle, load, config, rng, preallocate=True)
        if sel.selected is None:
            return None, "no available broker"
        how = type(self.placement.strategy).__name__
        among = f" among {len(sel.best)} equally good" if len(sel.best) > 1 else ""
        return sel.selected, f"lookup of an unowned bundle: {how} picked {sel.selected}{among}"

    def shed(self, load: LoadData, config: Config, now: int, rng: random.Random) -> list[Move]:
        self._rng = rng
        result = self.cycle.run(load, config, now)
        return [Move(u.bundle, u.broker, u.destination or "", u.reason) for u in result.unloaded]

    def _destination(self, bundle: str, load: LoadData, config: Config) -> str | None:
        return self.placement.select_broker(bundle, load, config, self._rng, preallocate=False).selected

    def observe(self, view: TickView, config: Config, now: int) -> None:
        """The modular leader reads only written reports (``LeaderView``)."""

    def moved(self, source: str, destination: str) -> None:
        """Nothing to do: the modular leader learns of moves from the next reports."""

    def find_splits(
        self, load: LoadData, config: Config, counts: dict[str, int], reports_changed: bool, now: int
    ) -> list[SplitDecision]:
        """Run after each ``updateAll`` (a tick where some broker wrote its report), spec §2.1."""
        if not reports_changed or not config["loadBalancerAutoBundleSplitEnabled"] or len(load.brokers) < 2:
            return []
        return find_bundles_to_split(load, config, counts)


def shedding_strategy_names() -> list[str]:
    """Every shedding strategy the simulator can drive, modular first."""
    names = list(MODULAR_SHEDDERS)
    try:
        from bundlewise.sim.extensible import ExtensibleFamily  # noqa: F401
    except ImportError:
        return names
    return names + list(EXTENSIBLE_SHEDDERS)


def make_family(name: str, config: Config) -> Family:
    """The adapter for a shedding strategy name (short or Pulsar class name)."""
    short = short_class_name(name)
    if short in EXTENSIBLE_SHEDDERS:
        try:
            from bundlewise.sim.extensible import ExtensibleFamily
        except ImportError:
            raise InputError(f"strategy {name!r} is not available in this build", field="--strategy") from None
        return ExtensibleFamily(config)
    return ModularFamily(name, config)
