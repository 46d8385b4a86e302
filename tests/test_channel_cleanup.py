"""Metadata health, registration events, orphan cleanup, the ownership monitor and the channel settings.

Cases of ``ServiceUnitStateChannelTest`` (the newest stored variant) are cited by method; their tables
of records are reproduced and the decisions checked record by record.
"""

from __future__ import annotations

import pytest

from bundlewise.algorithms.extensible.channel.cleanup import (
    MetadataState,
    SessionEvent,
    SessionHistory,
    health_check_retry_delay_ms,
    is_orphan,
    on_broker_deleted,
    override_for,
    plan_cleanup,
    should_health_check_on_creation,
)
from bundlewise.algorithms.extensible.channel.monitor import plan_monitor
from bundlewise.algorithms.extensible.channel.reactions import Close, react
from bundlewise.config import Config
from bundlewise.config.views import ChannelSettings, storage_of
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData, StorageType, should_keep_left
from bundlewise.model.errors import InputError

Init, Free, Owned, Assigning, Releasing, Splitting, Deleted = list(ServiceUnitState)
B1, B2, B3 = "broker-1:8080", "broker-2:8080", "broker-3"
INACTIVE = "broker-inactive-1"
NOW = 1_700_000_000_000
KIDS = {"0x7fffffff_0xffffffff": None, "0x00000000_0x7fffffff": None}


def rec(state, dst=None, src=None, version=1, force=False, children=None, ts=NOW - 10):
    return ServiceUnitStateData(
        state, dst, src, split_service_unit_to_dest_broker=children, force=force, timestamp=ts, version_id=version
    )


def always(broker):
    return lambda key, excluded: broker


def never(key, excluded):
    return None


# --- metadata health -----------------------------------------------------------------------------------


def test_handle_metadata_session_event():
    """``#handleMetadataSessionEventTest``: only SessionReestablished and SessionLost are remembered."""
    h = SessionHistory()
    assert (h.event, h.at) == (SessionEvent.SessionReestablished, 0)
    h = h.record(SessionEvent.SessionReestablished, 1000)
    assert (h.event, h.at) == (SessionEvent.SessionReestablished, 1000)
    h = h.record(SessionEvent.SessionLost, 2000)
    assert (h.event, h.at) == (SessionEvent.SessionLost, 2000)
    h = h.record(SessionEvent.ConnectionLost, 3000)
    assert (h.event, h.at) == (SessionEvent.SessionLost, 2000)
    h = h.record("Reconnected", 4000)
    assert (h.event, h.at) == (SessionEvent.SessionLost, 2000)


def test_metadata_state_thresholds():
    """``#getMetadataState``: Stable only more than 180 s after SessionReestablished."""
    fresh = SessionHistory()
    assert fresh.state(NOW) is MetadataState.Stable  # a channel starts stable
    h = SessionHistory(SessionEvent.SessionReestablished, NOW)
    assert h.state(NOW) is MetadataState.Jittery
    assert h.state(NOW + 180_000) is MetadataState.Jittery
    assert h.state(NOW + 180_001) is MetadataState.Stable
    lost = SessionHistory(SessionEvent.SessionLost, NOW)
    assert lost.state(NOW + 10**9) is MetadataState.Unstable


def test_handle_broker_deletion_event():
    """``#handleBrokerDeletionEventTest``: only the leader acts; Stable now, Jittery after 180 s,
    Unstable never; one pending job per broker."""
    assert on_broker_deleted(B1, is_channel_owner=False, metadata=MetadataState.Stable).schedule is False
    stable = on_broker_deleted(B1, is_channel_owner=True, metadata=MetadataState.Stable)
    assert (stable.schedule, stable.delay_s) == (True, 0)
    jittery = on_broker_deleted(B1, is_channel_owner=True, metadata=MetadataState.Jittery)
    assert (jittery.schedule, jittery.delay_s) == (True, 180)
    unstable = on_broker_deleted(B1, is_channel_owner=True, metadata=MetadataState.Unstable)
    assert (unstable.schedule, unstable.delay_s) == (False, None)
    assert "skip" in unstable.reason
    pending = on_broker_deleted(B1, is_channel_owner=True, metadata=MetadataState.Stable, pending=frozenset({B1}))
    assert pending.schedule is False
    disabled = on_broker_deleted(B1, is_channel_owner=True, metadata=MetadataState.Stable, channel_disabled=True)
    assert disabled.schedule is False


