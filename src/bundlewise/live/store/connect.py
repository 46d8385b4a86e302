"""Open a metadata store from its URL (Pulsar's ``MetadataStoreFactory#create``).

``await connect("zk://127.0.0.1:2181/pulsar")`` or ``connect("etcd://127.0.0.1:2379/pulsar")``
returns a started store: connected, session open, notifications flowing, session watcher running.
``connect("memory://NAME/ROOT")`` opens a client of the in-process server ``NAME`` (``backends.memory``;
not a ``StoreUrl``: it names nothing outside this process).
Credentials come from the URL or the ``username``/``password`` arguments (the arguments win).
The drivers (kazoo, httpx) are imported here, only when a backend is chosen.
"""

from __future__ import annotations

from bundlewise.live.store.api import MetadataStore
from bundlewise.live.store.base import DEFAULT_SESSION_TIMEOUT
from bundlewise.live.store.session import FencingAssumption
from bundlewise.live.store.url import StoreUrl

DEFAULT_OPERATION_TIMEOUT = 30.0  # metadataStoreOperationTimeoutSeconds


async def connect(
    url: str | StoreUrl,
    *,
    session_timeout: float = DEFAULT_SESSION_TIMEOUT,
    operation_timeout: float = DEFAULT_OPERATION_TIMEOUT,
    fencing_margin: float | FencingAssumption | None = None,
    username: str | None = None,
    password: str | None = None,
) -> MetadataStore:
    """Connect to the store at ``url`` with a session of ``session_timeout`` seconds.

    ``fencing_margin`` is what the fencing deadline assumes (``session.FencingAssumption``): seconds of
    reaction time (default a tenth of the timeout) with the default clock-rate bound, or a full
    assumption.  Raises ``ConnectionLossError`` when no server answers, ``AuthError`` when the
    credentials are refused, ``InputError`` for a malformed URL."""
    if isinstance(url, str) and url.startswith("memory://"):
        from bundlewise.live.store.backends.memory import MemoryServer

        server, root = MemoryServer.parse_url(url)
        return await server.connect(root, session_timeout=session_timeout, fencing_margin=fencing_margin)
    parsed = url if isinstance(url, StoreUrl) else StoreUrl.parse(url)
    if username is not None:
        parsed = parsed.with_credentials(username, password)
    if parsed.scheme == "zk":
        from bundlewise.live.store.backends.zookeeper import ZooKeeperStore

        zk = ZooKeeperStore(
            parsed, session_timeout=session_timeout, operation_timeout=operation_timeout, fencing_margin=fencing_margin
        )
        await zk.start()
        return zk
    from bundlewise.live.store.backends.etcd import EtcdStore

    etcd = EtcdStore(
        parsed, session_timeout=session_timeout, operation_timeout=operation_timeout, fencing_margin=fencing_margin
    )
    await etcd.start()
    return etcd
