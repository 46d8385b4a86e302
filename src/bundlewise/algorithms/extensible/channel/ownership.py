"""Which service units a broker owns, as its view of the channel says (``ServiceUnitStateTableViewBase``).

``#updateOwnedServiceUnits`` decides per record: a key is owned by broker ``me`` when its record is
``Owned`` with ``dst == me`` or ``Splitting`` with ``src == me`` (the splitting broker keeps serving the
parent until it is ``Deleted``); any other record -- or none -- means not owned.  The broker's own
heartbeat and SLA-monitor namespaces (``pulsar/{cluster}/{me}``, ``pulsar/{me}``,
``sla-monitor/{cluster}/{me}``, each one full bundle) are owned from the start (``#init``), as they never
go through the channel.

``pulsar/system`` is the system namespace whose bundles orphan cleanup overrides last
(``ServiceUnitStateChannelImpl#doCleanup``); like Pulsar, membership is a prefix test on the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData

SYSTEM_NAMESPACE = "pulsar/system"
FULL_RANGE = "0x00000000_0xffffffff"


def owns(me: str, data: ServiceUnitStateData | None) -> bool:
    """``#updateOwnedServiceUnits``'s rule for one record."""
    if data is None:
        return False
    if data.state is ServiceUnitState.Owned:
        return data.dst_broker == me
    if data.state is ServiceUnitState.Splitting:
        return data.source_broker == me
    return False


def heartbeat_bundles(me: str, cluster: str) -> tuple[str, ...]:
    """The full bundles of the broker's heartbeat (V1, V2) and SLA-monitor namespaces."""
    return (
        f"pulsar/{cluster}/{me}/{FULL_RANGE}",
        f"pulsar/{me}/{FULL_RANGE}",
        f"sla-monitor/{cluster}/{me}/{FULL_RANGE}",
    )


def owned_service_units(
    me: str, records: Mapping[str, ServiceUnitStateData | None], cluster: str | None = None
) -> list[str]:
    """The keys ``me`` owns: its heartbeat bundles (when ``cluster`` is given) unless a record says
    otherwise, then every key whose record it owns, in view order."""
    pre = [k for k in heartbeat_bundles(me, cluster) if k not in records] if cluster is not None else []
    return pre + [k for k, v in records.items() if owns(me, v)]


def is_system_service_unit(service_unit: str) -> bool:
    return service_unit.startswith(SYSTEM_NAMESPACE)


def system_last(keys: Iterable[str]) -> list[str]:
    """``keys`` with the system-namespace ones moved to the end (order kept within each group)."""
    ks = list(keys)
    return [k for k in ks if not is_system_service_unit(k)] + [k for k in ks if is_system_service_unit(k)]
