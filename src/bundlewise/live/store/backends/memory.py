"""An in-memory metadata store: the protocol's rules without a server process, for in-process tests.

``MemoryServer`` plays the server: one tree of nodes, the sessions and their ephemerals, and the
notifications to every connected client.  ``MemoryStore`` is one client of it with one session, opened
by URL (``connect("memory://NAME/ROOT")``: the server registered under ``NAME``, created on first use)
or directly (``await server.connect()``).  It follows the rules every backend follows (``api``):

* **Versions** start at 0 and grow by one per write; ``Stat.created`` is the server's write counter at
  the node's creation (ZooKeeper's ``czxid``, etcd's ``create_revision``): a node created again has
  another.  Missing parents are created as persistent empty nodes; an update keeps the node's kind.
* **Ephemerals** belong to the session that created them and go with it: on ``close``, on
  ``expire_session`` and when the server expires a session it has not heard from for the session
  timeout (by the server's clock, checked on every request and probe).
* **Notifications** reach every client whose root holds the path, on the client's event loop, after the
  operation returned (as a watch event arrives): Created / Modified / Deleted, and ChildrenChanged on
  the parent of a created or deleted node.
* **Sessions** follow the shared watcher rules (``session``): the client probes every ``timeout / 15``;
  a probe touches the session, and its send time plus the timeout, less the margin, is the fencing
  deadline.

Fault hooks, on the client: ``disconnect()`` (requests raise ``ConnectionLossError`` and probes fail, so
ConnectionLost follows, then SessionLost after 5/6 of the timeout), ``reconnect()``, and
``expire_session()`` (the server ends the session: its ephemerals go, SessionLost, then a new session:
Reconnected, SessionReestablished).  ``clock`` (the server's, shared by its clients; ``ManualClock`` to
step it) is what sessions, probes and fencing deadlines are measured on, so a test can move time past a
deadline without waiting for it.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from bundlewise.live.store import errors
from bundlewise.live.store.api import GetResult, NotificationType, SessionEvent, Stat
from bundlewise.live.store.base import BaseStore, ancestors, check_path
from bundlewise.live.store.session import FencingAssumption, Probe, ProbeStatus
from bundlewise.model.errors import InputError

Clock = Callable[[], float]
MEMORY_SCHEME = "memory://"
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class ManualClock:
    """A clock that moves only when told (``advance``); it starts at ``time.monotonic()``."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.monotonic() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(slots=True)
class _Node:
    value: bytes
    version: int
    created: int
    owner: int  # the session of an ephemeral, 0 for a persistent node


@dataclass(slots=True)
class _Session:
    timeout: float
    last_contact: float


