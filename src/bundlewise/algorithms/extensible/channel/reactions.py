"""How broker ``me`` reacts to a record its view of the channel accepted (``ServiceUnitStateChannelImpl#handleEvent``).

Every broker sees every accepted record (or ``None`` when the key was tombstoned) and dispatches on
its state; the result is a ``Reaction`` its owner applies in this order: complete the waiting owner
lookups of the key, close the bundle, then publish the next record or tombstone the key (or run the
split plan).  Next records carry ``versionId + 1`` of the handled record and ``timestamp = now``.

* ``Owned`` (``#handleOwnEvent``): waiting lookups get ``dst``.  ``me == dst``: the bundle is now owned
  here (``onNamespaceBundleOwned``).  ``me == src``: close with client disconnect when the record is
  forced (orphan cleanup) or a transfer (``dst`` and ``src`` both non-empty) with
  ``loadBalancerMultiPhaseBundleUnload`` -- clients learn the new owner from the close command.
* ``Assigning`` (``#handleAssignEvent``): ``me == dst`` publishes ``Owned(dst, src)``.
* ``Releasing`` (``#handleReleaseEvent``): ``me == src`` closes the bundle, then publishes
  ``Assigning(dst, src)`` for a transfer (clients kept connected with multi-phase unload, else
  disconnected) or ``Free(src)`` for an unload (clients disconnected).
* ``Splitting`` (``#handleSplitEvent``): ``me == src`` runs the split (``split.plan_split``).
* ``Free`` (``#handleFreeEvent``): waiting lookups get "no owner"; ``me == src`` and forced: close with
  disconnect, then tombstone.
* ``Deleted`` (``#handleDeleteEvent``): waiting lookups fail ("has been deleted"); ``me == src``
  tombstones the key.
* ``Init`` / no record (``#handleInitEvent``): waiting lookups get "no owner".
* A disabled channel (graceful shutdown, ``#disable``) ignores every non-forced record; the key's
  waiting lookups fail with ``ServiceUnitNotReadyException``.

``react_existing`` is ``#handleExisting`` (records found at start-up): an ``Owned`` record naming
``me`` re-registers the bundle as owned.  ``unload_waiter_done``/``split_waiter_done`` are when the
initiator's wait ends (``UnloadManager#handleEvent``, ``SplitManager#handleEvent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData, is_blank, next_version_id, state_of

S = ServiceUnitState


class LookupOutcome(StrEnum):
    OWNER = "owner"  # complete with this owner
    NO_OWNER = "no-owner"  # complete empty: go and assign
    FAILED = "failed"  # complete exceptionally


@dataclass(frozen=True, slots=True)
class LookupCompletion:
    """What happens to the owner lookups of the key waiting on this broker (if any)."""

    outcome: LookupOutcome
    owner: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Close:
    """``closeServiceUnit(bundle, disconnectClients)``: unload the bundle's topics from this broker."""

    disconnect_clients: bool


@dataclass(frozen=True, slots=True)
class Reaction:
    service_unit: str
    state: ServiceUnitState
    lookups: LookupCompletion | None = None
    close: Close | None = None
    publish: ServiceUnitStateData | None = None
    tombstone: bool = False
    split: bool = False
    owned_here: bool = False  # onNamespaceBundleOwned: this broker now serves the bundle
    reason: str = ""


def is_transfer(data: ServiceUnitStateData | None) -> bool:
    """``isTransferCommand(data)``: destination and source both non-empty."""
    return data is not None and bool(data.dst_broker) and bool(data.source_broker)


def react(
    me: str,
    service_unit: str,
    data: ServiceUnitStateData | None,
    now: int,
    *,
    multi_phase_unload: bool = True,
    channel_disabled: bool = False,
) -> Reaction:
    """``#handleEvent`` for broker ``me`` and the accepted record ``data`` (``None``: tombstoned)."""
    state = state_of(data)
    if channel_disabled and (data is None or not data.force):
        return Reaction(
            service_unit,
            state,
            lookups=LookupCompletion(
                LookupOutcome.FAILED,
                error=f"ServiceUnitNotReady: cancel the lookup request for {service_unit} when receiving {state}",
            ),
            reason="channel disabled: non-forced records are ignored",
        )
    if data is None:
        return Reaction(service_unit, state, LookupCompletion(LookupOutcome.NO_OWNER), reason="tombstoned: no owner")
    dst, src = data.dst_broker, data.source_broker
    handler = {
        S.Owned: _own,
        S.Assigning: _assign,
        S.Releasing: _release,
        S.Splitting: _split,
        S.Free: _free,
        S.Deleted: _delete,
        S.Init: _init,
    }[state]
    return handler(me, service_unit, data, dst, src, now, multi_phase_unload)


