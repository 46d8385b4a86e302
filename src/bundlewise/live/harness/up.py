"""``live up``: a scenario played on a real cluster -- a store, broker processes, lookup clients, events.

``run_live(plan)`` follows the order an operator would:

1. start the store (unless ``plan.store_url``) and write each namespace's bundles to
   ``/admin/local-policies/{tenant}/{ns}`` (``NamespaceBundleFactory`` reads them there), so the brokers
   split the namespaces as the scenario says; once the initial brokers run, the scenario's ``[policies]``
   go where Pulsar keeps them (``write_policies``; a policy's broker regexes are matched against the
   scenario's broker names and written as the matching brokers' ids);
2. start the brokers that are up at time 0, one real process each (``live.harness.cluster.LocalCluster``), in
   parallel, all with the same ``--time-scale``, ``--time-origin``, ``--workload`` and settings, Pulsar time held;
3. while Pulsar time runs to ``plan.duration``: the real clients of the scenario's ``[clients]``
   (``live.harness.clients``: the official client's producers and consumers, started first), the lookup clients
   (``live.harness.lookups.LookupDriver``, one round per step), the timeline sampler
   (``live.harness.sampler.TimelineSampler``, one sample per step), the events (``live.harness.events.EventPlayer``:
   SIGKILL / stop / start at their Pulsar times), the ownership observer (``live.harness.observer``, 20 Hz) and a
   progress line on stderr;
4. stop everything it started, by PID -- also on Ctrl-C or an error -- and hand back what was recorded
   (``LiveRun``); the broker processes' decision logs are read by ``live.harness.outputs``.

Pulsar time stands at 0 while the initial brokers start (``LocalCluster(held=True)``: ``--time-origin`` with
``--time-start-file``): they register, elect a leader and own their system bundles at time 0, and it runs from
the moment the cluster is ready and the policies are written (``release_time``), so a scenario's events and
load meet the cluster at the Pulsar times it gives however long a loaded machine takes to start a few
Python processes.  A broker started later by an event starts on running time, as a joining broker does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import secrets
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bundlewise.config import Config
from bundlewise.config.views import BrokerSettings
from bundlewise.live.broker import values
from bundlewise.live.broker.auth import make_token
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.harness.clients import ClientRecords, RealClients
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.events import EventPlayer, LiveEvent
from bundlewise.live.harness.lookups import LookupClient, LookupDriver, LookupRecord, calibrate
from bundlewise.live.harness.observer import Observations, OwnershipObserver
from bundlewise.live.harness.sampler import TimelineSampler
from bundlewise.live.store import JSON, MetadataStore, connect, layout
from bundlewise.model.bundles import initial_boundaries
from bundlewise.model.durations import format_duration
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.traffic.clients import ClientsSpec
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.workload import Workload

SIGNALLED = ("restart", "remove")
"""Events that SIGKILL or SIGTERM a broker's process: refused when a process runs several brokers."""

SAMPLE_GRACE_SECONDS = 15.0
"""How long the end of a run waits for the sampler to finish its last tick (real seconds)."""


@dataclass(frozen=True)
class LivePlan:
    name: str
    brokers: tuple[BrokerSpec, ...]  # every broker the run may start, in slot order
    initial: tuple[str, ...]  # up at time 0
    events: tuple[LiveEvent, ...]
    namespaces: tuple[tuple[str, int], ...]  # (tenant/ns, bundles)
    workload: Workload
    workload_path: str  # the same workload as a trace file the brokers read
    config: Config
    strategy: str
    time_scale: float
    duration: int  # Pulsar ms
    step: int  # Pulsar ms between samples and lookup rounds
    settings: dict[str, Any] = field(default_factory=dict)  # --set for every broker
    backend: str = "etcd"
    store_url: str | None = None
    authentication: bool = True
    work_dir: Path | None = None
    leader_path: str = layout.LEADER  # the manager's leader node (the extensible one: EXTENSION_LEADER)
    policies: PlacementPolicies = NO_POLICIES  # the scenario's [policies], written where Pulsar keeps them
    clients: ClientsSpec | None = None  # real producers and consumers (the scenario's [clients], the flags)
    brokers_per_process: int = 1  # the brokers up at time 0, this many to a process (``LocalCluster``)


