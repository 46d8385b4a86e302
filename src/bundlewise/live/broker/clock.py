"""Pulsar time for a broker run with ``--time-scale K``.

Pulsar time runs K times faster than the wall clock from a cluster-wide origin (epoch ms): at wall time
``w`` it is ``origin + (w - origin) * K``.  Every broker of a cluster started with the same origin and K
agrees on it (they share the wall clock), so report timestamps, grace periods and the workload's
position line up across processes.  A held clock (``--time-start-file``) stands at the origin until the
wall-clock instant the file gives, and runs from there.  K = 1 is the wall clock itself.  Balancer
intervals, which Pulsar states in Pulsar time, last ``interval / K`` real seconds (``real_seconds``); metadata
session timeouts are never scaled.  Everything that waits measures with ``time.monotonic`` (``elapsed``).

``machine_monotonic`` is the one exception: what a broker reports for an observer to compare with its own
instants (the serving journal, ``X-Bundlewise-Monotonic``) is read from the kernel by system call.
"""

from __future__ import annotations

import ctypes
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_CLOCK_GETTIME = {"x86_64": 228, "aarch64": 113}  # the clock_gettime system call's number on Linux
_CLOCK_MONOTONIC = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _kernel_clock() -> Callable[[], float] | None:
    """CLOCK_MONOTONIC read by the ``clock_gettime`` system call itself (None where that is not available)."""
    number = _CLOCK_GETTIME.get(platform.machine())
    if sys.platform != "linux" or number is None:
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None

    def read() -> float:
        ts = _Timespec()
        syscall(number, _CLOCK_MONOTONIC, ctypes.byref(ts))
        return float(ts.tv_sec) + float(ts.tv_nsec) / 1e9

    ts = _Timespec()
    return read if syscall(number, _CLOCK_MONOTONIC, ctypes.byref(ts)) == 0 else None


machine_monotonic: Callable[[], float] = _kernel_clock() or time.monotonic
"""The machine's CLOCK_MONOTONIC, the clock ``time.monotonic`` reads in every process not made to see another:
a broker run under libfaketime (the fault campaign's skewed clock: ``clock_gettime`` intercepted in the C
library, monotonic clocks included) still stamps its serving journal on the clock of the observer beside it,
since the system call is not the C library's function.  Elsewhere than Linux on x86-64 or ARM64:
``time.monotonic``."""


@dataclass(slots=True)
class PulsarClock:
    """Pulsar time: ``origin_ms + (wall - start) * scale``, where ``start`` is the wall-clock epoch ms at which
    it leaves the origin -- the origin itself unless held.  A held clock (``start_file``) stands at the origin
    until that file holds the start (``LocalCluster.release_time``): the brokers of a ``live up`` cluster start,
    register and elect at Pulsar time 0, and the scenario's minutes begin once all of them are ready, however
    long a loaded machine takes to start their processes."""

    origin_ms: int
    scale: float = 1.0
    start_ms: int | None = None
    start_file: Path | None = None

    @classmethod
    def starting_now(
        cls, scale: float = 1.0, origin_ms: int | None = None, start_file: Path | None = None
    ) -> PulsarClock:
        return cls(int(time.time() * 1000) if origin_ms is None else origin_ms, scale, start_file=start_file)

    def _start(self) -> float | None:
        if self.start_ms is not None:
            return float(self.start_ms)
        if self.start_file is None:
            return float(self.origin_ms)
        try:
            self.start_ms = int(self.start_file.read_text(encoding="ascii"))
        except (OSError, ValueError):  # not written yet (it is renamed into place whole)
            return None
        return float(self.start_ms)

    def now_ms(self) -> int:
        """Pulsar time now, epoch ms."""
        start = self._start()
        if start is None:
            return self.origin_ms
        wall = time.time() * 1000.0
        if self.start_file is not None:
            wall = max(wall, start)  # the start was written by another process, an instant before this read it
        return int(self.origin_ms + (wall - start) * self.scale)

    def elapsed_ms(self) -> int:
        """Pulsar milliseconds since the origin (the workload's position)."""
        return self.now_ms() - self.origin_ms

    def real_seconds(self, pulsar_ms: float) -> float:
        """How many real seconds a Pulsar interval lasts."""
        return pulsar_ms / 1000.0 / self.scale
