"""The run record: one type for a simulated run and a live run (``simulate`` and ``live up`` fill it alike).

* ``RunResult``: one strategy's run — its metrics (``summary.json``), per-tick arrays (ticks × broker slots),
  its decisions and broker events.  The simulator fills every field; a live run fills the shared ones and
  ``lookups`` (the live-only table of every topic lookup), and leaves what it does not measure ``None``
  (``delivered_load``, ``backlog_bytes``: the emulated broker keeps no backlog).
* ``DispatchRecord``: the per-tick dispatch arrays of a run with a ``[dispatch]`` section.
* ``RunInfo``: what the report says about the scenario a run played (name, size, time span, events,
  bursts, the overload threshold), built by whoever holds the scenario (``sim.run.run_info``), so the
  report needs nothing from ``sim`` or ``live``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bundlewise.model.decisions import Logged


@dataclass
class DispatchRecord:
    """Per tick × broker slot: dispatched messages and bytes, throttled reads, backlog (messages) at the
    tick's end; ``backlog_end`` counts every subscription's backlog, owned or not, after the last tick."""

    msgs: np.ndarray
    bytes: np.ndarray
    throttled: np.ndarray
    backlog: np.ndarray
    backlog_end: int = 0


@dataclass
class RunResult:
    """One strategy's run: metrics, per-tick arrays (ticks × broker slots) and decisions."""

    strategy: str
    metrics: dict[str, Any]
    times: np.ndarray
    brokers: list[str]
    true_load: np.ndarray  # demand / capacity
    reported_load: np.ndarray
    bundles: np.ndarray
    up: np.ndarray
    decisions: list[Logged] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dispatch: DispatchRecord | None = None  # only with a [dispatch] section
    delivered_load: np.ndarray | None = None  # the usage brokers measured (capped), weighted max
    backlog_bytes: np.ndarray | None = None  # undelivered bytes of the bundles owned, end of tick
    demand_bytes: np.ndarray | None = None  # in + out bytes/s the workload asked of the owned bundles
    delivered_bytes: np.ndarray | None = None  # in + out bytes/s delivered
    workload_bytes: np.ndarray | None = None  # per tick: in + out bytes/s of every topic of the workload
    unowned_bytes: np.ndarray | None = None  # per tick: in + out bytes/s of bundles without an owner
    refused: int = 0  # decisions naming a broker that is not up (never carried out)
    bytes_delivered: float = 0.0  # Σ over the run of the bytes delivered
    bytes_waiting: float = 0.0  # the backlog left after the last tick (all bundles)
    lookups: Any = None  # live only: a pyarrow.Table of every lookup (``lookups.parquet``)


@dataclass(frozen=True, slots=True)
class EventInfo:
    """A broker event of the scenario: ``action`` (add | remove | restart) of ``broker`` at ``at`` ms."""

    at: int
    action: str
    broker: str
    down_for: int = 0  # a restart's time down


@dataclass(frozen=True, slots=True)
class BurstInfo:
    """A workload burst: ``namespace``'s traffic × ``factor`` from ``at`` for ``duration`` ms."""

    at: int
    duration: int
    namespace: str
    factor: float


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The scenario the runs played, as the report describes it."""

    name: str
    description: str
    brokers: int
    namespaces: int
    duration: int  # ms
    step: int  # ms
    seed: int
    overload: float  # loadBalancerBrokerOverloadedThresholdPercentage as a fraction
    events: tuple[EventInfo, ...] = ()
    bursts: tuple[BurstInfo, ...] = ()
    dispatch: bool = False  # the scenario has a [dispatch] section
