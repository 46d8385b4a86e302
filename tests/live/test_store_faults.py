"""Real faults: the server paused (SIGSTOP) or killed (SIGKILL) and restarted, a client process
paused or killed.  Each test here gets a server of its own (``fresh_server``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bundlewise.live.harness.servers import ServerProcess
from bundlewise.live.store import BadVersionError, SessionEvent, connect
from conftest import SESSION_TIMEOUT, eventually, run

CLIENT = str(Path(__file__).with_name("store_client.py"))
FULL_CYCLE = [
    SessionEvent.ConnectionLost,
    SessionEvent.SessionLost,
    SessionEvent.Reconnected,
    SessionEvent.SessionReestablished,
]


def unique_url(server: ServerProcess) -> str:
    return f"{server.url}/f-{uuid.uuid4().hex[:12]}"


def test_server_paused_past_the_session_timeout_gives_the_full_event_cycle(fresh_server: ServerProcess) -> None:
    url = unique_url(fresh_server)

    async def body() -> None:
        async with await connect(url, session_timeout=SESSION_TIMEOUT) as s:
            await s.put("/eph", b"x", -1, ephemeral=True)
            events: list[SessionEvent] = []
            s.register_session_listener(events.append)
            fresh_server.pause()
            try:
                await eventually(lambda: SessionEvent.SessionLost in events, 15, "SessionLost while paused")
                assert s.fencing_deadline() == 0.0
            finally:
                fresh_server.resume()
            await eventually(lambda: SessionEvent.SessionReestablished in events, 30, "SessionReestablished")
            assert events[:4] == FULL_CYCLE
            assert s.is_connected
            # No node of a dead session survives: either the server expired the session (ZooKeeper
            # may instead let the client resume it when it returns in time) or the old lease was
            # revoked on SessionReestablished (etcd).  What remains, if anything, is our own.
            got = await s.get("/eph")
            assert got is None or got.stat.created_by_self
            if got is None:
                await s.put("/eph", b"y", -1, ephemeral=True)
            got = await s.get("/eph")
            assert got is not None and got.stat.created_by_self
            assert s.fencing_deadline() > time.monotonic()

    run(body())


def test_server_killed_and_restarted_gives_the_full_event_cycle(fresh_server: ServerProcess) -> None:
    url = unique_url(fresh_server)

    async def body() -> None:
        async with await connect(url, session_timeout=SESSION_TIMEOUT) as s:
            await s.put("/persistent", b"kept", -1)
            events: list[SessionEvent] = []
            s.register_session_listener(events.append)
            fresh_server.kill()
            try:
                await eventually(lambda: SessionEvent.SessionLost in events, 15, "SessionLost after SIGKILL")
            finally:
                await asyncio.to_thread(fresh_server.start)
            await eventually(lambda: SessionEvent.SessionReestablished in events, 30, "SessionReestablished")
            assert events[:4] == FULL_CYCLE
            got = await s.get("/persistent")
            assert got is not None and got.value == b"kept"
            # notifications flow again after the restart
            seen: list[Any] = []
            s.register_listener(seen.append, "/after")
            await s.put("/after", b"1", -1)
            await eventually(lambda: len(seen) > 0, 15, "a notification after the restart")

    run(body())


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def spawn(processes: list[subprocess.Popen[str]], *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(
        [sys.executable, CLIENT, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    processes.append(p)
    return p


class Lines:
    """A reader thread's view of a child's JSON lines."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.items: list[dict[str, Any]] = []
        # a daemon thread: a reader blocked on a stopped child must not hold up the event loop's exit
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.items.append(json.loads(line))


def test_fencing_deadline_passes_before_another_client_can_take_the_ephemeral(
    fresh_server: ServerProcess, processes: list[subprocess.Popen[str]]
) -> None:
    url = unique_url(fresh_server)

    async def body() -> None:
        holder = spawn(processes, "ephemeral", url, "/owned", "holder", str(SESSION_TIMEOUT))
        lines = Lines(holder)
        await eventually(lambda: sum("deadline" in i for i in lines.items) >= 5, 30, "the holder's deadlines")
        holder.send_signal(signal.SIGSTOP)  # the holder freezes: it can no longer renew or serve
        stopped_at = time.monotonic()
        await asyncio.sleep(0.3)  # let the reader drain what the holder wrote before it stopped
        last_deadline = [i for i in lines.items if "deadline" in i][-1]["deadline"]
        assert last_deadline > stopped_at - 0.5  # it was entitled to serve right up to the pause
        async with await connect(url, session_timeout=SESSION_TIMEOUT) as other:
            taken_at = None
            while taken_at is None:
                try:
                    await other.put("/owned", b"other", -1, ephemeral=True)
                    taken_at = time.monotonic()
                except BadVersionError:
                    await asyncio.sleep(0.02)
                assert time.monotonic() - stopped_at < 30, "the holder's session never ended"
            # the frozen holder's last promise ran out before anyone else could own the node
            assert taken_at >= last_deadline
            got = await other.get("/owned")
            assert got is not None and got.value == b"other" and got.stat.created_by_self

    run(body())


def test_leader_process_killed_the_other_process_takes_over(
    fresh_server: ServerProcess, processes: list[subprocess.Popen[str]]
) -> None:
    url = unique_url(fresh_server)

    async def body() -> None:
        first = spawn(processes, "elect", url, "/loadbalance/leader", "broker-1:8080", str(SESSION_TIMEOUT))
        first_lines = Lines(first)
        await eventually(lambda: any(i.get("state") == "Leading" for i in first_lines.items), 30, "first leads")
        second = spawn(processes, "elect", url, "/loadbalance/leader", "broker-2:8080", str(SESSION_TIMEOUT))
        second_lines = Lines(second)
        await eventually(lambda: any(i.get("initial") for i in second_lines.items), 30, "second runs")
        assert second_lines.items[0]["state"] == "Following"
        first.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        await eventually(
            lambda: any(i.get("state") == "Leading" for i in second_lines.items), 3 * SESSION_TIMEOUT, "failover"
        )
        took_over = next(i["now"] for i in second_lines.items if i.get("state") == "Leading")
        assert took_over - killed_at < SESSION_TIMEOUT + 2.0
        async with await connect(url, session_timeout=SESSION_TIMEOUT) as reader:
            got = await reader.get("/loadbalance/leader")
            assert got is not None
            assert json.loads(got.value) == {"brokerId": "broker-2:8080", "serviceUrl": "http://broker-2:8080"}

    run(body())
