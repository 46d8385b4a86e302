"""The fault campaign: faults injected into a real local cluster while a ``FaultObserver`` watches every broker
and the store, and lookup clients record every answer (``bench/bench_faults.py``, the fault-campaign test).

A **cell** is one store (``zookeeper`` / ``etcd``) x one load manager (``modular`` / ``extensible``): a store
server of its own and ``BROKERS`` broker processes (session timeout ``SESSION_MS``, shedding and automatic
splits off, so every ownership change is the fault's), the namespace ``NS`` of 8 bundles with ``TOPICS`` topics
(every bundle has some), all looked up once, then lookup clients (Pulsar's lookup with retry and backoff,
``lookups.LookupClient``) asking for every topic through every live broker in turn (and, during a race, for
the raced bundle's topics through every broker at once: ``Cell.hammer``).  ``Cell.run(fault)`` runs
one fault and measures, from the fault's *reference time* (the races and bursts: when they are fired; a
broker kill: the kill; a store outage: when the store is back):

* **overlaps**: pairs of intersecting hash ranges served by two brokers at once (the brokers' admin answers),
  and ``store_overlaps`` the same in the store's ownership locks and channel records;
* **double answers**: lookup answers naming a broker that was not seen serving the topic within [-1 s, +2 s]
  while another was serving it up to the answer (``overlap.answer_conflicts``), plus, in a burst, bundles
  answered with two brokers;
* **time to served**: until every topic is in a bundle some broker serves (None: not within ``RECOVERY_S``);
* **unrecovered**: bundles with topics that nobody serves when the run gives up waiting.

A killed broker is started again after its run; a cell whose cluster did not recover is rebuilt before the
next run, so one run's failure does not count again in the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bundlewise.live.harness import overlap
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster, copy_logs
from bundlewise.live.harness.fault_observer import FaultObserver
from bundlewise.live.harness.lookups import LookupClient
from bundlewise.live.harness.overlap import Answer, answer_conflicts, burst_conflicts, uncovered
from bundlewise.live.harness.servers import ServerProcess
from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.hashing import crc32_hash

SESSION_MS = 4000
SESSION_S = SESSION_MS / 1000
BROKERS = 3
NS = "campaign/ns"
BUNDLES = 8
TOPICS = [f"persistent://{NS}/t-{i}" for i in range(32)]
RECOVERY_S = 25.0  # how long a run waits for every topic to be served again before it counts the unrecovered
STORES = {"zookeeper": "zk", "etcd": "etcd"}
BASE = {
    "metadataStoreSessionTimeoutMillis": SESSION_MS,
    "loadBalancerSheddingEnabled": "false",
    "loadBalancerAutoBundleSplitEnabled": "false",
    "defaultNumberOfNamespaceBundles": BUNDLES,
}
MANAGERS: dict[str, dict[str, Any]] = {
    "modular": {},
    "extensible": {
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
        "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 5000,
        "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": 5,
        "loadBalancerServiceUnitStateMonitorIntervalInSeconds": 1,
    },
}


@dataclass(slots=True)
class RunResult:
    fault: str
    store: str
    manager: str
    overlaps: int = 0
    store_overlaps: int = 0
    double_answers: int = 0
    stale_answers: int = 0
    failed_lookups: int = 0
    time_to_served: float | None = None
    unrecovered: int = 0
    observer_hz: float = 0.0
    handovers: int = 0  # sampled overlaps the journals show were a handover between the two answers of a round
    short_ownerships: int = 0  # answers only the journals confirm: an ownership shorter than a round
    journal_overlaps: int = 0  # candidates: journal intervals that intersect where no round saw both (not counted)
    actions: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class Fired:
    """What a fault did: its reference time, the burst's answers (if any) and what to undo afterwards."""

    since: float
    burst: list[Answer] = field(default_factory=list)
    burst_bundles: dict[str, str] = field(default_factory=dict)
    failed: int = 0
    restart: tuple[BrokerProcess, ...] = ()
    replace: tuple[BrokerProcess, ...] = ()  # brokers to run again without their wrapper (SIGKILL, then start)
    actions: tuple[str, ...] = ()  # the admin calls' outcomes, e.g. "split 204", "unload 500" (0: no answer)


def _put(url: str, timeout: float = 15.0) -> int:
    try:
        return httpx.put(url, timeout=timeout, follow_redirects=True).status_code
    except httpx.HTTPError:
        return 0


