"""The modular shedding interface (Pulsar ``LoadSheddingStrategy#findBundlesForUnloading``).

A strategy returns its plan as ``model.decisions.Unload`` decisions, in selection order, each with a
reason a person can read; strategies with state (histories, hit counters) keep it on the instance,
exactly where Pulsar's Java object keeps it.  ``now`` (ms) is passed in; the wall clock is never read.
After a call that planned nothing, ``idle_reason`` says why with the figures and the settings that decided
it (what Pulsar's strategies only log at debug level); after a call that planned something it is empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bundlewise.config import Config
from bundlewise.model.decisions import Unload
from bundlewise.model.load import LoadData

__all__ = ["SheddingStrategy", "Unload"]


class SheddingStrategy(Protocol):
    name: str
    idle_reason: str

    def find_bundles_for_unloading(self, load: LoadData, config: Config, now: int) -> list[Unload]: ...

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None: ...
