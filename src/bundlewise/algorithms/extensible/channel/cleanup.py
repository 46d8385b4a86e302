"""Orphan cleanup after a broker's registration disappears (``ServiceUnitStateChannelImpl#doCleanup``).

**Metadata health** (``#handleMetadataSessionEvent``, ``#getMetadataState``): only ``SessionLost`` and
``SessionReestablished`` are remembered, with their time; a channel starts as if re-established at 0.
Stable = re-established more than 180 s ago; Jittery = re-established 180 s ago or less; Unstable =
the session was lost.

**A broker's registration deleted** (``#handleBrokerDeletionEvent``): only the channel owner acts.
Stable schedules the cleanup at once, Jittery after 180 s, Unstable not at all (owners keep serving;
counted as skipped).  One pending job per broker; none while the channel is disabled or closed.
**Re-created while pending** (``#handleBrokerCreationEvent``): health-check the broker (3 retries,
``min(1000, retry^2 x 50)`` ms apart) and cancel the job when it answers.

**The cleanup** (``#doCleanup``), given a channel owner and -- unless graceful -- a failed health check:
the orphans are the keys whose record is active with ``dst == broker`` or in flight with
``src == broker``.  Each gets a forced override at ``versionId + 1`` (``#overrideOwnership``), with the
new broker chosen by ``select(key, excluded={broker})``:

| orphan | override |
|---|---|
| Splitting | ``Splitting(dst = old dst, src = new, same children, force)``: the new source re-runs the split |
| Owned | ``Owned(dst = new, src = old dst unless it is the new one, force)``; graceful: ``Releasing`` (*) |
| Assigning / Releasing | ``Owned(dst = new, src = old src unless it is the new one, force)`` |
| Releasing, ``dst == broker``, another src | ``Releasing(dst = new, src = old src, force)`` (**) |
| no candidate | ``Free(src = old dst if Owned else old src, force)`` |

A **split in progress** keeps its children with it (a deviation from Pulsar, which selects a broker for each
orphan alone): when the dead broker was splitting a bundle, it may already have claimed the children
``Owned`` by itself.  The new source of the ``Splitting`` parent serves the parent's range until its own split
completes, so a child handed to any other broker would be served beside it; each orphan whose range lies inside
a ``Splitting`` orphan's goes to that parent's new source instead (``select`` is not asked for it).

(*) A graceful self-cleanup (a broker shutting down) hands each bundle it owns over with a forced
``Releasing`` when the new owner differs.  The old broker named as source closes its topics if it is
in fact alive.  Non-system orphans go first; after them the owner waits up to 5 s for them to leave
the broker, then overrides the ``pulsar/system`` orphans (closing the channel's own topics early would
destabilise the cluster), and finally removes the broker from both load-data stores.  ``select`` is
called once per orphan, in publish order.

(**) Deviation from Pulsar, which writes ``Owned(dst = new, src = old src, force)`` here: when the
*destination* of a transfer dies while the record is still ``Releasing``, the source is alive and may not
have seen the release yet -- it still serves the bundle.  A forced ``Owned`` would make the new broker
serve it at once while the source keeps serving until it reads the override: two live owners.  The
forced ``Releasing`` instead lets the source close first and write ``Assigning(new)``, as in any
transfer; should the source be dead as well, its own cleanup (in flight with ``src == broker``) moves
the bundle on.  ``Assigning`` needs no such care: the source writes it only after closing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum

from bundlewise.algorithms.extensible.channel.ownership import is_system_service_unit
from bundlewise.algorithms.extensible.channel.settings import (
    MAX_BROKER_HEALTH_CHECK_DELAY_MS,
    MAX_BROKER_HEALTH_CHECK_RETRY,
    MAX_CLEAN_UP_DELAY_S,
    MIN_CLEAN_UP_DELAY_S,
    OWNERSHIP_CLEAN_UP_MAX_WAIT_MS,
)
from bundlewise.model.channel import (
    ServiceUnitState,
    ServiceUnitStateData,
    is_active_state,
    is_blank,
    is_in_flight_state,
    next_version_id,
)
from bundlewise.model.ranges import parsed

S = ServiceUnitState
Selector = Callable[[str, frozenset[str]], "str | None"]
"""``selectAsync(bundle, excluded brokers)``: the new owner, or None when no broker is available."""


class SessionEvent(StrEnum):
    ConnectionLost = "ConnectionLost"
    Reconnected = "Reconnected"
    SessionLost = "SessionLost"
    SessionReestablished = "SessionReestablished"


class MetadataState(StrEnum):
    Stable = "Stable"
    Jittery = "Jittery"
    Unstable = "Unstable"


@dataclass(frozen=True, slots=True)
class SessionHistory:
    """The last remembered session event and when it happened (ms)."""

    event: SessionEvent = SessionEvent.SessionReestablished
    at: int = 0

    def record(self, event: SessionEvent | str, now: int) -> SessionHistory:
        """``#handleMetadataSessionEvent``: only SessionLost / SessionReestablished are remembered."""
        e = SessionEvent(event)
        if e in (SessionEvent.SessionLost, SessionEvent.SessionReestablished):
            return SessionHistory(e, now)
        return self

    def state(self, now: int) -> MetadataState:
        """``#getMetadataState``."""
        if self.event is SessionEvent.SessionReestablished:
            if now - self.at > MAX_CLEAN_UP_DELAY_S * 1000:
                return MetadataState.Stable
            return MetadataState.Jittery
        return MetadataState.Unstable


