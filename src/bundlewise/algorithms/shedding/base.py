"""The shedding interface (Pulsar ``LoadSheddingStrategy#findBundlesForUnloading``).

A strategy returns its plan as frozen ``Unload`` decisions, in selection order, each with a
reason a person can read; strategies with state (histories, hit counters) keep it on the instance,
exactly where Pulsar's Java object keeps it.  ``now`` (ms) is passed in; the wall clock is never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bundlewise.config import Config
from bundlewise.model.load import LoadData


@dataclass(frozen=True, slots=True)
class Unload:
    broker: str
    bundle: str
    reason: str
    destination: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"broker": self.broker, "bundle": self.bundle, "destination": self.destination, "reason": self.reason}


class SheddingStrategy(Protocol):
    name: str

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]: ...

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None: ...