def test_handle_broker_creation_event():
    """``#handleBrokerCreationEventTest``: a pending cleanup is health-checked (then cancelled)."""
    assert should_health_check_on_creation(B2, frozenset({B2})) is True
    assert should_health_check_on_creation(B2, frozenset()) is False
    # retries: attempt 1 at once, then 0, 50 and 200 ms later; the 4th failure gives up
    assert [health_check_retry_delay_ms(r) for r in range(5)] == [0, 50, 200, None, None]


# --- orphans and overrides --------------------------------------------------------------------------


def test_orphans_of_a_broker():
    assert is_orphan(B1, rec(Owned, B1)) is True
    assert is_orphan(B1, rec(Assigning, B1)) is True
    assert is_orphan(B1, rec(Releasing, B1, B2)) is True  # destination of a transfer
    assert is_orphan(B1, rec(Releasing, B2, B1)) is True  # source of a transfer
    assert is_orphan(B1, rec(Releasing, None, B1)) is True
    assert is_orphan(B1, rec(Splitting, None, B1)) is True
    assert is_orphan(B1, rec(Owned, B2, B1)) is False  # source of a finished transfer
    assert is_orphan(B1, rec(Free, None, B1)) is False
    assert is_orphan(B1, rec(Deleted, None, B1)) is False
    assert is_orphan(B1, None) is False


def test_override_table():
    """``#overrideOwnership``, every row, at the orphan's version + 1 and forced."""
    split = override_for(rec(Splitting, "x", B1, 4, children=KIDS), B2, graceful=False, now=NOW)
    assert split == ServiceUnitStateData(
        Splitting, "x", B2, split_service_unit_to_dest_broker=KIDS, force=True, timestamp=NOW, version_id=5
    )
    owned = rec(Owned, B1, None, 4)
    assert override_for(owned, B2, graceful=False, now=NOW) == rec(Owned, B2, B1, 5, True, ts=NOW)
    assert override_for(owned, B1, graceful=False, now=NOW) == rec(Owned, B1, None, 5, True, ts=NOW)
    assert override_for(owned, B2, graceful=True, now=NOW) == rec(Releasing, B2, B1, 5, True, ts=NOW)
    assert override_for(owned, B1, graceful=True, now=NOW) == rec(Owned, B1, None, 5, True, ts=NOW)
    assigning = rec(Assigning, B1, B3, 4)
    assert override_for(assigning, B2, graceful=False, now=NOW) == rec(Owned, B2, B3, 5, True, ts=NOW)
    assert override_for(assigning, B3, graceful=True, now=NOW) == rec(Owned, B3, None, 5, True, ts=NOW)
    releasing = rec(Releasing, None, B1, 4)
    assert override_for(releasing, B2, graceful=False, now=NOW) == rec(Owned, B2, B1, 5, True, ts=NOW)
    # a transfer's dead destination, its source alive and maybe still serving: the source releases
    # again, to the new broker (bundlewise deviates from Pulsar's forced Owned here)
    transfer = rec(Releasing, B1, B3, 4)
    assert override_for(transfer, B2, graceful=False, now=NOW, dead=B1) == rec(Releasing, B2, B3, 5, True, ts=NOW)
    assert override_for(transfer, B2, graceful=True, now=NOW, dead=B1) == rec(Releasing, B2, B3, 5, True, ts=NOW)
    assert override_for(transfer, B3, graceful=False, now=NOW, dead=B1) == rec(Owned, B3, None, 5, True, ts=NOW)
    assert override_for(transfer, None, graceful=False, now=NOW, dead=B1) == rec(Free, None, B3, 5, True, ts=NOW)
    # the dead broker is the source: nobody else serves it, the new broker owns it at once (as Pulsar)
    assert override_for(transfer, B2, graceful=False, now=NOW, dead=B3) == rec(Owned, B2, B3, 5, True, ts=NOW)
    # the monitor (no dead broker) keeps Pulsar's forced Owned for a stuck Releasing
    assert override_for(transfer, B2, graceful=False, now=NOW) == rec(Owned, B2, B3, 5, True, ts=NOW)
    # no candidate: free it, naming the old owner (Owned) or the old source (in flight)
    assert override_for(owned, None, graceful=False, now=NOW) == rec(Free, None, B1, 5, True, ts=NOW)
    assert override_for(releasing, None, graceful=True, now=NOW) == rec(Free, None, B1, 5, True, ts=NOW)
    assert override_for(rec(Assigning, B1, None, 4), None, graceful=False, now=NOW) == rec(
        Free, None, None, 5, True, ts=NOW
    )