@dataclass(frozen=True, slots=True)
class DeletionDecision:
    """What the channel does about a broker whose registration was deleted."""

    schedule: bool
    delay_s: int | None = None
    reason: str = ""


def on_broker_deleted(
    broker: str,
    *,
    is_channel_owner: bool,
    metadata: MetadataState,
    pending: frozenset[str] = frozenset(),
    channel_disabled: bool = False,
) -> DeletionDecision:
    """``#handleBrokerDeletionEvent`` + ``#scheduleCleanup``."""
    if not is_channel_owner:
        return DeletionDecision(False, reason="not the channel owner: the leader cleans up")
    if metadata is MetadataState.Unstable:
        return DeletionDecision(False, reason="metadata session lost: skip, owners keep serving")
    if channel_disabled:
        return DeletionDecision(False, reason="channel disabled or closed")
    if broker in pending:
        return DeletionDecision(False, reason=f"a cleanup of {broker} is already pending")
    delay = MIN_CLEAN_UP_DELAY_S if metadata is MetadataState.Stable else MAX_CLEAN_UP_DELAY_S
    return DeletionDecision(True, delay, reason=f"metadata {metadata}: clean up {broker} after {delay} s")


def should_health_check_on_creation(broker: str, pending: frozenset[str]) -> bool:
    """``#handleBrokerCreationEvent``: a re-registered broker with a pending cleanup is health-checked,
    and the job cancelled when the check passes."""
    return broker in pending


def health_check_retry_delay_ms(retry: int) -> int | None:
    """Delay before health-check attempt ``retry + 1``; None once ``retry`` reached the limit."""
    if retry >= MAX_BROKER_HEALTH_CHECK_RETRY:
        return None
    return min(MAX_BROKER_HEALTH_CHECK_DELAY_MS, retry * retry * 50)


def is_orphan(broker: str, data: ServiceUnitStateData | None) -> bool:
    """Active with ``dst == broker``, or in flight with ``src == broker``."""
    if data is None:
        return False
    return (data.dst_broker == broker and is_active_state(data.state)) or (
        data.source_broker == broker and is_in_flight_state(data.state)
    )


