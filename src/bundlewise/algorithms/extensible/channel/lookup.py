"""Who owns a bundle, as broker ``me`` answers from its view (``ServiceUnitStateChannelImpl#getOwnerAsync``).

The decision table, on the key's current record:

| state | answer |
|---|---|
| Owned | ``dst`` if registered (in ``/loadbalance/brokers``); else wait for the leader's cleanup |
| Splitting | ``src``, with the same check |
| Assigning / Releasing, ``me == dst`` | wait for ``Owned`` |
| Assigning / Releasing, ``me != dst`` | ``dst`` at once (nothing for a plain unload) |
| Init / Free | empty: go and assign |
| Deleted | error "is deleted" |

* ``me != dst`` answers at once because the source must not block lookups while it unloads.  With
  ``wait_in_flight`` (what the live brokers use: bundlewise's one-answer rule) it waits for ``Owned``
  like ``me == dst`` does: an ``Assigning`` destination is a candidate, not yet an owner, and a client
  must only ever be told the owner the channel committed.
* When ``me`` is not registered itself (metadata trouble), the recorded owner is answered without the
  activeness check, as a best effort (``#getActiveOwnerAsync``).
* A channel that is ``Disabled`` or ``Closed`` (the broker is shutting down) answers the recorded owner
  of an Owned or Splitting record without the registration check (Pulsar since apache PR #24770): its
  registry view is no longer maintained, so waiting for a cleanup would only stall the lookup.
* A wait (``#dedupeGetOwnerRequest``/``#deferGetOwner``; concurrent lookups of one key share it) ends
  with the ``LookupCompletion`` of the next handled record (``finish_wait``), or after
  ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` with the owner "now" -- Owned, Splitting,
  Init or Free -- or a failure when still in flight (``lookup_timed_out``).  An answered owner is
  checked for registration once more.
* ``publishAssignEventAsync`` waits the same way but answers an already-present, registered owner at
  once and does not re-check the owner it is finally given (``lookup_before_assign``,
  ``check_registration=False``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from bundlewise.algorithms.extensible.channel.reactions import LookupCompletion, LookupOutcome
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData, state_of

S = ServiceUnitState
Registered = Callable[[str], bool]


class ChannelState(StrEnum):
    """``ServiceUnitStateChannelImpl.ChannelState``: a channel's life cycle."""

    Closed = "Closed"
    Constructed = "Constructed"
    LeaderElectionServiceStarted = "LeaderElectionServiceStarted"
    Started = "Started"
    Disabled = "Disabled"


INACTIVE_CHANNEL = frozenset({ChannelState.Disabled, ChannelState.Closed})


class LookupAction(StrEnum):
    ANSWER = "answer"
    WAIT = "wait"
    EMPTY = "empty"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class OwnerLookup:
    action: LookupAction
    owner: str | None = None
    timeout_ms: int | None = None  # how long a WAIT may last
    reason: str = ""


def owner_now(data: ServiceUnitStateData | None) -> tuple[bool, str | None]:
    """``#getOwnerNow``: ``(stable, owner)`` -- Owned gives ``dst``, Splitting ``src``, Init/Free nobody;
    any other state has no stable owner yet (Pulsar's ``null``)."""
    state = state_of(data)
    if data is not None and state is S.Owned:
        return True, data.dst_broker
    if data is not None and state is S.Splitting:
        return True, data.source_broker
    return state in (S.Init, S.Free), None


def _wait(reason: str, wait_ms: int) -> OwnerLookup:
    return OwnerLookup(LookupAction.WAIT, timeout_ms=wait_ms, reason=reason)


def _dedupe(data: ServiceUnitStateData | None, registered: Registered, wait_ms: int) -> OwnerLookup:
    _, owner = owner_now(data)
    if owner is not None:
        if registered(owner):
            return OwnerLookup(LookupAction.ANSWER, owner, reason=f"owner {owner} is registered")
        return _wait(f"owner {owner} is not registered: wait for the leader's cleanup", wait_ms)
    return _wait("the ownership is in flight: wait for Owned", wait_ms)


def _active(
    candidate: str | None,
    data: ServiceUnitStateData,
    registered: Registered,
    self_registered: bool,
    wait_ms: int,
) -> OwnerLookup:
    if candidate is None:
        return OwnerLookup(LookupAction.FAIL, reason=f"{data.state} record without its broker")
    if not self_registered:
        return OwnerLookup(LookupAction.ANSWER, candidate, reason="this broker is not registered: best effort")
    return _dedupe(data, registered, wait_ms)