@pytest.mark.parametrize("storage", ["SystemTopic", "MetadataStore"])
def test_overrides_win_over_any_orphan_on_both_storages(storage):
    for orphan in (rec(Owned, B1, None, 4), rec(Splitting, None, B1, 4, children=KIDS), rec(Releasing, B3, B1, 4)):
        for selected in (B2, None):
            for graceful in (False, True):
                o = override_for(orphan, selected, graceful=graceful, now=NOW)
                assert should_keep_left(orphan, o, storage=storage) is False
                assert should_keep_left(rec(orphan.state, B3, B3, 5), o, storage=storage) is True  # stale


def test_override_inactive_broker_state_data():
    """``#testOverrideInactiveBrokerStateData``: broker 1's registration is gone, broker 2 selected."""
    view = {
        "public/releasing/0xfffffff0_0xffffffff": rec(Releasing, None, B1),
        "my-tenant/my-ns/0x00000000_0xffffffff": rec(Splitting, None, B1, children=KIDS),
        "public/assigning/0xfffffff0_0xffffffff": rec(Assigning, B1, None),
        "public/free/0xfffffff0_0xffffffff": rec(Free, None, B1),
        "public/deleted/0xfffffff0_0xffffffff": rec(Deleted, None, B1),
        "public/owned/0xfffffff0_0xffffffff": rec(Owned, B1, None),
    }
    calls = []

    def select(key, excluded):
        calls.append((key, excluded))
        return B2

    plan = plan_cleanup(B1, view, select, NOW)
    assert plan.skipped is None and plan.remove_load_data and plan.wait_ms == 5000
    got = {o.service_unit: o.record for o in plan.overrides}
    assert got == {
        "public/releasing/0xfffffff0_0xffffffff": rec(Owned, B2, B1, 2, True, ts=NOW),
        "my-tenant/my-ns/0x00000000_0xffffffff": rec(Splitting, None, B2, 2, True, children=KIDS, ts=NOW),
        "public/assigning/0xfffffff0_0xffffffff": rec(Owned, B2, None, 2, True, ts=NOW),
        "public/owned/0xfffffff0_0xffffffff": rec(Owned, B2, B1, 2, True, ts=NOW),
    }
    assert [k for k, _ in calls] == list(got)
    assert all(excluded == frozenset({B1}) for _, excluded in calls)
    assert plan.system_overrides == ()
    # broker 2 then takes every one of them: the forced Splitting makes it run the split
    assert react(B2, "my-tenant/my-ns/0x00000000_0xffffffff", got["my-tenant/my-ns/0x00000000_0xffffffff"], NOW).split


