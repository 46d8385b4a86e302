"""The metadata-store layer of the live load manager.

One asyncio protocol (``MetadataStore``) with two real backends — ZooKeeper through kazoo and
etcd v3 through its JSON gateway — opened by URL with ``connect``; Pulsar's session events and a
fencing deadline; recipes built on the protocol only, one per module: ``LeaderElection``,
``LockManager`` / ``ResourceLock``, ``read_modify_write``, ``MetadataStoreTableView``; Pulsar's
paths in ``layout``; local servers in ``servers``.  See docs/live.md.

Error tree: ``bundlewise.live.store.errors``.
"""

from bundlewise.live.store import layout
from bundlewise.live.store.api import (
    GetResult,
    MetadataStore,
    Notification,
    NotificationType,
    SessionEvent,
    Stat,
)
from bundlewise.live.store.codec import BYTES, JSON, Codec
from bundlewise.live.store.connect import connect
from bundlewise.live.store.election import LeaderElection, LeaderElectionState
from bundlewise.live.store.errors import (
    AlreadyClosedError,
    AuthError,
    BadVersionError,
    ConflictError,
    ConnectionLossError,
    InvalidPathError,
    LockBusyError,
    MetadataStoreError,
    NotEmptyError,
    NotFoundError,
    SessionExpiredError,
)
from bundlewise.live.store.lock import LockManager, ResourceLock
from bundlewise.live.store.table_view import MetadataStoreTableView
from bundlewise.live.store.url import StoreUrl
from bundlewise.live.store.versioned import read_modify_write

__all__ = [
    "BYTES",
    "JSON",
    "AlreadyClosedError",
    "AuthError",
    "BadVersionError",
    "Codec",
    "ConflictError",
    "ConnectionLossError",
    "GetResult",
    "InvalidPathError",
    "LeaderElection",
    "LeaderElectionState",
    "LockBusyError",
    "LockManager",
    "MetadataStore",
    "MetadataStoreError",
    "MetadataStoreTableView",
    "NotEmptyError",
    "NotFoundError",
    "Notification",
    "NotificationType",
    "ResourceLock",
    "SessionEvent",
    "SessionExpiredError",
    "Stat",
    "StoreUrl",
    "connect",
    "layout",
    "read_modify_write",
]
