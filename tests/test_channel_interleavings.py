"""The channel's decisions driven together through a store with Pulsar's metadata-store write rule.

First the end-to-end flows of ``ServiceUnitStateChannelTest`` (assignment race, transfer, unload,
split, a conflicting assignment, a transfer whose destination stalls, a dead broker's cleanup) on the
deterministic stage of ``channel_harness``; then hypothesis drives random interleavings of lookups,
unloads, transfers, splits, deliveries, queued writes and a broker crash, and checks after every step
that no two live brokers own a bundle by their own views, and at the end that every transfer between
live brokers ended ``Owned`` by its destination.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from bundlewise.algorithms.extensible.channel import monitor
from bundlewise.algorithms.extensible.channel.lookup import LookupAction, lookup_owner
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData
from channel_harness import Cluster

Init, Free, Owned, Assigning, Releasing, Splitting, Deleted = list(ServiceUnitState)
B1, B2, B3 = "b1:8080", "b2:8080", "b3:8080"
NS = "my-tenant/my-ns"
BUNDLE = f"{NS}/0x00000000_0xffffffff"
CHILD_LO, CHILD_HI = f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff"


def cluster(multi_phase: bool = True) -> Cluster:
    return Cluster([B1, B2, B3], {NS: NamespaceBundles.of(NS, [0, 0xFFFFFFFF])}, multi_phase_unload=multi_phase)


def states(c: Cluster, key: str) -> list[tuple[ServiceUnitState | None, str | None, str | None, int | None]]:
    return [
        (None, None, None, None) if r is None else (r.state, r.dst_broker, r.source_broker, r.version_id)
        for r in c.store.history[key]
    ]


def owner_seen_by(c: Cluster, name: str, key: str) -> str | None:
    d = lookup_owner(name, key, c.brokers[name].view.get(key), registered=lambda b: c.brokers[b].alive)
    assert d.action in (LookupAction.ANSWER, LookupAction.EMPTY), d
    return d.owner


def test_assignment_race_one_assigning_wins_everywhere():
    """``#assignmentTest``: two brokers assign the same new bundle at once."""
    c = cluster()
    assert c.assign(B1, BUNDLE, B1) is True
    assert c.assign(B2, BUNDLE, B2) is False  # the second CAS loses: a new key starts at 1
    c.settle()
    assert states(c, BUNDLE) == [(Assigning, B1, None, 1), (Owned, B1, None, 2)]
    assert [owner_seen_by(c, b, BUNDLE) for b in (B1, B2, B3)] == [B1, B1, B1]
    assert c.store.rejected == 1
    assert c.owners(BUNDLE) == [B1]


@pytest.mark.parametrize("multi_phase", [True, False])
def test_transfer(multi_phase):
    """``#transferTest``: Releasing -> Assigning -> Owned; with multi-phase unload the source keeps its
    clients until the destination owns the bundle, then disconnects them."""
    c = cluster(multi_phase)
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.closes.clear()
    c.unload(B3, BUNDLE, B1, B2)
    c.settle()
    assert states(c, BUNDLE)[2:] == [(Releasing, B2, B1, 3), (Assigning, B2, B1, 4), (Owned, B2, B1, 5)]
    if multi_phase:
        assert c.closes == [(B1, BUNDLE, False), (B1, BUNDLE, True)]
    else:
        assert c.closes == [(B1, BUNDLE, True)]
    assert [owner_seen_by(c, b, BUNDLE) for b in (B1, B2, B3)] == [B2, B2, B2]


