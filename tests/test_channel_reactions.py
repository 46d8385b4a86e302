"""A broker's reactions to accepted records, its owned set and its owner lookups.

Unit-level cases of ``ServiceUnitStateChannelTest`` (the newest stored variant, parameterised over both
table views) are cited by method; the rest are hand-built from ``ServiceUnitStateChannelImpl``'s
handlers (``#handleOwnEvent`` ... ``#handleInitEvent``, ``#getOwnerAsync``) and
``ServiceUnitStateTableViewBase#updateOwnedServiceUnits``.
"""

from __future__ import annotations

import pytest

from bundlewise.algorithms.extensible.channel import events
from bundlewise.algorithms.extensible.channel.lookup import (
    ChannelState,
    LookupAction,
    OwnerLookup,
    assigned_broker,
    finish_wait,
    is_owner,
    lookup_before_assign,
    lookup_owner,
    lookup_timed_out,
)
from bundlewise.algorithms.extensible.channel.ownership import (
    heartbeat_bundles,
    is_system_service_unit,
    owned_service_units,
    owns,
    system_last,
)
from bundlewise.algorithms.extensible.channel.reactions import (
    Close,
    LookupCompletion,
    LookupOutcome,
    is_transfer,
    react,
    react_existing,
    split_waiter_done,
    unload_waiter_done,
)
from bundlewise.model.channel import (
    LONG_MAX,
    LONG_MIN,
    ServiceUnitState,
    ServiceUnitStateData,
    Split,
    Unload,
    should_keep_left,
)

Init, Free, Owned, Assigning, Releasing, Splitting, Deleted = list(ServiceUnitState)
B1, B2, B3 = "broker-1:8080", "broker-2:8080", "broker-3:8080"
KEY = "my-tenant/my-ns/0x00000000_0xffffffff"
CHILDREN = ("0x00000000_0x7fffffff", "0x7fffffff_0xffffffff")
NOW = 1_700_000_000_000


def rec(state, dst=None, src=None, version=1, force=False, children=None, ts=NOW - 1000):
    return ServiceUnitStateData(
        state, dst, src, split_service_unit_to_dest_broker=children, force=force, timestamp=ts, version_id=version
    )


def registered(*brokers):
    return lambda b: b in brokers


ALL_UP = registered(B1, B2, B3)


# --- reactions ---------------------------------------------------------------------------------------


def test_owned_by_me_is_taken_and_waiting_lookups_get_me():
    r = react(B1, KEY, rec(Owned, B1, version=2), NOW)
    assert r.owned_here is True
    assert r.lookups == LookupCompletion(LookupOutcome.OWNER, owner=B1)
    assert (r.close, r.publish, r.tombstone, r.split) == (None, None, False, False)


def test_owned_elsewhere_only_completes_lookups():
    r = react(B3, KEY, rec(Owned, B1, B2, version=4), NOW)
    assert r.lookups == LookupCompletion(LookupOutcome.OWNER, owner=B1)
    assert (r.owned_here, r.close, r.publish) == (False, None, None)


@pytest.mark.parametrize(("multi_phase", "close"), [(True, Close(True)), (False, None)])
def test_transfer_source_disconnects_clients_on_owned_only_with_multi_phase_unload(multi_phase, close):
    """``#handleOwnEvent``: with multi-phase unload the source kept its clients until now."""
    r = react(B1, KEY, rec(Owned, B2, B1, version=5), NOW, multi_phase_unload=multi_phase)
    assert r.close == close
    assert r.owned_here is False and r.publish is None


@pytest.mark.parametrize("multi_phase", [True, False])
def test_forced_owned_makes_the_old_owner_disconnect(multi_phase):
    """Orphan cleanup names the old owner as source: it closes if it is in fact alive."""
    r = react(B1, KEY, rec(Owned, B2, B1, version=5, force=True), NOW, multi_phase_unload=multi_phase)
    assert r.close == Close(True)


def test_owned_with_a_blank_destination_is_no_transfer():
    assert is_transfer(rec(Owned, "", B1)) is False
    assert is_transfer(rec(Owned, " ", B1)) is True  # isNotEmpty, not isNotBlank
    r = react(B1, KEY, rec(Owned, None, B1, version=3), NOW)
    assert r.close is None


