"""Topic and namespace names as Pulsar's ``TopicName`` / ``NamespaceName`` read them.

* ``persistent://tenant/ns/local`` (V2) and ``persistent://property/cluster/ns/local`` (V1);
  ``non-persistent://`` likewise.
* A name without a domain is persistent; a bare local name ``t`` lives in ``public/default``.
* ``<base>-partition-<N>`` is partition N of ``<base>``; each partition is hashed under its own
  full name (``ConsistentHashingTopicBundleAssigner``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bundlewise.model.errors import InputError

PARTITION_SUFFIX = "-partition-"
DOMAINS = ("persistent", "non-persistent")


BLANKS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""The characters a topic name is stripped of at both ends (Python's whitespace, ``str.isspace``); the
pipeline's native name parsing strips the same set."""


@dataclass(frozen=True, slots=True)
class NamespaceName:
    """``tenant/namespace`` or old-style ``property/cluster/namespace``."""

    tenant: str
    namespace: str
    cluster: str | None = None

    @classmethod
    def parse(cls, text: str) -> NamespaceName:
        parts = text.split("/")
        if any(not p for p in parts) or len(parts) not in (2, 3):
            raise InputError(f"namespace '{text}' is not 'tenant/namespace' or 'property/cluster/namespace'")
        if len(parts) == 2:
            return cls(parts[0], parts[1])
        return cls(parts[0], parts[2], cluster=parts[1])

    def __str__(self) -> str:
        if self.cluster is None:
            return f"{self.tenant}/{self.namespace}"
        return f"{self.tenant}/{self.cluster}/{self.namespace}"


@dataclass(frozen=True, slots=True)
class TopicName:
    """A fully qualified topic name; ``str()`` gives the string Pulsar hashes."""

    domain: str
    namespace: NamespaceName
    local_name: str

    @classmethod
    def parse(cls, text: str) -> TopicName:
        raw = text.strip(BLANKS)
        if not raw:
            raise InputError("topic name is empty")
        if "://" in raw:
            domain, rest = raw.split("://", 1)
            if domain not in DOMAINS:
                raise InputError(f"topic '{text}': domain must be one of {', '.join(DOMAINS)}")
        else:
            domain, rest = "persistent", raw
            if "/" not in rest:
                rest = f"public/default/{rest}"
        parts = rest.split("/")
        if len(parts) == 3:
            ns = NamespaceName(parts[0], parts[1])
            local = parts[2]
        elif len(parts) >= 4:
            ns = NamespaceName(parts[0], parts[2], cluster=parts[1])
            local = "/".join(parts[3:])
        else:
            raise InputError(f"topic '{text}' is not 'domain://tenant/namespace/name'")
        if not ns.tenant or not ns.namespace or not local:
            raise InputError(f"topic '{text}' has an empty tenant, namespace or local name")
        return cls(domain, ns, local)

    def __str__(self) -> str:
        return f"{self.domain}://{self.namespace}/{self.local_name}"

    @property
    def persistent(self) -> bool:
        return self.domain == "persistent"

    @property
    def partition_index(self) -> int:
        """The partition number, or -1 for a topic that is not a partition."""
        base, sep, index = self.local_name.rpartition(PARTITION_SUFFIX)
        if sep and base and index.isdigit():
            return int(index)
        return -1

    @property
    def partitioned_base(self) -> TopicName:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        if self.partition_index < 0:
            return self
        return TopicName(self.domain, self.namespace, self.local_name.rpartition(PARTITION_SUFFIX)[0])


def full_topic_name(text: str) -> str:
    """Normalise a topic name to the full string Pulsar hashes (``t`` -> ``persistent://public/default/t``)."""
    return str(TopicName.parse(text))


def bundle_namespace(bundle: str) -> str:
    """``tenant/ns/0x..._0x...`` -> ``tenant/ns`` (Pulsar ``getNamespaceNameFromBundleName``).

    A snapshot bundle key without ``/`` (e.g. ``bundle-1``, docs/formats.md) has the empty namespace.
    """
    return bundle.rpartition("/")[0]


SYSTEM_NAMESPACE = "pulsar/system"
_SYSTEM_PREFIXES = ("pulsar/", "sla-monitor/")
_SYSTEM_PATTERNS = (
    re.compile(r"pulsar/[^/]+/([^:]+:\d+)"),  # heartbeat, v1
    re.compile(r"pulsar/([^:]+:\d+)"),  # heartbeat, v2
    re.compile(r"sla-monitor/[^/]+/([^:]+:\d+)"),  # SLA monitor
)


def is_system_namespace(namespace: str) -> bool:
    """Pulsar's ``NamespaceService#isSystemServiceNamespace``: ``pulsar/system``, heartbeat and SLA-monitor."""
    if not namespace.startswith(_SYSTEM_PREFIXES):
        return False
    return namespace == SYSTEM_NAMESPACE or any(p.fullmatch(namespace) for p in _SYSTEM_PATTERNS)


def pinned_broker(namespace: str) -> str | None:
    """The broker a heartbeat or SLA-monitor namespace belongs to (``pulsar/{cluster}/{broker}``,
    ``pulsar/{broker}``, ``sla-monitor/{cluster}/{broker}``), else None.  Pulsar places such a namespace on
    its broker alone (``NamespaceService#getHeartbeatOrSLAMonitorBrokerId``) and never sheds it."""
    if not namespace.startswith(_SYSTEM_PREFIXES):
        return None
    for p in _SYSTEM_PATTERNS:
        m = p.fullmatch(namespace)
        if m is not None:
            return m.group(1)
    return None