def test_system_bundles_are_overridden_last():
    view = {
        "pulsar/system/0x00000000_0x40000000": rec(Owned, B1),
        "t/a/0x00000000_0xffffffff": rec(Owned, B1),
        "pulsar/system/0x40000000_0xffffffff": rec(Assigning, B1),
        "t/b/0x00000000_0xffffffff": rec(Owned, B2),
    }
    plan = plan_cleanup(B1, view, always(B3), NOW)
    assert [o.service_unit for o in plan.overrides] == ["t/a/0x00000000_0xffffffff"]
    assert [o.service_unit for o in plan.system_overrides] == [
        "pulsar/system/0x00000000_0x40000000",
        "pulsar/system/0x40000000_0xffffffff",
    ]


def test_cleanup_without_any_candidate_frees_and_the_old_owner_closes():
    """``#testActiveGetOwner`` case 7: no broker selected -> ``Free(src = old owner, force)``; the old
    owner, if it is alive after all, closes and tombstones."""
    plan = plan_cleanup(B2, {"public/owned/0xfffffff0_0xffffffff": rec(Owned, B2, None, 3)}, never, NOW)
    (o,) = plan.overrides
    assert o.record == rec(Free, None, B2, 4, True, ts=NOW)
    assert "no broker available" in o.reason
    r = react(B2, o.service_unit, o.record, NOW)
    assert (r.close, r.tombstone) == (Close(True), True)


def test_graceful_self_cleanup_hands_over_with_releasing():
    """``#cleanOwnerships`` (graceful shutdown): the broker releases what it owns to the new owner."""
    view = {"t/a/0x00000000_0xffffffff": rec(Owned, B1, None, 6), "t/b/0x00000000_0xffffffff": rec(Assigning, B1)}
    plan = plan_cleanup(B1, view, always(B2), NOW, graceful=True, broker_healthy=True)
    assert [o.record for o in plan.overrides] == [
        rec(Releasing, B2, B1, 7, True, ts=NOW),
        rec(Owned, B2, None, 2, True, ts=NOW),
    ]
    # B1's channel is disabled, but forced records still reach it: it closes and assigns B2
    r = react(B1, "t/a/0x00000000_0xffffffff", plan.overrides[0].record, NOW, channel_disabled=True)
    assert r.publish == rec(Assigning, B2, B1, 8, ts=NOW)


def test_cleanup_preconditions():
    view = {"t/a/0x00000000_0xffffffff": rec(Owned, B1)}
    healthy = plan_cleanup(B1, view, always(B2), NOW, broker_healthy=True)
    assert healthy.overrides == () and "health check" in (healthy.skipped or "")
    leaderless = plan_cleanup(B1, view, always(B2), NOW, channel_owner_known=False)
    assert leaderless.overrides == () and "no channel owner" in (leaderless.skipped or "")
    nothing = plan_cleanup(B3, view, always(B2), NOW)
    assert (nothing.overrides, nothing.wait_ms, nothing.remove_load_data) == ((), 0, True)


# --- the ownership monitor ---------------------------------------------------------------------------


def monitor(view, active, select, now=NOW, in_flight=30_000, tombstone=3_600_000, **kw):
    return plan_monitor(view, active, select, now, in_flight_wait_ms=in_flight, tombstone_delay_ms=tombstone, **kw)


