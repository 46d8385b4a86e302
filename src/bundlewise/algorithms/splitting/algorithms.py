"""WHERE to split a bundle: Pulsar's four ``NamespaceBundleSplitAlgorithm`` implementations.

Each returns the split boundaries (sorted, inside the bundle) or ``None`` when it declines to split.

* ``range_equally_divide``: ``[lower + (upper - lower) // 2]``; ignores topics.
* ``topic_count_equally_divide``: with n > 1 topic hashes sorted, ``s = h[max(n//2 - 1, 0)]``,
  ``e = h[n//2]``, boundary ``s + (e - s) // 2``.
* ``specified_positions_divide``: positions are required (else an error); with <= 1 topic no split;
  otherwise the sorted positions strictly inside ``(lower, upper)``, ``None`` if none remain.
* ``flow_or_qps_equally_divide``: topics with traffic, keyed by hash (a later topic wins a collision);
  no split below ``max * (1 + d)`` on both rate and throughput; otherwise walk the hashes in order,
  accumulating, and cut at ``h[i-1] + (h[i] - h[i-1]) // 2 + 1`` each time the next topic would push
  the accumulated rate above ``maxRate`` or throughput above ``maxBytes`` -- possibly several cuts.

``measured_children`` sums the topics' rates into the children the boundaries make: what each child
carries at the split, from the owner's per-topic stats (the data ``flow_or_qps_equally_divide`` cuts on),
so that placing a child need not assume it carries its range's share of the parent.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bundlewise.config import Config
from bundlewise.config.keys_modular import SPLIT_ALGORITHMS
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.names import full_topic_name


@dataclass(frozen=True, slots=True)
class TopicLoad:
    """A topic of the bundle with its current rates (all optional, 0 when absent).

    ``hash_code`` is the topic's hash when the caller already has it (a pipeline row, a test vector
    such as the Pulsar documentation's); otherwise it is computed from the name.
    """

    name: str
    msgRateIn: float = 0.0
    msgRateOut: float = 0.0
    msgThroughputIn: float = 0.0
    msgThroughputOut: float = 0.0
    hash_code: int | None = None

    @property
    def hash(self) -> int:
        if self.hash_code is not None:
            return self.hash_code
        return crc32_hash(full_topic_name(self.name))


@dataclass(frozen=True, slots=True)
class SplitRequest:
    bundle: Bundle
    topics: Sequence[TopicLoad] = ()
    positions: Sequence[int] | None = None


def range_equally_divide(req: SplitRequest, config: Config) -> list[int] | None:
    b = req.bundle
    return [b.lower + (b.upper - b.lower) // 2]


def topic_count_equally_divide(req: SplitRequest, config: Config) -> list[int] | None:
    if len(req.topics) <= 1:
        return None
    hashes = sorted(t.hash for t in req.topics)
    n = len(hashes)
    start, end = hashes[max(n // 2 - 1, 0)], hashes[n // 2]
    return [start + (end - start) // 2]


def specified_positions_divide(req: SplitRequest, config: Config) -> list[int] | None:
    if not req.positions:
        raise InputError("specified_positions_divide needs at least one position", field="--positions")
    if len(req.topics) <= 1:
        return None
    b = req.bundle
    inside = [p for p in sorted(req.positions) if b.lower < p < b.upper]
    return inside or None


def flow_or_qps_equally_divide(req: SplitRequest, config: Config) -> list[int] | None:
    if len(req.topics) <= 1:
        return None
    limits = config.view(SplitSettings)
    max_rate, max_bytes, tolerance = limits.max_msg_rate, limits.max_bandwidth_bytes, limits.flow_tolerance
    by_hash: dict[int, tuple[float, float]] = {}
    for t in req.topics:
        rate = t.msgRateIn + t.msgRateOut
        tput = t.msgThroughputIn + t.msgThroughputOut
        if rate <= 0 and tput <= 0:
            continue
        by_hash[t.hash] = (rate, tput)
    if len(by_hash) < 2:
        return None
    total_rate = sum(r for r, _ in by_hash.values())
    total_tput = sum(t for _, t in by_hash.values())
    if total_rate < max_rate * tolerance and total_tput < max_bytes * tolerance:
        return None
    hashes = sorted(by_hash)
    cuts: list[int] = []
    acc_rate, acc_tput = by_hash[hashes[0]]
    for prev, h in itertools.pairwise(hashes):
        rate, tput = by_hash[h]
        if acc_rate + rate > max_rate or acc_tput + tput > max_bytes:
            cuts.append(prev + (h - prev) // 2 + 1)
            acc_rate, acc_tput = rate, tput
        else:
            acc_rate += rate
            acc_tput += tput
    return cuts or None


SplitAlgorithm = Callable[[SplitRequest, Config], "list[int] | None"]

ALGORITHMS: dict[str, SplitAlgorithm] = {
    "range_equally_divide": range_equally_divide,
    "topic_count_equally_divide": topic_count_equally_divide,
    "specified_positions_divide": specified_positions_divide,
    "flow_or_qps_equally_divide": flow_or_qps_equally_divide,
}
assert tuple(ALGORITHMS) == SPLIT_ALGORITHMS


def get_algorithm(name: str) -> SplitAlgorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise InputError(
            f"unknown split algorithm {name!r}; expected one of {', '.join(ALGORITHMS)}", field="--algorithm"
        ) from None


def resolve_algorithm_name(name: str | None, config: Config) -> str:
    """Pulsar's fallback: an absent or unknown name is the configured default, else range_equally_divide."""
    if name in ALGORITHMS:
        return str(name)
    default = config.view(SplitSettings).default_algorithm
    return default if default in ALGORITHMS else "range_equally_divide"


def split_bundle(algorithm: str, req: SplitRequest, config: Config) -> tuple[list[int], list[Bundle]] | None:
    """Boundaries and children of ``req.bundle``, or ``None`` when the algorithm declines."""
    if not req.bundle.can_split:
        return None
    boundaries = get_algorithm(algorithm)(req, config)
    if not boundaries:
        return None
    return sorted(boundaries), req.bundle.split_at(boundaries)


def measured_children(children: Sequence[Bundle], topics: Sequence[TopicLoad]) -> tuple[NamespaceBundleStats, ...]:
    """Each child's load at the split: the sum of the rates of the topics whose hash it holds, and their count
    (children as ``Bundle.split_at`` makes them: adjacent, sorted; a topic outside them all is ignored)."""
    lowers = [c.lower for c in children]
    sums = [[0.0, 0.0, 0.0, 0.0, 0] for _ in children]
    for t in topics:
        h = t.hash
        i = bisect.bisect_right(lowers, h) - 1
        if i < 0 or not children[i].includes_hash(h):
            continue
        acc = sums[i]
        acc[0] += t.msgRateIn
        acc[1] += t.msgThroughputIn
        acc[2] += t.msgRateOut
        acc[3] += t.msgThroughputOut
        acc[4] += 1
    return tuple(
        NamespaceBundleStats(
            msgRateIn=a[0], msgThroughputIn=a[1], msgRateOut=a[2], msgThroughputOut=a[3], topics=int(a[4])
        )
        for a in sums
    )
