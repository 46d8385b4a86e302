"""What only the in-memory store offers: fault hooks and a clock a test steps (``backends.memory``).

The rules it shares with ZooKeeper and etcd are the contract suite's (``tests/live/contract``); these
tests show the hooks keep those rules: a disconnected client's fencing deadline passes before the
server can expire its session and hand its ephemeral to another client (docs/live/store.md, §1.4).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from live_support import run

from bundlewise.live.store import ConnectionLossError, SessionEvent, connect
from bundlewise.live.store.backends.memory import ManualClock, MemoryServer, MemoryStore
from bundlewise.model.errors import InputError

TIMEOUT = 4.0


async def open_on(server: MemoryServer) -> MemoryStore:
    return await server.connect(session_timeout=TIMEOUT)


def test_the_fencing_deadline_is_the_last_probe_plus_the_timeout_less_a_tenth_on_the_servers_clock() -> None:
    async def body() -> None:
        clock = ManualClock(1000.0)
        async with await open_on(MemoryServer(clock=clock)) as s:
            # margin: a tenth of the timeout (reaction) + the 1000 ppm clock-rate bound over the TTL
            margin = TIMEOUT / 10 + TIMEOUT * 1000e-6
            assert s.fencing_deadline() == pytest.approx(1000.0 + TIMEOUT - margin, abs=1e-9)
            s.disconnect()
            clock.advance(1.3)
            assert s.fencing_deadline() == pytest.approx(1003.596, abs=1e-9)  # no probe got through since
            clock.advance(0.04)  # the watcher silent for more than a third of the session (1.333 s): stopped
            assert s.fencing_deadline() == 0.0

    run(body())


def test_a_disconnected_clients_deadline_passes_before_another_client_can_take_its_ephemeral() -> None:
    async def body() -> None:
        clock = ManualClock(1000.0)
        server = MemoryServer(clock=clock)
        async with await open_on(server) as a, await open_on(server) as b:
            await a.put("/lock", b"a", -1, ephemeral=True)
            a.disconnect()
            with pytest.raises(ConnectionLossError):
                await a.get("/lock")
            clock.now = a.fencing_deadline()  # the last moment a may act on its lock ...
            assert await b.exists("/lock")  # ... and the server still keeps a's node
            clock.now = 1000.0 + TIMEOUT  # a session timeout after a's last contact: the server expires it
            stat = await b.put("/lock", b"b", -1, ephemeral=True)
            assert stat.created_by_self and stat.version == 0

    run(body())


def test_disconnect_gives_connection_lost_then_session_lost_after_five_sixths_of_the_timeout() -> None:
    async def body() -> None:
        clock = ManualClock(1000.0)
        async with await open_on(MemoryServer(clock=clock)) as s:
            events: list[SessionEvent] = []
            s.register_session_listener(events.append)
            s.disconnect()
            await asyncio.sleep(TIMEOUT / 15 * 2)  # a probe fails
            assert events == [SessionEvent.ConnectionLost] and not s.is_connected
            clock.advance(TIMEOUT * 5 / 6)
            await asyncio.sleep(TIMEOUT / 15 * 2)
            assert events == [SessionEvent.ConnectionLost, SessionEvent.SessionLost] and s.fencing_deadline() == 0.0
            old = s.session_id
            s.reconnect()
            await asyncio.sleep(TIMEOUT / 15 * 2)
            assert events[2:] == [SessionEvent.Reconnected, SessionEvent.SessionReestablished]
            assert s.session_id not in (0, old) and s.fencing_deadline() > clock()

    run(body())


def test_expire_session_deletes_the_ephemerals_and_can_leave_the_session_lost() -> None:
    async def body() -> None:
        server = MemoryServer()
        async with await open_on(server) as a, await open_on(server) as b:
            events: list[SessionEvent] = []
            a.register_session_listener(events.append)
            await a.put("/e", b"1", -1, ephemeral=True)
            await a.expire_session(reestablish=False)
            assert events == [SessionEvent.SessionLost] and a.session_id == 0 and a.fencing_deadline() == 0.0
            assert not await b.exists("/e")
            with pytest.raises(Exception, match="no live session"):
                await a.put("/e", b"2", -1, ephemeral=True)

    run(body())


def test_memory_urls_name_a_server_of_this_process_and_a_root() -> None:
    async def body() -> None:
        name = f"m-{uuid.uuid4().hex[:8]}"
        async with await connect(f"memory://{name}/a") as a, await connect(f"memory://{name}") as whole:
            await a.put("/x", b"1")
            assert await whole.get_children("/") == ["a"] and await whole.get_children("/a") == ["x"]
        with pytest.raises(InputError, match="expected memory://NAME"):
            await connect("memory://bad name/x")
        MemoryServer.forget(name)

    run(body())