def test_assigning_to_me_publishes_owned_at_the_next_version():
    r = react(B2, KEY, rec(Assigning, B2, B1, version=6), NOW)
    assert r.publish == ServiceUnitStateData(Owned, B2, B1, timestamp=NOW, version_id=7)
    assert r.lookups is None  # Assigning completes no lookup


def test_assigning_elsewhere_does_nothing():
    r = react(B1, KEY, rec(Assigning, B2, None, version=1), NOW)
    assert (r.publish, r.close, r.lookups, r.tombstone) == (None, None, None, False)


def test_assigning_at_long_max_wraps_the_next_version():
    r = react(B2, KEY, rec(Assigning, B2, version=LONG_MAX), NOW)
    assert r.publish is not None and r.publish.version_id == LONG_MIN


@pytest.mark.parametrize(("multi_phase", "disconnect"), [(True, False), (False, True)])
def test_releasing_a_transfer_closes_then_assigns_the_destination(multi_phase, disconnect):
    """``#handleReleaseEvent``: clients stay connected during a multi-phase transfer."""
    r = react(B1, KEY, rec(Releasing, B2, B1, version=3), NOW, multi_phase_unload=multi_phase)
    assert r.close == Close(disconnect)
    assert r.publish == ServiceUnitStateData(Assigning, B2, B1, timestamp=NOW, version_id=4)


def test_releasing_an_unload_disconnects_then_frees():
    r = react(B1, KEY, rec(Releasing, None, B1, version=3), NOW)
    assert r.close == Close(True)
    assert r.publish == ServiceUnitStateData(Free, None, B1, timestamp=NOW, version_id=4)


def test_forced_releasing_from_graceful_cleanup_is_handled_like_any_release():
    r = react(B1, KEY, rec(Releasing, B2, B1, version=3, force=True), NOW)
    assert r.publish == ServiceUnitStateData(Assigning, B2, B1, timestamp=NOW, version_id=4)
    assert r.publish.force is False


def test_releasing_elsewhere_does_nothing():
    r = react(B2, KEY, rec(Releasing, B2, B1, version=3), NOW)
    assert (r.publish, r.close, r.lookups) == (None, None, None)


def test_splitting_runs_the_split_on_the_source_only():
    s = rec(Splitting, None, B1, version=2, children={"0x00000000_0x7fffffff": None, "0x7fffffff_0xffffffff": None})
    assert react(B1, KEY, s, NOW).split is True
    assert react(B2, KEY, s, NOW).split is False
    assert react(B1, KEY, s, NOW).lookups is None


def test_free_completes_lookups_empty_and_a_forced_free_closes_then_tombstones():
    r = react(B1, KEY, rec(Free, None, B1, version=4), NOW)
    assert r.lookups == LookupCompletion(LookupOutcome.NO_OWNER)
    assert (r.close, r.tombstone) == (None, False)
    r = react(B1, KEY, rec(Free, None, B1, version=4, force=True), NOW)
    assert (r.close, r.tombstone, r.publish) == (Close(True), True, None)
    r = react(B2, KEY, rec(Free, None, B1, version=4, force=True), NOW)
    assert (r.close, r.tombstone) == (None, False)


def test_deleted_fails_lookups_and_the_source_tombstones():
    r = react(B1, KEY, rec(Deleted, None, B1, version=3), NOW)
    assert r.lookups == LookupCompletion(LookupOutcome.FAILED, error=f"{KEY} has been deleted.")
    assert r.tombstone is True
    assert react(B2, KEY, rec(Deleted, None, B1, version=3), NOW).tombstone is False


@pytest.mark.parametrize("data", [None, rec(Init, B1)])
def test_init_completes_lookups_empty(data):
    r = react(B1, KEY, data, NOW)
    assert r.state is Init
    assert r.lookups == LookupCompletion(LookupOutcome.NO_OWNER)
    assert (r.publish, r.tombstone, r.close) == (None, False, None)


@pytest.mark.parametrize(
    "data",
    [None, rec(Owned, B1), rec(Assigning, B1), rec(Releasing, B2, B1), rec(Free, None, B1), rec(Deleted, None, B1)],
)
def test_a_disabled_channel_ignores_non_forced_records_and_fails_lookups(data):
    r = react(B1, KEY, data, NOW, channel_disabled=True)
    assert r.lookups is not None and r.lookups.outcome is LookupOutcome.FAILED
    assert r.lookups.error is not None and "ServiceUnitNotReady" in r.lookups.error
    assert (r.publish, r.close, r.tombstone, r.split, r.owned_here) == (None, None, False, False, False)