def override_for(
    orphan: ServiceUnitStateData, selected: str | None, *, graceful: bool, now: int, dead: str | None = None
) -> ServiceUnitStateData:
    """``#overrideOwnership``'s forced record for ``orphan`` and the newly selected broker.

    ``dead`` is the broker being cleaned up (None for the monitor's stuck records).  A ``Releasing``
    orphan of a dead *destination* whose source is another broker is re-released to the new broker
    (``Releasing(dst = new, src = old source, force)``) instead of Pulsar's direct ``Owned``: the source
    is alive and may not have closed its topics yet, so only it may move the bundle on (module docstring).
    """
    v = next_version_id(orphan)
    source = orphan.source_broker
    source_alive = dead is not None and source is not None and not is_blank(source) and source != dead
    if orphan.state is S.Releasing and selected is not None and source_alive and selected != source:
        return ServiceUnitStateData(S.Releasing, selected, source, force=True, timestamp=now, version_id=v)
    if selected is None:
        src = orphan.dst_broker if orphan.state is S.Owned else orphan.source_broker
        return ServiceUnitStateData(S.Free, None, src, force=True, timestamp=now, version_id=v)
    if orphan.state is S.Splitting:
        return ServiceUnitStateData(
            S.Splitting,
            orphan.dst_broker,
            selected,
            split_service_unit_to_dest_broker=dict(orphan.split_service_unit_to_dest_broker or {}),
            force=True,
            timestamp=now,
            version_id=v,
        )
    if orphan.state is S.Owned:
        src = None if selected == orphan.dst_broker else orphan.dst_broker
        state = S.Releasing if graceful and src is not None else S.Owned
        return ServiceUnitStateData(state, selected, src, force=True, timestamp=now, version_id=v)
    src = None if selected == orphan.source_broker else orphan.source_broker
    return ServiceUnitStateData(S.Owned, selected, src, force=True, timestamp=now, version_id=v)


@dataclass(frozen=True, slots=True)
class Override:
    service_unit: str
    orphan: ServiceUnitStateData
    record: ServiceUnitStateData
    reason: str


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    broker: str
    graceful: bool
    overrides: tuple[Override, ...] = ()  # non-system orphans, published first
    system_overrides: tuple[Override, ...] = ()  # after waiting for the others to leave
    wait_ms: int = 0  # how long to wait for the non-system bundles to leave the broker
    remove_load_data: bool = False
    skipped: str | None = None


def _override(
    key: str, orphan: ServiceUnitStateData, broker: str, select: Selector, graceful: bool, now: int
) -> Override:
    selected = select(key, frozenset({broker}))
    record = override_for(orphan, selected, graceful=graceful, now=now, dead=broker)
    who = f"to {selected}" if selected is not None else "free: no broker available"
    return Override(key, orphan, record, f"{orphan.state} orphan of {broker} -> {record.state} {who}")


def _fixed(broker: str | None) -> Selector:
    """A selector that always names ``broker``."""
    return lambda key, excluded: broker


def _splitting_parent(key: str, splitting: Collection[str]) -> str | None:
    """The ``Splitting`` orphan whose range holds ``key``'s (another key), if any."""
    child = parsed(key)
    if child is None:
        return None
    return next((p for p in splitting if p != key and (b := parsed(p)) is not None and b.covers(child)), None)


def plan_cleanup(
    broker: str,
    view: Mapping[str, ServiceUnitStateData | None],
    select: Selector,
    now: int,
    *,
    graceful: bool = False,
    channel_owner_known: bool = True,
    broker_healthy: bool = False,
) -> CleanupPlan:
    """``#doCleanup(broker, graceful)`` over this (the leader's) view, in view order."""
    if not channel_owner_known:
        return CleanupPlan(broker, graceful, skipped="no channel owner: skip the cleanup")
    if not graceful and broker_healthy:
        return CleanupPlan(broker, graceful, skipped=f"{broker} passed the health check: skip the cleanup")
    orphans = [(k, v) for k, v in view.items() if v is not None and is_orphan(broker, v)]
    # the children a dead splitter claimed follow the parent's new source (module docstring); every other orphan
    # is selected in view order, as before
    parents = {k for k, v in orphans if v.state is S.Splitting}
    parent_of = {k: p for k, _ in orphans if (p := _splitting_parent(k, parents)) is not None}
    selected = {k: _override(k, v, broker, select, graceful, now) for k, v in orphans if k not in parent_of}
    sources = {k: o.record.source_broker if o.record.state is S.Splitting else None for k, o in selected.items()}
    overrides = dict(selected)
    for k, v in orphans:
        if k in parent_of:
            source = sources.get(parent_of[k])
            overrides[k] = _override(k, v, broker, _fixed(source), graceful, now)
    regular = tuple(overrides[k] for k, _ in orphans if not is_system_service_unit(k))
    system = tuple(overrides[k] for k, _ in orphans if is_system_service_unit(k))
    return CleanupPlan(
        broker,
        graceful,
        regular,
        system,
        wait_ms=OWNERSHIP_CLEAN_UP_MAX_WAIT_MS if orphans else 0,
        remove_load_data=True,
    )
