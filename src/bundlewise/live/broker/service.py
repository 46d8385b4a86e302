"""One broker (``PulsarService``): the composition of everything a broker runs; ``run_brokers`` runs one or
several of them in one process and event loop.

``Broker.start`` follows ``PulsarService#start``: open the metadata store (the session every ephemeral
node of this broker belongs to; credentials from the store URL), build the namespace bundles cache and the
load manager chosen by ``loadManagerClassName`` -- ``ModularLoadManagerImpl`` (``live.broker.modular``:
ephemeral ownership locks) or ``ExtensibleLoadManagerImpl`` (``live.broker.extensible``: the service-unit
state channel), each with its own ownership and namespace service -- start the web service (uvicorn, so the
broker id's port is bound), then start the load manager, which runs for leader, registers the broker and
starts its tasks.
When it is ready the process prints one JSON line ``{"brokerId", "webServiceUrl", "pid"}`` on stdout.

In process (``admin_transport`` given: tests on the in-memory store) nothing is bound and nothing printed:
the broker's HTTP surface is ``create_app(broker)`` and its admin client reaches the other brokers
through ``admin_transport``.

``Broker.stop`` is the graceful shutdown (``BrokerService#unloadNamespaceBundlesGracefully``): the
load manager stops (registration and leadership released, every owned bundle unloaded or handed over), the
web server stops and the session ends: what ``start`` opened is closed in reverse order, each part only if it
was opened.  A SIGKILL leaves the nodes to expire with the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import httpx

from bundlewise.algorithms.extensible.channel import ChannelSettings
from bundlewise.config import Config, short_class_name
from bundlewise.config.views import AuthSettings, BrokerSettings, SplitSettings, TopicSettings
from bundlewise.live.broker import values
from bundlewise.live.broker.admin_client import AdminClient
from bundlewise.live.broker.auth import Authority, client_token
from bundlewise.live.broker.binary import BinaryService, start_binary
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.broker.constraints import ConstraintsCache
from bundlewise.live.broker.extensible import ExtensibleLoadManager
from bundlewise.live.broker.logcontext import context_of
from bundlewise.live.broker.manager import BrokerContext, LoadManager
from bundlewise.live.broker.modular import ModularLoadManager
from bundlewise.live.broker.namespace import NamespaceService
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.topic_resources import TopicResources
from bundlewise.live.broker.traffic import EmulatedTraffic
from bundlewise.live.store import AuthError, ConnectionLossError, MetadataStore, connect
from bundlewise.live.store.session import FencingAssumption
from bundlewise.model.errors import InputError
from bundlewise.model.load import LocalBrokerData
from bundlewise.model.resources import MIB, ResourceUsage
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.workload import Workload

log = logging.getLogger(__name__)
MODULAR = "ModularLoadManagerImpl"
EXTENSIBLE = "ExtensibleLoadManagerImpl"


@dataclass(frozen=True, slots=True)
class BrokerOptions:
    """What ``bundlewise broker`` was given."""

    store_url: str
    host: str
    port: int
    config: Config
    cores: float = 8.0
    nic_mbps: float = 10000.0
    workload: Workload | None = None
    time_scale: float = 1.0
    time_origin_ms: int | None = None
    time_start_file: Path | None = None
    decisions: Path | None = None
    load_data_log: Path | None = None
    process_share: int = 1  # brokers running in this process (``run_brokers``): its memory is split among them


class JsonLines:
    """An append-only JSON Lines log (flushed per line), or nothing."""

    def __init__(self, path: Path | None) -> None:
        self._file: IO[str] | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def write(self, row: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(row, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Broker:
    def __init__(self, options: BrokerOptions, admin_transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.options = options
        self.admin_transport = admin_transport
        self.config = options.config
        settings = self.config.view(BrokerSettings)
        self.identity = values.BrokerIdentity(
            options.host, options.port, settings.broker_service_port, settings.cluster
        )
        self.authority = Authority(self.config.view(AuthSettings))
        self.clock = PulsarClock.starting_now(options.time_scale, options.time_origin_ms, options.time_start_file)
        spec = BrokerSpec(self.identity.broker_id, cpu_cores=options.cores, nic_mbps=options.nic_mbps)
        self.traffic = EmulatedTraffic(spec, self.clock, options.workload)
        self.decisions = JsonLines(options.decisions)
        self.load_data_log = JsonLines(options.load_data_log)
        self.log_context = context_of(self.identity.broker_id)  # its tasks log under its id (``run_brokers``)
        self.started = False
        self.closing = False
        self._server: Any = None
        self._serve_task: asyncio.Task[None] | None = None
        self._opened = contextlib.AsyncExitStack()  # what start() opened, closed in reverse by stop()

    # -- the parts, created in start() ----------------------------------------------------
    store: MetadataStore
    bundles: BundlesCache
    manager: LoadManager
    admin: AdminClient
    topic_resources: TopicResources
    binary: BinaryService | None = None

    @property
    def namespace(self) -> NamespaceService:
        return self.manager.namespace

    def _on_stop(self, close: Callable[[], Awaitable[object] | None]) -> None:
        """Close this part on ``stop`` (errors ignored: the rest still closes)."""

        async def quietly() -> None:
            with contextlib.suppress(Exception):
                result = close()
                if result is not None:
                    await result

        self._opened.push_async_callback(quietly)

    def sample_load(self) -> LocalBrokerData:
        """The broker's load now: the cost model over the emulated and the real traffic of the bundles it serves."""
        stats = self.traffic.bundle_stats(self.namespace.served())
        if self.binary is not None:
            stats = self.traffic.with_real(stats, self.binary.traffic())
        settings = self.config.view(BrokerSettings)
        report = LocalBrokerData.of_stats(
            replace(self.traffic.resources(stats), memory=process_memory(self.options.process_share)),
            stats,
            brokerVersionString=values.BROKER_VERSION,
            loadManagerClassName=settings.load_manager_class,
            persistentTopicsEnabled=settings.persistent_topics,
            nonPersistentTopicsEnabled=settings.non_persistent_topics,
        )
        return report

    def healthy(self) -> bool:
        return self.started and not self.closing and self.store.is_connected

    async def start(self) -> None:
        settings = self.config.view(BrokerSettings)
        kind = short_class_name(settings.load_manager_class)
        if kind not in (MODULAR, EXTENSIBLE):
            raise InputError(
                f"expected org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl or "
                f"org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl, "
                f"got {settings.load_manager_class}",
                field="loadManagerClassName",
            )
        if kind == EXTENSIBLE:
            self.config.view(ChannelSettings)  # refuses a tombstone delay below the in-flight wait
        try:
            self.store = await connect(
                self.options.store_url,
                session_timeout=settings.session_timeout_ms / 1000.0,
                operation_timeout=settings.operation_timeout_ms / 1000.0,
                fencing_margin=FencingAssumption(settings.session_timeout_ms / 10_000.0, settings.max_clock_rate_ppm),
            )
        except (ConnectionLossError, AuthError) as e:
            raise InputError(f"cannot open the metadata store: {e}", field="--store") from None
        self._on_stop(self.store.close)
        self.topic_resources = TopicResources(self.store, self.config.view(TopicSettings))
        self.bundles = BundlesCache(self.store, self.config.view(SplitSettings).default_bundles)
        self._on_stop(self.bundles.close)
        auth = self.config.view(AuthSettings)
        self.admin = AdminClient(
            self.identity.web_url, client_token(auth), settings.unload_timeout_ms / 1000.0 + 5, self.admin_transport
        )
        self._on_stop(self.admin.close)
        constraints = ConstraintsCache(self.store, settings.cluster)
        self._on_stop(constraints.close)
        ctx = BrokerContext(
            identity=self.identity,
            store=self.store,
            config=self.config,
            clock=self.clock,
            bundles=self.bundles,
            sample_load=self.sample_load,
            admin=self.admin,
            log_decision=self.decisions.write,
            log_load_data=self.load_data_log.write,
            topic_loads=self.traffic.topic_loads,
            constraints=constraints,
        )
        self.manager = ExtensibleLoadManager(ctx) if kind == EXTENSIBLE else ModularLoadManager(ctx)
        if self.admin_transport is None:
            await self._start_web()
            self.binary = await start_binary(self, self.store)
            self._on_stop(self.binary.stop)  # after the manager's stop (LIFO): its unloads close the topics first
        self._on_stop(self.manager.stop)
        await self.manager.start()
        self.started = True
        if self.admin_transport is not None:
            return
        line = {"brokerId": self.identity.broker_id, "webServiceUrl": self.identity.web_url, "pid": os.getpid()}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        log.info("broker %s started", self.identity.broker_id)

    async def _start_web(self) -> None:
        import uvicorn

        from bundlewise.live.broker.http.app import create_app

        config = uvicorn.Config(
            create_app(self),
            host=self.options.host,
            port=self.options.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        family = socket.AF_INET6 if ":" in self.options.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # proto set: asyncio sets TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.options.host, self.options.port))
        except OSError as e:
            sock.close()
            raise InputError(
                f"cannot serve on {self.options.host}:{self.options.port}: {e.strerror}", field="--web"
            ) from None
        self._server = uvicorn.Server(config)
        self._server.capture_signals = contextlib.nullcontext  # the broker owns the signals
        self._serve_task = asyncio.get_running_loop().create_task(self._server.serve([sock]), name="web-service")
        self._on_stop(self._stop_web)
        deadline = time.monotonic() + 30
        while not self._server.started:
            if self._serve_task.done():
                raise InputError(f"cannot serve on {self.options.host}:{self.options.port}", field="--web")
            if time.monotonic() > deadline:
                raise InputError(f"the web service did not start on {self.identity.web_url}", field="--web")
            await asyncio.sleep(0.02)

    async def _stop_web(self) -> None:
        self._server.should_exit = True
        if self._serve_task is not None:
            await asyncio.wait_for(self._serve_task, 5)

    async def stop(self) -> None:
        """Graceful shutdown (module docstring)."""
        if self.closing:
            return
        self.closing = True
        await self._opened.aclose()
        self.decisions.close()
        self.load_data_log.close()


async def run_broker(options: BrokerOptions) -> int:
    """Run one broker until SIGTERM/SIGINT (graceful stop, exit 0)."""
    return await run_brokers([options])


async def run_brokers(options: Sequence[BrokerOptions]) -> int:
    """Run several brokers in this process and event loop until SIGTERM/SIGINT, then stop them all gracefully
    (exit 0).  Each is a whole broker -- its own store session, web and binary listeners, load manager and
    tasks -- run in its own logging context (``live.broker.logcontext``).  The first starts alone, so that it
    wins the leader election as a cluster's first broker does, then the others side by side; when one fails to
    start, every one started (or starting) is stopped and its error raised.  Each prints its own ready line.
    They stop one after the other, the last started first: stopped side by side, an extensible broker would hand
    its bundles over to a broker stopping too and wait out the in-flight timeout (30 s by default)."""
    import signal

    brokers = [Broker(o) for o in options]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def in_context(broker: Broker, work: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
        return loop.create_task(work(), name=f"broker {broker.identity.broker_id}", context=broker.log_context)

    try:
        if brokers:
            await in_context(brokers[0], brokers[0].start)
        rest = [in_context(b, b.start) for b in brokers[1:]]
        if rest:
            done = await asyncio.gather(*rest, return_exceptions=True)
            failed = next((e for e in done if isinstance(e, BaseException)), None)
            if failed is not None:
                raise failed
        await stop.wait()
    finally:
        for b in reversed(brokers):
            with contextlib.suppress(Exception):
                await in_context(b, b.stop)
    return 0


def process_memory(share: int = 1) -> ResourceUsage:
    """This process's memory as Pulsar reports the JVM heap (``LoadManagerShared#getSystemResourceUsage``):
    usage and limit in MiB -- the resident set and the machine's physical memory here (``{0, 0}`` where
    ``/proc`` is not available).  Its weight defaults to 0, so it informs operators, not the balancer.
    With ``share`` brokers in the process each reports the resident set divided by ``share``: the sum over
    the process's brokers is the process's resident set."""
    try:
        with open("/proc/self/statm") as f:
            resident_pages = int(f.read().split()[1])
        page = os.sysconf("SC_PAGE_SIZE")
        total = os.sysconf("SC_PHYS_PAGES") * page
    except (OSError, ValueError, IndexError):
        return ResourceUsage()
    return ResourceUsage(resident_pages * page / MIB / max(1, share), total / MIB)