def test_a_disabled_channel_still_obeys_forced_records():
    r = react(B1, KEY, rec(Releasing, B2, B1, version=3, force=True), NOW, channel_disabled=True)
    assert r.publish == ServiceUnitStateData(Assigning, B2, B1, timestamp=NOW, version_id=4)
    r = react(B1, KEY, rec(Free, None, B1, version=3, force=True), NOW, channel_disabled=True)
    assert r.tombstone is True


def test_handle_existing_reregisters_only_my_owned_bundles():
    """``#handleExisting``."""
    assert react_existing(B1, KEY, rec(Owned, B1)).owned_here is True
    assert react_existing(B1, KEY, rec(Owned, B2)).owned_here is False
    assert react_existing(B1, KEY, rec(Splitting, None, B1)).owned_here is False
    assert react_existing(B1, KEY, None).owned_here is False
    assert react_existing(B1, KEY, rec(Assigning, B1)).publish is None


def test_unload_and_split_waiters():
    """``UnloadManager#handleEvent`` / ``SplitManager#handleEvent``."""
    assert unload_waiter_done(rec(Owned, B2, B1)) is True  # transfer done
    assert unload_waiter_done(rec(Owned, B2, None)) is False  # an assignment, not the unload
    assert unload_waiter_done(rec(Assigning, B2, None)) is False
    assert unload_waiter_done(rec(Assigning, B2, B1)) is False
    assert unload_waiter_done(rec(Free, None, B1)) is True
    assert unload_waiter_done(rec(Free, None, B1, force=True)) is False
    assert unload_waiter_done(None) is True
    assert unload_waiter_done(rec(Releasing, None, B1)) is False
    assert split_waiter_done(None) is True
    assert split_waiter_done(rec(Deleted, None, B1)) is False
    assert split_waiter_done(rec(Splitting, None, B1)) is False


# --- events ------------------------------------------------------------------------------------------


def test_publish_records():
    """``#publishAssignEventAsync``, ``#publishUnloadEventAsync``, ``#publishSplitEventAsync``."""
    assert events.assign_record(None, B1, NOW) == ServiceUnitStateData(Assigning, B1, None, timestamp=NOW, version_id=1)
    assert events.assign_record(rec(Free, None, B1, version=8), B2, NOW).version_id == 9
    owned = rec(Owned, B1, version=2)
    assert events.unload_record(owned, Unload(B1, KEY), NOW) == ServiceUnitStateData(
        Releasing, None, B1, timestamp=NOW, version_id=3
    )
    assert events.unload_record(owned, Unload(B1, KEY, B2, force=True), NOW) == ServiceUnitStateData(
        Releasing, B2, B1, force=True, timestamp=NOW, version_id=3
    )
    kids = {"0x00000000_0x7fffffff": None, "0x7fffffff_0xffffffff": None}
    assert events.split_record(owned, Split(KEY, B1, kids), NOW) == ServiceUnitStateData(
        Splitting, None, B1, split_service_unit_to_dest_broker=kids, timestamp=NOW, version_id=3
    )


def test_every_publish_from_a_consistent_view_is_accepted_on_both_storages():
    owned = rec(Owned, B1, version=2)
    for storage in ("SystemTopic", "MetadataStore"):
        assert not should_keep_left(None, events.assign_record(None, B1, NOW), storage=storage)
        assert not should_keep_left(owned, events.unload_record(owned, Unload(B1, KEY, B2), NOW), storage=storage)
        assert not should_keep_left(
            owned, events.split_record(owned, Split(KEY, B1, dict.fromkeys(CHILDREN)), NOW), storage=storage
        )


# --- owned set ---------------------------------------------------------------------------------------


def test_owned_set_rule():
    """``#updateOwnedServiceUnits``: Owned with me as destination, or Splitting with me as source."""
    assert owns(B1, rec(Owned, B1)) is True
    assert owns(B1, rec(Splitting, None, B1)) is True
    assert owns(B1, rec(Owned, B2, B1)) is False
    assert owns(B1, rec(Assigning, B1)) is False
    assert owns(B1, rec(Releasing, B2, B1)) is False
    assert owns(B1, rec(Releasing, B1, B2)) is False
    assert owns(B1, rec(Free, None, B1)) is False
    assert owns(B1, rec(Deleted, None, B1)) is False
    assert owns(B1, None) is False


