"""Owner lookups and any-broker assignment (``ServiceUnitStateChannelImpl#getOwnerAsync``,
``ExtensibleLoadManagerImpl#getOrSelectOwnerAsync``, ``#publishAssignEventAsync``), and the waits of the
initiators of an unload or a split (``UnloadManager``, ``SplitManager``).

**Owner.** ``lookup_owner`` decides on the mirror: answer (the owner is registered), empty (go and
assign), fail (deleted), or wait -- for ``Owned`` on the destination of an assignment or transfer, or for
the leader's cleanup when the owner is not registered.  A wait shares the key's future, completed by the
key's next handled record (``finish_wait``), or ends after
``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` with the owner "now" or a failure
(``lookup_timed_out``).

**Assignment** (any broker, no leader involved): when the owner is empty, the bundle must still be one of
its namespace's current bundles (a lookup racing a split re-maps its topic instead of resurrecting the
parent), then ``select`` (the registry's extensible placement) picks a broker and this broker publishes
``Assigning(dst = chosen)`` at the next version.  Whoever's ``Assigning`` wins the key's CAS, every
racing lookup waits for the same ``Owned`` (``lookup_before_assign``).  A bundle whose ``Owned`` record
vanished with the store's data is not assigned for up to a session timeout: its former owner re-creates the
record when it is back in a session, and a lookup answered with another broker in between would name a
second owner while the first still serves (``channel.vanished_owner``).  Owners are read only from a mirror
synced in the current session (``channel.wait_synced``): after a session change the mirror may still hold
records the store lost.
**One answer per bundle** (bundlewise's rule, stricter than Pulsar): a lookup names only an owner the
channel committed -- ``Owned`` or ``Splitting`` in the mirror, which follows the store's CAS order --
never the destination of an ``Assigning`` (Pulsar answers it at once; here the lookup waits for its
``Owned``), and a wait that ends without an owner assigns again within the in-flight wait instead of
failing the client.

**Initiators' waits** (``Completion``): an unload or transfer is done when ``unload_waiter_done``, a
split when ``split_waiter_done``, each within ``namespaceBundleUnloadingTimeoutMs``.  A record the
resolver rejected outright (the mirror holds an older or a different record at its version) fails at
once instead of waiting for the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from bundlewise.algorithms.extensible.channel import LookupAction, OwnerLookup, assign_record
from bundlewise.algorithms.extensible.channel.lookup import finish_wait, lookup_before_assign, lookup_timed_out
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel, wall_ms
from bundlewise.live.broker.outcomes import ServerError, Unavailable
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitStateData, java_long

Select = Callable[[str], "str | None"]


class OwnerResolver:
    def __init__(self, channel: ServiceUnitStateChannel, bundles: BundlesCache, select: Select) -> None:
        self.channel = channel
        self.bundles = bundles
        self.select = select
        self.assigned = 0

    async def _resolve(self, key: str, decision: OwnerLookup, *, check_registration: bool = True) -> str | None:
        registered = self.channel.registry.is_registered
        if decision.action is LookupAction.WAIT:
            fut = self.channel.waiter(key)
            timeout = (decision.timeout_ms or self.channel.settings.in_flight_wait_ms) / 1000
            try:
                completion = await asyncio.wait_for(asyncio.shield(fut), timeout)
                decision = finish_wait(completion, registered=registered, check_registration=check_registration)
            except TimeoutError:
                decision = lookup_timed_out(
                    self.channel.get(key), registered=registered, check_registration=check_registration
                )
        if decision.action is LookupAction.ANSWER:
            return decision.owner
        if decision.action is LookupAction.EMPTY:
            return None
        raise ServerError(f"Failed to look up the owner of {key}: {decision.reason}")

    async def get_owner(self, key: str) -> str | None:
        """``#getOwnerAsync``: the owner, None for no owner (an error for a deleted bundle).  Read from a mirror
        synced in the current session only (bundlewise's: Pulsar answers from its table view as it is)."""
        if not await self.channel.wait_synced(self.channel.settings.in_flight_wait_ms / 1000):
            raise Unavailable(f"The owner of {key} is not known yet: the channel is re-syncing; look it up again")
        return await self._resolve(key, self.channel.lookup_now(key))

    async def get_or_select_owner(self, key: str) -> str:
        """``#getOrSelectOwnerAsync``: the owner, assigning the bundle when it has none.

        Only an owner the channel committed (``Owned``/``Splitting``, read from the mirror after the
        key's CAS) is answered; a lookup whose ``Assigning`` lost the CAS waits for the winner's
        ``Owned``.  A wait that ends without an owner (the bundle was being unloaded, or an assignment
        was freed) assigns again instead of failing, until the in-flight wait is used up -- the client
        is not pushed into its retry backoff by a bundle that is merely between owners."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.channel.settings.in_flight_wait_ms / 1000
        while True:
            owner = await self.get_owner(key)
            vanished = self.channel.vanished_owner(key) if owner is None else None
            if vanished is not None:  # its former owner re-creates the record the store lost: wait for it
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.channel.waiter(key)), vanished[1])
                continue
            if owner is None:
                owner = await self._assign(key)
            if owner is not None:
                return owner
            if loop.time() >= give_up:
                raise ServerError(f"Failed to get or assign the owner for bundle:{key}")

    async def _assign(self, key: str) -> str | None:
        """Publish ``Assigning(dst = selected)`` and wait for whichever ``Assigning`` won the key's CAS to
        become ``Owned``; None when the key ended without an owner."""
        bundle = Bundle.parse(key)
        self.bundles.invalidate(bundle.namespace)  # the committed boundaries, not a cached view (a split elsewhere)
        current = await self.bundles.get(bundle.namespace)
        if bundle not in current.bundles.bundles:
            raise ServerError(f"Namespace bundle {key} is no longer one of its namespace's bundles: look it up again")
        chosen = self.select(key)
        if chosen is None:
            raise Unavailable(f"No broker was available to own {key}")
        await self.channel.publish(key, assign_record(self.channel.get(key), chosen, wall_ms()))
        self.assigned += 1
        registered = self.channel.registry.is_registered
        decision = lookup_before_assign(
            self.channel.get(key), registered=registered, in_flight_wait_ms=self.channel.settings.in_flight_wait_ms
        )
        return await self._resolve(key, decision, check_registration=False)


def rejected(mine: ServiceUnitStateData, current: ServiceUnitStateData | None) -> bool:
    """The mirror proves ``mine`` was not accepted: it holds a record of an older version, or another
    record at the same version."""
    if current is None or current == mine:
        return False
    return java_long(current.version_id - mine.version_id) <= 0


class Completion:
    """Futures of initiators waiting for a key to reach ``done`` (``UnloadManager``/``SplitManager#waitAsync``)."""

    def __init__(self, done: Callable[[ServiceUnitStateData | None], bool]) -> None:
        self.done = done
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    def expect(self, key: str) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(fut)
        return fut

    def forget(self, key: str, fut: asyncio.Future[None]) -> None:
        futures = self._waiting.get(key, [])
        if fut in futures:
            futures.remove(fut)
        if not futures:
            self._waiting.pop(key, None)

    def on_record(self, key: str, record: ServiceUnitStateData | None) -> None:
        if key in self._waiting and self.done(record):
            for fut in self._waiting.pop(key):
                if not fut.done():
                    fut.set_result(None)