def _together(*calls: Callable[[], int]) -> list[int]:
    """Run the calls at the same moment (a barrier), return their status codes."""
    barrier = threading.Barrier(len(calls))

    def go(call: Callable[[], int]) -> int:
        barrier.wait(5)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(go, calls))


def _after(delay: float, call: Callable[[], int]) -> Callable[[], int]:
    def later() -> int:
        time.sleep(delay)
        return call()

    return later


STAGGER_S = (0.0, 0.01, 0.03, 0.06)  # the second call of a race starts this much later, by run (cycled)


def _only(url: str) -> Callable[[], list[str]]:
    return lambda: [url]


def wipe(server: ServerProcess) -> None:
    """Delete the store's data (everything in its data directory but its log, lock and config)."""
    keep = {server.log_path.name, ".bundlewise-store.lock", "zoo.cfg"}
    for p in server.data_dir.iterdir():
        if p.name in keep:
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


class Cell:
    """One store x manager cluster with its observer and lookup clients (module docstring)."""

    def __init__(
        self,
        store: str,
        manager: str,
        work_dir: Path,
        settings: dict[str, Any] | None = None,
        keep_logs: Path | None = None,
    ) -> None:
        self.store = store
        self.manager = manager
        self.work_dir = work_dir
        self.keep_logs = keep_logs  # a run with a finding copies the cluster's logs under it (``_keep_logs``)
        self.settings = {**BASE, **MANAGERS[manager], **(settings or {})}
        self.cluster: LocalCluster | None = None
        self.observer: FaultObserver | None = None
        self.answers: list[Answer] = []
        self.failed = 0
        self._stop = threading.Event()
        self._clients: threading.Thread | None = None
        self._burst = 0

    # -- the cluster -----------------------------------------------------------------------
    @property
    def c(self) -> LocalCluster:
        if self.cluster is None:
            raise RuntimeError("the cell is not started")
        return self.cluster

    @property
    def server(self) -> ServerProcess:
        if self.c.server is None:
            raise RuntimeError("the cell has no store of its own")
        return self.c.server

    def live(self) -> list[BrokerProcess]:
        return [b for b in self.c.brokers if b.is_running]

    def broker_of_port(self) -> dict[int, str]:
        return {int(b.settings["brokerServicePort"]): b.broker_id for b in self.c.brokers}

    def leader(self) -> str | None:
        for b in self.live():
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                r = httpx.get(f"{b.web_url}/admin/v2/brokers/leaderBroker", timeout=2.0)
                if r.status_code == 200:
                    return str(r.json()["brokerId"])
        return None

    def start(self) -> Cell:
        self.cluster = LocalCluster(BROKERS, backend=STORES[self.store], settings=self.settings, work_dir=self.work_dir)
        self.cluster.start()
        self._wait(lambda: self.leader() is not None, 20)
        self.observer = FaultObserver(lambda: [b.web_url for b in self.live()], lambda: self.c.store_url).start()
        self._stop.clear()
        self._clients = threading.Thread(target=lambda: asyncio.run(self._lookups()), daemon=True)
        self._clients.start()
        self.wait_served(TOPICS, 60)
        return self

    def stop(self, crash: bool = False) -> None:
        """Stop the clients, the observer and the cluster (``crash``: SIGKILL the brokers first -- a cluster that
        did not recover may take a broker's whole SIGTERM grace to stop)."""
        self._stop.set()
        if crash and self.cluster is not None:
            for b in self.live():
                b.kill()
        if self._clients is not None:
            self._clients.join(20)
        if self.observer is not None:
            self.observer.stop()
        if self.cluster is not None:
            self.cluster.stop()
        self.cluster = self.observer = self._clients = None

    def __enter__(self) -> Cell:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients ---------------------------------------------------------------------------
    def _answer(self, topic: str, broker_url: str | None, at: float, sent: float | None = None) -> Answer | None:
        if broker_url is None:
            return None
        port = int(broker_url.rsplit(":", 1)[-1].rstrip("/"))
        return Answer(at, topic, self.broker_of_port().get(port, broker_url), sent)

    async def _lookups(self) -> None:
        """Every topic looked up in turn, each time through the next live broker (Pulsar's client retries)."""
        async with httpx.AsyncClient() as http:
            client = LookupClient(lambda: [b.web_url for b in self.live()], http, timeout=5.0)
            while not self._stop.is_set():
                for topic in TOPICS:
                    if self._stop.is_set():
                        return
                    sent = time.monotonic()
                    rec = await client.lookup(topic, 0)
                    answer = self._answer(topic, rec.broker, time.monotonic(), sent)
                    if answer is None:
                        self.failed += 1
                    else:
                        self.answers.append(answer)
                await asyncio.sleep(0.05)

    async def burst(self, topics: list[str], per_broker: int = 2) -> tuple[list[Answer], int]:
        """Every topic looked up at once by ``per_broker`` clients of every live broker (first lookups)."""
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=200)) as http:
            clients = [
                LookupClient(_only(b.web_url), http, timeout=15.0) for b in self.live() for _ in range(per_broker)
            ]
            records = await asyncio.gather(*(c.lookup(t, 0) for c in clients for t in topics))
        at = time.monotonic()
        answers = [self._answer(r.topic, r.broker, at) for r in records]
        return [a for a in answers if a is not None], sum(1 for a in answers if a is None)

    async def _hammer(self, topics: list[str], seconds: float) -> None:
        """Lookups of ``topics`` through every live broker, all at once and again, for ``seconds`` (clients
        reconnecting while a race runs: what assigns a bundle the race just released)."""
        deadline = time.monotonic() + seconds
        async with httpx.AsyncClient() as http:
            clients = [LookupClient(_only(b.web_url), http, timeout=3.0) for b in self.live()]

            async def one(client: LookupClient, topic: str) -> None:
                sent = time.monotonic()
                rec = await client.lookup(topic, 0)
                answer = self._answer(topic, rec.broker, time.monotonic(), sent)
                if answer is not None:
                    self.answers.append(answer)

            while time.monotonic() < deadline:
                await asyncio.gather(*(one(c, t) for c in clients for t in topics))

    def hammer(self, bundle: str, seconds: float = 2.0) -> Callable[[], int]:
        """``_hammer`` of the topics of ``bundle``, as a call for ``_together`` (its status: 0)."""
        topics = [t for t in TOPICS if Bundle.parse(bundle).includes(t)]

        def call() -> int:
            asyncio.run(self._hammer(topics, seconds))
            return 0

        return call

    # -- waiting ---------------------------------------------------------------------------
    @staticmethod
    def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return False

    def rounds(self, after: float = 0.0) -> list[tuple[float, dict[str, list[str]]]]:
        assert self.observer is not None
        return [r for r in list(self.observer.result.history) if r[0] >= after]

    def recent_claims(self, rounds: int = 3, after: float = 0.0) -> dict[str, list[str]]:
        """The union of the last ``rounds`` broker rounds since ``after`` (a broker slow to answer one round
        still counts)."""
        merged: dict[str, list[str]] = {}
        for _, claims in self.rounds(after)[-rounds:]:
            for broker, served in claims.items():
                merged.setdefault(broker, []).extend(served)
        return merged

    def wait_served(self, topics: list[str], timeout: float, after: float = 0.0) -> bool:
        """Wait until every topic is served in the rounds since ``after``; False at the deadline."""
        return self._wait(
            lambda: bool(self.rounds(after)) and not uncovered(self.recent_claims(3, after), topics), timeout
        )

    def owner_of(self, topic: str) -> tuple[str, str]:
        """The bundle serving ``topic`` in the observer's latest round, and its broker."""
        assert self.observer is not None
        h = crc32_hash(topic)
        for broker, served in sorted(self.observer.latest().items()):
            for name in sorted(set(served)):
                if name.startswith(NS + "/") and Bundle.parse(name).includes_hash(h):
                    return name, broker
        raise RuntimeError(f"nobody serves {topic}")

    def served_bundle(self) -> tuple[str, str]:
        """The widest bundle with topics that some broker serves, and that broker."""
        assert self.observer is not None
        claims = self.observer.latest()
        hashes = [crc32_hash(t) for t in TOPICS]
        options = [
            (broker, name)
            for broker, served in sorted(claims.items())
            for name in sorted(set(served))
            if name.startswith(NS + "/") and any(Bundle.parse(name).includes_hash(h) for h in hashes)
        ]
        options.sort(key=lambda o: -(Bundle.parse(o[1]).upper - Bundle.parse(o[1]).lower))
        if not options:
            raise RuntimeError("no bundle with topics is served")
        return options[0][1], options[0][0]

    def _wait_served_for_good(self, topics: list[str], since: float, settle: float = 1.0) -> None:
        """Wait until every topic is served and still is ``settle`` s later (the answers of the last moments, and
        gaps or overlaps that come after recovery), waiting again after a new gap -- a broker that served for a
        moment and then fenced itself, e.g. -- until ``RECOVERY_S`` after ``since``."""
        deadline = since + RECOVERY_S
        while True:
            self.wait_served(topics, max(0.0, deadline - time.monotonic()), after=since)
            time.sleep(settle)
            if not uncovered(self.recent_claims(3, since), topics) or time.monotonic() >= deadline:
                return

    def _describe_unserved(self, left: list[str], first_answer: int, shown: int = 2) -> list[str]:
        """For the first ``shown`` topics nobody served at the end of a run: the owner the store records for it
        (ownership lock or channel record) and the brokers the run's last lookups of it named."""
        assert self.observer is not None
        locks, records = self.observer.store_latest()
        lines = []
        for topic in left[:shown]:
            held = sorted(overlap.serving(locks, topic) | overlap.serving(records, topic))
            named = [a.broker for a in self.answers[first_answer:] if a.topic == topic][-3:]
            lines.append(f"unserved {topic}: store owner {', '.join(held) or 'none'}; last answers {named or 'none'}")
        return lines

    def run(self, fault: str, index: int = 0) -> RunResult:
        """One run of ``fault`` (``FAULTS``) from a cluster that serves every topic (one that does not within
        ``RECOVERY_S`` is rebuilt first); rebuilds the cluster afterwards when it did not recover."""
        assert self.observer is not None
        if not self.wait_served(TOPICS, RECOVERY_S, after=time.monotonic()):  # the last run's aftermath
            self.rebuild()
        assert self.observer is not None
        self.observer.reset()
        first_answer = len(self.answers)
        failed_before = self.failed
        fired = FAULTS[fault](self, index)
        topics = list(fired.burst_bundles) or TOPICS
        self._wait_served_for_good(topics, fired.since)
        served_in, left = overlap.time_to_served(self.rounds(fired.since), topics, fired.since)
        unserved = self._describe_unserved(left, first_answer)
        journals = {b: overlap.journal_intervals(j) for b, j in self.observer.journals().items()}
        for b in fired.replace:
            with contextlib.suppress(Exception):
                b.kill()
            b.wrapper = []
        for b in (*fired.restart, *fired.replace):
            with contextlib.suppress(Exception):
                b.start(60)
        obs = self.observer.result
        handovers = [p for p in obs.overlaps if overlap.handover_in_a_round(p, obs.overlap_instants[p], journals)]
        overlaps = set(obs.overlaps) - set(handovers)
        candidates = set(overlap.journal_overlaps(journals, obs.started_at)) - set(obs.overlaps)
        answers, history = self.answers[first_answer:], list(obs.history)
        sampled_conflicts, stale = answer_conflicts(answers, history)
        confirmed = [
            a
            for a in sampled_conflicts
            if not overlap.served_per_journal(journals, a.broker, a.topic, a.at - 1, a.at + 2)
        ]
        conflicts = [a for a in confirmed if not overlap.released_before(journals, a, history)]
        stale += [a for a in confirmed if a not in conflicts]
        named = len(_named(conflicts))
        burst = burst_conflicts(fired.burst, fired.burst_bundles)
        result = RunResult(
            fault,
            self.store,
            self.manager,
            overlaps=len(overlaps),
            handovers=len(handovers),
            short_ownerships=len(_named(sampled_conflicts) - _named(confirmed)),
            journal_overlaps=len(candidates),
            store_overlaps=len(obs.store_overlaps),
            double_answers=named + len(burst),
            stale_answers=len({(a.topic, a.broker) for a in stale}),
            failed_lookups=self.failed - failed_before + fired.failed,
            time_to_served=None if served_in is None else round(served_in, 3),
            unrecovered=len({bundle_of(t) for t in left}),
            observer_hz=round(obs.rate, 1),
            actions=list(fired.actions),
        )
        shown = sorted(overlaps)[:3]
        result.examples = [f"overlap {o.a_broker} {o.a_bundle} / {o.b_broker} {o.b_bundle}" for o in shown]
        result.examples += [f"store overlap {o.a_bundle} / {o.b_bundle}" for o in obs.store_overlaps][:2]
        result.examples += [
            f"journal overlap {o.a_broker} {o.a_bundle} / {o.b_broker} {o.b_bundle}" for o in sorted(candidates)
        ][:2]
        skewed = {b.broker_id for b in fired.replace}
        result.examples += [
            overlap.describe_answer(a, history, fired.since, journals)
            + (f" [skewed broker {', '.join(sorted(skewed))}]" if skewed else "")
            for a in conflicts
        ][:2]
        result.examples += [f"burst {b} -> {sorted(v)}" for b, v in burst.items()][:2]
        result.examples += unserved
        findings = result.overlaps + result.store_overlaps + result.double_answers + result.unrecovered
        if self.keep_logs is not None and (findings or result.time_to_served is None):
            result.examples.append(
                f"logs kept in {self._keep_logs(f'{fault}-{self.store}-{self.manager}-{index + 1}')}"
            )
        if left or self.leader() is None or len(self.live()) < BROKERS:
            self.rebuild()
        return result

    def rebuild(self) -> None:
        """A new cluster in place of one that did not recover (its brokers SIGKILLed first)."""
        self.stop(crash=True)
        self.start()

    def _keep_logs(self, name: str) -> Path:
        """The cluster's logs copied to ``keep_logs/name`` (``cluster.copy_logs``)."""
        assert self.keep_logs is not None
        copy_logs(self.c.dir, self.keep_logs / name)
        return self.keep_logs / name


