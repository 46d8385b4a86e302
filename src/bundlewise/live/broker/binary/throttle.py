"""Dispatch throttling on real consumers: the limiters of ``algorithms.throttling`` gating the binary protocol's
dispatch (docs/throttling.md, docs/clients.md "Dispatch throttling").

A ``Throttles`` per broker holds the broker-level limiter (``dispatchThrottlingRateInMsg`` / ``InByte``) and
makes a ``SubscriptionGate`` for each subscription of a loaded topic: the topic's limiter (one per topic,
shared by its subscriptions) and the subscription's own, each created lazily when its effective rate is enabled
(``LimiterSlot``), their rates resolved topic > namespace > broker (``policy.resolve``) from the namespace's
policies in the metadata store (``topicDispatchRate`` / ``clusterDispatchRate`` / ``subscriptionDispatchRate``,
each keyed by cluster name, read when the topic loads) and ``broker.conf``.

A subscription dispatches in *reads*, as Pulsar's dispatchers do: each read is sized by ``read_sizing.size_read``
from the consumers' permits, ``dispatcherMaxReadBatchSize``, ``dispatcherMaxReadSizeBytes`` and the limiters in
order broker -> topic -> subscription (only when ``dispatchThrottlingOnNonBacklogConsumerEnabled`` or the cursor is
backlogged: ``managedLedgerCursorBackloggedThreshold`` entries or more); a level with no quota left skips the read
and the subscription tries again ``MESSAGE_RATE_BACKOFF_MS`` (1 s) later.  What a read delivered is charged to
every limiter afterwards (entries instead of messages with ``dispatchThrottlingOnBatchMessageEnabled``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from bundlewise.algorithms.throttling.clock import SystemClock
from bundlewise.algorithms.throttling.limiter import DispatchRateLimiter, LimiterSlot, implementation_of
from bundlewise.algorithms.throttling.policy import DispatchRate, Level, Policies, resolve
from bundlewise.algorithms.throttling.read_sizing import (
    MESSAGE_RATE_BACKOFF_MS,
    charge_delivery,
    size_read,
    throttling_applies,
)
from bundlewise.config import Config
from bundlewise.config.views import DispatchSettings
from bundlewise.model.errors import InputError

log = logging.getLogger(__name__)
BACKLOGGED_THRESHOLD = 1000  # managedLedgerCursorBackloggedThreshold
NAMESPACE_KEYS = {
    "namespace_topic": "topicDispatchRate",
    "namespace_cluster": "clusterDispatchRate",
    "namespace_subscription": "subscriptionDispatchRate",
}


def namespace_policies(raw: bytes | None, cluster: str, where: str) -> Policies:
    """The dispatch rates of a namespace's policies document for ``cluster`` (unreadable: none, logged)."""
    if not raw:
        return Policies()
    try:
        doc = json.loads(raw)
        found: dict[str, DispatchRate] = {}
        for attr, key in NAMESPACE_KEYS.items():
            by_cluster = doc.get(key) if isinstance(doc, dict) else None
            if isinstance(by_cluster, dict) and cluster in by_cluster:
                found[attr] = DispatchRate.from_json(by_cluster[cluster], f"{where}.{key}.{cluster}")
        return Policies(**found)
    except (ValueError, InputError) as e:
        log.warning("ignoring the dispatch rates of %s: %s", where, e)
        return Policies()


class SubscriptionGate:
    """One subscription's reads through the broker, topic and subscription limiters (module docstring)."""

    def __init__(self, throttles: Throttles, topic: LimiterSlot, subscription: LimiterSlot) -> None:
        self.throttles = throttles
        self.topic = topic
        self.subscription = subscription
        self._retry: asyncio.TimerHandle | None = None
        self.throttled_reads = 0

    def limiters(self) -> list[DispatchRateLimiter]:
        slots = (self.throttles.broker, self.topic.limiter, self.subscription.limiter)
        return [lim for lim in slots if lim is not None and lim.enabled]

    def read(self, permits: int, backlog: int, retry: Any) -> tuple[int, int] | None:
        """(entries, bytes) the next read may deliver, or None: throttled, ``retry`` is called 1 s later."""
        s = self.throttles.settings
        throttle = throttling_applies(s.throttle_non_backlog, backlog < BACKLOGGED_THRESHOLD)
        size = size_read(permits, s.max_read_batch, s.max_read_bytes, self.limiters(), throttle=throttle)
        if not size.throttled:
            return size.entries, size.max_bytes
        self.throttled_reads += 1
        if self._retry is None:
            self._retry = asyncio.get_running_loop().call_later(MESSAGE_RATE_BACKOFF_MS / 1000, self._again, retry)
        return None

    def _again(self, retry: Any) -> None:
        self._retry = None
        retry()

    def charge(self, entries: int, messages: int, nbytes: int) -> None:
        s = self.throttles.settings
        charge_delivery(self.limiters(), entries, messages, nbytes, count_entries=s.count_entries)

    def close(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None


class Throttles:
    """A broker's dispatch limiters (module docstring)."""

    def __init__(self, config: Config, cluster: str) -> None:
        self.config = config
        self.cluster = cluster
        self.settings = config.view(DispatchSettings)
        self.implementation = implementation_of(self.settings.limiter_factory)
        self.clock = SystemClock()
        self.broker: DispatchRateLimiter | None = None
        rate = resolve(Level.BROKER, Policies(), config)
        if rate is not None:
            self.broker = DispatchRateLimiter(Level.BROKER, "broker", self.clock, self.implementation)
            self.broker.update(rate)
        self._topics: dict[str, tuple[LimiterSlot, Policies]] = {}

    def topic_loaded(self, topic: str, policies: Policies) -> None:
        slot = LimiterSlot(Level.TOPIC, topic, self.clock, self.implementation)
        slot.update(resolve(Level.TOPIC, policies, self.config))
        self._topics[topic] = (slot, policies)

    def topic_closed(self, topic: str) -> None:
        self._topics.pop(topic, None)

    def gate(self, topic: str, subscription: str) -> SubscriptionGate:
        slot, policies = self._topics.get(topic) or (LimiterSlot(Level.TOPIC, topic, self.clock), Policies())
        sub = LimiterSlot(Level.SUBSCRIPTION, f"{topic}/{subscription}", self.clock, self.implementation)
        sub.update(resolve(Level.SUBSCRIPTION, policies, self.config))
        return SubscriptionGate(self, slot, sub)
