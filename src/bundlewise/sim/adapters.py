"""What the engine asks a load manager each tick, and the adapter for each family.

The strategy families (``algorithms.families``) read what Pulsar's nodes have; the engine has arrays.
An adapter turns the one into the other:

* ``ModularManager``: the modular leader reads the ``LoadData`` of ``sim.leader.LeaderView`` (written
  reports, the bundle data kept in arrays); splits run after each ``updateAll``, on the load data cut
  down by a vectorised prefilter of the split rule (``LeaderView.split_load``); a strategy that merges
  (``ModularFamily.merges``) reads the whole load data and the namespaces' current bundles for its merges.
* ``ExtensibleManager`` (``sim.extensible``): emulates every broker's reporters into the two stores the
  extensible family reads, and runs each broker's split strategy on its own interval.

``make_manager`` picks the adapter by the family's class: a new strategy needs no change here, a new
kind of load manager would.
"""

from __future__ import annotations

import random

from bundlewise.algorithms.families import ExtensibleFamily, Family, ModularFamily
from bundlewise.algorithms.families.modular import SplitPreview
from bundlewise.config import Config
from bundlewise.model.decisions import Assignment, SplitDecision, SplitStep, Unload
from bundlewise.sim.extensible import ExtensibleManager
from bundlewise.sim.leader import LeaderView
from bundlewise.sim.view import Manager, TickView


class ModularManager:
    """The modular leader over the simulated leader's view."""

    def __init__(self, family: ModularFamily, leader: LeaderView) -> None:
        self.family = family
        self.leader = leader
        self.name = family.name
        self.can_merge = family.merges is not None

    def brokers_changed(self, brokers: list[str], now: int) -> None:
        """Nothing to do: the engine has already updated the leader's view (a stopped broker's report gone,
        a started broker's first report written)."""

    def observe(self, view: TickView, config: Config, now: int) -> None:
        """The modular leader reads only written reports (``LeaderView``)."""

    def assign(self, bundle: str, config: Config, rng: random.Random) -> Assignment:
        return self.family.assign(bundle, self.leader.load, config, rng)

    def shed(self, config: Config, now: int, rng: random.Random) -> list[Unload]:
        return list(self.family.shed(self.leader.load, config, now, rng).unloaded)

    def moved(self, source: str, destination: str) -> None:
        """Nothing to do: the modular leader learns of moves from the next reports."""

    def split_done(self, done: SplitDecision) -> None:
        """The owner's split, with each child's measured load, reaches the leader's strategy."""
        self.family.split_done(done)

    def split_step(
        self,
        config: Config,
        counts: dict[str, int],
        reports_changed: bool,
        now: int,
        preview: SplitPreview | None = None,
    ) -> SplitStep:
        """After each ``updateAll`` (a tick where some broker wrote its report): the leader's split check, with
        the strategy's merges first when it merges (the namespaces' bundles are the cluster's: ``counts`` is
        their size; ``preview``: how a hot bundle's owner would split it, asked by the merge planner)."""
        if not reports_changed:
            return SplitStep()
        load = self.leader.split_load(config)
        if not self.can_merge:
            return SplitStep((), tuple(self.family.leader_splits(load, config, counts)))
        return self.family.leader_split_step(load, config, self.leader.cluster.namespaces(), self.leader.load, preview)


def make_manager(family: Family, leader: LeaderView) -> Manager:
    """The adapter of ``family``'s kind of load manager."""
    if isinstance(family, ExtensibleFamily):
        return ExtensibleManager(family)
    return ModularManager(family, leader)
