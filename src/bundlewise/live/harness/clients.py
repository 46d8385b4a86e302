"""Real clients in ``live up``: producers and consumers of Apache Pulsar's official client (``pulsar-client``).

``RealClients(spec, topics, service_url, token)`` is what a scenario's ``[clients]`` section starts
(``traffic.clients.ClientsSpec``), the way ``pulsar-perf produce`` / ``consume`` would: one Pulsar client
whose service URL lists every broker up at the start (``pulsar://h:p1,h:p2``: the client looks topics up
through them in turn), ``producers`` producers sending at a steady ``rate`` from their own threads
(``send_async``; batching as the spec says, a key per message so Key_Shared spreads), and ``consumers``
consumers of the subscription ``bundlewise`` with a message listener that acknowledges every message.

What is recorded (``ClientRecords``), in the harness's monotonic clock:

* every send: its producer, when it was handed to the client, when its receipt came back (or that it
  failed, and when) -- publish latency is the difference, as ``pulsar-perf produce`` measures it;
* every received message's end-to-end latency: the wall-clock time it arrived minus its publish time
  (both clocks are this machine's);
* reconnections: the client logs each producer and consumer it creates on a broker ("Created producer /
  consumer on broker"); every creation after the first of each is a reconnection -- after an unload, a
  transfer, a split or a broker loss.

``unavailable_seconds`` is the time the producers could not publish: per producer, the union of the
intervals from a send to its receipt for every send that waited longer than ``LATE_SECONDS`` (a send
never acknowledged or failed counts to the end of the run or its failure), summed over producers.

The loss check: every payload starts with its send's id (``producer:sequence|``), so each message a
consumer gets is matched to its send.  At the end, once the sends are acknowledged, the consumers get
``DRAIN_SECONDS`` to receive every acknowledged message; an acknowledged message they never received is
looked for in its topic's backlog by a reader from the earliest message (a topic without a consumer, or a
consumer behind; a topic no consumer reads gets the subscription at the start all the same, its consumer
closed at once, so that retention keeps its messages as a backlog).  ``lost`` is an acknowledged message
neither received nor in the backlog -- a promise broken; ``duplicated`` counts the deliveries beyond the first
of each message (redeliveries after a move: at-least-once allows them, an Exclusive or Failover consumer sees
each message once after de-duplicating).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bundlewise.traffic.clients import ClientsSpec

LATE_SECONDS = 1.0
"""A send waiting longer than this for its receipt counts as time its producer could not publish."""
DRAIN_SECONDS = 30.0
"""How long ``stop`` waits for outstanding receipts before counting the rest as unacknowledged, and then for
the consumers to receive every acknowledged message (each wait ends as soon as nothing is outstanding).  The
official client's reconnection backoff doubles from 0.1 s (0.1, 0.2, 0.4 ... 6.4, 12.8 s): a client whose
owner, killed near the end of a run, answered again only some 12 s later tries next about 24 s after the kill
-- with 10 s here a loaded CI machine counted 825 sends as failed, as many as two producers send from the
last kill to the end of that run."""
BACKLOG_READ_SECONDS = 60.0
"""How long the loss check may read the topics' backlogs in all."""
SUBSCRIPTION = "bundlewise"
_CREATED = ("Created producer on broker", "Created consumer on broker")


def require_client() -> None:
    """Raise ``ModuleNotFoundError`` (for ``cli.common.needs_extra``) when the official client is missing."""
    import pulsar  # noqa: F401


@dataclass
class Send:
    producer: int
    sent_at: float
    done_at: float | None = None  # receipt or failure
    ok: bool = False
    key: str = ""  # ``producer:sequence``, the payload's first bytes


def payload(key: str, size: int) -> bytes:
    """A message of ``size`` bytes (longer if its id is) that starts with ``key|``."""
    head = f"{key}|".encode()
    return head + b"x" * max(0, size - len(head))


def key_of(data: bytes) -> str | None:
    """The send id a payload starts with (``payload``), or None for a message from elsewhere."""
    head, sep, _ = data[:64].partition(b"|")
    return head.decode("ascii", "replace") if sep else None


