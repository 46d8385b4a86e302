"""ZooKeeper's persistent recursive watch (``addWatch``, opcode 106, ZooKeeper ≥ 3.6) for kazoo.

The kazoo release on PyPI does not expose ``addWatch``.  This module adds the request type and a
connection handler that hands every watch event to a callback besides kazoo's own one-shot
watchers.  It relies on two kazoo internals: a request is a namedtuple with ``type`` and
``serialize()``, and ``ConnectionHandler._read_watch_event(buffer, offset)`` receives each event.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

from kazoo.protocol.connection import ConnectionHandler
from kazoo.protocol.serialization import Watch, int_struct, write_string

PERSISTENT_RECURSIVE = 1
ADD_WATCH_OPCODE = 106

WatchCallback = Callable[[int, str], None]


class AddWatch(namedtuple("AddWatch", "path mode")):
    """``AddWatchRequest``: the path and the mode; the reply has no body."""

    type = ADD_WATCH_OPCODE

    def serialize(self) -> bytearray:
        out = bytearray(write_string(self.path))
        out.extend(int_struct.pack(self.mode))
        return out

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> None:
        return None


class RecursiveWatchConnection(ConnectionHandler):  # type: ignore[misc]
    """kazoo's connection handler, plus: every watch event goes to ``on_event(type, path)``,
    and the session timeout the server negotiated is kept in ``negotiated_timeout_ms``."""

    on_event: WatchCallback | None = None
    negotiated_timeout_ms: float = 0.0

    def _read_watch_event(self, buffer: bytes, offset: int) -> None:
        watch, _ = Watch.deserialize(buffer, offset)
        if self.on_event is not None:
            self.on_event(watch.type, watch.path)
        super()._read_watch_event(buffer, offset)

    def _connect(self, host: str, hostip: str, port: int) -> Any:
        read_timeout, connect_timeout = super()._connect(host, hostip, port)
        self.negotiated_timeout_ms = read_timeout * 3.0 / 2.0  # kazoo derives read = negotiated * 2/3
        return read_timeout, connect_timeout


def install(client: Any, on_event: WatchCallback) -> RecursiveWatchConnection:
    """Swap ``client``'s (not yet started) connection handler for the recursive-watch one."""
    old = client._connection
    conn = RecursiveWatchConnection(client, old.retry_sleeper, logger=old.logger, sasl_options=old.sasl_options)
    conn.on_event = on_event
    client._connection = conn
    return conn
