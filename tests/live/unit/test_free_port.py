"""``free_port``: a port chosen for a server is never chosen again by the same process, even before the
server listens on it (``live up`` picks every port of a run before it starts the servers)."""

from __future__ import annotations

import pytest

from bundlewise.live.harness.servers import process
from bundlewise.live.harness.servers.process import PORT_RANGE_ENV, free_port


def test_a_process_never_hands_out_one_port_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    low, _ = process.port_range()  # this worker's own slice
    monkeypatch.setenv(PORT_RANGE_ENV, f"{low}-{low + 9}")  # 10 ports: ten random picks would repeat
    monkeypatch.setattr(process, "_handed_out", set())
    ports = [free_port() for _ in range(10)]
    assert len(set(ports)) == 10  # (a port of the range a server holds is replaced by one the kernel gives)


def test_a_full_range_falls_back_to_a_port_the_kernel_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    low, _ = process.port_range()
    monkeypatch.setenv(PORT_RANGE_ENV, f"{low}-{low + 1}")
    monkeypatch.setattr(process, "_handed_out", {low, low + 1})
    port = free_port()
    assert port not in (low, low + 1) and port > 0