def lookup_owner(
    me: str,
    service_unit: str,
    data: ServiceUnitStateData | None,
    *,
    registered: Registered,
    self_registered: bool = True,
    in_flight_wait_ms: int = 30_000,
    channel_state: ChannelState = ChannelState.Started,
    wait_in_flight: bool = False,
) -> OwnerLookup:
    """``#getOwnerAsync``: the decision table above."""
    state = state_of(data)
    if data is None or state in (S.Init, S.Free):
        return OwnerLookup(LookupAction.EMPTY, reason=f"{state}: no owner, go and assign")
    if channel_state in INACTIVE_CHANNEL and state in (S.Owned, S.Splitting):
        owner = data.dst_broker if state is S.Owned else data.source_broker
        if owner is not None:
            return OwnerLookup(LookupAction.ANSWER, owner, reason=f"the channel is {channel_state}: recorded owner")
    if state is S.Owned:
        return _active(data.dst_broker, data, registered, self_registered, in_flight_wait_ms)
    if state is S.Splitting:
        return _active(data.source_broker, data, registered, self_registered, in_flight_wait_ms)
    if state in (S.Assigning, S.Releasing):
        if data.dst_broker is not None and data.dst_broker == me:
            return _active(data.dst_broker, data, registered, self_registered, in_flight_wait_ms)
        if data.dst_broker is None:
            if wait_in_flight:
                return _wait("being unloaded: wait for Free, then assign", in_flight_wait_ms)
            return OwnerLookup(LookupAction.EMPTY, reason="being unloaded: no destination yet")
        if wait_in_flight:
            return _wait(f"moving to {data.dst_broker}: wait for Owned", in_flight_wait_ms)
        return OwnerLookup(LookupAction.ANSWER, data.dst_broker, reason=f"moving to {data.dst_broker}")
    return OwnerLookup(LookupAction.FAIL, reason=f"{service_unit} is deleted.")


def _checked(owner: str, registered: Registered, check: bool) -> OwnerLookup:
    if not check or registered(owner):
        return OwnerLookup(LookupAction.ANSWER, owner, reason=f"owner {owner}")
    return OwnerLookup(LookupAction.FAIL, reason=f"The new owner {owner} is inactive.")


def finish_wait(
    completion: LookupCompletion, *, registered: Registered, check_registration: bool = True
) -> OwnerLookup:
    """A waiting lookup completed by a handled record (``Reaction.lookups``)."""
    if completion.outcome is LookupOutcome.OWNER:
        if completion.owner is None:
            return OwnerLookup(LookupAction.EMPTY, reason="completed without an owner")
        return _checked(completion.owner, registered, check_registration)
    if completion.outcome is LookupOutcome.NO_OWNER:
        return OwnerLookup(LookupAction.EMPTY, reason="no owner")
    return OwnerLookup(LookupAction.FAIL, reason=completion.error or "failed")


def lookup_timed_out(
    data: ServiceUnitStateData | None, *, registered: Registered, check_registration: bool = True
) -> OwnerLookup:
    """A wait that reached the in-flight timeout: answer the stable owner now, or fail."""
    stable, owner = owner_now(data)
    if stable and owner is None:
        return OwnerLookup(LookupAction.EMPTY, reason="timed out; no owner now")
    if owner is not None:
        return _checked(owner, registered, check_registration)
    return OwnerLookup(LookupAction.FAIL, reason=f"timed out waiting for the owner; still {state_of(data)}")


def lookup_before_assign(
    data: ServiceUnitStateData | None, *, registered: Registered, in_flight_wait_ms: int = 30_000
) -> OwnerLookup:
    """``publishAssignEventAsync``'s own wait (it publishes ``Assigning`` in any case)."""
    return _dedupe(data, registered, in_flight_wait_ms)


def is_owner(
    target: str,
    me: str,
    service_unit: str,
    data: ServiceUnitStateData | None,
    *,
    registered: Registered,
    self_registered: bool = True,
    channel_state: ChannelState = ChannelState.Started,
) -> bool:
    """``#isOwner(serviceUnit, target)`` on broker ``me``: the lookup answers ``target`` right away."""
    d = lookup_owner(
        me, service_unit, data, registered=registered, self_registered=self_registered, channel_state=channel_state
    )
    return d.action is LookupAction.ANSWER and d.owner == target


def assigned_broker(data: ServiceUnitStateData | None) -> str | None:
    """``#getAssigned``: the broker the key is (being) assigned to, without waiting."""
    state = state_of(data)
    if data is None:
        return None
    if state in (S.Owned, S.Assigning, S.Releasing):
        return data.dst_broker
    if state is S.Splitting:
        return data.source_broker
    return None