def test_owned_service_units_include_the_heartbeat_namespaces():
    view = {
        "t/a/0x00000000_0x80000000": rec(Owned, B1),
        "t/a/0x80000000_0xffffffff": rec(Owned, B2),
        "t/b/0x00000000_0xffffffff": rec(Splitting, None, B1),
    }
    assert owned_service_units(B1, view) == ["t/a/0x00000000_0x80000000", "t/b/0x00000000_0xffffffff"]
    hb = heartbeat_bundles(B1, "c1")
    assert hb == (
        f"pulsar/c1/{B1}/0x00000000_0xffffffff",
        f"pulsar/{B1}/0x00000000_0xffffffff",
        f"sla-monitor/c1/{B1}/0x00000000_0xffffffff",
    )
    assert owned_service_units(B1, view, cluster="c1") == [
        *hb,
        "t/a/0x00000000_0x80000000",
        "t/b/0x00000000_0xffffffff",
    ]


def test_system_namespace_goes_last():
    keys = ["pulsar/system/0x00000000_0x80000000", "t/a/0x00000000_0xffffffff", "pulsar/system/0x80000000_0xffffffff"]
    assert is_system_service_unit(keys[0]) and not is_system_service_unit(keys[1])
    assert system_last(keys) == [keys[1], keys[0], keys[2]]


# --- owner lookups -----------------------------------------------------------------------------------


def look(me, data, reg=ALL_UP, self_registered=True):
    return lookup_owner(me, KEY, data, registered=reg, self_registered=self_registered, in_flight_wait_ms=30_000)


def test_get_owner_async():
    """``ServiceUnitStateChannelTest#testGetOwnerAsync`` (on broker 1)."""
    assert look(B1, rec(Owned, B1)) == OwnerLookup(LookupAction.ANSWER, B1, reason=f"owner {B1} is registered")
    assert look(B1, rec(Owned, B2)).owner == B2
    wait = look(B1, rec(Assigning, B1))
    assert (wait.action, wait.timeout_ms) == (LookupAction.WAIT, 30_000)
    assert (look(B1, rec(Assigning, B2)).action, look(B1, rec(Assigning, B2)).owner) == (LookupAction.ANSWER, B2)
    assert look(B1, rec(Releasing, B1)).action is LookupAction.WAIT
    assert look(B1, rec(Releasing, B2)).owner == B2
    assert look(B1, rec(Releasing, None, B1)).action is LookupAction.EMPTY
    assert look(B1, rec(Splitting, None, B1)).owner == B1
    assert look(B1, rec(Splitting, None, B2)).owner == B2
    assert look(B1, rec(Free, None, B1)).action is LookupAction.EMPTY
    assert look(B1, None).action is LookupAction.EMPTY
    failed = look(B1, rec(Deleted, None, B1))
    assert failed.action is LookupAction.FAIL and failed.reason == f"{KEY} is deleted."


def test_with_wait_in_flight_a_lookup_never_answers_a_destination_that_does_not_own_yet():
    """bundlewise's one-answer rule (the live brokers): the rows of ``test_get_owner_async`` that answer an
    in-flight destination at once wait for ``Owned`` instead (a plain unload waits for ``Free``); the rest of
    the table is unchanged."""

    def strict(data):
        return lookup_owner(B1, KEY, data, registered=ALL_UP, in_flight_wait_ms=30_000, wait_in_flight=True)

    assert strict(rec(Assigning, B2)) == OwnerLookup(
        LookupAction.WAIT, timeout_ms=30_000, reason=f"moving to {B2}: wait for Owned"
    )
    assert strict(rec(Releasing, B2)).action is LookupAction.WAIT
    assert strict(rec(Releasing, None, B1)) == OwnerLookup(
        LookupAction.WAIT, timeout_ms=30_000, reason="being unloaded: wait for Free, then assign"
    )
    assert strict(rec(Assigning, B1)).action is LookupAction.WAIT
    assert (strict(rec(Owned, B2)).action, strict(rec(Owned, B2)).owner) == (LookupAction.ANSWER, B2)
    assert strict(rec(Splitting, None, B2)).owner == B2
    assert strict(rec(Free, None, B1)).action is LookupAction.EMPTY
    assert strict(None).action is LookupAction.EMPTY