def test_unload_then_reassign_then_tombstone():
    """``#unloadTest``: an unload frees the bundle, a lookup reassigns it, the monitor tombstones a
    Free record after the delay, and the next assignment starts again at version 1."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.unload(B1, BUNDLE, B1)
    c.settle()
    assert states(c, BUNDLE)[2:] == [(Releasing, None, B1, 3), (Free, None, B1, 4)]
    assert [owner_seen_by(c, b, BUNDLE) for b in (B1, B2, B3)] == [None, None, None]
    c.assign(B2, BUNDLE, B2)
    c.settle()
    c.unload(B2, BUNDLE, B2)
    c.settle()
    assert states(c, BUNDLE)[4:] == [
        (Assigning, B2, None, 5),
        (Owned, B2, None, 6),
        (Releasing, None, B2, 7),
        (Free, None, B2, 8),
    ]
    c.now += 2
    plan = monitor.plan_monitor(
        c.brokers[B1].view, [B1, B2, B3], lambda k, e: None, c.now, in_flight_wait_ms=1, tombstone_delay_ms=1
    )
    assert plan.tombstones == (BUNDLE,)
    c.write(B1, BUNDLE, None)
    c.settle()
    assert all(BUNDLE not in b.view for b in c.brokers.values())
    c.assign(B3, BUNDLE, B3)
    c.settle()
    assert states(c, BUNDLE)[-2:] == [(Assigning, B3, None, 1), (Owned, B3, None, 2)]


def test_split():
    """``#splitAndRetryTest`` (without the BadVersions): children owned in place, parent deleted then
    tombstoned by its source."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.split(B1, BUNDLE, ["0x7fffffff_0xffffffff", "0x00000000_0x7fffffff"])
    c.settle()
    assert states(c, BUNDLE)[2:] == [(Splitting, None, B1, 3), (Deleted, None, B1, 4), (None, None, None, None)]
    assert states(c, CHILD_HI) == [(Owned, B1, None, 1)]
    assert states(c, CHILD_LO) == [(Owned, B1, None, 1)]
    assert c.bundles[NS] == NamespaceBundles.of(NS, [0, 0x7FFFFFFF, 0xFFFFFFFF])
    assert [owner_seen_by(c, b, CHILD_LO) for b in (B1, B2, B3)] == [B1, B1, B1]


def test_conflicting_assignment_is_dropped():
    """``#conflictAndCompactionTest``: assigning an owned bundle elsewhere changes nothing."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    assert c.assign(B2, BUNDLE, B2) is False
    c.settle()
    assert states(c, BUNDLE) == [(Assigning, B1, None, 1), (Owned, B1, None, 2)]
    assert owner_seen_by(c, B2, BUNDLE) == B1


def test_a_stalled_transfer_is_repaired_by_the_monitor_and_the_late_claim_loses():
    """``#transferTestWhenDestBrokerFails``: the destination sees Assigning but stalls before it writes
    Owned; the monitor moves the bundle back to the selected broker, and the destination's late write is
    rejected by version."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.unload(B1, BUNDLE, B1, B2)
    c.deliver(B1, BUNDLE)
    assert c.step(B1)  # B1 closes and writes Assigning(B2, B1)
    c.deliver(B2, BUNDLE)  # B2 queues Owned(B2, B1) but does not run it yet
    assert c.brokers[B2].pending
    c.now += 31_000
    view = c.brokers[B3].view
    c.deliver(B3, BUNDLE)
    plan = monitor.plan_monitor(
        view, [B1, B2, B3], lambda k, e: B1, c.now, in_flight_wait_ms=30_000, tombstone_delay_ms=3_600_000
    )
    (o,) = plan.overrides
    assert (o.record.state, o.record.dst_broker, o.record.source_broker, o.record.force) == (Owned, B1, None, True)
    assert c.write(B3, BUNDLE, o.record) is True
    assert c.step(B2)  # the late Owned(B2) ...
    assert c.store.values[BUNDLE] == o.record  # ... lost
    c.settle()
    assert c.owners(BUNDLE) == [B1]
    assert [owner_seen_by(c, b, BUNDLE) for b in (B1, B2, B3)] == [B1, B1, B1]


