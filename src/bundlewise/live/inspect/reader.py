"""A read-only view of a metadata store, for ``live status`` and ``live advise`` on someone else's cluster.

``MetadataStore`` (``connect``) is a participant: it opens a session with a lease or ephemeral rights, and
creates the URL's root when missing.  Pointed at a Pulsar cluster's own ZooKeeper, a tool must not do any
of that.  ``StoreReader`` only reads:

* ZooKeeper: a kazoo client in ``read_only`` mode on the chroot (``zk://HOST:PORT[,…]/CHROOT``; a digest
  login when the URL has credentials), ``get`` and ``get_children`` only -- no ``ensure_path``, no watch;
* etcd: ``/v3/kv/range`` requests on the JSON gateway (``/v3/auth/authenticate`` first when the URL has
  credentials) -- no lease, no transaction.

Versions are Pulsar's numbering (0 on creation): ZooKeeper's ``Stat.version``; etcd's ``version - 1``.
"""

from __future__ import annotations

import base64
import warnings
from types import TracebackType
from typing import Any

from bundlewise.live.store.url import StoreUrl
from bundlewise.model.errors import InputError


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _prefix_end(prefix: bytes) -> bytes:
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\x00"


DEFAULT_TIMEOUT = 2.5  # seconds: a store that does not answer is reported within 3 s, start-up and clean-up included


class StoreReader:
    """A read-only client; ``timeout`` bounds the connection and every request (default ``DEFAULT_TIMEOUT``)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = StoreUrl.parse(url)
        self.timeout = timeout
        self._zk: Any = None
        self._http: Any = None
        self._token: str | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> StoreReader:
        u = self.url
        hosts = ",".join(f"{h}:{p}" for h, p in u.hosts)
        if u.scheme == "zk":
            from kazoo.client import KazooClient
            from kazoo.handlers.threading import KazooTimeoutError

            auth = [("digest", f"{u.username}:{u.password}")] if u.username else None
            self._zk = KazooClient(hosts=hosts + (u.root or ""), read_only=True, auth_data=auth)
            try:
                with warnings.catch_warnings():  # a missing chroot is reported by ``check_layout``, in one line
                    warnings.filterwarnings("ignore", message="No chroot path exists")
                    self._zk.start(timeout=self.timeout)
            except KazooTimeoutError:
                self._zk.close()
                raise InputError(
                    f"no ZooKeeper answers at {hosts} within {self.timeout:g} s", field="--store"
                ) from None
            return self
        import httpx

        self._http = httpx.Client(
            base_url=f"http://{u.hosts[0][0]}:{u.hosts[0][1]}", timeout=httpx.Timeout(self.timeout)
        )
        if u.username:
            body = self._post("/v3/auth/authenticate", {"name": u.username, "password": u.password})
            self._token = body.get("token")
        return self

    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> StoreReader:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- etcd -----------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        headers = {"Authorization": self._token} if self._token else {}
        try:
            r = self._http.post(path, json=body, headers=headers)
        except httpx.HTTPError as e:
            why = f"no answer within {self.timeout:g} s" if isinstance(e, httpx.TimeoutException) else str(e)
            raise InputError(f"no etcd answers at {self._http.base_url}: {why}", field="--store") from None
        if r.status_code != 200:
            said = r.text.strip()[:200] or f"HTTP {r.status_code}"
            raise InputError(f"etcd at {self._http.base_url} refused {path}: {said}", field="--store")
        result: dict[str, Any] = r.json()
        return result

    def _key(self, path: str) -> bytes:
        root = self.url.root or ""
        return (root or "/").encode() if path == "/" else (root + path).encode()

    # -- reads ----------------------------------------------------------------------------------
    def get(self, path: str) -> tuple[bytes, int] | None:
        """The node's value and Pulsar version, or None when there is no such node."""
        if self._zk is not None:
            from kazoo.exceptions import NoNodeError

            try:
                data, stat = self._zk.get(path)
            except NoNodeError:
                return None
            return bytes(data or b""), int(stat.version)
        kvs = self._post("/v3/kv/range", {"key": _b64(self._key(path))}).get("kvs") or []
        if not kvs:
            return None
        return base64.b64decode(kvs[0].get("value", "")), int(kvs[0].get("version", 1)) - 1

    def children(self, path: str) -> list[str]:
        """Sorted child names (``[]`` for a missing node)."""
        if self._zk is not None:
            from kazoo.exceptions import NoNodeError

            try:
                return sorted(self._zk.get_children(path))
            except NoNodeError:
                return []
        prefix = self._key(path).rstrip(b"/") + b"/" if path != "/" else (self.url.root or "").encode() + b"/"
        body = {"key": _b64(prefix), "range_end": _b64(_prefix_end(prefix)), "keys_only": True}
        names = set()
        for kv in self._post("/v3/kv/range", body).get("kvs") or []:
            rest = base64.b64decode(kv["key"])[len(prefix) :].decode()
            if rest:
                names.add(rest.split("/", 1)[0])
        return sorted(names)

    def walk(self, path: str, depth: int) -> list[str]:
        """Paths exactly ``depth`` levels below ``path``."""
        level = [path]
        for _ in range(depth):
            level = [f"{p.rstrip('/')}/{c}" for p in level for c in self.children(p)]
        return level