@dataclass
class ClientRecords:
    sends: list[Send] = field(default_factory=list)
    end_to_end_ms: list[float] = field(default_factory=list)
    creations: int = 0  # producers and consumers created on a broker, reconnections included
    clients: int = 0  # producers and consumers started
    ended_at: float = 0.0
    received: Counter[str] = field(default_factory=Counter)  # deliveries per send id
    in_backlog: set[str] = field(default_factory=set)  # acknowledged, not received, found in the backlog

    def acknowledged(self) -> set[str]:
        return {s.key for s in self.sends if s.ok}

    def unreceived(self) -> set[str]:
        """Acknowledged messages no consumer received."""
        return {k for k in self.acknowledged() if k not in self.received}

    @property
    def lost(self) -> int:
        """Acknowledged, never received and not in the backlog (the module docstring)."""
        return len(self.unreceived() - self.in_backlog)

    @property
    def duplicated(self) -> int:
        return sum(n - 1 for n in self.received.values() if n > 1)

    @property
    def reconnects(self) -> int:
        return max(0, self.creations - self.clients)

    @property
    def published(self) -> int:
        return sum(1 for s in self.sends if s.ok)

    @property
    def failed(self) -> int:
        return len(self.sends) - self.published

    def publish_latencies_ms(self) -> list[float]:
        return [(s.done_at - s.sent_at) * 1000.0 for s in self.sends if s.ok and s.done_at is not None]

    def unavailable_seconds(self) -> float:
        """The module docstring's measure."""
        spans: dict[int, list[tuple[float, float]]] = {}
        for s in self.sends:
            end = s.done_at if s.done_at is not None else self.ended_at
            if not s.ok or end - s.sent_at > LATE_SECONDS:
                spans.setdefault(s.producer, []).append((s.sent_at, max(s.sent_at, end)))
        total = 0.0
        for intervals in spans.values():
            intervals.sort()
            start, stop = intervals[0]
            for a, b in intervals[1:]:
                if a > stop:
                    total += stop - start
                    start, stop = a, b
                else:
                    stop = max(stop, b)
            total += stop - start
        return total


class _Creations(logging.Handler):
    """Counts the client's log lines that say a producer or consumer was created on a broker."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if any(c in text for c in _CREATED):
            with self._lock:
                self.count += 1


_CLIENT_LOG = logging.getLogger("bundlewise.live.clients")
_CLIENT_LOG.setLevel(logging.INFO)
_COUNTER = _Creations()
_CLIENT_LOG.addHandler(_COUNTER)
"""One logger for every client: the official client keeps the first logger a process gives it for all later
clients, so each run counts its creations as a difference of this one counter.  Its records also reach the
command's log file (stderr with ``--verbose``; ``cli.logs``): what the clients saw when a run went wrong."""


START_ATTEMPTS = 4
"""Each producer and consumer is created up to this many times (the client's operation timeout, 30 s,
each): a cluster that has just started may take longer than one timeout to assign a bundle."""


class ClientStartError(RuntimeError):
    """A real client could not be created (``live up`` reports it in one line)."""


def _created(what: str, create: Any) -> Any:
    for attempt in range(1, START_ATTEMPTS):
        try:
            return create()
        except Exception as e:  # the client's own exceptions (Timeout, ServiceUnitNotReady, ...)
            logging.getLogger(__name__).info("creating %s failed (%s); attempt %d", what, e, attempt + 1)
            time.sleep(1.0)
    try:
        return create()
    except Exception as e:
        raise ClientStartError(f"the real clients could not create {what}: {e} ({START_ATTEMPTS} attempts)") from e


