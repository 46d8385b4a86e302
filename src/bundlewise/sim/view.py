"""The engine's two interfaces: what brokers measure each tick, and what it asks a load manager.

* ``TickView``: what the running brokers measure this tick (live, not what they last reported),
  built by the engine over its arrays; bundle stats are built only for the bundles asked for.
* ``Manager``: a load manager as the engine drives it (``sim.adapters`` makes one per family).
"""

from __future__ import annotations

import random
from typing import Protocol

import numpy as np

from bundlewise.algorithms.families.modular import SplitPreview
from bundlewise.config import Config
from bundlewise.model.decisions import Assignment, SplitDecision, SplitStep, Unload
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import SystemResources


class TickView(Protocol):
    """What running brokers measure this tick; built by the engine."""

    brokers: list[str]  # running brokers, in slot order

    def resources(self, broker: str) -> SystemResources: ...

    def totals(self, broker: str) -> tuple[float, float, float, float]: ...  # rateIn, rateOut, tputIn, tputOut

    def bundle_count(self, broker: str) -> int: ...

    def topics(self, broker: str) -> int: ...

    def owned_ids(self, broker: str) -> np.ndarray: ...

    def bundle_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...  # rates n×4, topics, sessions

    def bundle_namespaces(self) -> tuple[np.ndarray, list[str]]: ...  # per bundle id: namespace index; names

    def stats_of(self, ids: np.ndarray) -> dict[str, NamespaceBundleStats]: ...

    def stats_names(self) -> list[str]: ...  # per bundle id measured this tick: its name


class Manager(Protocol):
    """The engine's side of a load manager."""

    name: str
    can_merge: bool  # its strategy merges bundles (bundlewise's own); Pulsar's never do

    def brokers_changed(self, brokers: list[str], now: int) -> None: ...  # the brokers up, after events

    def observe(self, view: TickView, config: Config, now: int) -> None: ...

    def assign(self, bundle: str, config: Config, rng: random.Random) -> Assignment: ...

    def shed(self, config: Config, now: int, rng: random.Random) -> list[Unload]: ...

    def moved(self, source: str, destination: str) -> None: ...

    def split_step(
        self,
        config: Config,
        counts: dict[str, int],
        reports_changed: bool,
        now: int,
        preview: SplitPreview | None = None,
    ) -> SplitStep: ...  # merges (applied first), then the splits; ``preview``: how an owner would split a bundle

    def split_done(self, done: SplitDecision) -> None: ...  # a split carried out, with its children's loads