@pytest.mark.parametrize("channel", [ChannelState.Disabled, ChannelState.Closed])
def test_disabled_or_closed_channel_answers_the_recorded_owner_without_the_registration_check(channel):
    """``ServiceUnitStateChannelTest#testActiveGetOwner`` with the channel disabled/closed (apache PR #24770):
    an Owned or Splitting record's owner is answered even though it is not registered."""
    nobody = registered()
    owned = lookup_owner(B1, KEY, rec(Owned, B2), registered=nobody, channel_state=channel)
    assert (owned.action, owned.owner) == (LookupAction.ANSWER, B2)
    splitting = lookup_owner(B1, KEY, rec(Splitting, None, B3), registered=nobody, channel_state=channel)
    assert (splitting.action, splitting.owner) == (LookupAction.ANSWER, B3)
    assert is_owner(B2, B1, KEY, rec(Owned, B2), registered=nobody, channel_state=channel)
    # the rest of the table is unchanged: in-flight records still wait, Free has no owner
    assert (
        lookup_owner(B1, KEY, rec(Assigning, B1), registered=nobody, channel_state=channel).action is LookupAction.WAIT
    )
    assert lookup_owner(B1, KEY, rec(Free, None, B1), registered=nobody, channel_state=channel).action is (
        LookupAction.EMPTY
    )
    # a started channel keeps the check: the unregistered owner makes the lookup wait
    started = lookup_owner(B1, KEY, rec(Owned, B2), registered=nobody, channel_state=ChannelState.Started)
    assert started.action is LookupAction.WAIT


def test_active_get_owner():
    """``ServiceUnitStateChannelTest#testActiveGetOwner`` cases 1-4 and 6 (on broker 1)."""
    assert look(B1, None).action is LookupAction.EMPTY  # case 1
    assert look(B1, rec(Releasing, B2, B1)).owner == B2  # case 2: not the destination: answer at once
    assert look(B1, rec(Assigning, B1, B2)).action is LookupAction.WAIT  # case 3: the destination waits
    assert look(B1, rec(Owned, B2)).owner == B2  # case 4
    # case 6: the owner is not registered -> wait for the cleanup, and time out with an error
    w = look(B1, rec(Owned, B2), reg=registered(B1))
    assert w.action is LookupAction.WAIT
    timed_out = lookup_timed_out(rec(Owned, B2), registered=registered(B1))
    assert timed_out.action is LookupAction.FAIL and "inactive" in timed_out.reason
    # this broker not registered: answer the recorded owner at once, without the check
    assert look(B1, rec(Owned, B2), reg=registered(B1), self_registered=False).owner == B2


def test_active_get_owner_after_cleanup():
    """``#testActiveGetOwner`` cases 7 and 8: a waiting lookup ends with the cleanup's record."""
    done = react(B1, KEY, rec(Free, None, B2, version=3, force=True), NOW).lookups
    assert done is not None
    assert finish_wait(done, registered=registered(B1)).action is LookupAction.EMPTY  # case 7: no new owner
    done = react(B1, KEY, rec(Owned, B1, B2, version=3, force=True), NOW).lookups
    assert done is not None
    assert finish_wait(done, registered=registered(B1)) == OwnerLookup(LookupAction.ANSWER, B1, reason=f"owner {B1}")


def test_finish_wait_rechecks_registration():
    inactive = finish_wait(LookupCompletion(LookupOutcome.OWNER, owner=B3), registered=registered(B1))
    assert inactive.action is LookupAction.FAIL and inactive.reason == f"The new owner {B3} is inactive."
    unchecked = finish_wait(
        LookupCompletion(LookupOutcome.OWNER, owner=B3), registered=registered(B1), check_registration=False
    )
    assert unchecked.owner == B3
    failed = finish_wait(LookupCompletion(LookupOutcome.FAILED, error="x has been deleted."), registered=ALL_UP)
    assert (failed.action, failed.reason) == (LookupAction.FAIL, "x has been deleted.")


