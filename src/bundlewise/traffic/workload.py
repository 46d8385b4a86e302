"""Workloads: per-topic rates at each moment, from the built-in generator (or a trace, ``traffic.trace``).

A workload fixes the topic list (names and namespaces; optionally each topic's hash position, for a recorded
bundle standing for its topics) and answers, at each moment, ``rates(now)`` -- four arrays over topics:
``msgRateIn``, ``msgRateOut`` (msg/s), ``msgThroughputIn``, ``msgThroughputOut`` (bytes/s) -- and
``counts(now)`` -- the topics each entry stands for (1 for a topic), its producers and its consumers.

**Generator** (``GeneratedWorkload``), all randomness from one ``numpy`` generator seeded by the scenario:

* topic ``i`` (rank ``i + 1``) of a namespace gets a share ``w_i ∝ 1 / (i + 1)^zipf`` of the namespace's
  ``msg_rate``; out rate = in × ``fanout``; throughput = rate × ``msg_size``;
* diurnal cycle: every rate × ``1 + A·sin(2π·t / period)``;
* bursts: a namespace's rates × ``factor`` during ``[at, at + duration)``;
* noise: each topic's rates × ``max(0, 1 + noise·N(0, 1))``, drawn afresh at every call.

The settings are those of a scenario's ``[[namespaces]]`` and ``[workload]`` tables (docs/simulator.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    """A namespace: its bundles, its starting owner and the generator's settings for its topics."""

    name: str
    bundles: int = 4
    topics: int = 0
    msg_rate: float = 0.0
    fanout: float = 1.0
    msg_size: float = 1024.0
    zipf: float = 0.0
    producers: int = 1
    consumers: int = 1
    owner: str | None = None
    bundles_given: bool = False  # the scenario sets ``bundles`` (a recorded layout does not override it)


@dataclass(frozen=True, slots=True)
class Burst:
    namespace: str
    at: int
    duration: int
    factor: float


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    diurnal_amplitude: float = 0.0
    diurnal_period: int = 86_400_000
    noise: float = 0.0
    cpu_jitter: float = 0.0
    bursts: tuple[Burst, ...] = ()


@dataclass(frozen=True)
class Topics:
    names: list[str]
    namespace: np.ndarray  # index into the namespace list
    hashes: np.ndarray | None = None  # hash positions; None: the CRC-32 of each name (``model.hashing``)


Rates = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Counts = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Per topic entry: the topics it stands for, producers, consumers (int64 arrays)."""


class Workload(Protocol):
    topics: Topics
    namespaces: list[str]

    def rates(self, now: int) -> Rates: ...

    def counts(self, now: int) -> Counts: ...


class GeneratedWorkload:
    """Zipf-skewed topic rates with a diurnal cycle, namespace bursts and noise."""

    def __init__(self, namespaces: Sequence[NamespaceSpec], spec: WorkloadSpec, seed: int) -> None:
        self.spec = spec
        self.namespaces = [n.name for n in namespaces]
        names: list[str] = []
        ns_idx: list[np.ndarray] = []
        base_in, base_out, size, prod, cons = [], [], [], [], []
        for k, n in enumerate(namespaces):
            names.extend(f"persistent://{n.name}/topic-{i}" for i in range(n.topics))
            ns_idx.append(np.full(n.topics, k, dtype=np.int64))
            w = 1.0 / np.power(np.arange(1, n.topics + 1, dtype=float), n.zipf) if n.topics else np.zeros(0)
            share = w / w.sum() if n.topics else w
            base_in.append(share * n.msg_rate)
            base_out.append(share * n.msg_rate * n.fanout)
            size.append(np.full(n.topics, n.msg_size))
            prod.append(np.full(n.topics, n.producers, dtype=np.int64))
            cons.append(np.full(n.topics, n.consumers, dtype=np.int64))

        def cat(parts: list[np.ndarray], dtype: Any = float) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        self.topics = Topics(names, cat(ns_idx, np.int64))
        self._counts: Counts = (np.ones(len(names), dtype=np.int64), cat(prod, np.int64), cat(cons, np.int64))
        self.base_in, self.base_out, self.size = cat(base_in), cat(base_out), cat(size)
        self.rng = np.random.default_rng(seed)
        self.bursts = [(self.namespaces.index(b.namespace), b) for b in spec.bursts]

    def factor(self, now: int) -> np.ndarray:
        """Per-topic multiplier at ``now`` (diurnal × bursts × noise)."""
        s = self.spec
        f = np.full(len(self.base_in), 1.0 + s.diurnal_amplitude * math.sin(2 * math.pi * now / s.diurnal_period))
        for k, b in self.bursts:
            if b.at <= now < b.at + b.duration:
                f[self.topics.namespace == k] *= b.factor
        if s.noise > 0:
            f *= np.maximum(0.0, 1.0 + s.noise * self.rng.standard_normal(len(f)))
        return f

    def counts(self, now: int) -> Counts:
        """Every topic is one topic with its namespace's producers and consumers, at all times."""
        return self._counts

    def rates(self, now: int) -> Rates:
        f = self.factor(now)
        r_in, r_out = self.base_in * f, self.base_out * f
        return r_in, r_out, r_in * self.size, r_out * self.size