def test_the_destination_cannot_take_a_bundle_before_the_source_released_it():
    """Only the source moves a transfer on (``#handleReleaseEvent``): a destination that hears of the
    transfer first, and runs ahead, must not own the bundle while the source still serves it."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.unload(B3, BUNDLE, B1, B2)
    for _ in range(3):
        c.deliver(B2, BUNDLE)
        c.step(B2)
    assert c.brokers[B2].pending == deque() and c.owners(BUNDLE) == [B1]
    assert c.store.values[BUNDLE].state is Releasing
    c.settle()
    assert c.owners(BUNDLE) == [B2]


def test_a_dead_brokers_bundles_move_to_the_selected_broker():
    """``#handleBrokerDeletionEventTest`` / ``#testOverrideInactiveBrokerStateData``, end to end."""
    c = cluster()
    c.assign(B1, BUNDLE, B1)
    c.settle()
    c.crash(B1)
    c.cleanup(B2, B1, lambda key, excluded: B3 if B1 in excluded else None)
    c.settle()
    assert states(c, BUNDLE)[-1] == (Owned, B3, B1, 3)
    assert c.owners(BUNDLE) == [B3]
    assert owner_seen_by(c, B2, BUNDLE) == B3


def test_a_dead_transfer_destination_does_not_hand_the_bundle_over_before_the_source_releases():
    """The counterexample the state machine found, replayed step by step: the leader starts a transfer
    b3 -> b2 that b3 has not heard of yet, then b2 dies.  Pulsar's ``#overrideOwnership`` would force
    ``Owned(b1, src = b3)`` while b3 still serves the bundle; the override is a forced ``Releasing`` to
    the new broker instead, so the live source closes first and the transfer completes as any other."""
    lo, hi = "t/a/0x00000000_0x80000000", "t/a/0x80000000_0xffffffff"
    c = Cluster([B1, B2, B3], {"t/a": NamespaceBundles.of("t/a", [0, 0x80000000, 0xFFFFFFFF])})

    def race_ahead(name: str) -> None:
        while c.brokers[name].inbox or c.brokers[name].pending:
            while c.brokers[name].inbox:
                c.deliver(name, next(iter(c.brokers[name].inbox)))
            c.step(name)

    assert c.assign(B1, hi, B1) and c.assign(B1, lo, B3)
    race_ahead(B3)
    race_ahead(B1)
    assert c.owners(lo) == [B3] and c.owners(hi) == [B1]
    assert c.unload(B1, hi, B1)
    assert c.unload(B1, lo, B3, B2)  # b3 has not seen this Releasing yet
    c.crash(B2)
    c.cleanup(B1, B2, lambda key, excluded: B1)
    assert states(c, lo)[-1] == (Releasing, B1, B3, 4)
    assert c.store.values[lo].force is True
    assert c.owners(lo) == [B3]  # only the source, until it has released
    c.settle()
    assert states(c, lo)[-3:] == [(Releasing, B1, B3, 4), (Assigning, B1, B3, 5), (Owned, B1, B3, 6)]
    assert c.owners(lo) == [B1]


# --- random interleavings -------------------------------------------------------------------------

BROKERS = [B1, B2, B3]