def test_override_orphan_state_data():
    """``#testOverrideOrphanStateData``: in-flight wait -1, so every in-flight key is stuck; one Owned
    key names an unregistered broker, whose cleanup then moves it."""
    view = {
        "public/releasing1/0xfffffff0_0xffffffff": rec(Releasing, B1, B2),
        "public/releasing2/0xfffffff0_0xffffffff": rec(Releasing, B2, B3),
        "my-tenant/my-ns/0x00000000_0xffffffff": rec(Splitting, None, B1, children=KIDS),
        "public/assigning1/0xfffffff0_0xffffffff": rec(Assigning, B1, None),
        "public/assigning2/0xfffffff0_0xffffffff": rec(Assigning, B1, B2),
        "public/free/0xfffffff0_0xffffffff": rec(Free, None, B1),
        "public/deleted/0xfffffff0_0xffffffff": rec(Deleted, None, B1),
        "public/owned1/0xfffffff0_0xffffffff": rec(Owned, B1, None),
        "public/owned2SourceBundle/0xfffffff0_0xffffffff": rec(Owned, B1, INACTIVE),
        "public/owned3/0xfffffff0_0xffffffff": rec(Owned, INACTIVE, B1),
    }
    plan = monitor(view, [B1, B2, B3], always(B2), in_flight=-1)
    assert plan.skipped is None
    assert plan.inactive_brokers == (INACTIVE,)
    assert {o.service_unit: o.record for o in plan.overrides} == {
        "public/releasing1/0xfffffff0_0xffffffff": rec(Owned, B2, None, 2, True, ts=NOW),
        "public/releasing2/0xfffffff0_0xffffffff": rec(Owned, B2, B3, 2, True, ts=NOW),
        "my-tenant/my-ns/0x00000000_0xffffffff": rec(Splitting, None, B2, 2, True, children=KIDS, ts=NOW),
        "public/assigning1/0xfffffff0_0xffffffff": rec(Owned, B2, None, 2, True, ts=NOW),
        "public/assigning2/0xfffffff0_0xffffffff": rec(Owned, B2, None, 2, True, ts=NOW),
    }
    assert plan.tombstones == ()
    # the inactive broker's cleanup: one more orphan (Pulsar's counter: 5 + 1 = 6 orphans)
    cleanup = plan_cleanup(INACTIVE, view, always(B2), NOW)
    assert [(o.service_unit, o.record) for o in cleanup.overrides] == [
        ("public/owned3/0xfffffff0_0xffffffff", rec(Owned, B2, INACTIVE, 2, True, ts=NOW))
    ]
    assert len(plan.overrides) + len(cleanup.overrides) == 6


def test_monitor_tombstones_semi_terminal_states_after_the_delay():
    """``#unloadTest`` (Free -> Init) and ``#splitAndRetryTest`` (Deleted -> Init) with delays of 1 ms."""
    view = {
        "a/b/0x00000000_0xffffffff": rec(Free, None, B2, ts=NOW - 5),
        "a/c/0x00000000_0xffffffff": rec(Deleted, None, B1, ts=NOW - 5),
    }
    plan = monitor(view, [B1, B2], never, in_flight=1, tombstone=1)
    assert plan.tombstones == ("a/b/0x00000000_0xffffffff", "a/c/0x00000000_0xffffffff")
    assert plan.overrides == () and plan.inactive_brokers == ()
    young = monitor(view, [B1, B2], never, in_flight=1, tombstone=5)
    assert young.tombstones == ()  # exactly the delay is not older than it
    kept = monitor(view, [B1, B2], never)
    assert kept.tombstones == ()


def test_monitor_repairs_a_stuck_transfer():
    """``#transferTestWhenDestBrokerFails``: Assigning(b2, src b1) stuck with both alive; b1 selected:
    Owned(b1) without a source (the selection is the source)."""
    view = {"t/a/0x00000000_0xffffffff": rec(Assigning, B2, B1, version=4, ts=NOW - 2)}
    plan = monitor(view, [B1, B2], always(B1), in_flight=1)
    assert [o.record for o in plan.overrides] == [rec(Owned, B1, None, 5, True, ts=NOW)]
    assert monitor(view, [B1, B2], always(B1), in_flight=30_000).overrides == ()


