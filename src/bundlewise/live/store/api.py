"""The metadata-store protocol every backend implements (Pulsar's ``MetadataStoreExtended``).

Why asyncio: brokers will run inside an ASGI server, and Pulsar's own API is asynchronous
(``CompletableFuture`` everywhere), so every operation is a coroutine on the caller's event loop.
Drivers that run their own threads (kazoo) hand results back with ``call_soon_threadsafe``.

Semantics (Pulsar's ``MetadataStore`` contract, the same on every backend):

* **Versions** start at 0 on creation and grow by one per write.  ``put`` takes an expected
  version: ``-1`` = create, the node must not exist; ``v >= 0`` = compare-and-set on ``v``;
  ``None`` = unconditional (create or overwrite).  A mismatch raises ``BadVersionError``.
  ``ephemeral=True`` binds a node *created* by the put to this client's session; an update keeps
  the node's kind, as ZooKeeper's ``setData`` does.  Missing parents are created as persistent
  empty nodes.
* **Reads** return ``GetResult(value, Stat)``; ``Stat.created_by_self`` is true when the node is
  an ephemeral of this client's *current* session (``ZKMetadataStore#getStat``,
  ``EtcdMetadataStore#handleBatchOperationResult``).
* **Notifications**: every Created / Modified / Deleted on any path under the root reaches every
  listener, with ChildrenChanged on the parent for creations and deletions; listeners filter by
  prefix.  Listeners are plain callables run on the event loop; long work goes into a task.
* **Sessions**: ``ConnectionLost``, ``Reconnected``, ``SessionLost``, ``SessionReestablished``
  (``SessionEvent``; rules in ``session.py``), and ``fencing_deadline()``, the monotonic time until
  which this client's ephemerals are certain to exist.

Paths are absolute (``/a/b``), relative to the store URL's chroot / prefix.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType


class NotificationType(enum.Enum):
    """Pulsar's ``NotificationType``."""

    Created = "Created"
    Modified = "Modified"
    Deleted = "Deleted"
    ChildrenChanged = "ChildrenChanged"


class SessionEvent(enum.Enum):
    """Pulsar's ``SessionEvent``; ``is_connected`` is true for Reconnected and SessionReestablished."""

    ConnectionLost = "ConnectionLost"
    Reconnected = "Reconnected"
    SessionLost = "SessionLost"
    SessionReestablished = "SessionReestablished"

    @property
    def is_connected(self) -> bool:
        return self in (SessionEvent.Reconnected, SessionEvent.SessionReestablished)


@dataclass(frozen=True, slots=True)
class Stat:
    """Pulsar's ``Stat``: the node's version (0 on creation) and who owns it.

    ``created`` identifies the node's creation (ZooKeeper's ``czxid``, etcd's ``create_revision``): a
    node deleted and created again has another, at the same version.  Every stat a backend returns
    carries it (reads, creations, updates).
    """

    path: str
    version: int
    is_ephemeral: bool
    created_by_self: bool
    created: int


@dataclass(frozen=True, slots=True)
class GetResult:
    value: bytes
    stat: Stat


@dataclass(frozen=True, slots=True)
class Notification:
    type: NotificationType
    path: str


@dataclass
class StoreOps:
    """What one client asked of its store and heard from it since it connected (the figures Pulsar's design
    documents weigh when they move load data off the metadata store): writes (``put``), their value bytes,
    deletions, and notifications dispatched to this client's listeners (ChildrenChanged included).  Each
    write is counted when asked, whatever its outcome."""

    puts: int = 0
    put_bytes: int = 0
    deletes: int = 0
    notifications: int = 0

    def put(self, value: bytes) -> None:
        self.puts += 1
        self.put_bytes += len(value)

    def delete(self) -> None:
        self.deletes += 1


NotificationListener = Callable[[Notification], None]
SessionListener = Callable[[SessionEvent], None]


class MetadataStore(abc.ABC):
    """One client of a metadata store, with one session.  Use as ``async with await connect(url)``."""

    ops: StoreOps  # what this client wrote and heard (``StoreOps``)

    @abc.abstractmethod
    async def get(self, path: str) -> GetResult | None:
        """The node's value and stat, or None when it does not exist."""

    @abc.abstractmethod
    async def put(
        self, path: str, value: bytes, expected_version: int | None = None, *, ephemeral: bool = False
    ) -> Stat:
        """Create or update the node (see the module docstring for ``expected_version``)."""

    @abc.abstractmethod
    async def delete(self, path: str, expected_version: int | None = None, *, created: int | None = None) -> None:
        """Delete the node (``NotFoundError`` when missing, ``BadVersionError`` on a version mismatch).

        With ``created`` (a stat's), only that creation of the node: another one, even at the
        same version, raises ``BadVersionError``.  etcd compares it in the delete's transaction;
        ZooKeeper cannot condition a delete on it, so it is compared by a read just before the
        versioned delete -- a window that remains there (and in Pulsar's ZooKeeper locks).
        """

    async def delete_node(self, stat: Stat) -> None:
        """Delete exactly the node ``stat`` describes: at its version and creation (``delete``)."""
        await self.delete(stat.path, stat.version, created=stat.created)

    @abc.abstractmethod
    async def get_children(self, path: str) -> list[str]:
        """Sorted names of the node's children; ``[]`` when the node does not exist."""

    @abc.abstractmethod
    async def exists(self, path: str) -> bool:
        """Whether the node exists."""

    @abc.abstractmethod
    def register_listener(self, listener: NotificationListener, prefix: str = "/") -> Callable[[], None]:
        """Call ``listener`` for every notification whose path is ``prefix`` or below it.

        Returns a function that unregisters the listener."""

    @abc.abstractmethod
    def register_session_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener`` for every session event.  Returns a function that unregisters it."""

    @property
    @abc.abstractmethod
    def session_id(self) -> int:
        """The current session: ZooKeeper session id, or etcd lease id (0 while there is none)."""

    @property
    @abc.abstractmethod
    def is_connected(self) -> bool:
        """False between ConnectionLost/SessionLost and the next Reconnected."""

    @property
    @abc.abstractmethod
    def session_timeout(self) -> float:
        """The session timeout in seconds (ZooKeeper: as negotiated with the server)."""

    @abc.abstractmethod
    def fencing_deadline(self) -> float:
        """``time.monotonic()`` value until which this session's ephemerals surely exist (0: none)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """End the session (its ephemerals are deleted) and release the connection."""

    async def __aenter__(self) -> MetadataStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
