"""The etcd v3 backend, through the JSON gateway (``EtcdMetadataStore``).

* **Keys** are the URL's prefix + the path; the root ``/`` is the prefix key itself.  Parent
  nodes are real keys, created with an empty value inside the same transaction as the child (one
  nested ``If(createRevision == 0) Then put`` per missing ancestor), so a create is atomic.
* **Versions**, Pulsar's mapping: Pulsar version = etcd ``version − 1``; a create compares
  ``createRevision == 0``; a CAS compares ``version == expected + 1``.  Updates use
  ``ignore_lease`` so a write never changes whether a node is ephemeral (ZooKeeper's rule).
* **Ephemerals** are bound to this client's lease, granted with TTL = session timeout in whole
  seconds (``sessionTimeoutMillis / 1000``) and kept alive by the session probe itself: each probe
  is one ``/v3/lease/keepalive``, whose answered TTL feeds the fencing deadline; a TTL of 0
  (lease gone) is a server-reported expiry.  Beside each probe, a reading of a reference lease checks
  this process's clock against the server's (``etcd_clock``).  On SessionLost the lease is abandoned; on
  SessionReestablished the old lease is revoked (its keys go) and a new one is granted *before*
  listeners are told (``EtcdMetadataStore#receivedSessionEvent``).
* **Notifications**: one prefix watch over the whole root (``/v3/watch`` streaming).  A PUT of
  version 1 is Created, a later PUT Modified, a DELETE Deleted; creations and deletions also
  notify ChildrenChanged on the parent.  A broken stream is resumed from the next revision, so no
  event is lost while the server keeps its history; a server whose revision went back (restarted
  without its data) is watched from the start of its new history.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from bundlewise.live.store import errors
from bundlewise.live.store.api import GetResult, NotificationType, SessionEvent, Stat
from bundlewise.live.store.backends.etcd_clock import ClockReference
from bundlewise.live.store.backends.etcd_gateway import EtcdGateway, as_int, b64, prefix_end, unb64
from bundlewise.live.store.base import BaseStore, ancestors, check_path
from bundlewise.live.store.session import FencingAssumption, Probe, ProbeStatus
from bundlewise.live.store.url import StoreUrl

log = logging.getLogger(__name__)


class EtcdStore(BaseStore):
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
        self._gw = EtcdGateway(list(url.hosts), timeout=operation_timeout, username=url.username, password=url.password)
        self._ttl = max(1, int(session_timeout))
        self._lease = 0
        self._lost_lease = 0
        self._revision = 0
        self._watch_task: asyncio.Task[None] | None = None
        self._clock_ref = ClockReference(self._gw, self._check_clock)
        self._clock_task: asyncio.Task[None] | None = None

    # -- keys ------------------------------------------------------------------------------
    def _key(self, path: str) -> bytes:
        check_path(path)
        if path == "/":
            return (self._root or "/").encode()
        return (self._root + path).encode()

    def _children_prefix(self, path: str) -> bytes:
        return (self._root + "/").encode() if path == "/" else self._key(path) + b"/"

    def _path(self, key: bytes) -> str | None:
        text = key.decode()
        if self._root:
            if text == self._root:
                return "/"
            return text[len(self._root) :] if text.startswith(self._root + "/") else None
        return text if text.startswith("/") else None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        try:
            await self._gw.authenticate()
            # A plain read first: etcd 3.5.1 does not check permissions inside nested transactions
            # (the parent creation below), so this is where a client without rights is refused.
            await self._range(self._key("/"), count_only=True)
            if self._root:
                await self._txn([], [self._create_if_absent(self._root.encode())], [])
            await self._grant()
            created = asyncio.get_running_loop().create_future()
            self._watch_task = asyncio.get_running_loop().create_task(self._watch(created), name="etcd-watch")
            await asyncio.wait_for(created, self.session_timeout)
        except BaseException:
            await self._close()
            raise
        self._start_watcher()

    async def _close(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch_task
        if self._lease:
            with contextlib.suppress(errors.MetadataStoreError):
                await self._gw.post("/v3/lease/revoke", {"ID": str(self._lease)}, timeout=2.0)
            self._lease = 0
        if self._clock_task is not None:
            self._clock_task.cancel()
        await self._clock_ref.close()
        await self._gw.aclose()

    # -- requests --------------------------------------------------------------------------
    async def _txn(
        self, compare: list[dict[str, Any]], success: list[dict[str, Any]], failure: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self._check_open()
        return await self._gw.post("/v3/kv/txn", {"compare": compare, "success": success, "failure": failure})

    async def _range(self, key: bytes, **options: Any) -> dict[str, Any]:
        self._check_open()
        return await self._gw.post("/v3/kv/range", {"key": b64(key), **options})

    @staticmethod
    def _create_if_absent(key: bytes) -> dict[str, Any]:
        return {
            "request_txn": {
                "compare": [{"key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
                "success": [{"request_put": {"key": b64(key), "value": ""}}],
            }
        }

    def _stat(self, path: str, kv: dict[str, Any]) -> Stat:
        lease = as_int(kv.get("lease"))
        created = as_int(kv.get("create_revision"))
        return Stat(path, as_int(kv.get("version")) - 1, lease != 0, lease != 0 and lease == self._lease, created)

    # -- protocol --------------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._lease

    async def get(self, path: str) -> GetResult | None:
        kvs = (await self._range(self._key(path))).get("kvs") or []
        if not kvs:
            return None
        return GetResult(unb64(kvs[0].get("value")), self._stat(path, kvs[0]))

    async def put(
        self, path: str, value: bytes, expected_version: int | None = None, *, ephemeral: bool = False
    ) -> Stat:
        self.ops.put(value)
        key = self._key(path)
        k = b64(key)
        if expected_version is not None and expected_version < -1:
            raise errors.BadVersionError(f"expected version {expected_version} < -1")
        if ephemeral and not self._lease:
            raise errors.SessionExpiredError("no live lease to bind an ephemeral node to")
        create: dict[str, Any] = {"key": k, "value": b64(value)}
        if ephemeral:
            create["lease"] = str(self._lease)
        parents = [self._key(a) for a in ancestors(path)]
        if self._root and path != "/":
            parents.insert(0, self._root.encode())
        creation = [self._create_if_absent(p) for p in parents] + [{"request_put": create}]
        update = [{"request_put": {"key": k, "value": b64(value), "ignore_lease": True, "prev_kv": True}}]
        if expected_version == -1:
            resp = await self._txn([_cmp_create(k, 0)], creation, [])
            if not resp.get("succeeded"):
                raise errors.BadVersionError(f"{path} already exists")
            return Stat(path, 0, ephemeral, ephemeral, _revision(resp))
        if expected_version is not None:
            cmp = {"key": k, "target": "VERSION", "result": "EQUAL", "version": str(expected_version + 1)}
            resp = await self._txn([cmp], update, [])
            if not resp.get("succeeded"):
                raise errors.BadVersionError(f"{path} is not at version {expected_version}")
            return await self._updated_stat(path, resp, expected_version + 1)
        resp = await self._txn([_cmp_create(k, 0)], creation, update)
        if resp.get("succeeded"):
            return Stat(path, 0, ephemeral, ephemeral, _revision(resp))
        return await self._updated_stat(path, resp, None)

    async def _updated_stat(self, path: str, resp: dict[str, Any], version: int | None) -> Stat:
        """The stat after an update: the previous kv's etcd version is the new Pulsar version."""
        prev = ((resp.get("responses") or [{}])[0].get("response_put") or {}).get("prev_kv") or {}
        lease = as_int(prev.get("lease"))
        new_version = as_int(prev.get("version")) if version is None else version
        created = as_int(prev.get("create_revision"))
        return Stat(path, new_version, lease != 0, lease != 0 and lease == self._lease, created)

    async def delete(self, path: str, expected_version: int | None = None, *, created: int | None = None) -> None:
        self.ops.delete()
        key = self._key(path)
        k = b64(key)
        prefix = self._children_prefix(path)
        children = await self._range(prefix, range_end=b64(prefix_end(prefix)), count_only=True)
        if as_int(children.get("count")):
            raise errors.NotEmptyError(f"{path} has children")
        if expected_version is None:
            cmp = {"key": k, "target": "CREATE", "result": "GREATER", "create_revision": "0"}
        else:
            cmp = {"key": k, "target": "VERSION", "result": "EQUAL", "version": str(expected_version + 1)}
        compare = [cmp] if created is None else [cmp, _cmp_create(k, created)]
        resp = await self._txn(compare, [{"request_delete_range": {"key": k}}], [{"request_range": {"key": k}}])
        if resp.get("succeeded"):
            return
        found = ((resp.get("responses") or [{}])[0].get("response_range") or {}).get("kvs")
        if not found:
            raise errors.NotFoundError(f"{path} does not exist")
        of = "" if created is None else f" of creation {created}"
        raise errors.BadVersionError(f"{path} is not at version {expected_version}{of}")

    async def get_children(self, path: str) -> list[str]:
        prefix = self._children_prefix(path)
        resp = await self._range(prefix, range_end=b64(prefix_end(prefix)), keys_only=True)
        names = {unb64(kv["key"])[len(prefix) :].decode().split("/", 1)[0] for kv in resp.get("kvs") or []}
        names.discard("")
        return sorted(names)

    async def exists(self, path: str) -> bool:
        return as_int((await self._range(self._key(path), count_only=True)).get("count")) > 0

    # -- lease and session -----------------------------------------------------------------
    async def _grant(self) -> None:
        sent_at = time.monotonic()
        resp = await self._gw.post("/v3/lease/grant", {"TTL": str(self._ttl)})
        if resp.get("error"):
            raise errors.SessionExpiredError(f"etcd lease grant failed: {resp['error']}")
        self._lease = as_int(resp.get("ID"))
        self._fencing.confirm(self._lease, sent_at, float(as_int(resp.get("TTL"))))

    async def _probe(self, sent_at: float) -> Probe:
        if not self._lease:
            await self._range(self._key("/"), count_only=True)
            return Probe(ProbeStatus.CONNECTED)
        lease = self._lease
        resp = await self._gw.post("/v3/lease/keepalive", {"ID": str(lease)})
        ttl = as_int(resp.get("result", resp).get("TTL"))
        if ttl <= 0:
            return Probe(ProbeStatus.EXPIRED)
        if self._clock_task is None or self._clock_task.done():  # beside the probe, never delaying it
            self._clock_task = asyncio.get_running_loop().create_task(self._clock_ref.read(), name="etcd-clock-check")
        return Probe(ProbeStatus.CONNECTED, lease, sent_at, float(ttl))

    async def _before_session_event(self, event: SessionEvent) -> None:
        if event is SessionEvent.SessionLost and self._lease:
            self._lost_lease, self._lease = self._lease, 0
        elif event is SessionEvent.SessionReestablished and not self._lease:
            if self._lost_lease:
                with contextlib.suppress(errors.MetadataStoreError):
                    await self._gw.post("/v3/lease/revoke", {"ID": str(self._lost_lease)})
                self._lost_lease = 0
            await self._grant()

    # -- watch -----------------------------------------------------------------------------
    async def _watch(self, created: asyncio.Future[None]) -> None:
        start = (self._root or "/").encode()
        delay = 0.05
        while not self._closed:
            request: dict[str, Any] = {"key": b64(start), "range_end": b64(prefix_end(start))}
            if self._revision:
                with contextlib.suppress(Exception):
                    await self._rewind_if_history_lost()
                request["start_revision"] = str(self._revision + 1)
            try:
                async for result in self._gw.stream("/v3/watch", {"create_request": request}):
                    delay = 0.05
                    if result.get("created") and not created.done():
                        self._revision = max(self._revision, as_int(result.get("header", {}).get("revision")))
                        created.set_result(None)
                    if as_int(result.get("compact_revision")):
                        log.warning(
                            "etcd watch fell behind compaction; events before %s are lost", result["compact_revision"]
                        )
                        self._revision = as_int(result["compact_revision"]) - 1
                        break
                    for event in result.get("events") or []:
                        self._on_event(event)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.debug("etcd watch stream ended: %r", e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _rewind_if_history_lost(self) -> None:
        """A server restarted without its data counts revisions from 1 again: a watch resumed from our
        next revision would stay silent until the new history caught up, so it resumes from the START of the
        new history: every write since the restart -- the brokers' own re-published records among them, made
        before this watch noticed -- is notified again (resuming from the server's current revision missed
        them: a re-created channel record its owner's mirror never saw, so the owner did not serve it)."""
        current = as_int(((await self._range(self._key("/"), count_only=True)).get("header") or {}).get("revision"))
        if 0 < current < self._revision:
            log.warning(
                "etcd's revision went back from %d to %d: its data was lost; watching its new history from the start",
                self._revision,
                current,
            )
            self._revision = 0

    def _on_event(self, event: dict[str, Any]) -> None:
        kv = event.get("kv") or {}
        self._revision = max(self._revision, as_int(kv.get("mod_revision")))
        path = self._path(unb64(kv.get("key")))
        if path is None:
            return
        if event.get("type") == "DELETE":
            self._notify_with_parent(NotificationType.Deleted, path)
        elif as_int(kv.get("version")) == 1:
            self._notify_with_parent(NotificationType.Created, path)
        else:
            self._notify(NotificationType.Modified, path)


def _revision(resp: dict[str, Any]) -> int:
    """The revision a transaction wrote at: the ``create_revision`` of every key it created."""
    return as_int((resp.get("header") or {}).get("revision"))


def _cmp_create(key_b64: str, revision: int) -> dict[str, Any]:
    return {"key": key_b64, "target": "CREATE", "result": "EQUAL", "create_revision": str(revision)}