class ChannelInterleavings(RuleBasedStateMachine):
    """Several brokers publish through the MetadataStore rules in any order; deliveries may lag."""

    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(
            list(BROKERS),
            {
                "t/a": NamespaceBundles.of("t/a", [0, 0x80000000, 0xFFFFFFFF]),
                "t/b": NamespaceBundles.of("t/b", [0, 0xFFFFFFFF]),
            },
        )
        self.transfers: list[tuple[str, int, str, str]] = []  # (key, history index, source, destination)
        self.crashed = False

    def alive(self) -> list[str]:
        return [b for b in BROKERS if self.c.brokers[b].alive]

    def keys(self) -> list[str]:
        return [b.name for ns in self.c.bundles.values() for b in ns.bundles]

    @rule(data=st.data())
    def lookup_assigns(self, data: st.DataObject) -> None:
        """A broker serving a lookup finds no owner in its view and assigns the bundle."""
        by = data.draw(st.sampled_from(self.alive()))
        key = data.draw(st.sampled_from(self.keys()))
        current = self.c.brokers[by].view.get(key)
        if current is None or current.state is Free:
            self.c.assign(by, key, data.draw(st.sampled_from(self.alive())))

    @rule(data=st.data(), transfer=st.booleans())
    def leader_unloads(self, data: st.DataObject, transfer: bool) -> None:
        by = data.draw(st.sampled_from(self.alive()))
        owned = [k for k, v in self.c.brokers[by].view.items() if v.state is Owned and v.dst_broker]
        if not owned:
            return
        key = data.draw(st.sampled_from(owned))
        source = self.c.brokers[by].view[key].dst_broker
        assert source is not None
        dest = None
        if transfer:
            others = [b for b in self.alive() if b != source]
            if not others:
                return
            dest = data.draw(st.sampled_from(others))
        before = len(self.c.store.history.get(key, []))
        if self.c.unload(by, key, source, dest) and dest is not None:
            self.transfers.append((key, before, source, dest))

    @rule(data=st.data())
    def owner_splits(self, data: st.DataObject) -> None:
        by = data.draw(st.sampled_from(self.alive()))
        mine = [k for k in self.c.brokers[by].owned() if k in self.keys()]
        if not mine:
            return
        key = data.draw(st.sampled_from(mine))
        lo, hi = key.rsplit("/", 1)[1].split("_")
        lower, upper = int(lo, 16), int(hi, 16)
        if upper - lower < 4:
            return
        mid = lower + (upper - lower) // 2
        self.c.split(by, key, [f"0x{lower:08x}_0x{mid:08x}", f"0x{mid:08x}_0x{upper:08x}"])

    @rule(data=st.data())
    def deliver(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.alive()))
        inbox = list(self.c.brokers[name].inbox)
        if inbox:
            self.c.deliver(name, data.draw(st.sampled_from(inbox)))

    @rule(data=st.data())
    def run_queued_write(self, data: st.DataObject) -> None:
        self.c.step(data.draw(st.sampled_from(self.alive())))

    @rule(data=st.data())
    def one_broker_races_ahead(self, data: st.DataObject) -> None:
        """One broker handles everything it has been told and runs its queued writes; the others lag."""
        name = data.draw(st.sampled_from(self.alive()))
        b = self.c.brokers[name]
        for _ in range(50):
            while b.inbox:
                self.c.deliver(name, next(iter(b.inbox)))
            if not self.c.step(name):
                break

    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        self.c.now += data.draw(st.integers(1, 5000))

    @precondition(lambda self: not self.crashed)
    @rule(data=st.data())
    def a_broker_dies_and_the_leader_cleans_up(self, data: st.DataObject) -> None:
        dead = data.draw(st.sampled_from(BROKERS))
        self.c.crash(dead)
        self.crashed = True
        leader = self.alive()[0]
        survivors = self.alive()
        self.c.cleanup(leader, dead, lambda key, excluded: data.draw(st.sampled_from(survivors)))

    @invariant()
    def no_two_live_brokers_own_a_bundle(self) -> None:
        keys = {k for b in self.c.brokers.values() for k in b.view}
        for key in keys:
            owners = self.c.owners(key)
            assert len(owners) <= 1, (key, owners, self.c.store.history.get(key))

    @invariant()
    def every_stored_version_chain_is_consecutive(self) -> None:
        for key, history in self.c.store.history.items():
            previous: ServiceUnitStateData | None = None
            for record in history:
                if record is not None:
                    assert record.version_id == (1 if previous is None else previous.version_id + 1), (key, history)
                previous = record

    def teardown(self) -> None:
        self.c.settle()
        self.no_two_live_brokers_own_a_bundle()
        for key, index, source, dest in self.transfers:
            if not (self.c.brokers[source].alive and self.c.brokers[dest].alive):
                continue
            chain = self.c.store.history[key][index : index + 3]
            got = [(r.state, r.dst_broker, r.source_broker) if r is not None else None for r in chain]
            assert got == [(Releasing, dest, source), (Assigning, dest, source), (Owned, dest, source)], (key, got)


ChannelInterleavings.TestCase.settings = settings(
    max_examples=300, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_channel_interleavings = ChannelInterleavings.TestCase
