"""The one exception tree of the metadata-store layer (Pulsar's ``MetadataStoreException`` family).

Every backend maps its driver's errors (kazoo's ``KazooException`` family, httpx transport errors
and etcd's gRPC-gateway error bodies) onto this tree, so recipes and brokers never see a driver type::

    MetadataStoreError
     ├── NotFoundError          the node does not exist (delete, CAS put on a missing node is BadVersion)
     ├── BadVersionError        expected version mismatch; a create (-1) on an existing node
     │    └── LockBusyError     a ResourceLock held by another session (ResourceLockImpl)
     ├── NotEmptyError          delete of a node that still has children
     ├── InvalidPathError       not an absolute, normalised path (also a ValueError)
     ├── AuthError              credentials refused, or the node's ACL denies the operation
     ├── ConnectionLossError    the request may or may not have been applied (timeout, refused, reset)
     ├── SessionExpiredError    the server ended this client's session / lease
     ├── AlreadyClosedError     the store or recipe was closed
     └── ConflictError          a table-view put the conflict resolver rejected (MetadataStoreTableViewImpl)

``ConnectionLossError`` and ``SessionExpiredError`` are the *connectivity* errors: recipes keep
their belief (a lock stays held) and retry, as Pulsar's ``ResourceLockImpl#revalidate`` does.
"""

from __future__ import annotations


class MetadataStoreError(Exception):
    """Base of every metadata-store error."""


class NotFoundError(MetadataStoreError):
    """The node does not exist."""


class BadVersionError(MetadataStoreError):
    """The node's version is not the expected one (or it exists when a create was asked)."""


class LockBusyError(BadVersionError):
    """The lock node is held by another session."""


class NotEmptyError(MetadataStoreError):
    """The node has children."""


class InvalidPathError(MetadataStoreError, ValueError):
    """The path is not absolute and normalised."""


class AuthError(MetadataStoreError):
    """Authentication failed or the node's ACL denies the operation."""


class ConnectionLossError(MetadataStoreError):
    """The server could not be reached in time; the operation's outcome is unknown."""


class SessionExpiredError(MetadataStoreError):
    """The session (ZooKeeper session, etcd lease) has expired."""


class AlreadyClosedError(MetadataStoreError):
    """The store or recipe has been closed."""


class ConflictError(MetadataStoreError):
    """The conflict resolver kept the existing value."""


CONNECTIVITY_ERRORS: tuple[type[MetadataStoreError], ...] = (ConnectionLossError, SessionExpiredError)