@dataclass
class LiveRun:
    plan: LivePlan
    origin_ms: int
    admin_token: str | None
    sampler: TimelineSampler
    lookups: list[LookupRecord]
    observations: Observations
    player: EventPlayer
    decision_files: list[Path]
    wall_seconds: float
    clients: ClientRecords | None = None  # what the real clients saw (None: the run had none)
    calibration_ms: float | None = None  # an owned-bundle lookup on the idle cluster (``lookups.calibrate``)


@dataclass(frozen=True)
class Credentials:
    settings: dict[str, str]
    admin: str | None  # super-user: admin calls, the observer, the sampler
    client: str | None  # the lookup clients' role


def credentials(enabled: bool) -> Credentials:
    """Pulsar's token authentication with a fresh HMAC key: ``admin`` and ``broker`` are super-users, the
    lookup clients are the role ``client`` (``AuthenticationProviderToken``; ``pulsar tokens create``)."""
    if not enabled:
        return Credentials({"authenticationEnabled": "false"}, None, None)
    secret = secrets.token_bytes(32)
    broker = make_token(secret, "broker")
    return Credentials(
        {
            "authenticationEnabled": "true",
            "tokenSecretKey": "data:;base64," + base64.b64encode(secret).decode(),
            "superUserRoles": "admin,broker",
            "brokerClientAuthenticationParameters": f"token:{broker}",
        },
        make_token(secret, "admin"),
        make_token(secret, "client"),
    )


def broker_args(spec: BrokerSpec) -> tuple[str, ...]:
    return ("--cores", repr(spec.cpu_cores), "--nic-mbps", repr(spec.nic_mbps))


async def write_namespaces(store: MetadataStore, namespaces: tuple[tuple[str, int], ...]) -> None:
    for ns, n in namespaces:
        await store.put(layout.local_policies(ns), JSON.encode(values.local_policies(initial_boundaries(n))))


def _ids_of(patterns: list[str], ids: dict[str, str]) -> list[str]:
    """A policy's broker regexes, matched against the scenario's broker names, as the matching broker ids."""
    compiled = [re.compile(p) for p in patterns]
    named = [re.escape(bid) for name, bid in ids.items() if any(c.fullmatch(name) for c in compiled)]
    return named or patterns


def policies_document(policies: PlacementPolicies, ids: dict[str, str]) -> dict[str, Any]:
    """The scenario's isolation policies as ``ns-isolation-policy set`` stores them, broker names made ids."""
    out = {}
    for name, data in policies.isolation.to_json().items():
        data["primary"] = _ids_of(data["primary"], ids)
        data["secondary"] = _ids_of(data["secondary"], ids)
        out[name] = data
    return out


async def write_policies(store: MetadataStore, plan: LivePlan, cluster_name: str, ids: dict[str, str]) -> None:
    """``ns-isolation-policy set``, ``clusters create-failure-domain`` and ``namespaces set-anti-affinity-group``
    as their stored results (docs/placement.md), before any lookup."""
    p = plan.policies
    if p.isolation:
        await store.put(layout.isolation_policies(cluster_name), JSON.encode(policies_document(p, ids)))
    domains: dict[str, list[str]] = {}
    for broker, domain in p.broker_domains.items():
        domains.setdefault(domain, []).append(ids.get(broker, broker))
    for domain, brokers in domains.items():
        await store.put(f"{layout.failure_domains(cluster_name)}/{domain}", JSON.encode({"brokers": brokers}))
    for ns, group in p.anti_affinity.items():
        got = await store.get(layout.local_policies(ns))
        value = JSON.decode(got.value) if got is not None and got.value else {}
        await store.put(layout.local_policies(ns), JSON.encode({**value, "namespaceAntiAffinityGroup": group}))