class MemoryServer:
    """The server side: nodes, sessions and the connected clients (module docstring)."""

    _named: ClassVar[dict[str, MemoryServer]] = {}

    def __init__(self, name: str = "", clock: Clock = time.monotonic) -> None:
        self.name = name
        self.clock = clock
        self.nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0, 0)}
        self.sessions: dict[int, _Session] = {}
        self.clients: list[MemoryStore] = []
        self._writes = itertools.count(1)
        self._session_ids = itertools.count(0x1000)

    @classmethod
    def named(cls, name: str, clock: Clock | None = None) -> MemoryServer:
        """The server registered as ``name`` (``memory://name``), created on first use."""
        server = cls._named.get(name)
        if server is None or (clock is not None and server.clock is not clock):
            server = cls(name, clock or time.monotonic)
            cls._named[name] = server
        return server

    @classmethod
    def forget(cls, name: str) -> None:
        cls._named.pop(name, None)

    @classmethod
    def parse_url(cls, url: str) -> tuple[MemoryServer, str]:
        """``memory://NAME[/ROOT]``: the server named ``NAME`` and the root under which the client's paths live."""
        name, slash, path = url.removeprefix(MEMORY_SCHEME).partition("/")
        root = ("/" + path).rstrip("/") if slash else ""
        if not _NAME.match(name) or "//" in root or any(seg in (".", "..") for seg in root.split("/")[1:]):
            raise InputError(f"expected memory://NAME[/ROOT], got {url!r}", field="--store")
        return cls.named(name), root

    async def connect(
        self, root: str = "", *, session_timeout: float = 30.0, fencing_margin: float | FencingAssumption | None = None
    ) -> MemoryStore:
        store = MemoryStore(self, root, session_timeout=session_timeout, fencing_margin=fencing_margin)
        await store.start()
        return store

    # -- sessions ----------------------------------------------------------------------------
    def open_session(self, timeout: float) -> int:
        sid = next(self._session_ids)
        self.sessions[sid] = _Session(timeout, self.clock())
        return sid

    def touch(self, sid: int) -> bool:
        """A request or probe of session ``sid`` arrived: whether the session is alive (then renewed)."""
        self.expire_due()
        session = self.sessions.get(sid)
        if session is None:
            return False
        session.last_contact = self.clock()
        return True

    def expire_due(self) -> None:
        now = self.clock()
        for sid, s in list(self.sessions.items()):
            if now - s.last_contact >= s.timeout:
                self.end_session(sid)

    def end_session(self, sid: int) -> None:
        """The session ends: its ephemerals are deleted (deepest first), with notifications."""
        if self.sessions.pop(sid, None) is None:
            return
        for path in sorted((p for p, n in self.nodes.items() if n.owner == sid), key=len, reverse=True):
            del self.nodes[path]
            self._announce(NotificationType.Deleted, path)

    # -- the tree ----------------------------------------------------------------------------
    def create(self, path: str, value: bytes, owner: int) -> _Node:
        for parent in ancestors(path):
            if parent not in self.nodes:
                self.nodes[parent] = _Node(b"", 0, next(self._writes), 0)
                self._announce(NotificationType.Created, parent)
        node = _Node(value, 0, next(self._writes), owner)
        self.nodes[path] = node
        self._announce(NotificationType.Created, path)
        return node

    def update(self, path: str, node: _Node, value: bytes) -> _Node:
        node.value = value
        node.version += 1
        next(self._writes)
        self._announce(NotificationType.Modified, path)
        return node

    def remove(self, path: str) -> None:
        del self.nodes[path]
        self._announce(NotificationType.Deleted, path)

    def has_children(self, path: str) -> bool:
        prefix = "/" if path == "/" else path + "/"
        return any(p != path and p.startswith(prefix) for p in self.nodes)

    def children(self, path: str) -> list[str]:
        prefix = "/" if path == "/" else path + "/"
        return sorted({p[len(prefix) :].split("/", 1)[0] for p in self.nodes if p != "/" and p.startswith(prefix)})

    def _announce(self, type_: NotificationType, path: str) -> None:
        for client in list(self.clients):
            client.deliver(type_, path)


