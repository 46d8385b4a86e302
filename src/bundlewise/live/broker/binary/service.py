"""The broker's binary-protocol service (``BrokerService``): the listener on ``brokerServicePort``, the
topics loaded here, lookups, and closing what the broker no longer serves.

* **Lookup** (``LOOKUP``) runs the HTTP path's decision -- ``NamespaceService#find`` on the topic's
  bundle -- and renders it for the binary protocol: ``Connect`` to the owner's ``pulsar://`` URL,
  ``Redirect`` to the candidate's ``pulsar://`` URL (from its registration) with the decision's
  ``authoritative`` flag, or ``Failed`` with ``ServiceNotReady`` (the client retries).
* **Loading a topic** (``PRODUCER``, ``SUBSCRIBE``) needs the topic's bundle to be served here now;
  otherwise ``ServiceNotReady`` ("please redo the lookup"), and the client looks up again.
* **Serving follows ownership.**  Every ``sweep_s`` the service checks each loaded topic: when its
  namespace's bundles changed (a split), the topic moves to the child bundle holding its hash; when
  this broker no longer serves that bundle (unload, transfer, lost lock, fencing deadline passed),
  the topic is closed: its producers get ``CLOSE_PRODUCER`` and its consumers ``CLOSE_CONSUMER``.  When
  the extensible manager transfers the bundle to a named broker, the clients stay connected until the
  destination owns it (at most ``TRANSFER_HOLD_S``) and the close names the destination's ``pulsar://``
  URL, so they reconnect there without a lookup (PIP-307).  A ``SEND`` is checked the same way before
  it is stored, so no send is acknowledged once the bundle is not served: it is neither stored nor
  acknowledged, and the client re-sends its unacknowledged messages to the new owner.
* **Storage** (``bundlewiseManagedLedgerStorage``): ``memory`` keeps each topic's log in this process;
  ``file`` keeps persistent topics in ledgers of the cluster's shared data directory with their
  managed-ledger metadata in the metadata store (``managed``): loading a topic fences the former
  owner's ledger, and an append that finds this broker's ledger fenced closes the topic (its producers
  get ``CLOSE_PRODUCER`` and look the topic up again).  Closing a topic closes its log -- cursors
  flushed, ledger closed -- before its clients hear ``CLOSE_*``; cursors are also flushed every
  ``managedLedgerCursorPositionFlushSeconds``.  Loading a topic twice at once loads it once.
* **Load.**  ``traffic()`` gives each bundle's real traffic since the last call (rates over the
  interval, producer/consumer/topic counts), which the broker adds to its emulated traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from bundlewise.config import Config
from bundlewise.config.views import LedgerSettings, TopicSettings
from bundlewise.live.broker import values
from bundlewise.live.broker.auth import Authority
from bundlewise.live.broker.binary.managed import ManagedLog, OwnershipConflict
from bundlewise.live.broker.binary.retention import EVICTION, EVICTION_TARGET, HOLD, TopicLimits, topic_limits
from bundlewise.live.broker.binary.storage import MemoryStorage, MessageStorage
from bundlewise.live.broker.binary.throttle import Throttles, namespace_policies
from bundlewise.live.broker.binary.topics import Topic
from bundlewise.live.broker.manager import LoadManager
from bundlewise.live.broker.namespace import NamespaceService
from bundlewise.live.broker.outcomes import Connect, Redirect, RestError, ServerError, Unavailable
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.topic_resources import TopicResources
from bundlewise.model.errors import HashOutOfRange, InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.names import TopicName

log = logging.getLogger(__name__)

SERVICE_NOT_READY = 6
PRODUCER_BLOCKED_QUOTA_EXCEEDED_ERROR = 7  # the client retries
PRODUCER_BLOCKED_QUOTA_EXCEEDED_EXCEPTION = 8  # the client gives up
TOPIC_NOT_FOUND = 11
INVALID_TOPIC_NAME = 17
AUTHORIZATION_ERROR = 4
TRANSFER_HOLD_S = 5.0
CLOSE_LOG_TIMEOUT_S = 5.0
ARRIVAL_WAIT_S = 5.0
"""How long a topic's producer, consumer or lookup waits here for a bundle whose ownership is arriving
(``NamespaceService.arriving``) before it is told to look the topic up again.  The official client retries a
refused first subscription only after its operation timeout (30 s), so a refusal while the owner reads back
its own ``Owned`` record costs the client half a minute."""
ARRIVAL_POLL_S = 0.01


class BinaryError(Exception):
    """A request refused with a ``ServerError`` code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class LookupAnswer:
    url: str
    redirect: bool
    authoritative: bool