def _own(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    lookups = LookupCompletion(LookupOutcome.OWNER, owner=dst)
    if dst is not None and dst == me:
        return Reaction(su, data.state, lookups, owned_here=True, reason="owned by this broker")
    if src is not None and src == me:
        if data.force:
            return Reaction(su, data.state, lookups, Close(True), reason="forced away from this broker: disconnect")
        if is_transfer(data) and mp:
            return Reaction(
                su, data.state, lookups, Close(True), reason=f"transferred to {dst}: disconnect, clients told the owner"
            )
        return Reaction(su, data.state, lookups, reason="was the source; already closed when releasing")
    return Reaction(su, data.state, lookups, reason=f"owned by {dst}")


def _assign(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    if dst is not None and dst == me:
        nxt = ServiceUnitStateData(S.Owned, dst, src, timestamp=now, version_id=next_version_id(data))
        return Reaction(su, data.state, publish=nxt, reason="assigned to this broker: take ownership")
    return Reaction(su, data.state, reason=f"being assigned to {dst}")


def _release(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    if src is None or src != me:
        return Reaction(su, data.state, reason=f"being released by {src}")
    v = next_version_id(data)
    if is_transfer(data):
        nxt = ServiceUnitStateData(S.Assigning, dst, src, timestamp=now, version_id=v)
        why = "keep clients connected until the destination owns it" if mp else "disconnect clients now"
        return Reaction(su, data.state, close=Close(not mp), publish=nxt, reason=f"transfer to {dst}: {why}")
    nxt = ServiceUnitStateData(S.Free, None, src, timestamp=now, version_id=v)
    return Reaction(su, data.state, close=Close(True), publish=nxt, reason="unload: disconnect clients, then free")


def _split(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    if src is not None and src == me:
        return Reaction(su, data.state, split=True, reason="this broker splits the bundle")
    return Reaction(su, data.state, reason=f"being split by {src}")


def _free(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    lookups = LookupCompletion(LookupOutcome.NO_OWNER)
    if src is not None and src == me and data.force:
        return Reaction(
            su, data.state, lookups, Close(True), tombstone=True, reason="freed by cleanup: close, then tombstone"
        )
    return Reaction(su, data.state, lookups, reason="free: no owner")


def _delete(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    lookups = LookupCompletion(LookupOutcome.FAILED, error=f"{su} has been deleted.")
    if src is not None and src == me:
        return Reaction(su, data.state, lookups, tombstone=True, reason="split parent deleted: tombstone it")
    return Reaction(su, data.state, lookups, reason="deleted by a split")


def _init(
    me: str, su: str, data: ServiceUnitStateData, dst: str | None, src: str | None, now: int, mp: bool
) -> Reaction:
    return Reaction(su, data.state, LookupCompletion(LookupOutcome.NO_OWNER), reason="Init: no owner")


def react_existing(me: str, service_unit: str, data: ServiceUnitStateData | None) -> Reaction:
    """``#handleExisting``: only re-registers bundles owned by ``me``; nothing is published."""
    state = state_of(data)
    if data is not None and state is S.Owned and data.dst_broker == me:
        return Reaction(service_unit, state, owned_here=True, reason="found owned by this broker at start-up")
    return Reaction(service_unit, state, reason="existing record: nothing to do")


def unload_waiter_done(data: ServiceUnitStateData | None) -> bool:
    """``UnloadManager#handleEvent``: an unload or transfer is complete on ``Owned`` (of the transfer),
    on a non-forced ``Free`` or on the tombstone; an assignment's ``Assigning``/``Owned`` (no source) is
    not the unload's."""
    state = state_of(data)
    if data is not None and state in (S.Owned, S.Assigning) and is_blank(data.source_broker):
        return False
    if state is S.Free:
        return data is not None and not data.force
    return state in (S.Init, S.Owned)


def split_waiter_done(data: ServiceUnitStateData | None) -> bool:
    """``SplitManager#handleEvent``: a split is complete when the parent is tombstoned."""
    return data is None or data.state is S.Init