class MemoryStore(BaseStore):
    def __init__(
        self,
        server: MemoryServer,
        root: str = "",
        *,
        session_timeout: float,
        fencing_margin: float | FencingAssumption | None,
    ) -> None:
        super().__init__(session_timeout, fencing_margin, clock=server.clock)
        self.server = server
        self._root = root
        self._session = 0
        self._lost = 0  # the session abandoned at SessionLost, ended when a new one is opened
        self._disconnected = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- paths -------------------------------------------------------------------------------
    def _full(self, path: str) -> str:
        check_path(path)
        if not self._root:
            return path
        return self._root if path == "/" else self._root + path

    def _local(self, full: str) -> str | None:
        if not self._root:
            return full
        if full == self._root:
            return "/"
        return full[len(self._root) :] if full.startswith(self._root + "/") else None

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._session = self.server.open_session(self.session_timeout)
        self._fencing.confirm(self._session, self.server.clock(), self.session_timeout)
        if self._root and self._root not in self.server.nodes:
            self.server.create(self._root, b"", 0)
        self.server.clients.append(self)
        self._start_watcher()

    async def _close(self) -> None:
        if self in self.server.clients:
            self.server.clients.remove(self)
        self.server.end_session(self._session)
        self.server.end_session(self._lost)
        self._session = self._lost = 0

    def deliver(self, type_: NotificationType, full: str) -> None:
        """A change on the server: notify this client's listeners on its loop, after the operation."""
        path = self._local(full)
        if path is None or self._loop is None or self._loop.is_closed() or self._closed:
            return
        if type_ is NotificationType.Modified:
            self._loop.call_soon(self._notify, type_, path)
        else:
            self._loop.call_soon(self._notify_with_parent, type_, path)

    # -- fault hooks -------------------------------------------------------------------------
    def disconnect(self) -> None:
        """The connection drops: requests fail and probes fail until ``reconnect``."""
        self._disconnected = True

    def reconnect(self) -> None:
        self._disconnected = False

    async def expire_session(self, *, reestablish: bool = True) -> None:
        """The server ends this session (its ephemerals go): SessionLost, then -- unless told not to
        (``reestablish=False``) -- a new session: Reconnected, SessionReestablished."""
        self.server.end_session(self._session)
        await self._observe(Probe(ProbeStatus.EXPIRED))
        if reestablish:
            self._disconnected = False
            await self._observe(await self._probe(self.server.clock()))

    # -- session -----------------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._session

    async def _probe(self, sent_at: float) -> Probe:
        if self._disconnected:
            return Probe(ProbeStatus.DISCONNECTED)
        if not self._session:  # lost: the next contact opens a new session (SessionReestablished)
            return Probe(ProbeStatus.CONNECTED)
        if not self.server.touch(self._session):
            return Probe(ProbeStatus.EXPIRED)
        return Probe(ProbeStatus.CONNECTED, self._session, sent_at, self.session_timeout)

    async def _before_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.SessionLost and self._session:
            self._lost, self._session = self._session, 0
        elif event is SessionEvent.SessionReestablished and not self._session:
            self.server.end_session(self._lost)
            self._lost = 0
            self._session = self.server.open_session(self.session_timeout)
            self._fencing.confirm(self._session, self.server.clock(), self.session_timeout)

    def _request(self) -> None:
        """Every request: the store is open and connected, and it touches the session."""
        self._check_open()
        if self._disconnected:
            raise errors.ConnectionLossError("the memory store is disconnected")
        if self._session:
            self.server.touch(self._session)
        else:
            self.server.expire_due()

    # -- protocol ----------------------------------------------------------------------------
    def _stat(self, path: str, node: _Node) -> Stat:
        mine = node.owner != 0 and node.owner == self._session
        return Stat(path, node.version, node.owner != 0, mine, node.created)

    async def get(self, path: str) -> GetResult | None:
        full = self._full(path)
        self._request()
        node = self.server.nodes.get(full)
        return None if node is None else GetResult(node.value, self._stat(path, node))

    async def put(
        self, path: str, value: bytes, expected_version: int | None = None, *, ephemeral: bool = False
    ) -> Stat:
        self.ops.put(value)
        full = self._full(path)
        self._request()
        if expected_version is not None and expected_version < -1:
            raise errors.BadVersionError(f"expected version {expected_version} < -1")
        node = self.server.nodes.get(full)
        if node is None:
            if expected_version is not None and expected_version >= 0:
                raise errors.BadVersionError(f"{path} does not exist")
            if ephemeral and not self._session:
                raise errors.SessionExpiredError("no live session to bind an ephemeral node to")
            node = self.server.create(full, bytes(value), self._session if ephemeral else 0)
        elif expected_version == -1:
            raise errors.BadVersionError(f"{path} already exists")
        elif expected_version is not None and node.version != expected_version:
            raise errors.BadVersionError(f"{path} is not at version {expected_version}")
        else:
            node = self.server.update(full, node, bytes(value))
        return self._stat(path, node)

    async def delete(self, path: str, expected_version: int | None = None, *, created: int | None = None) -> None:
        self.ops.delete()
        full = self._full(path)
        self._request()
        node = self.server.nodes.get(full)
        if node is None:
            raise errors.NotFoundError(f"{path} does not exist")
        if self.server.has_children(full):
            raise errors.NotEmptyError(f"{path} has children")
        if (expected_version is not None and node.version != expected_version) or (
            created is not None and node.created != created
        ):
            of = "" if created is None else f" of creation {created}"
            raise errors.BadVersionError(f"{path} is not at version {expected_version}{of}")
        self.server.remove(full)

    async def get_children(self, path: str) -> list[str]:
        full = self._full(path)
        self._request()
        return self.server.children(full) if full in self.server.nodes else []

    async def exists(self, path: str) -> bool:
        full = self._full(path)
        self._request()
        return full in self.server.nodes