def _bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class Progress:
    """One status line on stderr, redrawn in place on a terminal, every tenth of the run otherwise."""

    def __init__(self, plan: LivePlan, clock: PulsarClock, enabled: bool) -> None:
        self.plan, self.clock, self.enabled = plan, clock, enabled
        self.tty = sys.stderr.isatty()
        self.last_decile = -1

    def line(self, up: int, lookups: list[LookupRecord], obs: Observations, events: int) -> str:
        now = min(self.clock.elapsed_ms(), self.plan.duration) // 1000 * 1000  # whole seconds: "12m5s"
        failed = sum(1 for r in lookups if r.result != "ok")
        return (
            f"live up {self.plan.name}: {format_duration(max(0, now))} / {format_duration(self.plan.duration)}"
            f" · brokers up {up} · lookups {len(lookups)} ({failed} failed) · events {events}"
            f"/{len(self.plan.events)} · double owners {len(obs.double_owners)}"
        )

    def show(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        decile = min(10, max(0, self.clock.elapsed_ms()) * 10 // max(1, self.plan.duration))
        if self.tty:
            sys.stderr.write("\r" + text + ("\n" if final else "\x1b[K"))
        elif final or decile != self.last_decile:
            self.last_decile = decile
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


async def _play(
    plan: LivePlan, cluster: LocalCluster, creds: Credentials, procs: dict[str, BrokerProcess], show_progress: bool
) -> LiveRun:
    clock = cluster.release_time()  # the scenario starts now, every broker up and every policy written
    store = await connect(cluster.store_url, session_timeout=30)
    player = EventPlayer(cluster, procs, plan.brokers, clock, store, broker_args, plan.leader_path)
    observer = OwnershipObserver(player.up_urls, token=creds.admin).start()
    try:  # stopped however the run ends (a Ctrl-C during the calibration included)
        player.observer = observer
        interval = plan.step / 1000.0 / plan.time_scale
        sampler = TimelineSampler(
            [b.name for b in plan.brokers], plan.step, plan.duration, clock, store, player, creds.admin, plan.config,
            plan.workload if plan.leader_path == layout.EXTENSION_LEADER else None,
        )  # fmt: skip
        started = time.monotonic()
        progress = Progress(plan, clock, show_progress)
        real: RealClients | None = None
        if plan.clients is not None and plan.clients.any:
            hosts = ",".join(f"{p.host}:{p.settings['brokerServicePort']}" for p in procs.values())
            topics = plan.clients.topic_names(tuple(ns for ns, _ in plan.namespaces))
            real = RealClients(plan.clients, topics, f"pulsar://{hosts}", creds.client)
            await asyncio.to_thread(real.start)
        async with (
            httpx.AsyncClient(headers=_bearer(creds.client), limits=httpx.Limits(max_connections=64)) as http,
        ):
            names = plan.workload.topics.names
            calibration = await calibrate(LookupClient(player.up_urls, http), names[0]) if len(names) else None
            driver = LookupDriver(
                LookupClient(player.up_urls, http),
                plan.workload,
                clock,
                sampler.boundaries,
                interval=max(interval, 0.25),
            )
            tasks = [
                asyncio.create_task(sampler.run(), name="sampler"),
                asyncio.create_task(driver.run(), name="lookups"),
                asyncio.create_task(player.run(plan.events), name="events"),
            ]
            try:
                while clock.elapsed_ms() < plan.duration:
                    for t in tasks:
                        if t.done() and t.exception() is not None:
                            raise t.exception()  # type: ignore[misc]
                    progress.show(progress.line(len(player.up_urls()), driver.records, observer.result, player.done))
                    await asyncio.sleep(
                        min(1.0, max(0.05, (plan.duration - clock.elapsed_ms()) / 1000 / plan.time_scale))
                    )
                # the last tick's sample may still be reading the brokers (a loaded machine): let it finish, so the
                # timeline has every tick; its reads are bounded by their own timeouts
                await asyncio.wait([tasks[0]], timeout=SAMPLE_GRACE_SECONDS)
            finally:
                for t in tasks:
                    t.cancel()
                for t in tasks:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await t
                records = await asyncio.to_thread(real.stop) if real is not None else None
                observations = observer.stop()
                await store.close()
    finally:
        observer.stop()
    progress.show(progress.line(len(player.up_urls()), driver.records, observations, player.done), final=True)
    files = sorted(cluster.dir.glob("decisions-*.jsonl"))
    return LiveRun(
        plan, cluster.origin_ms, creds.admin, sampler, driver.records, observations, player, files,
        time.monotonic() - started, records, calibration,
    )  # fmt: skip


def start_brokers(cluster: LocalCluster, plan: LivePlan, procs: dict[str, BrokerProcess]) -> None:
    """The brokers up at time 0, started in parallel (each waits for its own readiness); with
    ``brokers_per_process`` K > 1, K to a process, in the scenario's order (the last process may hold fewer)."""
    specs = {b.name: b for b in plan.brokers}
    k = plan.brokers_per_process
    if k > 1:
        chunks = [plan.initial[i : i + k] for i in range(0, len(plan.initial), k)]
        with ThreadPoolExecutor(max_workers=max(1, len(chunks))) as pool:
            groups = [
                (chunk, pool.submit(cluster.add_group, [broker_args(specs[n]) for n in chunk], 120.0 + 10.0 * k))
                for chunk in chunks
            ]
            for chunk, started in groups:
                procs.update(zip(chunk, started.result(), strict=True))
        return
    with ThreadPoolExecutor(max_workers=max(1, len(plan.initial))) as pool:
        futures = {
            name: pool.submit(cluster.add_broker, 120.0, None, broker_args(specs[name])) for name in plan.initial
        }
        for name, f in futures.items():
            procs[name] = f.result()


def run_live(
    plan: LivePlan, *, progress: bool = True, on_ready: Callable[[LocalCluster, str | None], None] | None = None
) -> tuple[LiveRun, Path]:
    """Play ``plan`` for real; everything started is stopped before this returns or raises.  Returns the
    run and the cluster's working directory (the brokers' logs and decision files; the caller removes it)."""
    signalled = [e for e in plan.events if e.action in SIGNALLED]
    if plan.brokers_per_process > 1 and signalled:  # the command line refuses it first (``cli.live``)
        raise ValueError(
            f"{len(signalled)} restart/remove events would signal processes of {plan.brokers_per_process} brokers"
        )
    creds = credentials(plan.authentication)
    settings = {**plan.settings, **creds.settings}
    cluster = LocalCluster(
        0,
        backend=plan.backend,
        store_url=plan.store_url,
        settings=settings,
        time_scale=plan.time_scale,
        workload=plan.workload_path,
        work_dir=plan.work_dir,
        held=True,
        brokers_per_process=plan.brokers_per_process,
    )
    try:
        cluster.start()

        async def prepare() -> None:
            store = await connect(cluster.store_url, session_timeout=30)
            try:
                await write_namespaces(store, plan.namespaces)
            finally:
                await store.close()

        asyncio.run(prepare())
        cluster.origin_ms = int(time.time() * 1000)
        procs: dict[str, BrokerProcess] = {}
        start_brokers(cluster, plan, procs)
        if plan.policies:

            async def constrain() -> None:
                store = await connect(cluster.store_url, session_timeout=30)
                try:
                    ids = {name: b.broker_id for name, b in procs.items()}
                    await write_policies(store, plan, plan.config.view(BrokerSettings).cluster, ids)
                finally:
                    await store.close()

            asyncio.run(constrain())
            time.sleep(3.0)  # the brokers' constraint caches hear of it (a notification) before any lookup
        if on_ready is not None:
            on_ready(cluster, creds.admin)
        run = asyncio.run(_play(plan, cluster, creds, procs, progress))
        return run, cluster.dir
    finally:
        cluster.stop()