def _named(answers: list[Answer]) -> set[tuple[str, str]]:
    return {(a.topic, a.broker) for a in answers}


def bundle_of(topic: str, bundles: int = BUNDLES) -> str:
    """The initial bundle of ``topic`` (its namespace's ``bundles`` equal bundles)."""
    ns = topic.split("://", 1)[1].rsplit("/", 1)[0]
    return NamespaceBundles.initial(ns, bundles).bundle_for_hash(crc32_hash(topic)).name


# -- the faults ----------------------------------------------------------------------------------


def _admin(cell: Cell, via: BrokerProcess, bundle: str, action: str, query: str = "") -> Callable[[], int]:
    ns, rng = bundle.rsplit("/", 1)
    return lambda: _put(f"{via.web_url}/admin/v2/namespaces/{ns}/{rng}/{action}{query}")


def _others(cell: Cell, broker_id: str) -> list[BrokerProcess]:
    return [b for b in cell.live() if b.broker_id != broker_id]


def unload_racing_split(cell: Cell, index: int) -> Fired:
    """An admin unload and an admin split (``unload`` false on even runs, true on odd) of one bundle at once, while
    clients look its topics up through every broker (``Cell.hammer``), as do the other races; the second call of
    a race starts ``STAGGER_S`` later (by run), so the calls meet at different points of each other's work."""
    bundle, owner = cell.served_bundle()
    since = time.monotonic()
    split = "?unload=true" if index % 2 else "?unload=false"
    codes = _together(
        _admin(cell, cell.c.broker(owner), bundle, "split", split),
        _after(STAGGER_S[index % len(STAGGER_S)], _admin(cell, _others(cell, owner)[0], bundle, "unload")),
        cell.hammer(bundle),
    )
    return Fired(since, actions=(f"split{split} {codes[0]}", f"unload {codes[1]}"))


