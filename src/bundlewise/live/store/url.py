"""Store URLs: ``zk://[USER:PW@]HOST:PORT[,HOST:PORT…]/CHROOT`` and ``etcd://[USER:PW@]HOST:PORT[,…]/PREFIX``.

The path part is the chroot (ZooKeeper) or key prefix (etcd) under which every path of the
layout lives; it may be empty.  Credentials in the URL are ZooKeeper digest credentials or an
etcd user and password (percent-encoded when they contain ``@ : /``).  Like Pulsar's
``metadataStoreUrl``, a URL names one cluster: several hosts are members of the same ensemble.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from bundlewise.model.errors import InputError

SCHEMES = ("zk", "etcd")
_HOSTPORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$")
_EXPECTED = "expected zk://HOST:PORT[,HOST:PORT...]/CHROOT or etcd://HOST:PORT[,...]/PREFIX"


@dataclass(frozen=True, slots=True)
class StoreUrl:
    scheme: str
    hosts: tuple[tuple[str, int], ...]
    root: str
    username: str | None = None
    password: str | None = None

    @staticmethod
    def parse(text: str, *, field: str = "--store") -> StoreUrl:
        """Parse a store URL; ``InputError`` (exit 2 in the CLI) names ``field`` when it is malformed."""
        scheme, sep, rest = text.partition("://")
        if not sep or scheme not in SCHEMES:
            raise InputError(f"{_EXPECTED}, got {text!r}", field=field)
        authority, slash, path = rest.partition("/")
        creds, at, hostlist = authority.rpartition("@")
        username = password = None
        if at:
            user, colon, pw = creds.partition(":")
            if not colon or not user:
                raise InputError(f"expected USER:PASSWORD@ before the hosts, got {creds!r}", field=field)
            username, password = unquote(user), unquote(pw)
        hosts = []
        for part in hostlist.split(","):
            m = _HOSTPORT.match(part.strip())
            if m is None or not 0 < int(m.group(2)) < 65536:
                raise InputError(f"{_EXPECTED}; bad HOST:PORT {part!r}", field=field)
            hosts.append((m.group(1).strip("[]"), int(m.group(2))))
        root = ("/" + path).rstrip("/") if slash else ""
        if "//" in root or any(seg in (".", "..") for seg in root.split("/")[1:]):
            raise InputError(f"{_EXPECTED}; bad path {root!r}", field=field)
        return StoreUrl(scheme, tuple(hosts), root, username, password)

    @property
    def hosts_text(self) -> str:
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)

    def with_credentials(self, username: str | None, password: str | None) -> StoreUrl:
        return StoreUrl(self.scheme, self.hosts, self.root, username, password)

    def __str__(self) -> str:
        creds = f"{quote(self.username, safe='')}:{quote(self.password or '', safe='')}@" if self.username else ""
        return f"{self.scheme}://{creds}{self.hosts_text}{self.root}"
