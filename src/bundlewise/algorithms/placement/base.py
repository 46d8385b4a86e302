"""The placement interface (Pulsar ``ModularLoadManagerStrategy#selectBroker``).

A strategy is called on an ordered candidate list and returns a ``Selection``: the chosen broker
(or ``None`` when there is no candidate) and ``best``, every broker it would have picked from at
random, so random tie-breaks are checkable (``place``'s ``best``, docs/commands.md).  Random choices use
the ``rng`` passed in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bundlewise.config import Config
from bundlewise.model.load import BundleData, LoadData


@dataclass(frozen=True, slots=True)
class Selection:
    selected: str | None
    best: tuple[str, ...] = ()

    @classmethod
    def none(cls) -> Selection:
        return cls(None, ())


class PlacementStrategy(Protocol):
    name: str

    def select(
        self,
        candidates: Sequence[str],
        bundle: str,
        bundle_data: BundleData,
        load: LoadData,
        config: Config,
        rng: random.Random,
    ) -> Selection: ...