def split_racing_split(cell: Cell, index: int) -> Fired:
    """Two admin splits of one bundle at once, asked of two different brokers."""
    bundle, owner = cell.served_bundle()
    since = time.monotonic()
    a, b = _others(cell, owner)[:2]
    later = _after(STAGGER_S[index % len(STAGGER_S)], _admin(cell, b, bundle, "split"))
    codes = _together(_admin(cell, a, bundle, "split"), later, cell.hammer(bundle))
    return Fired(since, actions=tuple(f"split {c}" for c in codes[:2]))


def unload_racing_transfer(cell: Cell, index: int) -> Fired:
    """An admin unload and a transfer (unload with ``destinationBroker``) of one bundle at once."""
    bundle, owner = cell.served_bundle()
    since = time.monotonic()
    a, b = _others(cell, owner)[:2]
    codes = _together(
        _admin(cell, a, bundle, "unload"),
        _after(
            STAGGER_S[index % len(STAGGER_S)], _admin(cell, b, bundle, "unload", f"?destinationBroker={b.broker_id}")
        ),
        cell.hammer(bundle),
    )
    return Fired(since, actions=(f"unload {codes[0]}", f"transfer {codes[1]}"))


def store_pause(cell: Cell, index: int) -> Fired:
    """SIGSTOP the store for the session timeout + 2 s, then SIGCONT."""
    cell.server.pause()
    time.sleep(SESSION_S + 2)
    cell.server.resume()
    return Fired(time.monotonic())


