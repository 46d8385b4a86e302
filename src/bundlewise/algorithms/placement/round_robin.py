"""``RoundRobinBrokerSelector`` (Pulsar ``impl.RoundRobinBrokerSelector``).

State: a counter and a cached copy of a candidate list.  Each call with candidates ``C``:

1. ``C`` empty -> no broker, and the counter does not move.
2. ``index = counter mod |C|``, then the counter advances (from ``2^31 - 1`` it wraps to 0).
3. The cache is re-copied from ``C`` when its size differs from ``|C|`` or it is too short for
   ``index``; the pick is ``cache[index]``.  If that broker is no longer a candidate, the cache is
   re-copied and the pick taken again at the same index.

So the rotation follows the cached order and survives a reordering of the same candidates.
Deterministic: ``best == (selected,)``; the ``rng`` is not used.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bundlewise.algorithms.placement.base import Selection
from bundlewise.config import Config
from bundlewise.model.load import BundleData, LoadData

MAX_INT = 2**31 - 1


class RoundRobinBrokerSelector:
    name = "RoundRobinBrokerSelector"

    def __init__(self) -> None:
        self.count = 0
        self.cache: tuple[str, ...] = ()

    def next_index(self, size: int) -> int:
        index = self.count % size
        self.count = 0 if self.count == MAX_INT else self.count + 1
        return index

    def select(
        self,
        candidates: Sequence[str],
        bundle: str,
        bundle_data: BundleData,
        load: LoadData,
        config: Config,
        rng: random.Random,
    ) -> Selection:
        size = len(candidates)
        if size == 0:
            return Selection.none()
        index = self.next_index(size)
        cache = self.cache
        if len(cache) <= index or len(cache) != size:
            cache = tuple(candidates)
        selected = cache[index]
        if selected not in candidates:
            cache = tuple(candidates)
            selected = cache[index]
        self.cache = cache
        return Selection(selected, (selected,))
