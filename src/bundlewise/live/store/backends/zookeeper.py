"""The ZooKeeper backend, through kazoo (``ZKMetadataStore``).

* Paths are prefixed with the URL's chroot here (not by kazoo), so the chroot node itself can be
  created at connect and one persistent recursive watch on it delivers every event
  (``ZKMetadataStore`` adds it on ``/``).  Created / Deleted also yield ChildrenChanged on the
  parent; the watch is re-added on every (re)connection, since the server forgets watches with
  the connection and kazoo does not restore them.
* ``put`` with ``-1`` is a create (NodeExists → BadVersion), with ``v`` a ``setData`` at ``v``
  (a missing node is BadVersion, as in Pulsar), with None a ``setData`` that creates on NoNode.
  Missing parents are created as persistent empty nodes with the same ACL.
* With credentials, the client authenticates with the ``digest`` scheme and every node it
  creates gets the ACL ``digest:USER:ALL, world:anyone:READ``: others can read but not modify.
* Session: the probe is ``exists(root)``; kazoo's LOST state (the server expired the session) is
  reported at once.  The fencing TTL is the session timeout the server *negotiated*.  On SessionLost
  the client forgets the newest zxid it saw, so a server restarted without its data (which refuses
  clients that saw a newer zxid than its own) lets it in again.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kazoo import exceptions as kx
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry
from kazoo.security import make_acl, make_digest_acl

from bundlewise.live.store import errors
from bundlewise.live.store.api import GetResult, NotificationType, SessionEvent, Stat
from bundlewise.live.store.backends._kazoo_watch import PERSISTENT_RECURSIVE, AddWatch, install
from bundlewise.live.store.base import BaseStore, check_path
from bundlewise.live.store.session import FencingAssumption, Probe, ProbeStatus
from bundlewise.live.store.url import StoreUrl

log = logging.getLogger(__name__)
T = TypeVar("T")

_EVENT_TYPES = {1: NotificationType.Created, 2: NotificationType.Deleted, 3: NotificationType.Modified}


def map_error(e: BaseException) -> errors.MetadataStoreError:
    """kazoo's exception family → the store's tree."""
    if isinstance(e, errors.MetadataStoreError):
        return e
    table: list[tuple[type[BaseException], type[errors.MetadataStoreError]]] = [
        (kx.NoNodeError, errors.NotFoundError),
        (kx.BadVersionError, errors.BadVersionError),
        (kx.NodeExistsError, errors.BadVersionError),
        (kx.NotEmptyError, errors.NotEmptyError),
        (kx.NoAuthError, errors.AuthError),
        (kx.AuthFailedError, errors.AuthError),
        (kx.SessionExpiredError, errors.SessionExpiredError),
        (kx.ConnectionLoss, errors.ConnectionLossError),
        (kx.ConnectionClosedError, errors.ConnectionLossError),
        (kx.OperationTimeoutError, errors.ConnectionLossError),
        (KazooTimeoutError, errors.ConnectionLossError),
        (TimeoutError, errors.ConnectionLossError),
    ]
    for kazoo_type, ours in table:
        if isinstance(e, kazoo_type):
            return ours(f"{type(e).__name__}: {e}")
    return errors.MetadataStoreError(f"{type(e).__name__}: {e}")


class ZooKeeperStore(BaseStore):
    def __init__(
        self,
        url: StoreUrl,
        *,
        session_timeout: float,
        operation_timeout: float,
        fencing_margin: float | FencingAssumption | None,
    ) -> None:
        super().__init__(session_timeout, fencing_margin)
        self._url = url
        self._root = url.root
        self._op_timeout = operation_timeout
        self._loop = asyncio.get_running_loop()
        # kazoo's thread hands notifications back in the context of whoever connected (several brokers in one
        # process each log under their own id: live.broker.logcontext)
        self._context = contextvars.copy_context()
        auth = [("digest", f"{url.username}:{url.password}")] if url.username else None
        self._acl = (
            [make_digest_acl(url.username, url.password or "", all=True), make_acl("world", "anyone", read=True)]
            if url.username
            else None
        )
        retry = KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0)
        self._zk = KazooClient(
            hosts=url.hosts_text,
            timeout=session_timeout,
            auth_data=auth,
            default_acl=self._acl,
            connection_retry=retry,
            command_retry=KazooRetry(max_tries=0),
        )
        self._conn = install(self._zk, self._on_watch_event)
        self._zk.add_listener(self._on_kazoo_state)
        self._pending_probe: asyncio.Future[Any] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        sent_at = time.monotonic()
        try:
            await asyncio.to_thread(self._zk.start, self._op_timeout)
        except Exception as e:
            await asyncio.to_thread(self._zk.close)
            raise errors.ConnectionLossError(f"cannot connect to ZooKeeper at {self._url.hosts_text}: {e}") from e
        try:
            if self._root:
                await self._call(lambda: self._zk.ensure_path_async(self._root, acl=self._acl))
            await self._add_watch()
        except BaseException:
            await self._close()
            raise
        self._fencing.confirm(self.session_id, sent_at, (self._conn.negotiated_timeout_ms or 0.0) / 1000.0)
        self._start_watcher()

    async def _close(self) -> None:
        def stop() -> None:
            self._zk.stop()
            self._zk.close()

        await asyncio.to_thread(stop)

    # -- plumbing --------------------------------------------------------------------------
    def _abs(self, path: str) -> str:
        check_path(path)
        if path == "/":
            return self._root or "/"
        return self._root + path

    def _rel(self, zk_path: str) -> str | None:
        if not self._root:
            return zk_path
        if zk_path == self._root:
            return "/"
        if zk_path.startswith(self._root + "/"):
            return zk_path[len(self._root) :]
        return None

    def _bridge(self, async_result: Any) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = self._loop.create_future()

        def settle(result: Any) -> None:
            try:
                value = result.get_nowait()
            except BaseException as e:
                self._loop.call_soon_threadsafe(_set_exception, fut, e)
            else:
                self._loop.call_soon_threadsafe(_set_result, fut, value)

        async_result.rawlink(settle)
        fut.add_done_callback(_retrieve)  # a probe or timed-out call may be abandoned
        return fut

    async def _call(self, start: Callable[[], Any]) -> Any:
        self._check_open()
        try:
            return await asyncio.wait_for(self._bridge(start()), self._op_timeout)
        except BaseException as e:
            if isinstance(e, asyncio.CancelledError):
                raise
            raise map_error(e) from e

    async def _add_watch(self) -> None:
        async_result = self._zk.handler.async_result()
        self._zk._call(AddWatch(self._root or "/", PERSISTENT_RECURSIVE), async_result)
        await asyncio.wait_for(self._bridge(async_result), self._op_timeout)

    def _on_watch_event(self, type_code: int, zk_path: str) -> None:  # kazoo's thread
        kind = _EVENT_TYPES.get(type_code)
        path = self._rel(zk_path)
        if kind is not None and path is not None and not self._closed:
            self._loop.call_soon_threadsafe(self._notify_with_parent, kind, path, context=self._context)

    def _on_kazoo_state(self, state: str) -> None:  # kazoo's thread
        if self._closed:
            return
        if state == KazooState.LOST:
            self._loop.call_soon_threadsafe(
                self._spawn, self._observe(Probe(ProbeStatus.EXPIRED)), context=self._context
            )
        elif state == KazooState.CONNECTED:
            self._loop.call_soon_threadsafe(self._spawn, self._rewatch(), context=self._context)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            await coro

        self._loop.create_task(run())

    async def _rewatch(self) -> None:
        try:
            await self._add_watch()
        except Exception as e:
            log.warning("could not re-add the recursive watch: %r", e)

    def _stat(self, path: str, zstat: Any) -> Stat:
        owner = zstat.ephemeralOwner
        return Stat(path, zstat.version, owner != 0, owner != 0 and owner == self.session_id, zstat.czxid)

    # -- protocol --------------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        client_id = self._zk.client_id
        return int(client_id[0]) if client_id else 0

    async def get(self, path: str) -> GetResult | None:
        try:
            data, zstat = await self._call(lambda: self._zk.get_async(self._abs(path)))
        except errors.NotFoundError:
            return None
        return GetResult(bytes(data or b""), self._stat(path, zstat))

    async def put(
        self, path: str, value: bytes, expected_version: int | None = None, *, ephemeral: bool = False
    ) -> Stat:
        self.ops.put(value)
        zk_path = self._abs(path)
        if expected_version is not None and expected_version < -1:
            raise errors.BadVersionError(f"expected version {expected_version} < -1")
        if expected_version == -1:
            return Stat(path, 0, ephemeral, ephemeral, await self._create(zk_path, value, ephemeral))
        version = -1 if expected_version is None else expected_version
        while True:
            try:
                zstat = await self._call(lambda: self._zk.set_async(zk_path, value, version))
                return self._stat(path, zstat)
            except errors.NotFoundError:
                if expected_version is not None:
                    raise errors.BadVersionError(f"{path} does not exist") from None
            try:
                return Stat(path, 0, ephemeral, ephemeral, await self._create(zk_path, value, ephemeral))
            except errors.BadVersionError:
                continue  # created concurrently: overwrite it

    async def _create(self, zk_path: str, value: bytes, ephemeral: bool) -> int:
        """Create the node; its creation id (``czxid``)."""
        _, zstat = await self._call(
            lambda: self._zk.create_async(
                zk_path, value, acl=self._acl, ephemeral=ephemeral, makepath=True, include_data=True
            )
        )
        return int(zstat.czxid)

    async def delete(self, path: str, expected_version: int | None = None, *, created: int | None = None) -> None:
        self.ops.delete()
        zk_path = self._abs(path)
        if created is not None:
            res = await self.get(path)
            if res is None:
                raise errors.NotFoundError(f"{path} does not exist")
            if res.stat.created != created:
                raise errors.BadVersionError(f"{path} was created again")
        await self._call(lambda: self._zk.delete_async(zk_path, -1 if expected_version is None else expected_version))

    async def get_children(self, path: str) -> list[str]:
        try:
            children = await self._call(lambda: self._zk.get_children_async(self._abs(path)))
        except errors.NotFoundError:
            return []
        return sorted(children)

    async def exists(self, path: str) -> bool:
        return await self._call(lambda: self._zk.exists_async(self._abs(path))) is not None

    # -- session ---------------------------------------------------------------------------
    async def _probe(self, sent_at: float) -> Probe:
        if self._pending_probe is not None and not self._pending_probe.done():
            return Probe(ProbeStatus.DISCONNECTED)  # the previous probe is still unanswered
        session = self.session_id
        self._pending_probe = self._bridge(self._zk.exists_async(self._root or "/"))
        try:
            await asyncio.shield(self._pending_probe)
        except kx.SessionExpiredError:
            return Probe(ProbeStatus.EXPIRED)
        except Exception:
            return Probe(ProbeStatus.DISCONNECTED)
        timeout_ms = self._conn.negotiated_timeout_ms or self.session_timeout * 1000
        return Probe(ProbeStatus.CONNECTED, session, sent_at, timeout_ms / 1000.0)

    async def _before_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.SessionLost:
            # A server restarted without its data counts zxids from 0 again and refuses every client
            # that has seen a newer one, for ever; the session is lost to us anyway, so we stop
            # asking to have seen it: the server then renews the session if it still knows it, or
            # expires it and kazoo opens a new one.
            self._zk.last_zxid = 0
        elif event is SessionEvent.SessionReestablished:
            await self._add_watch()

    @property
    def kazoo_client(self) -> KazooClient:
        """The underlying client (fault-injection tests use its session id and password)."""
        return self._zk


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


def _set_result(fut: asyncio.Future[T], value: T) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future[Any], e: BaseException) -> None:
    if not fut.done():
        fut.set_exception(e)
