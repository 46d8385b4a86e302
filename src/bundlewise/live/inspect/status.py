"""``live status``: a cluster's brokers, leader, load and bundles, read from its metadata store alone.

Read-only (``live.inspect.reader.StoreReader``), so it can be pointed at a Pulsar cluster's own ZooKeeper:

* brokers: the children of ``/loadbalance/brokers``, each node's ``LocalBrokerData`` (fields bundlewise does
  not know are ignored, ``LocalBrokerData#equals`` identity = its URLs); a node that is not a modular report
  (the extensible manager's ``BrokerLookupData``) is listed with its URL and no load;
* leader: ``/loadbalance/leader`` (``LeaderBroker``; without ``brokerId``, an older broker's value, the id is
  the ``host:port`` of ``serviceUrl``, as ``LeaderBroker#getBrokerId`` derives it);
* per broker: CPU, memory, direct memory and NIC in/out usage in percent, the max usage
  (``LocalBrokerData#getMaxResourceUsage``), the bundles and topics its report lists, and the bundles the
  ownership nodes ``/namespace/{tenant}/{ns}/{range}`` (``NamespaceEphemeralData``) give it, matched by
  ``httpUrl`` = the report's ``webServiceUrl``.
* an extensible cluster: the leader at ``/loadbalance/extension/leader`` (when ``/loadbalance/leader`` has
  none), and each broker's owned bundles from the service-unit state records
  ``/service_unit_state/{tenant}/{ns}/{range}``: ``Owned`` counts for its ``dstBroker``, ``Splitting`` for its
  ``sourceBroker`` (``ServiceUnitStateTableViewBase#updateOwnedServiceUnits``), matched by broker id.
* a store without any Pulsar layout (none of ``/loadbalance``, ``/admin``, ``/namespace``,
  ``/service_unit_state``) is an error -- a wrong chroot or prefix -- rather than an empty cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from bundlewise.live.inspect.reader import DEFAULT_TIMEOUT, StoreReader
from bundlewise.live.store import layout
from bundlewise.model.errors import InputError
from bundlewise.model.load import LocalBrokerData

RESOURCES = (("cpu", "cpu"), ("memory", "memory"), ("directMemory", "direct_memory"),
             ("bandwidthIn", "bandwidth_in"), ("bandwidthOut", "bandwidth_out"))  # fmt: skip


def _json(raw: tuple[bytes, int] | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw[0].decode("utf-8")) if raw[0] else None
    except (UnicodeDecodeError, ValueError):
        return None


def _host_port(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")


def leader_of(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict) or (not value.get("serviceUrl") and not value.get("brokerId")):
        return None
    service = str(value.get("serviceUrl") or "")
    return {"brokerId": str(value.get("brokerId") or _host_port(service)), "serviceUrl": service}


def _records(reader: StoreReader, root: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of the bundle nodes under ``root`` (tenant/ns and property/cluster/ns)."""
    for depth in (3, 4):
        for path in reader.walk(root, depth):
            if layout.bundle_of(path, root) is None:
                continue
            value = _json(reader.get(path))
            if isinstance(value, dict):
                yield value


def ownership(reader: StoreReader) -> dict[str, int]:
    """Bundles per owner's ``httpUrl`` from the ownership nodes (tenant/ns and property/cluster/ns)."""
    counts: dict[str, int] = {}
    for value in _records(reader, layout.OWNERSHIP_ROOT):
        if value.get("httpUrl"):
            counts[str(value["httpUrl"])] = counts.get(str(value["httpUrl"]), 0) + 1
    return counts


def channel_ownership(reader: StoreReader) -> dict[str, int]:
    """Bundles per broker id from the extensible manager's service-unit state records."""
    counts: dict[str, int] = {}
    for value in _records(reader, layout.SERVICE_UNIT_STATE_ROOT):
        owner = value.get("dstBroker") if value.get("state") == "Owned" else None
        owner = value.get("sourceBroker") if value.get("state") == "Splitting" else owner
        if owner:
            counts[str(owner)] = counts.get(str(owner), 0) + 1
    return counts


def _broker(broker_id: str, value: Any, owned: dict[str, int], by_id: dict[str, int]) -> dict[str, Any]:
    url = str(value.get("webServiceUrl") or f"http://{broker_id}") if isinstance(value, dict) else f"http://{broker_id}"
    count = owned.get(url, 0) + by_id.get(broker_id, 0)
    row: dict[str, Any] = {"broker": broker_id, "webServiceUrl": url, "ownedBundles": count}
    if not isinstance(value, dict) or "cpu" not in value:
        row["report"] = None
        return row
    try:
        data = LocalBrokerData.from_json(value, broker_id)
    except InputError as e:
        row["report"] = f"unreadable: {e}"
        return row
    r = data.resources
    for key, attr in RESOURCES:
        usage = getattr(r, attr)
        row[key] = round(usage.percent_usage(), 2)
    row.update(
        maxUsage=round(data.max_usage() * 100, 2),
        bundles=data.numBundles or len(data.bundles),
        topics=data.numTopics,
        msgRateIn=data.msgRateIn,
        msgRateOut=data.msgRateOut,
        lastUpdate=data.lastUpdate,
        loadManagerClassName=data.loadManagerClassName,
    )
    return row


PULSAR_ROOTS = ("/loadbalance", "/admin", layout.OWNERSHIP_ROOT, layout.SERVICE_UNIT_STATE_ROOT)


def check_layout(reader: StoreReader, url: str) -> None:
    """A wrong chroot or prefix holds none of Pulsar's roots: an error, not an empty cluster."""
    if not any(reader.children(root) for root in PULSAR_ROOTS):
        raise InputError(
            f"no Pulsar metadata under {url} (none of {', '.join(PULSAR_ROOTS)}): a wrong chroot or prefix?",
            field="--store",
        )


def read_status(url: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    with StoreReader(url, timeout) as reader:
        check_layout(reader, url)
        owned, by_id = ownership(reader), channel_ownership(reader)
        brokers = [
            _broker(b, _json(reader.get(layout.broker(b))), owned, by_id) for b in reader.children(layout.BROKERS_ROOT)
        ]
        leader = leader_of(_json(reader.get(layout.LEADER))) or leader_of(_json(reader.get(layout.EXTENSION_LEADER)))
    total = sum(owned.values()) + sum(by_id.values())
    return {"store": url, "leader": leader, "brokers": brokers, "ownedBundles": total}


def _cell(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)


def status_table(status: dict[str, Any]) -> str:
    leader = status["leader"]
    lines = [f"leader: {leader['brokerId'] if leader else 'none'}", f"brokers: {len(status['brokers'])}"]
    head = ("broker", "cpu%", "mem%", "nicIn%", "nicOut%", "max%", "bundles", "owned", "topics")
    rows = [head]
    for b in status["brokers"]:
        name = b["broker"] + (" *" if leader and leader["brokerId"] == b["broker"] else "")
        keys = ("cpu", "memory", "bandwidthIn", "bandwidthOut", "maxUsage", "bundles", "ownedBundles", "topics")
        rows.append((name, *(_cell(b.get(k)) for k in keys)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        lines.append("  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))]))
    lines.append(
        "(* the leader; max% is the highest resource usage; owned: /namespace ownership nodes "
        "or the extensible manager's /service_unit_state records)"
    )
    return "\n".join(lines) + "\n"