def store_restart(cell: Cell, index: int) -> Fired:
    """SIGKILL the store, keep it down for the session timeout + 1 s, start it on the same data directory."""
    cell.server.kill()
    time.sleep(SESSION_S + 1)
    cell.server.start(60)
    return Fired(time.monotonic())


def store_wiped(cell: Cell, index: int) -> Fired:
    """SIGKILL the store, delete its data, start it again empty on the same port."""
    cell.server.kill()
    wipe(cell.server)
    time.sleep(1)
    cell.server.start(60)
    return Fired(time.monotonic())


def lookup_burst(cell: Cell, index: int) -> Fired:
    """First lookups of a fresh namespace's topics, all at once, by two clients of every broker."""
    cell._burst += 1
    ns = f"campaign/burst-{cell._burst}"
    topics = [f"persistent://{ns}/t-{i}" for i in range(16)]
    since = time.monotonic()
    answers, failed = asyncio.run(cell.burst(topics))
    return Fired(since, burst=answers, burst_bundles={t: bundle_of(t) for t in topics}, failed=failed)


def _kill(cell: Cell, victim: BrokerProcess) -> Fired:
    _give_topics(cell, victim)
    since = time.monotonic()
    victim.kill()
    return Fired(since, restart=(victim,))


def _serves_topics(cell: Cell, broker: BrokerProcess) -> bool:
    """Whether the observer's latest round saw ``broker`` serving a bundle with one of the topics."""
    assert cell.observer is not None
    mine = {broker.broker_id: cell.observer.latest().get(broker.broker_id, [])}
    return len(uncovered(mine, TOPICS)) < len(TOPICS)


