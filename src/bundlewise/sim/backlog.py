"""Traffic a bundle was offered but its broker could not deliver yet: per bundle, in and out, oldest first.

Each tick (docs/simulator.md, Saturation) a bundle is *offered* its workload traffic of the tick plus its
backlog (``offered = demand + backlog / step``); its broker delivers the fraction of that which its capacity
allows (``traffic.saturation``), in each direction, and the rest is the bundle's new backlog
(``backlog' = (offered − delivered) · step``, messages and bytes).  A bundle without an owner delivers
nothing.  The backlog belongs to the bundle's topics (producers' pending sends, subscriptions' unread
entries), so it moves with the bundle when the bundle changes broker, and a split hands the parent's backlog
to its children in proportion to their traffic; a merge gives the merged bundle the backlog of its parts.

Bytes are served oldest first: the delivered bytes first drain the backlog (``served_old = min(backlog,
delivered)``), then the tick's fresh bytes.  The fresh bytes left over are *undelivered* in the tick they were
produced — ``undelivered_bytes`` counts each byte once, when it first misses its tick — and join the backlog
as one segment stamped with the tick.  A backlog's *age* at the end of tick ``t`` is
``(t − p + 1) · step`` where ``p`` is the tick of its oldest segment; ``max_age_ms`` is the worst over the run.

Conservation: at every tick, Σ delivered bytes so far + Σ backlog = Σ offered workload bytes so far (the
property test asserts it).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from bundlewise.sim.columns import throughput

EPSILON_BYTES = 1e-6
"""A backlog below this many bytes is empty (floating-point remainders of a full drain)."""


class Backlog:
    """Per bundle id: undelivered messages and bytes (``sim.columns``' order)."""

    def __init__(self, step_ms: int) -> None:
        self.step_s = step_ms / 1000.0
        self.step_ms = step_ms
        self.amount = np.zeros((0, 4))
        self.segments: dict[int, deque[list[float]]] = {}
        self.undelivered_bytes = 0.0
        self.max_age_ms = 0
        self.delivered_bytes = 0.0  # Σ over the run (for the conservation check)

    def grow(self, n: int) -> None:
        """Room for ``n`` bundle ids; rows past the bundles so far stay zero (room grows by half, so a run of
        splits does not copy the table once per split)."""
        if n > len(self.amount):
            room = np.zeros((max(n, len(self.amount) * 3 // 2), 4))
            room[: len(self.amount)] = self.amount
            self.amount = room

    def offered(self, demand: np.ndarray) -> np.ndarray:
        """Rates offered per bundle this tick: the demand plus the backlog spread over the step."""
        self.grow(len(demand))
        out: np.ndarray = demand + self.amount[: len(demand)] / self.step_s
        return out

    def settle(self, tick: int, demand: np.ndarray, offered: np.ndarray, delivered: np.ndarray) -> None:
        """The tick's delivery: new backlog, undelivered fresh bytes, FIFO segments and ages."""
        n = len(demand)
        old = throughput(self.amount[:n])
        new_amount = np.maximum(0.0, (offered - delivered) * self.step_s)
        new = throughput(new_amount)
        sent = throughput(delivered) * self.step_s
        self.delivered_bytes += float(sent.sum())
        served_old = np.minimum(old, sent)
        fresh = np.maximum(0.0, new - (old - served_old))
        self.amount[:n] = new_amount
        self.undelivered_bytes += float(fresh.sum())
        for b in np.flatnonzero((old > 0) | (fresh > EPSILON_BYTES)):
            self._fifo(int(b), float(served_old[b]), float(fresh[b]), float(new[b]), tick)

    def _fifo(self, bundle: int, served: float, fresh: float, left: float, tick: int) -> None:
        segs = self.segments.setdefault(bundle, deque())
        while segs and served > 0:
            head = segs[0]
            take = min(head[1], served)
            head[1] -= take
            served -= take
            if head[1] <= EPSILON_BYTES:
                segs.popleft()
        if fresh > EPSILON_BYTES:
            segs.append([float(tick), fresh])
        if left <= EPSILON_BYTES or not segs:
            self.segments.pop(bundle, None)
            return
        age = (tick - int(segs[0][0]) + 1) * self.step_ms
        self.max_age_ms = max(self.max_age_ms, age)

    def split(self, parent: int, children: list[int], shares: np.ndarray) -> None:
        """Hand the parent's backlog to its children in proportion to ``shares`` (summing to 1)."""
        self.grow(max(children) + 1)
        part = self.amount[parent].copy()
        self.amount[parent] = 0.0
        segs = self.segments.pop(parent, None)
        for child, share in zip(children, shares, strict=True):
            self.amount[child] = part * share
            if segs and share > 0:
                self.segments[child] = deque([[t, b * share] for t, b in segs])

    def merge(self, parts: list[int], merged: int) -> None:
        """The merged bundle takes the backlog of its parts (their segments in production order)."""
        self.grow(max([*parts, merged]) + 1)
        self.amount[merged] = self.amount[parts].sum(axis=0)
        self.amount[parts] = 0.0
        segs = sorted((s for p in parts for s in self.segments.pop(p, ())), key=lambda seg: seg[0])
        if segs:
            self.segments[merged] = deque(segs)

    def bytes_by(self, owner: np.ndarray, slots: int) -> tuple[np.ndarray, float]:
        """Backlog bytes per broker slot (owned bundles), and the backlog of bundles without an owner."""
        n = len(owner)
        total = throughput(self.amount[:n])
        owned = owner >= 0
        per_slot: np.ndarray = np.bincount(owner[owned], weights=total[owned], minlength=slots)
        return per_slot, float(total[~owned].sum())
