"""Workloads: per-topic rates at each tick, from the built-in generator or a recorded trace.

A workload fixes the topic list (names, namespace, producers, consumers) and answers ``rates(now)``
with four arrays over topics: ``msgRateIn``, ``msgRateOut`` (msg/s), ``msgThroughputIn``,
``msgThroughputOut`` (bytes/s).

**Generator** (``GeneratedWorkload``), all randomness from one ``numpy`` generator seeded by the scenario:

* topic ``i`` (rank ``i + 1``) of a namespace gets a share ``w_i ∝ 1 / (i + 1)^zipf`` of the namespace's
  ``msg_rate``; out rate = in × ``fanout``; throughput = rate × ``msg_size``;
* diurnal cycle: every rate × ``1 + A·sin(2π·t / period)``;
* bursts: a namespace's rates × ``factor`` during ``[at, at + duration)``;
* noise: each topic's rates × ``max(0, 1 + noise·N(0, 1))``, drawn afresh every tick.

**Trace** (``TraceWorkload``, contract §7/§8): samples grouped by timestamp; trace time 0 is the first
timestamp; at time ``t`` the latest sample group at or before ``t`` holds (a step function) and a topic
absent from that group is idle.  Read through the Spark pipeline (``read_trace``) and converted to
pandas once; the simulation itself never touches Spark.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName, full_topic_name
from bundlewise.sim.scenario import NamespaceSpec, WorkloadSpec


@dataclass(frozen=True)
class Topics:
    names: list[str]
    namespace: np.ndarray  # index into the namespace list
    producers: np.ndarray
    consumers: np.ndarray


Rates = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class Workload(Protocol):
    topics: Topics
    namespaces: list[str]

    def rates(self, now: int) -> Rates: ...


class GeneratedWorkload:
    """Zipf-skewed topic rates with a diurnal cycle, namespace bursts and per-tick noise."""

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

        self.topics = Topics(names, cat(ns_idx, np.int64), cat(prod, np.int64), cat(cons, np.int64))
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

    def rates(self, now: int) -> Rates:
        f = self.factor(now)
        r_in, r_out = self.base_in * f, self.base_out * f
        return r_in, r_out, r_in * self.size, r_out * self.size


class TraceWorkload:
    """A recorded trace as a step function over sample groups (contract §8)."""

    COLUMNS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")

    def __init__(self, frame: Any, source: str) -> None:
        if len(frame) == 0:
            raise InputError("the trace has no valid samples", source=source)
        frame = frame.sort_values(["timestamp", "topic"], kind="stable")
        topic_names = [full_topic_name(str(t)) for t in frame["topic"]]
        names = sorted(set(topic_names))
        index = {n: i for i, n in enumerate(names)}
        namespaces: list[str] = []
        ns_of: dict[str, int] = {}
        topic_ns = np.zeros(len(names), dtype=np.int64)
        for i, n in enumerate(names):
            ns = str(TopicName.parse(n).namespace)
            topic_ns[i] = ns_of.setdefault(ns, len(ns_of))
            if ns_of[ns] == len(namespaces):
                namespaces.append(ns)
        self.namespaces = namespaces
        tidx = np.array([index[n] for n in topic_names], dtype=np.int64)
        ts = frame["timestamp"].to_numpy(dtype=np.int64)
        self.t0 = int(ts[0])
        self.times, starts = np.unique(ts - self.t0, return_index=True)
        self.bounds = np.append(starts, len(ts))
        self.tidx = tidx
        self.values = np.stack([frame[c].fillna(0.0).to_numpy(dtype=float) for c in self.COLUMNS])
        prod = np.zeros(len(names), dtype=np.int64)
        cons = np.zeros(len(names), dtype=np.int64)
        for col, arr in (("producerCount", prod), ("consumerCount", cons)):
            if col in frame:
                np.maximum.at(arr, tidx, frame[col].fillna(0).to_numpy(dtype=np.int64))
        self.topics = Topics(names, topic_ns, prod, cons)
        self._cache: tuple[int, Rates] | None = None

    def rates(self, now: int) -> Rates:
        g = int(np.searchsorted(self.times, now, side="right")) - 1
        if self._cache is not None and self._cache[0] == g:
            return self._cache[1]
        n = len(self.topics.names)
        out = [np.zeros(n) for _ in self.COLUMNS]
        if g >= 0:
            lo, hi = self.bounds[g], self.bounds[g + 1]
            for k in range(4):
                out[k][self.tidx[lo:hi]] = self.values[k, lo:hi]
        rates: Rates = (out[0], out[1], out[2], out[3])
        self._cache = (g, rates)
        return rates


def read_trace(path: str) -> Any:
    """Read a workload through the Spark pipeline (``pipeline.jobs.read_input``: a contract §7 trace or
    any dump format it detects); returns the canonical samples as a pandas DataFrame, sorted by time."""
    from bundlewise.pipeline.jobs import read_input
    from bundlewise.pipeline.session import get_session

    spark = get_session("local[2]")
    ingested = read_input(spark, path, None)
    cols = ["timestamp", "topic", *TraceWorkload.COLUMNS, "producerCount", "consumerCount"]
    return ingested.samples.select(*cols).toPandas()
