"""The leader's ownership monitor (``ServiceUnitStateChannelImpl#monitorOwnerships``).

It runs on the channel owner every ``loadBalancerServiceUnitStateMonitorIntervalInSeconds`` (first run
at once), and only with a registered broker list and a **Stable** metadata state.  It walks the view
once, in order, and for each record takes the first rule that applies:

1. ``Owned`` whose ``dst`` is blank or not registered: that broker is **inactive**;
2. in flight with a non-blank, unregistered ``src``, then ``dst``: that broker is inactive;
3. in flight for longer than ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` (by the
   record's timestamp): **stuck**, overridden as an orphan (non-graceful, no broker excluded);
4. not active (Free, Deleted, Init) for longer than
   ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds``: **tombstoned**.

Each inactive broker then goes through the registration-deletion handling (``cleanup.on_broker_deleted``
-- Stable, so a cleanup at once).  An Owned record without a destination makes Pulsar clean up a
``null`` broker, which fails; it is reported here under ``blank_owner`` and left alone.

**While Jittery** Pulsar skips the whole run.  bundlewise still names the inactive owners (rules 1-2 only;
nothing is overridden or tombstoned): the leader hands them to the registration-deletion handling, which
schedules their cleanup after the Jittery delay (180 s) and cuts it short once the broker is proven dead.
Without this, an owner whose registration expired while leadership changed hands -- the deletion event went
to no leader -- would keep its bundles unowned until the store had been Stable for 180 s.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from bundlewise.algorithms.extensible.channel.cleanup import MetadataState, Override, Selector, override_for
from bundlewise.model.channel import (
    ServiceUnitState,
    ServiceUnitStateData,
    is_active_state,
    is_blank,
    is_in_flight_state,
)


@dataclass(frozen=True, slots=True)
class MonitorPlan:
    inactive_brokers: tuple[str, ...] = ()  # schedule their cleanup
    overrides: tuple[Override, ...] = ()  # stuck in-flight keys
    tombstones: tuple[str, ...] = ()
    blank_owner: tuple[str, ...] = ()
    skipped: str | None = None


def plan_monitor(
    view: Mapping[str, ServiceUnitStateData | None],
    active_brokers: Collection[str],
    select: Selector,
    now: int,
    *,
    in_flight_wait_ms: int,
    tombstone_delay_ms: int,
    metadata: MetadataState = MetadataState.Stable,
    is_channel_owner: bool = True,
) -> MonitorPlan:
    """One monitor run over the leader's view; ``active_brokers`` are the registered ones."""
    if not is_channel_owner:
        return MonitorPlan(skipped="not the leader: skip the ownership monitor")
    if not active_brokers:
        return MonitorPlan(skipped="no active brokers found: skip the ownership monitor")
    active = set(active_brokers)
    if metadata is MetadataState.Jittery:
        return MonitorPlan(
            inactive_brokers=tuple(_inactive_owners(view, active)),
            skipped=f"metadata state {metadata} is not Stable: skip the ownership monitor (inactive owners only)",
        )
    if metadata is not MetadataState.Stable:
        return MonitorPlan(skipped=f"metadata state {metadata} is not Stable: skip the ownership monitor")
    inactive: dict[str, None] = {}
    stuck: list[tuple[str, ServiceUnitStateData]] = []
    tombstones: list[str] = []
    blank: list[str] = []
    for key, data in view.items():
        if data is None:
            continue
        dst, src, state = data.dst_broker, data.source_broker, data.state
        if state is ServiceUnitState.Owned and (is_blank(dst) or dst not in active):
            if dst is None or is_blank(dst):
                blank.append(key)
            else:
                inactive[dst] = None
            continue
        if is_in_flight_state(state) and src is not None and not is_blank(src) and src not in active:
            inactive[src] = None
            continue
        if is_in_flight_state(state) and dst is not None and not is_blank(dst) and dst not in active:
            inactive[dst] = None
            continue
        if is_in_flight_state(state) and now - data.timestamp > in_flight_wait_ms:
            stuck.append((key, data))
            continue
        if not is_active_state(state) and now - data.timestamp > tombstone_delay_ms:
            tombstones.append(key)
    overrides = []
    for key, data in stuck:
        selected = select(key, frozenset())
        record = override_for(data, selected, graceful=False, now=now)
        overrides.append(Override(key, data, record, f"{data.state} stuck since {data.timestamp}: -> {record.state}"))
    return MonitorPlan(tuple(inactive), tuple(overrides), tuple(tombstones), tuple(blank))


def _inactive_owners(view: Mapping[str, ServiceUnitStateData | None], active: set[str]) -> dict[str, None]:
    """Rules 1-2's brokers: unregistered owners of ``Owned`` records and unregistered ends of in-flight ones."""
    found: dict[str, None] = {}
    for data in view.values():
        if data is None:
            continue
        ends = [data.dst_broker] if data.state is ServiceUnitState.Owned else []
        if is_in_flight_state(data.state):
            ends = [data.source_broker, data.dst_broker]
        for broker in ends:
            if broker is not None and not is_blank(broker) and broker not in active:
                found[broker] = None
                break
    return found
