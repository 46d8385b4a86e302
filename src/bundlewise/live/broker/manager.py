"""The one interface between a broker and its load manager (Pulsar's ``LoadManager``).

A broker (``live.broker.service``) owns the store session, traffic and the HTTP surface; everything that
decides *where* bundles go sits behind ``LoadManager``, chosen by ``loadManagerClassName``:
``live.broker.modular.ModularLoadManager`` (``ModularLoadManagerImpl``, the default) or
``live.broker.extensible.ExtensibleLoadManager`` (``ExtensibleLoadManagerImpl``).  Each builds its own
ownership and its own namespace service (``namespace``, a ``live.broker.namespace.NamespaceService``).
``BrokerContext`` is what a load manager may use of its broker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bundlewise.algorithms.splitting.algorithms import TopicLoad
from bundlewise.config import Config
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.broker.constraints import ConstraintsCache
from bundlewise.live.broker.namespace import NamespaceService
from bundlewise.live.broker.policies import BundlesCache
from bundlewise.live.broker.values import BrokerIdentity
from bundlewise.live.store import MetadataStore
from bundlewise.model.bundles import Bundle
from bundlewise.model.load import LocalBrokerData
from bundlewise.model.resources import SystemResources


def _no_topics(bundle: Bundle) -> list[TopicLoad]:
    return []


@dataclass(frozen=True, slots=True)
class Sample:
    """One Prometheus sample: name, labels (besides ``cluster``) in order, value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float | int


def decision_samples(cycles: int, last_ms: float) -> list[Sample]:
    """The leader's shedding cycles so far and the wall time of the last one's decision (the strategy and the
    snapshot it reads, not the unloads it then requests): bundlewise's own gauges."""
    labels = (("metric", "bundleUnloading"),)
    return [
        Sample("bundlewise_lb_shedding_cycles", labels, cycles),
        Sample("bundlewise_lb_shedding_decision_ms", labels, round(last_ms, 3)),
    ]


def leadership_samples(won_at: float | None, first_cycle_at: float | None) -> list[Sample]:
    """When this broker last won the leadership and when its first shedding cycle after that win ran, in Unix
    seconds of its wall clock (bundlewise's own gauges; absent until each happened).  A fault test or a
    benchmark reads them to time a failover without its own polling in the figure."""
    labels = (("metric", "bundleUnloading"),)
    out = []
    if won_at is not None:
        out.append(Sample("bundlewise_lb_leader_since_timestamp_seconds", labels, round(won_at, 3)))
    if first_cycle_at is not None:
        out.append(Sample("bundlewise_lb_first_shedding_cycle_timestamp_seconds", labels, round(first_cycle_at, 3)))
    return out


def usage_gauges(host: str, r: SystemResources) -> list[Sample]:
    """The broker's resource-usage gauges (``LocalBrokerData#toMetrics``, ``BrokerLoadData#toMetrics``)."""
    labels = (("broker", host), ("metric", "loadBalancing"))
    return [
        Sample("pulsar_lb_cpu_usage", labels, r.cpu.percent_usage()),
        Sample("pulsar_lb_memory_usage", labels, r.memory.percent_usage()),
        Sample("pulsar_lb_directMemory_usage", labels, r.direct_memory.percent_usage()),
        Sample("pulsar_lb_bandwidth_in_usage", labels, r.bandwidth_in.percent_usage()),
        Sample("pulsar_lb_bandwidth_out_usage", labels, r.bandwidth_out.percent_usage()),
    ]


@dataclass(slots=True)
class BrokerContext:
    """What the broker lends its load manager."""

    identity: BrokerIdentity
    store: MetadataStore
    config: Config
    clock: PulsarClock
    bundles: BundlesCache
    sample_load: Callable[[], LocalBrokerData]  # the broker's load right now (traffic on served bundles)
    admin: Any  # live.broker.admin_client.AdminClient: the broker's own HTTP client to other brokers
    log_decision: Callable[[dict[str, Any]], None]
    log_load_data: Callable[[dict[str, Any]], None]
    topic_loads: Callable[[Bundle], list[TopicLoad]] = _no_topics  # the workload's topics in a bundle, rates now
    constraints: ConstraintsCache | None = None  # the cluster's placement constraints, read from the store


class LoadManager(Protocol):
    name: str

    @property
    def namespace(self) -> NamespaceService:
        """Lookups, unload and split on this broker (built by the manager)."""

    async def start(self) -> None:
        """Register the broker, start reporting and, where the manager has one, run for leader."""

    async def stop(self) -> None:
        """Stop the tasks, release the registration and hand over or unload the bundles this broker owns
        (ephemeral nodes go with the session)."""

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None:
        """The current leader's broker id as last seen (None: unknown)."""

    async def read_leader(self) -> dict[str, Any] | None:
        """The leader's ``LeaderBroker`` value, read from the store."""

    def active_brokers(self) -> list[str]:
        """The registered brokers (children of ``/loadbalance/brokers``) as last seen."""

    async def list_brokers(self) -> list[str]:
        """The registered brokers, read from the store."""

    async def broker_data(self, broker_id: str) -> dict[str, Any] | None:
        """A registered broker's value (its URLs), or None."""

    async def select_broker(self, bundle: str) -> str | None:
        """``getLeastLoaded``: a destination affinity, else ``selectBrokerForAssignment``."""

    def set_affinity(self, bundle: str, broker_id: str | None) -> None:
        """``setNamespaceBundleAffinity`` (an admin unload with ``destinationBroker``, on the leader)."""

    def load_report(self) -> dict[str, Any]:
        """``generateLoadReport``: this broker's ``LocalBrokerData`` value, freshly sampled."""

    def metrics(self) -> list[Sample]:
        """``getLoadBalancingMetrics``."""


ReportWriter = Callable[[], Awaitable[bool]]