class RealClients:
    """The module docstring's clients; ``start`` and ``stop`` block (call them off the event loop)."""

    def __init__(self, spec: ClientsSpec, topics: list[str], service_url: str, token: str | None) -> None:
        self.spec = spec
        self.topics = topics
        self.service_url = service_url
        self.token = token
        self.records = ClientRecords()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._producers: list[Any] = []
        self._consumers: list[Any] = []
        self._client: Any = None
        self._created_before = 0

    def start(self) -> None:
        import pulsar

        auth = pulsar.AuthenticationToken(self.token) if self.token else None
        self._created_before = _COUNTER.count
        self._client = pulsar.Client(
            self.service_url, authentication=auth, operation_timeout_seconds=30, logger=_CLIENT_LOG
        )
        sub_type = getattr(pulsar.ConsumerType, self.spec.subscription.replace("_", ""))
        for i in range(self.spec.consumers):
            topic = self.topics[i % len(self.topics)]
            self._consumers.append(
                _created(
                    f"a consumer of {topic}",
                    lambda topic=topic: self._client.subscribe(
                        topic,
                        SUBSCRIPTION,
                        consumer_type=sub_type,
                        message_listener=self._received,
                        initial_position=pulsar.InitialPosition.Earliest,
                    ),
                )
            )
        consumed = {self.topics[i % len(self.topics)] for i in range(self.spec.consumers)}
        for topic in sorted({self.topics[i % len(self.topics)] for i in range(self.spec.producers)} - consumed):
            # a topic no consumer reads gets the subscription all the same, so its messages stay in its backlog
            # (retention deletes what no subscription needs, Pulsar's default) and the loss check finds them
            _created(
                f"the subscription of {topic}",
                lambda topic=topic: self._client.subscribe(
                    topic, SUBSCRIPTION, initial_position=pulsar.InitialPosition.Earliest
                ),
            ).close()
        for i in range(self.spec.producers):
            topic = self.topics[i % len(self.topics)]
            producer = _created(
                f"a producer of {topic}",
                lambda topic=topic: self._client.create_producer(
                    topic,
                    batching_enabled=self.spec.batching,
                    send_timeout_millis=0,  # never time a send out: an unavailable broker shows as latency
                    block_if_queue_full=True,
                ),
            )
            self._producers.append(producer)
        self.records.clients = len(self._consumers) + len(self._producers)
        for i, producer in enumerate(self._producers):
            t = threading.Thread(target=self._produce, args=(i, producer), name=f"producer-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _received(self, consumer: Any, msg: Any) -> None:
        latency = time.time() * 1000.0 - msg.publish_timestamp()
        key = key_of(msg.data())
        with self._lock:
            self.records.end_to_end_ms.append(latency)
            if key is not None:
                self.records.received[key] += 1
        try:
            consumer.acknowledge(msg)
        except Exception:  # a consumer closing while a message arrives: it is redelivered
            return

    def _produce(self, index: int, producer: Any) -> None:
        period = 1.0 / self.spec.rate
        next_at = time.monotonic()
        seq = 0
        while not self._stop.is_set():
            send = Send(index, time.monotonic(), key=f"{index}:{seq}")
            with self._lock:
                self.records.sends.append(send)
            data = payload(send.key, self.spec.message_size)
            try:
                producer.send_async(data, self._done(send), partition_key=f"k{seq % 64}")
            except Exception:  # the producer was closed: the run is ending
                send.done_at = time.monotonic()
                return
            seq += 1
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            elif delay < -1.0:  # a blocked send (the queue full): do not burst to catch up
                next_at = time.monotonic()

    def _done(self, send: Send) -> Any:
        def done(result: Any, _msg_id: Any) -> None:
            import pulsar

            send.done_at = time.monotonic()
            send.ok = result == pulsar.Result.Ok

        return done

    def stop(self) -> ClientRecords:
        """Stop sending, wait for outstanding receipts (at most ``DRAIN_SECONDS``), close everything."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout=DRAIN_SECONDS)
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline and any(s.done_at is None for s in self.records.sends):
            time.sleep(0.05)
        self.records.ended_at = time.monotonic()
        self.records.creations = _COUNTER.count - self._created_before
        if self._consumers:
            deadline = time.monotonic() + DRAIN_SECONDS
            while time.monotonic() < deadline and self._unreceived():
                time.sleep(0.1)
        with self._lock:
            missing = self.records.unreceived()
        if missing and self._client is not None:
            self.records.in_backlog = self._in_backlog(missing)
        if self._client is not None:
            try:
                self._client.close()
            except Exception as e:  # a broker gone at the end: nothing left to close
                logging.getLogger(__name__).debug("closing the clients: %s", e)
        return self.records

    def _unreceived(self) -> bool:
        with self._lock:
            return bool(self.records.unreceived())

    def _in_backlog(self, missing: set[str]) -> set[str]:
        """Which of ``missing`` a reader from the earliest message finds in its topic (module docstring)."""
        import pulsar

        producers_of: dict[str, set[int]] = {}
        for i in range(len(self._producers)):
            producers_of.setdefault(self.topics[i % len(self.topics)], set()).add(i)
        found: set[str] = set()
        deadline = time.monotonic() + BACKLOG_READ_SECONDS
        for topic, indexes in producers_of.items():
            wanted = {k for k in missing if int(k.partition(":")[0]) in indexes}
            if not wanted:
                continue
            try:
                reader = self._client.create_reader(topic, pulsar.MessageId.earliest)
            except Exception as e:
                logging.getLogger(__name__).warning("the loss check could not read %s: %s", topic, e)
                continue
            try:
                while wanted - found and time.monotonic() < deadline and reader.has_message_available():
                    key = key_of(reader.read_next(timeout_millis=5000).data())
                    if key in wanted:
                        found.add(key)
            except Exception as e:  # a timeout or a broker gone: what was read counts
                logging.getLogger(__name__).warning("the loss check stopped reading %s: %s", topic, e)
            finally:
                with contextlib.suppress(Exception):
                    reader.close()
        return found
