"""The source broker's split of a bundle (``ServiceUnitStateChannelImpl#handleSplitEvent``,
``#splitServiceUnitOnceAndRetry``), carrying out ``algorithms.extensible.channel.split.plan_split``.

When the channel shows ``Splitting(src = this broker)``, one attempt is: plan from the namespace's
bundles as the store holds them (``/admin/local-policies``, with the version read) and the mirror;
publish the children's claims ``Owned(dst = source, v = 1)`` (a claim racing another writer loses:
a new key must start at 1); write the namespace's new bundles with a compare-and-set at the version
read (``LocalPoliciesResources#setLocalPoliciesWithVersion``) unless a previous attempt already did;
publish the parent's ``Deleted``, which the source then tombstones.  A ``BadVersion`` on the bundles
write retries after 100 ms below 7 attempts (``should_retry_split``); any other failure leaves the
record ``Splitting`` for the leader's monitor to override once it is stuck.

The children are the record's ranges: with two of them the plan splits at their bounds
(``SPECIFIED_POSITIONS_DIVIDE_FORCE``); with more (an admin split at several positions) their inner
bounds are given as the fallback boundaries, so the namespace's bundles match the record either way.
Children stay owned in place; later shedding moves load.
"""

from __future__ import annotations

import asyncio
import logging

from bundlewise.algorithms.extensible.channel import plan_split
from bundlewise.algorithms.extensible.channel.settings import SPLIT_RETRY_DELAY_MS
from bundlewise.algorithms.extensible.channel.split import forced_positions, should_retry_split
from bundlewise.live.broker.extensible.channel import ServiceUnitStateChannel, wall_ms
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.store.errors import BadVersionError
from bundlewise.model.bundles import Bundle
from bundlewise.model.channel import ServiceUnitStateData
from bundlewise.model.errors import InputError

log = logging.getLogger(__name__)


class SplitExecutor:
    def __init__(self, channel: ServiceUnitStateChannel, bundles: BundlesCache) -> None:
        self.channel = channel
        self.bundles = bundles
        self.done = 0
        self.failed = 0

    async def run(self, key: str, record: ServiceUnitStateData) -> None:
        try:
            ok = await self._run(key, record)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("split of %s failed: %r", key, e)
            ok = False
        if ok:
            self.done += 1
        else:
            self.failed += 1

    async def _run(self, key: str, record: ServiceUnitStateData) -> bool:
        parent = Bundle.parse(key)
        try:
            children = [Bundle.parse(f"{parent.namespace}/{r}") for r in record.split_service_unit_to_dest_broker or {}]
        except InputError as e:
            log.warning("split of %s: bad child range: %s", key, e)
            return False
        attempts = 0
        while True:
            attempts += 1
            current = await self.bundles.get(parent.namespace)
            plan = plan_split(
                key,
                record,
                current.bundles,
                self.channel.items(),
                wall_ms(),
                fallback_boundaries=forced_positions(parent, children),
            )
            for child, claim in plan.claims:
                await self.channel.publish(child, claim)
            if plan.failure is not None:
                log.warning("split of %s failed: %s", key, plan.failure)
                return False
            assert plan.bundles is not None and plan.deleted is not None
            if not plan.metadata_done:
                try:
                    await self.bundles.write_split(parent.namespace, current.version, plan.bundles)
                except BadVersionError:
                    self.bundles.invalidate(parent.namespace)
                    if should_retry_split(attempts, True):
                        log.info("split of %s lost a race on the bundles (attempt %d); retrying", key, attempts)
                        await asyncio.sleep(SPLIT_RETRY_DELAY_MS / 1000)
                        continue
                    log.warning("split of %s: the bundles changed %d times in a row", key, attempts)
                    return False
            await self.channel.publish(key, plan.deleted)
            log.info("split %s into %s (%s)", key, ", ".join(c.range_name for c in children), plan.reason)
            return True
