"""The source broker's split of a bundle (``ServiceUnitStateChannelImpl#splitServiceUnit`` and
``#splitServiceUnitOnceAndRetry``), as a plan its owner carries out step by step.

1. Claim the children (``#ownChildBundles``): every child key **absent** from this broker's view gets
   ``Owned(dst = source, v = 1)``; present ones are left alone.  A second attempt claims nothing new,
   and a claim racing another writer loses on the metadata store (a new key must start at 1).
2. The namespace's new bundles (``#getSplitNamespaceBundles``): when the parent is still one of the
   namespace's bundles, split it -- with exactly two children in the record, at the children's bounds
   with the forced specified-positions algorithm (``SPECIFIED_POSITIONS_DIVIDE_FORCE``: the bounds
   strictly inside the parent), otherwise at the boundaries of the configured algorithm.  When the
   parent is gone but every child is present, a previous attempt already wrote them: reuse.
   Otherwise the split fails (``ServiceUnitNotReadyException``).
3. Write them (local policies with a version check, then the policies) -- the owner's I/O.
4. Publish ``Deleted(src)`` for the parent at the split record's version + 1; the source tombstones it
   when it sees it (``reactions``), which completes the split waiter.

A ``BadVersion`` while writing the bundles retries the whole plan after 100 ms while fewer than
``BUNDLE_SPLIT_RETRY_LIMIT`` (7) attempts were made (``should_retry_split``).  Children stay owned in
place by the source; moving load is left to later shedding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bundlewise.algorithms.extensible.channel.settings import BUNDLE_SPLIT_RETRY_LIMIT
from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.channel import VERSION_ID_INIT, ServiceUnitState, ServiceUnitStateData, next_version_id
from bundlewise.model.errors import InputError


@dataclass(frozen=True, slots=True)
class SplitPlan:
    parent: str
    claims: tuple[tuple[str, ServiceUnitStateData], ...] = ()
    already_claimed: tuple[str, ...] = ()
    bundles: NamespaceBundles | None = None  # the namespace's bundles to write
    metadata_done: bool = False  # a previous attempt already wrote them
    deleted: ServiceUnitStateData | None = None  # the parent's Deleted, published last
    failure: str | None = None
    reason: str = ""


def forced_positions(parent: Bundle, children: Sequence[Bundle]) -> list[int]:
    """``SPECIFIED_POSITIONS_DIVIDE_FORCE`` on the children's bounds: those strictly inside the parent."""
    points = {b for c in children for b in (c.lower, c.upper)}
    return sorted(p for p in points if parent.lower < p < parent.upper)


def plan_split(
    parent_key: str,
    data: ServiceUnitStateData,
    current: NamespaceBundles,
    view: Mapping[str, ServiceUnitStateData | None],
    now: int,
    *,
    fallback_boundaries: Sequence[int] | None = None,
) -> SplitPlan:
    """Plan one attempt of the split of ``parent_key`` recorded by ``data`` (a ``Splitting`` record).

    ``current`` is the namespace's bundles as the metadata store holds them now, ``view`` this broker's
    view of the channel (child keys looked up by their canonical names), ``fallback_boundaries`` what
    the configured split algorithm gives for the parent when the record does not name two children.
    """
    parent = Bundle.parse(parent_key)
    source = data.source_broker
    ranges = list(data.split_service_unit_to_dest_broker or {})
    if data.state is not ServiceUnitState.Splitting or source is None:
        return SplitPlan(parent.name, failure=f"not a split record: {data.state} from {source}")
    try:
        children = [Bundle.parse(f"{parent.namespace}/{r}") for r in ranges]
    except InputError as e:
        return SplitPlan(parent.name, failure=f"bad child range: {e}")
    if not children:
        return SplitPlan(parent.name, failure="the split record names no children")
    claims = tuple(
        (c.name, ServiceUnitStateData(ServiceUnitState.Owned, source, None, timestamp=now, version_id=VERSION_ID_INIT))
        for c in children
        if view.get(c.name) is None
    )
    already = tuple(c.name for c in children if view.get(c.name) is not None)
    base = SplitPlan(parent.name, claims, already)
    existing = current.bundles
    if parent not in existing:
        missing = [c.name for c in children if c not in existing]
        if missing:
            return replace(base, failure=f"Namespace bundles do not contain the child bundle: {missing[0]}")
        bundles, done, why = current, True, "the namespace's bundles already hold the children"
    else:
        if len(children) == 2:
            positions, how = forced_positions(parent, children), "at the children's bounds"
        else:
            positions, how = list(fallback_boundaries or []), "at the configured algorithm's boundaries"
        if not positions:
            return replace(base, failure=f"no split boundary inside {parent.name}")
        try:
            bundles = current.split(parent, positions)[0]
        except InputError as e:
            return replace(base, failure=str(e))
        done, why = False, f"split {how}"
    deleted = ServiceUnitStateData(
        ServiceUnitState.Deleted, None, source, timestamp=now, version_id=next_version_id(data)
    )
    return replace(base, bundles=bundles, metadata_done=done, deleted=deleted, reason=why)


def should_retry_split(attempts: int, bad_version: bool) -> bool:
    """Retry after a failed attempt (``attempts`` made so far) only on ``BadVersion``, below the limit."""
    return bad_version and attempts < BUNDLE_SPLIT_RETRY_LIMIT