def test_monitor_repairs_a_stuck_assignment():
    """``#assignTestWhenDestBrokerProducerFails``: Assigning(b2) stuck; b2 selected -> Owned(b2)."""
    view = {"t/a/0x00000000_0xffffffff": rec(Assigning, B2, None, version=3, ts=NOW - 2)}
    plan = monitor(view, [B1, B2], always(B2), in_flight=1)
    assert [o.record for o in plan.overrides] == [rec(Owned, B2, None, 4, True, ts=NOW)]
    selections = []
    monitor(view, [B1, B2], lambda k, ex: selections.append(ex) or B2, in_flight=1)
    assert selections == [frozenset()]  # no broker excluded


def test_monitor_boundaries_are_strictly_older_than():
    view = {"t/a/0x00000000_0xffffffff": rec(Assigning, B2, None, ts=NOW - 30_000)}
    assert monitor(view, [B1, B2], always(B2), in_flight=30_000).overrides == ()
    assert len(monitor(view, [B1, B2], always(B2), now=NOW + 1, in_flight=30_000).overrides) == 1


def test_monitor_never_tombstones_active_records():
    """Only Free, Deleted and Init are tombstoned, whatever their age (here the in-flight wait is not
    reached, so in-flight records are not stuck either)."""
    view = {
        "t/a/0x00000000_0xffffffff": rec(Assigning, B2, None, ts=NOW - 100),
        "t/b/0x00000000_0xffffffff": rec(Releasing, B2, B1, ts=NOW - 100),
        "t/c/0x00000000_0xffffffff": rec(Splitting, None, B1, ts=NOW - 100),
        "t/d/0x00000000_0xffffffff": rec(Owned, B1, None, ts=NOW - 100),
        "t/e/0x00000000_0xffffffff": rec(Init, B1, None, ts=NOW - 100),
    }
    plan = monitor(view, [B1, B2], always(B2), in_flight=1_000, tombstone=10)
    assert plan.tombstones == ("t/e/0x00000000_0xffffffff",)
    assert plan.overrides == () and plan.inactive_brokers == ()


def test_monitor_rules_apply_in_order():
    view = {
        "a/a/0x00000000_0xffffffff": rec(Owned, B3, ts=0),  # unregistered owner (not tombstoned, not stuck)
        "a/b/0x00000000_0xffffffff": rec(Releasing, B1, B3, ts=0),  # unregistered source wins over stuck
        "a/c/0x00000000_0xffffffff": rec(Assigning, INACTIVE, B1, ts=0),  # unregistered destination
        "a/d/0x00000000_0xffffffff": rec(Owned, None, B1, ts=0),  # blank owner
        "a/e/0x00000000_0xffffffff": rec(Owned, B1, ts=0),  # healthy, never tombstoned
        "a/f/0x00000000_0xffffffff": rec(Splitting, None, B1, ts=0),  # stuck
    }
    plan = monitor(view, [B1, B2], always(B2), in_flight=1, tombstone=1)
    assert plan.inactive_brokers == (B3, INACTIVE)
    assert plan.blank_owner == ("a/d/0x00000000_0xffffffff",)
    assert [o.service_unit for o in plan.overrides] == ["a/f/0x00000000_0xffffffff"]
    assert plan.tombstones == ()


@pytest.mark.parametrize(
    ("kw", "active", "skip"),
    [
        ({"is_channel_owner": False}, [B1], "not the leader"),
        ({}, [], "no active brokers"),
        ({"metadata": MetadataState.Jittery}, [B1], "Jittery"),
        ({"metadata": MetadataState.Unstable}, [B1], "Unstable"),
    ],
)
def test_monitor_preconditions(kw, active, skip):
    view = {"a/a/0x00000000_0xffffffff": rec(Free, None, B1, ts=0)}
    plan = monitor(view, active, never, tombstone=1, **kw)
    assert plan.skipped is not None and skip in plan.skipped
    assert plan.tombstones == ()
    assert plan.inactive_brokers == ()