def _give_topics(cell: Cell, victim: BrokerProcess) -> None:
    """A kill of a broker that serves none of the topics measures nothing (the extensible manager does not move
    bundles back to a restarted broker while shedding is off): move the widest bundle with topics to it first (an
    admin unload naming it) and wait until it serves it."""
    if _serves_topics(cell, victim):
        return
    bundle, holder = cell.served_bundle()
    _admin(cell, cell.c.broker(holder), bundle, "unload", f"?destinationBroker={victim.broker_id}")()
    cell._wait(lambda: _serves_topics(cell, victim), RECOVERY_S)
    cell.wait_served(TOPICS, RECOVERY_S, after=time.monotonic())


def broker_kill(cell: Cell, index: int) -> Fired:
    """SIGKILL a broker that is not the leader (the one serving most bundles; one with topics is moved to it
    first when it serves none)."""
    leader = cell.leader()
    claims = cell.observer.latest() if cell.observer else {}
    victims = [b for b in cell.live() if b.broker_id != leader]
    return _kill(cell, max(victims, key=lambda b: len(set(claims.get(b.broker_id, [])))))


def leader_kill(cell: Cell, index: int) -> Fired:
    """SIGKILL the leader (a bundle with topics is moved to it first when it serves none)."""
    leader = cell.leader()
    return _kill(cell, cell.c.broker(leader) if leader else cell.live()[0])


def owner_kill(cell: Cell, index: int) -> Fired:
    """SIGKILL the owner of the first topic (the real clients' topic in the loss campaign), leader or not."""
    _, owner = cell.owner_of(TOPICS[0])
    return _kill(cell, cell.c.broker(owner))


def owner_pause(cell: Cell, index: int) -> Fired:
    """SIGSTOP the owner of the first topic for the session timeout + 2 s, then SIGCONT: it wakes up fenced."""
    _, owner = cell.owner_of(TOPICS[0])
    victim = cell.c.broker(owner)
    since = time.monotonic()
    victim.pause()
    time.sleep(SESSION_S + 2)
    victim.resume()
    return Fired(since)