class Host(Protocol):
    """What the service uses of a broker (``live.broker.service.Broker``)."""

    identity: values.BrokerIdentity
    authority: Authority
    config: Config

    @property
    def namespace(self) -> NamespaceService: ...

    manager: LoadManager
    bundles: BundlesCache
    topic_resources: TopicResources


class Connection(Protocol):
    def close_producer(self, producer_id: int, assigned_url: str | None) -> None: ...

    def close_consumer(self, consumer_id: int, assigned_url: str | None) -> None: ...

    def check_alive(self, now: float) -> None: ...

    def abort(self) -> None: ...


def parse_topic(name: str) -> TopicName:
    try:
        return TopicName.parse(name)
    except InputError as e:
        raise BinaryError(INVALID_TOPIC_NAME, f"Invalid topic name: {e}") from None


class BinaryService:
    def __init__(self, host: Host, storage: MessageStorage | None = None, sweep_s: float = 0.02) -> None:
        self.host = host
        self.settings = host.config.view(TopicSettings)
        self.ledger_settings = host.config.view(LedgerSettings)
        self.storage: MessageStorage = storage or MemoryStorage(tag=host.identity.broker_port)
        self.sweep_s = sweep_s
        self.topics: dict[str, Topic] = {}
        self.connections: set[Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._loading: dict[str, asyncio.Future[Topic]] = {}
        self._last_sample: tuple[float, dict[str, tuple[int, int, int, int]]] = (time.monotonic(), {})
        self._rates: dict[str, tuple[float, float, float, float]] = {}
        self._held: dict[str, float] = {}  # topics of a transfer in progress: since when
        self._closing: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None  # the cursor flush in progress (off the sweeper)
        self.throttles = Throttles(host.config, host.identity.cluster)  # dispatch throttling

    # -- the listener ----------------------------------------------------------------------
    async def start(self, protocol: Callable[[], asyncio.Protocol]) -> None:
        ident = self.host.identity
        host = ident.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, ident.broker_port))
        except OSError as e:
            sock.close()
            raise InputError(
                f"cannot serve the binary protocol on {host}:{ident.broker_port}: {e.strerror}",
                field="brokerServicePort",
            ) from None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(protocol, sock=sock)
        self._sweeper = loop.create_task(self._sweep(), name="binary-sweeper")

    async def stop(self) -> None:
        for task in (self._sweeper, self._flusher):
            if task is None:
                continue
            if task is self._flusher:  # let a cursor flush in progress finish (its versions stay known)
                await asyncio.wait({task}, timeout=CLOSE_LOG_TIMEOUT_S)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for topic in list(self.topics.values()):
            self.close_topic(topic)
        if self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.abort()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    # -- lookups ---------------------------------------------------------------------------
    async def bundle_of(self, topic: TopicName) -> str:
        try:
            bundle = await self.host.namespace.bundle_of_topic(str(topic.namespace), str(topic))
        except HashOutOfRange as e:
            raise BinaryError(SERVICE_NOT_READY, str(e)) from None
        return bundle.name

    async def lookup(self, name: str, authoritative: bool) -> LookupAnswer:
        """The HTTP lookup's decision, in binary-protocol terms (module docstring)."""
        topic = parse_topic(name)
        bundle = await self.bundle_of(topic)
        try:
            answer = await self.host.namespace.find(bundle, authoritative=authoritative)
        except (ServerError, Unavailable) as e:
            raise BinaryError(SERVICE_NOT_READY, str(e) or "no broker available") from None
        except RestError as e:
            raise BinaryError(SERVICE_NOT_READY, e.reason) from None
        if isinstance(answer, Connect):
            return LookupAnswer(answer.native_url, False, True)
        if isinstance(answer, Redirect):
            broker_id = urlsplit(answer.web_url).netloc
            data = await self.host.manager.broker_data(broker_id)
            url = None if data is None else data.get("pulsarServiceUrl")
            if not url:
                raise BinaryError(SERVICE_NOT_READY, f"Broker {broker_id} has no pulsarServiceUrl")
            return LookupAnswer(str(url), True, answer.authoritative)
        raise BinaryError(SERVICE_NOT_READY, f"No broker was available to own {bundle}")

    async def partitions(self, name: str) -> int:
        return await self.host.topic_resources.partitions_for_client(parse_topic(name))

    async def url_of(self, broker_id: str) -> str | None:
        data = await self.host.manager.broker_data(broker_id)
        url = None if data is None else data.get("pulsarServiceUrl")
        return str(url) if url else None

    # -- topics ----------------------------------------------------------------------------
    async def _served_soon(self, bundle: str) -> bool:
        """``bundle`` is served here now, or within ``ARRIVAL_WAIT_S`` while its ownership is arriving."""
        namespace = self.host.namespace
        deadline = time.monotonic() + ARRIVAL_WAIT_S
        while not namespace.serving(bundle):
            if not namespace.arriving(bundle) or time.monotonic() >= deadline:
                return False
            await asyncio.sleep(ARRIVAL_POLL_S)
        return True

    async def load(self, name: str) -> Topic:
        """The loaded topic, loading it when its bundle is served here (else ``ServiceNotReady``)."""
        topic_name = parse_topic(name)
        full = str(topic_name)
        topic = self.topics.get(full)
        if topic is not None and self.host.namespace.serving(topic.bundle):
            return topic
        bundle = await self.bundle_of(topic_name)
        if not await self._served_soon(bundle):
            raise BinaryError(
                SERVICE_NOT_READY,
                f"Namespace bundle for topic ({full}) not served by this instance:{self.host.identity.broker_id}. "
                "Please redo the lookup.",
            )
        if not self.settings.auto_create and topic_name.persistent:
            raise BinaryError(TOPIC_NOT_FOUND, f"Topic {full} does not exist")
        topic = self.topics.get(full)
        if topic is not None:
            return topic
        pending = self._loading.get(full)
        if pending is None:
            pending = asyncio.ensure_future(self._open(full, bundle))
            self._loading[full] = pending
            pending.add_done_callback(lambda _: self._loading.pop(full, None))
        return await asyncio.shield(pending)

    async def _open(self, full: str, bundle: str) -> Topic:
        try:
            topic = Topic(full, bundle, await self.storage.open(full))
        except OwnershipConflict as e:
            raise BinaryError(SERVICE_NOT_READY, f"{e}; please redo the lookup") from None
        if not self.host.namespace.serving(bundle):  # lost while opening: give the ledger back
            await topic.log.close()
            raise BinaryError(SERVICE_NOT_READY, f"Namespace bundle {bundle} is no longer served here")
        name = parse_topic(full)
        try:
            raw = await self.host.topic_resources.namespace_policies(name)
        except Exception as e:  # the broker's own rates apply
            log.warning("could not read the policies of %s: %r", name.namespace, e)
            raw = None
        self.throttles.topic_loaded(full, namespace_policies(raw, self.host.identity.cluster, str(name.namespace)))
        topic.gate_for = lambda sub: self.throttles.gate(full, sub)
        topic.limits = topic_limits(raw, self.ledger_settings, str(name.namespace))
        if isinstance(topic.log, ManagedLog):
            topic.log.limits = topic.limits
            topic.log.on_lost = lambda reason: self.fenced(topic, reason)
        self.topics[full] = topic
        log.info("loaded topic %s in %s", full, bundle)
        try:
            await self.host.topic_resources.record_loaded(parse_topic(full))
        except Exception as e:  # the topic is served; the listing entry is best effort
            log.warning("could not record %s: %r", full, e)
        return topic

    def still_served(self, topic: Topic) -> bool:
        """Whether the topic's bundle is served here now, following a split to the child bundle."""
        ns = self.host.namespace
        if ns.serving(topic.bundle):
            return True
        namespace = topic.bundle.rpartition("/")[0]
        known = self.host.bundles.known(namespace)
        if known is None:
            return False
        try:
            child = known.bundles.bundle_for_hash(crc32_hash(topic.name)).name
        except HashOutOfRange:
            return False
        if child != topic.bundle and ns.serving(child):
            topic.bundle = child
            return True
        return False

    def close_topic(self, topic: Topic, assigned_url: str | None = None) -> None:
        """Drop the topic, close its log, then every producer and consumer of it (``CLOSE_*``)."""
        if self.topics.get(topic.name) is topic:
            del self.topics[topic.name]
        if topic.closed:
            return
        topic.closed = True
        self.throttles.topic_closed(topic.name)
        for sub in topic.subscriptions.values():
            if sub.gate is not None:
                sub.gate.close()
        task = asyncio.get_running_loop().create_task(self._retire(topic, assigned_url))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def fenced(self, topic: Topic, reason: str) -> None:
        """This broker's ledger of the topic was fenced: another broker owns it now."""
        log.warning("topic %s: %s; closing it", topic.name, reason)
        self.close_topic(topic)

    async def _retire(self, topic: Topic, assigned_url: str | None) -> None:
        try:
            await asyncio.wait_for(topic.log.close(), CLOSE_LOG_TIMEOUT_S)
        except Exception as e:  # the clients are told anyway; what was not flushed is redelivered
            log.warning("closing the log of %s failed: %r", topic.name, e)
        for producer in list(topic.producers.values()):
            owner: Any = producer.owner
            owner.close_producer(producer.producer_id, assigned_url)
        for consumer in topic.consumers():
            owner = consumer.owner
            owner.close_consumer(consumer.consumer_id, assigned_url)
        log.info("closed topic %s (%s)", topic.name, assigned_url or "unloaded")

    async def _close_moved(self, topics: list[Topic]) -> None:
        """Close topics this broker stopped serving; a transfer's topics once the destination owns the bundle
        (``TRANSFER_HOLD_S`` at most), then with its URL (PIP-307: clients reconnect there without a lookup)."""
        now = time.monotonic()
        for topic in topics:
            moving = self.host.namespace.moving_to(topic.bundle)
            url = None
            if moving is not None:
                dst, arrived = moving
                held = self._held.setdefault(topic.name, now)
                if not arrived and now - held < TRANSFER_HOLD_S:
                    continue  # not acknowledging sends meanwhile (``still_served`` is false)
                with contextlib.suppress(Exception):
                    url = await self.url_of(dst)
            self._held.pop(topic.name, None)
            if self.topics.get(topic.name) is topic and not self.still_served(topic):
                self.close_topic(topic, url)

    async def _flush_cursors(self) -> None:
        for topic in list(self.topics.values()):
            try:
                await topic.log.flush()
            except Exception as e:
                log.warning("flushing the cursors of %s failed: %r", topic.name, e)

    def cursor_period(self) -> float:
        """How often changed cursors are persisted: ``managedLedgerDefaultMarkDeleteRateLimit`` times a second
        (every sweep when 0), never less often than ``managedLedgerCursorPositionFlushSeconds``.  Pulsar
        persists a mark-delete at once when its rate limiter allows and flushes the held ones on the interval;
        either way a crash loses at most a period's acknowledgements, which the consumer gets again."""
        rate = self.settings.mark_delete_rate
        return min(self.settings.cursor_flush_s, 1.0 / rate if rate > 0 else self.sweep_s)

    # -- retention and backlog quotas (``retention``) -------------------------------------------
    def keep_within_limits(self) -> None:
        """Every loaded topic: roll a ledger past its age over and delete the ledgers retention lets go."""
        for topic in list(self.topics.values()):
            try:
                topic.log.check_rollover()
                topic.log.trim()
            except Exception as e:
                log.warning("retention of %s failed: %r", topic.name, e)

    def quota_blocks(self, topic: Topic) -> tuple[int, str] | None:
        """The error a new producer of the topic gets while its backlog quota is exceeded under a producer
        policy (None: it may produce)."""
        limits = topic.limits
        if limits is None or limits.quota is None:
            return None
        found = limits.quota.exceeded(topic.backlog_bytes(), topic.oldest_backlog_age_s(int(time.time() * 1000)))
        if found is None or found[1].policy == EVICTION:
            return None
        code = (
            PRODUCER_BLOCKED_QUOTA_EXCEEDED_ERROR
            if found[1].policy == HOLD
            else PRODUCER_BLOCKED_QUOTA_EXCEEDED_EXCEPTION
        )
        return code, f"Cannot create producer on topic with backlog quota exceeded ({found[0]})"

    def enforce_quotas(self) -> None:
        """Every loaded topic over its backlog quota: evict, or close its producers (module ``retention``)."""
        now_ms = int(time.time() * 1000)
        for topic in list(self.topics.values()):
            limits = topic.limits
            if limits is None or limits.quota is None or topic.closed:
                continue
            try:
                self._enforce(topic, limits, now_ms)
            except Exception as e:
                log.warning("the backlog quota of %s failed: %r", topic.name, e)

    def _enforce(self, topic: Topic, limits: TopicLimits, now_ms: int) -> None:
        quota = limits.quota
        assert quota is not None
        for kind, over in quota.all_exceeded(topic.backlog_bytes(), topic.oldest_backlog_age_s(now_ms)):
            if over.policy == EVICTION:
                target = int(over.limit * EVICTION_TARGET) if kind == "size" else None
                skipped = topic.evict(target, None if kind == "size" else float(over.limit), now_ms)
                log.info("topic %s over its backlog quota (%s): skipped %d entries", topic.name, kind, skipped)
                continue
            if topic.producers:
                log.info(
                    "topic %s over its backlog quota (%s): closing its producers (%s)", topic.name, kind, over.policy
                )
            for producer in list(topic.producers.values()):
                topic.producers.pop((id(producer.owner), producer.producer_id), None)
                owner: Any = producer.owner
                owner.close_producer(producer.producer_id, None)

    async def _sweep(self) -> None:
        next_alive = time.monotonic()
        period = self.cursor_period()
        next_flush = next_alive + period
        next_retention = next_alive + self.ledger_settings.retention_check_s
        next_quota = next_alive + self.ledger_settings.quota_check_s
        while True:
            await asyncio.sleep(self.sweep_s)
            try:
                gone = [t for t in list(self.topics.values()) if not self.still_served(t)]
                if gone:
                    await self._close_moved(gone)
                now = time.monotonic()
                if now >= next_alive:
                    next_alive = now + 1.0
                    self._sample_rates(now)
                    for conn in list(self.connections):
                        conn.check_alive(now)
                if now >= next_retention:
                    next_retention = now + self.ledger_settings.retention_check_s
                    self.keep_within_limits()
                if now >= next_quota:
                    next_quota = now + self.ledger_settings.quota_check_s
                    self.enforce_quotas()
                if now >= next_flush and (self._flusher is None or self._flusher.done()):
                    next_flush = now + period
                    self._flusher = asyncio.get_running_loop().create_task(self._flush_cursors())
            except Exception:
                log.exception("binary sweep failed")

    # -- load ----------------------------------------------------------------------------
    def traffic(self) -> dict[str, NamespaceBundleStats]:
        """Each bundle's real traffic: rates over the last sampling interval, current counts."""
        out: dict[str, NamespaceBundleStats] = {}
        for topic in self.topics.values():
            r = self._rates.get(topic.name, (0.0, 0.0, 0.0, 0.0))  # sampled each second by the sweeper
            s = out.get(topic.bundle) or NamespaceBundleStats()
            out[topic.bundle] = NamespaceBundleStats(
                msgRateIn=s.msgRateIn + r[0],
                msgThroughputIn=s.msgThroughputIn + r[1],
                msgRateOut=s.msgRateOut + r[2],
                msgThroughputOut=s.msgThroughputOut + r[3],
                consumerCount=s.consumerCount + len(topic.consumers()),
                producerCount=s.producerCount + len(topic.producers),
                topics=s.topics + 1,
            )
        return out

    def topic_rates(self) -> dict[str, tuple[float, float, float, float]]:
        """Each loaded topic's (msgRateIn, msgThroughputIn, msgRateOut, msgThroughputOut) of the last interval."""
        return dict(self._rates)

    def _sample_rates(self, now: float) -> None:
        since, before = self._last_sample
        dt = max(now - since, 1e-3)
        current: dict[str, tuple[int, int, int, int]] = {}
        rates: dict[str, tuple[float, float, float, float]] = {}
        for topic in self.topics.values():
            c = topic.counters
            cur = current[topic.name] = (c.msg_in, c.bytes_in, c.msg_out, c.bytes_out)
            prev = before.get(topic.name, (0, 0, 0, 0))
            d = [max(0, a - b) / dt for a, b in zip(cur, prev, strict=True)]
            rates[topic.name] = (d[0], d[1], d[2], d[3])
        self._last_sample = (now, current)
        self._rates = rates