def test_while_jittery_the_monitor_names_only_the_unregistered_owners():
    """bundlewise's: an owner whose registration vanished while leadership changed hands is still found (its
    cleanup then waits for the Jittery delay or the proof of death); nothing is overridden or tombstoned."""
    view = {
        "a/a/0x00000000_0x40000000": rec(Owned, B2, ts=0),  # owner gone
        "a/a/0x40000000_0x80000000": rec(Owned, B1, ts=0),  # owner registered
        "a/a/0x80000000_0xc0000000": rec(Assigning, B1, ts=0),  # in flight, stuck: left alone
        "a/a/0xc0000000_0xffffffff": rec(Free, None, B1, ts=0),  # old Free: not tombstoned
    }
    plan = monitor(view, [B1], never, tombstone=1, metadata=MetadataState.Jittery)
    assert plan.inactive_brokers == (B2,)
    assert plan.overrides == () and plan.tombstones == ()
    assert plan.skipped is not None and "Jittery" in plan.skipped


# --- settings -----------------------------------------------------------------------------------------


def test_settings_from_pulsars_defaults():
    s = Config().view(ChannelSettings)
    assert s == ChannelSettings(30_000, 3_600_000, 60, True, StorageType.SystemTopic, 30, 64, 60_000)


def test_settings_storage_from_the_table_view_class():
    cls = "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateMetadataStoreTableViewImpl"
    s = Config().with_values({"loadManagerServiceUnitStateTableViewClassName": cls}).view(ChannelSettings)
    assert s.storage is StorageType.MetadataStore
    assert storage_of("ServiceUnitStateTableViewImpl") is StorageType.SystemTopic
    with pytest.raises(InputError, match="loadManagerServiceUnitStateTableViewClassName"):
        storage_of("com.example.MyTableView")


def test_constructor_check_tombstone_delay_covers_the_in_flight_wait():
    """``ServiceUnitStateChannelImpl`` constructor: ``tombstoneDelay x 1000 >= inFlightWait``."""
    ok = Config().with_values(
        {
            "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": 30,
            "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 30_000,
        }
    )
    assert ok.view(ChannelSettings).tombstone_delay_ms == 30_000
    bad = ok.with_values({"loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 30_001})
    with pytest.raises(InputError) as e:
        bad.view(ChannelSettings)
    assert e.value.field == "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"
    assert str(e.value) == (
        "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds: "
        "expected a tombstone delay of at least the in-flight wait (30001 ms), got 30 s"
    )


def test_the_children_a_dead_splitter_claimed_follow_its_parents_new_source():
    """A broker died mid-split, after claiming the children ``Owned`` by itself: the parent's new source serves
    the parent's range until its own split completes, so the children go to it, never to another broker (a
    deviation from Pulsar's per-orphan selection; the fault campaign's owner-kill-during-split).  Other orphans
    are selected as before, and the selector is not asked for the children."""
    ns = "t/ns"
    parent, low, high, other = (
        f"{ns}/0x00000000_0x80000000",
        f"{ns}/0x00000000_0x40000000",
        f"{ns}/0x40000000_0x80000000",
        f"{ns}/0x80000000_0xffffffff",
    )
    view = {
        low: rec(Owned, INACTIVE, version=1),
        parent: rec(Splitting, None, INACTIVE, version=3, children={"0x00000000_0x40000000": None}),
        high: rec(Owned, INACTIVE, version=1),
        other: rec(Owned, INACTIVE, version=2),
    }
    asked = []
    brokers = iter([B1, B2, B3])

    def cycle(key, excluded):
        asked.append(key)
        return next(brokers)

    plan = plan_cleanup(INACTIVE, view, cycle, NOW)
    got = {o.service_unit: (o.record.state, o.record.dst_broker, o.record.source_broker) for o in plan.overrides}
    assert got == {
        parent: (Splitting, None, B1),
        low: (Owned, B1, INACTIVE),
        high: (Owned, B1, INACTIVE),
        other: (Owned, B2, INACTIVE),
    }
    assert asked == [parent, other]
    assert [o.service_unit for o in plan.overrides] == [low, parent, high, other]  # published in view order