def leader_kill_during_unload(cell: Cell, index: int) -> Fired:
    """An admin unload of the first topic's bundle, and SIGKILL of the leader ``STAGGER_S`` later."""
    bundle, owner = cell.owner_of(TOPICS[0])
    leader = cell.leader() or owner
    victim = cell.c.broker(leader)
    via = next(b for b in cell.live() if b is not victim)
    kill, killed_at = _killer(victim)
    codes = _together(_admin(cell, via, bundle, "unload"), _after(STAGGER_S[index % len(STAGGER_S)], kill))
    return Fired(killed_at[0], restart=(victim,), actions=(f"unload {codes[0]}",))


def owner_kill_during_split(cell: Cell, index: int) -> Fired:
    """An admin split of the first topic's bundle on its owner, and SIGKILL of that owner ``STAGGER_S`` later."""
    bundle, owner = cell.owner_of(TOPICS[0])
    victim = cell.c.broker(owner)
    kill, killed_at = _killer(victim)
    codes = _together(_admin(cell, victim, bundle, "split"), _after(STAGGER_S[index % len(STAGGER_S)] + 0.05, kill))
    return Fired(killed_at[0], restart=(victim,), actions=(f"split {codes[0]}",))


def skewed_owner_pause(cell: Cell, index: int) -> Fired:
    """The owner of the first topic restarted with its clocks at half rate (libfaketime, ``FAKETIME="+0 x0.5"``),
    the first topic's bundle moved to it (an admin unload naming it), then SIGSTOP for the session timeout + 2 s
    and SIGCONT: on its slow clock the pause looks half as long.  On etcd its clock check fences it first (it
    never serves); on ZooKeeper nothing checks the rate (docs/live/guarantees.md §17.2).  It runs normally again
    after the run."""
    _, owner = cell.owner_of(TOPICS[0])
    victim = cell.c.broker(owner)
    victim.kill()
    victim.wrapper = ["env", f"LD_PRELOAD={libfaketime()}", "FAKETIME=+0 x0.5", "FAKETIME_NO_CACHE=1"]
    victim.start(60)
    bundle, holder = cell.owner_of(TOPICS[0]) if cell.wait_served([TOPICS[0]], RECOVERY_S) else ("", "")
    moved: int | str = "not needed" if bundle else "not served"  # already there: came back to it by itself
    if bundle and holder != victim.broker_id:
        moved = _admin(cell, cell.c.broker(holder), bundle, "unload", f"?destinationBroker={victim.broker_id}")()
    cell.wait_served([TOPICS[0]], RECOVERY_S, after=time.monotonic() + 0.5)
    since = time.monotonic()
    victim.pause()
    time.sleep(SESSION_S + 2)
    victim.resume()
    return Fired(since, replace=(victim,), actions=(f"move to the skewed broker {moved}",))


def libfaketime() -> str:
    """Debian's libfaketime (the ``faketime`` package, which ``make test`` installs)."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        raise RuntimeError("libfaketime is not installed (Debian package faketime)")
    return found[0]


def _killer(victim: BrokerProcess) -> tuple[Callable[[], int], list[float]]:
    """A call for ``_together`` that SIGKILLs ``victim``, and the list its moment goes into: a run measures
    from the kill (rounds seen between the race's start and the kill would pass for recovery)."""
    at: list[float] = []

    def kill() -> int:
        at.append(time.monotonic())
        victim.kill()
        return 0

    return kill, at


FAULTS: dict[str, Callable[[Cell, int], Fired]] = {
    "unload-racing-split": unload_racing_split,
    "split-racing-split": split_racing_split,
    "unload-racing-transfer": unload_racing_transfer,
    "store-pause": store_pause,
    "store-restart": store_restart,
    "store-wiped": store_wiped,
    "lookup-burst": lookup_burst,
    "broker-kill": broker_kill,
    "leader-kill": leader_kill,
    "owner-kill": owner_kill,
    "owner-pause": owner_pause,
    "leader-kill-during-unload": leader_kill_during_unload,
    "owner-kill-during-split": owner_kill_during_split,
    "skewed-owner-pause": skewed_owner_pause,
}
MANAGERS_OF = {"unload-racing-transfer": ("extensible",)}  # a transfer is the extensible manager's


def cells(faults: list[str] | None = None) -> Iterator[tuple[str, str, str]]:
    """(fault, store, manager) of the campaign, every fault on every store and the managers it applies to."""
    for fault in faults or list(FAULTS):
        for store in STORES:
            for manager in MANAGERS_OF.get(fault, tuple(MANAGERS)):
                yield fault, store, manager