def test_lookup_timeout_answers_the_stable_owner_or_fails_in_flight():
    assert lookup_timed_out(rec(Owned, B2), registered=ALL_UP).owner == B2
    assert lookup_timed_out(rec(Splitting, None, B3), registered=ALL_UP).owner == B3
    assert lookup_timed_out(rec(Free, None, B1), registered=ALL_UP).action is LookupAction.EMPTY
    assert lookup_timed_out(None, registered=ALL_UP).action is LookupAction.EMPTY
    for data in (rec(Assigning, B1), rec(Releasing, B2, B1), rec(Deleted, None, B1)):
        assert lookup_timed_out(data, registered=ALL_UP).action is LookupAction.FAIL


def test_transfer_when_the_destination_fails():
    """``#transferTestWhenDestBrokerFails``: the source answers the destination at once, the destination
    waits for Owned and its lookup fails when the in-flight wait expires."""
    releasing = rec(Releasing, B2, B1, version=3)
    assert look(B1, releasing).owner == B2
    assert look(B2, releasing).action is LookupAction.WAIT
    assert lookup_timed_out(releasing, registered=ALL_UP).action is LookupAction.FAIL


def test_assign_when_the_destination_fails():
    """``#assignTestWhenDestBrokerProducerFails``: Assigning(b2) answers at once on b1, waits on b2."""
    assigning = rec(Assigning, B2, None, version=4)
    assert look(B1, assigning).owner == B2
    assert look(B2, assigning).action is LookupAction.WAIT


def test_is_owner():
    """``#testIsOwner`` with the view overridden (broker 1)."""
    assert is_owner(B1, B1, KEY, None, registered=ALL_UP) is False
    assert is_owner(B1, B1, KEY, rec(Assigning, B1), registered=ALL_UP) is False
    assert is_owner(B1, B1, KEY, rec(Owned, B1), registered=ALL_UP) is True
    assert is_owner(B2, B1, KEY, rec(Owned, B1), registered=ALL_UP) is False
    assert is_owner(B1, B2, KEY, rec(Owned, B1), registered=ALL_UP) is True  # isOwner(bundle, broker1) on b2
    assert is_owner(B1, B1, KEY, rec(Releasing, None, B1), registered=ALL_UP) is False
    assert is_owner(B1, B1, KEY, rec(Splitting, None, B1), registered=ALL_UP) is True
    assert is_owner(B1, B1, KEY, rec(Free, None, B1), registered=ALL_UP) is False
    assert is_owner(B1, B1, KEY, rec(Deleted, None, B1), registered=ALL_UP) is False


def test_conflicting_assignment_answers_the_existing_owner():
    """``#conflictAndCompactionTest``: assigning an owned bundle to another broker is dropped by the
    resolver and the caller gets the current owner at once."""
    owned = rec(Owned, B1, version=2)
    second = events.assign_record(owned, B2, NOW)
    assert should_keep_left(owned, second, storage="SystemTopic") is True
    assert should_keep_left(owned, second, storage="MetadataStore") is True
    before = lookup_before_assign(owned, registered=ALL_UP)
    assert (before.action, before.owner) == (LookupAction.ANSWER, B1)
    assert lookup_before_assign(None, registered=ALL_UP).action is LookupAction.WAIT
    assert lookup_before_assign(rec(Owned, B3), registered=registered(B1)).action is LookupAction.WAIT


def test_get_assigned():
    """``#getAssigned``."""
    assert assigned_broker(rec(Owned, B1)) == B1
    assert assigned_broker(rec(Assigning, B2)) == B2
    assert assigned_broker(rec(Releasing, None, B1)) is None
    assert assigned_broker(rec(Releasing, B3, B1)) == B3
    assert assigned_broker(rec(Splitting, None, B1)) == B1
    assert assigned_broker(rec(Free, None, B1)) is None
    assert assigned_broker(rec(Deleted, None, B1)) is None
    assert assigned_broker(None) is None


def test_owner_lookup_count_states():
    """``#ownerLookupCountTests`` reads the view once per call, by state: each state's action."""
    seq = [
        rec(Assigning, "b1"),
        rec(Owned, "b1"),
        rec(Releasing, "b1"),
        rec(Splitting, None, "b1"),
        rec(Free, "b1"),
        rec(Deleted, "b1"),
        None,
    ]
    actions = [look(B1, d, reg=registered("b1")).action for d in seq]
    assert actions == [
        LookupAction.ANSWER,
        LookupAction.ANSWER,
        LookupAction.ANSWER,
        LookupAction.ANSWER,
        LookupAction.EMPTY,
        LookupAction.FAIL,
        LookupAction.EMPTY,
    ]
