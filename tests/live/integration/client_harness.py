"""Helpers of the tests that drive Apache Pulsar's official client (``pulsar-client`` from PyPI) against
real broker processes: service URLs, a steady producer that records every acknowledgement, and who
acknowledged a message (the broker's binary port, which ``MemoryStorage`` writes into ledger ids)."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pulsar
from broker_harness import follow, get, lookup

from bundlewise.live.broker.binary.storage import ledger_tag
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster

QUIET = logging.getLogger("pulsar-client")
QUIET.setLevel(logging.WARNING)


def pulsar_url(b: BrokerProcess) -> str:
    return f"pulsar://{b.host}:{b.settings['brokerServicePort']}"


def client(url: str, timeout: float = 30) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=int(timeout), logger=QUIET)


def port_of(b: BrokerProcess) -> int:
    return int(b.settings["brokerServicePort"])


def acknowledged_by(c: LocalCluster, ledger_id: int) -> BrokerProcess:
    """The broker whose storage wrote this ledger."""
    tag = ledger_tag(ledger_id)
    return next(b for b in c.brokers if port_of(b) == tag)


def owner_of(c: LocalCluster, topic: str) -> BrokerProcess:
    data, _ = lookup(c.brokers[0], topic)
    port = int(data["brokerUrl"].rsplit(":", 1)[1])
    return next(b for b in c.brokers if port_of(b) == port)


def bundle_of(b: BrokerProcess, topic: str) -> str:
    domain, rest = topic.split("://")
    ns = rest.rsplit("/", 1)[0]
    r = get(f"{b.web_url}/lookup/v2/topic/{domain}/{rest}/bundle")
    assert r.status_code == 200, r.text
    return f"{ns}/{r.text}"


def admin_put(b: BrokerProcess, path: str) -> int:
    r, _ = follow(f"{b.web_url}{path}", method="PUT")
    return r.status_code


@dataclass
class Ack:
    at: float  # time.monotonic() when the client got the receipt
    ledger: int
    entry: int
    seq: int


@dataclass
class SteadyProducer:
    """Sends ``rate`` messages/s from a thread; records every receipt and every failure."""

    producer: Any
    rate: float = 200.0
    acks: list[Ack] = field(default_factory=list)
    failures: list[tuple[int, str]] = field(default_factory=list)
    sent: int = 0
    sent_at: list[float] = field(default_factory=list)  # when each sequence id was handed to the client
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _callback(self, seq: int) -> Any:
        def done(res: Any, mid: Any) -> None:
            with self._lock:
                if res == pulsar.Result.Ok:
                    self.acks.append(Ack(time.monotonic(), mid.ledger_id(), mid.entry_id(), seq))
                else:
                    self.failures.append((seq, str(res)))

        return done

    def _run(self) -> None:
        period = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.sent_at.append(time.monotonic())
            self.producer.send_async(b"m-%d" % self.sent, self._callback(self.sent))
            self.sent += 1
            next_at += period
            time.sleep(max(0.0, next_at - time.monotonic()))

    def start(self) -> SteadyProducer:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.producer.flush()
        deadline = time.monotonic() + timeout
        while len(self.acks) + len(self.failures) < self.sent and time.monotonic() < deadline:
            time.sleep(0.05)

    def acked_since(self, t: float) -> list[Ack]:
        with self._lock:
            return [a for a in self.acks if a.at >= t]

    def gaps(self) -> list[float]:
        times = sorted(a.at for a in self.acks)
        return [b - a for a, b in itertools.pairwise(times)]


def wait_for_ack_from(p: SteadyProducer, c: LocalCluster, since: float, timeout: float) -> BrokerProcess:
    """The broker that acknowledges sends made after ``since`` (waits up to ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        recent = p.acked_since(since)
        if recent:
            return acknowledged_by(c, recent[-1].ledger)
        time.sleep(0.05)
    raise AssertionError(f"no acknowledgement within {timeout} s")
