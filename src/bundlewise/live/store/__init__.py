"""The metadata-store layer of the live load manager.

One asyncio protocol (``MetadataStore``, in ``api``) with two real backends in ``backends`` — ZooKeeper
through kazoo and etcd v3 through its JSON gateway — opened by URL with ``connect``; Pulsar's session events
and a fencing deadline (``session``); recipes built on the protocol only, in ``recipes``: ``LeaderElection``,
``LockManager`` / ``ResourceLock``, ``read_modify_write``, ``MetadataStoreTableView``; Pulsar's paths in
``layout``.  Local servers are the harness's (``live.harness.servers``).  See docs/live/.

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
from bundlewise.live.store.recipes.election import LeaderElection, LeaderElectionState
from bundlewise.live.store.recipes.lock import LockManager, ResourceLock
from bundlewise.live.store.recipes.table_view import MetadataStoreTableView
from bundlewise.live.store.recipes.versioned import read_modify_write
from bundlewise.live.store.url import StoreUrl

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
