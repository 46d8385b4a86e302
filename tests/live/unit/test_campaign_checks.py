"""The fault campaign observer's pure checks (``live.harness.overlap``): hash-range overlap between brokers,
coverage of topics, time to served, and lookup answers contradicted by the observations."""

from __future__ import annotations

from collections import Counter

import pytest

from bundlewise.live.harness.fault_observer import owner_of_lock, owner_of_record
from bundlewise.live.harness.overlap import (
    Answer,
    Rounds,
    answer_conflicts,
    burst_conflicts,
    describe_answer,
    released_before,
    serving,
    time_to_served,
    uncovered,
)
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.ranges import Overlap
from bundlewise.model.ranges import overlaps as range_overlaps

NS = "t/ns"
PARENT = f"{NS}/0xe0000000_0xffffffff"
CHILD_LO = f"{NS}/0xe0000000_0xefffffff"
CHILD_HI = f"{NS}/0xefffffff_0xffffffff"


def test_a_parent_and_its_child_served_by_two_brokers_overlap() -> None:
    # issue 23, item 1: A keeps serving the parent while B owns the split's children
    found = range_overlaps({"A": [PARENT], "B": [CHILD_LO, CHILD_HI]})
    assert found == [Overlap("A", PARENT, "B", CHILD_LO), Overlap("A", PARENT, "B", CHILD_HI)]


def test_one_broker_serving_a_parent_and_its_children_is_no_violation() -> None:
    assert range_overlaps({"A": [PARENT, CHILD_LO, CHILD_HI], "B": [f"{NS}/0x00000000_0x40000000"]}) == []


def test_equal_names_on_two_brokers_overlap_and_adjacent_ranges_do_not() -> None:
    a, b = f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"
    assert range_overlaps({"A": [a], "B": [a]}) == [Overlap("A", a, "B", a)]
    assert range_overlaps({"A": [a], "B": [b]}) == []  # [lower, upper): 0x40000000 belongs to b only


def test_ranges_of_different_namespaces_never_overlap() -> None:
    assert range_overlaps({"A": ["t/x/0x00000000_0xffffffff"], "B": ["t/y/0x00000000_0xffffffff"]}) == []


def test_a_wide_bundle_overlaps_every_later_one_it_covers_not_only_the_next() -> None:
    wide = f"{NS}/0x00000000_0x80000000"
    narrow = [f"{NS}/0x10000000_0x20000000", f"{NS}/0x30000000_0x40000000", f"{NS}/0x70000000_0x90000000"]
    found = range_overlaps({"A": [wide], "B": narrow[:2], "C": narrow[2:]})
    assert found == [
        Overlap("A", wide, "B", narrow[0]),
        Overlap("A", wide, "B", narrow[1]),
        Overlap("A", wide, "C", narrow[2]),
    ]


def test_names_that_are_no_bundle_claim_nothing() -> None:
    assert range_overlaps({"A": ["t/ns", "garbage"], "B": [f"{NS}/0x00000000_0xffffffff"]}) == []


def topic_in(bundle: str) -> str:
    bundles = NamespaceBundles.initial(NS, 8)
    return next(
        t for i in range(10_000) if bundles.bundle_for_hash(crc32_hash(t := f"persistent://{NS}/t-{i}")).name == bundle
    )


def test_coverage_uses_the_hash_ranges_and_the_closed_last_bundle() -> None:
    last = NamespaceBundles.initial(NS, 8).bundles[-1].name
    assert last == PARENT
    t = topic_in(last)
    assert serving({"A": [CHILD_LO, CHILD_HI], "B": []}, t) == {"A"}
    assert uncovered({"A": [f"{NS}/0x00000000_0x20000000"]}, [t]) == [t]
    assert uncovered({"A": [PARENT]}, [t]) == []


def test_time_to_served_is_the_round_after_the_last_gap() -> None:
    t = topic_in(PARENT)
    served, none = {"A": [PARENT]}, {"A": []}
    rounds = [(10.0, served), (10.1, none), (10.2, none), (10.3, none), (10.4, served), (10.5, served)]
    # smoothing over 2 rounds: 10.2 and 10.3 are gaps (10.1 merges 10.0's claim), the last gap is 10.3
    assert time_to_served(rounds, [t], since=10.0, smooth=2) == (pytest.approx(0.4), [])
    assert time_to_served(rounds, [t], since=10.0, smooth=1) == (pytest.approx(0.4), [])
    assert time_to_served([(10.0, served)], [t], since=9.0) == (0.0, [])
    assert time_to_served([(10.0, none)], [t], since=9.0) == (None, [t])


def test_an_answer_naming_a_live_non_owner_is_a_double_answer() -> None:
    t = topic_in(PARENT)
    seen = [(10.0, {"A": [PARENT], "B": []}), (11.0, {"A": [PARENT], "B": []})]
    wrong, right = Answer(10.5, t, "B"), Answer(10.5, t, "A")
    assert answer_conflicts([wrong, right], seen) == ([wrong], [])


def test_a_double_answer_is_described_with_its_times_the_owner_seen_and_the_named_brokers_journal() -> None:
    t = topic_in(PARENT)
    seen = [(10.0, {"A": [PARENT], "B": []}), (11.0, {"A": [], "B": []}), (13.0, {"A": [], "B": [PARENT]})]
    answer = Answer(10.5, t, "B", sent=10.4)
    journals = {"B": {PARENT: [(12.9, 14.0)], CHILD_LO: [(1.0, 2.0)]}}  # the interval long before is left out
    assert describe_answer(answer, seen, 10.0, journals) == (
        f"answer {t} -> B (asked +0.40, answered +0.50; seen serving up to it: A; B first seen serving it +3.00; "
        "journal +2.90..+4.00)"
    )
    assert describe_answer(Answer(10.5, t, "C"), seen, 10.0, journals).endswith(
        "(asked ?, answered +0.50; seen serving up to it: A; C first seen serving it never; no journal)"
    )


def test_an_answer_naming_a_dead_broker_is_stale_not_double() -> None:
    t = topic_in(PARENT)
    seen = [(10.0, {"B": [PARENT], "A": []}), (11.0, {"B": [PARENT]})]  # C never answered the observer
    stale = Answer(10.5, t, "C")
    assert answer_conflicts([stale], seen) == ([], [stale])


def test_an_answer_for_a_broker_that_owns_it_soon_after_is_no_conflict() -> None:
    t = topic_in(PARENT)
    seen = [(10.0, {"A": [PARENT], "B": []}), (11.5, {"A": [], "B": [PARENT]}), (12.5, {"A": [], "B": [PARENT]})]
    seen.append((13.5, {"A": [], "B": [PARENT]}))
    # B took it over 1 s after the answer: no conflict; A answered 1.5 s after it lost the bundle: a conflict
    assert answer_conflicts([Answer(10.6, t, "B")], seen) == ([], [])
    assert answer_conflicts([Answer(13.0, t, "A")], seen) == ([Answer(13.0, t, "A")], [])


def test_an_answer_naming_a_fenced_owner_that_another_replaced_after_it_is_stale() -> None:
    """The recorded owner A (a broker whose clock ran slow, fenced) served nothing; nobody served the topic up to
    the answer, and B took it over 1.9 s later: one owner at a time, the answer was stale, not double."""
    t = topic_in(PARENT)
    seen = [(at / 20, {"A": [], "B": []}) for at in range(180, 239)]  # 9.0 .. 11.9 s, nobody serves
    seen += [(12.0, {"A": [], "B": [PARENT]})]
    fenced = Answer(10.1, t, "A")
    assert answer_conflicts([fenced], seen) == ([], [fenced])
    # had B served up to the answer, the same answer would name a second owner ...
    seen[16] = (seen[16][0], {"A": [], "B": [PARENT]})  # 9.8 s
    named = Answer(10.1, t, "A", sent=10.08)
    assert answer_conflicts([named], seen) == ([named], [])
    # ... unless B's journal shows it had let go before the lookup was sent (a handover between two rounds)
    assert released_before({"B": {PARENT: [(5.0, 9.9)]}, "A": {}}, named, seen)
    assert not released_before({"B": {PARENT: [(5.0, 10.09)]}}, named, seen)  # B served while the lookup ran
    assert not released_before({}, named, seen)  # B has no journal (killed, or its clock is not ours)
    assert not released_before({"B": {PARENT: [(5.0, 9.9)]}}, fenced, seen)  # the lookup's start is not known


def test_a_burst_answered_with_two_brokers_for_one_bundle() -> None:
    t1, t2 = topic_in(PARENT), topic_in(f"{NS}/0x00000000_0x20000000")
    of = {t1: PARENT, t2: f"{NS}/0x00000000_0x20000000"}
    answers = [Answer(1, t1, "A"), Answer(1, t1, "B"), Answer(1, t2, "A"), Answer(1, t2, "A")]
    assert burst_conflicts(answers, of) == {PARENT: {"A", "B"}}


def test_store_records_owners() -> None:
    # ServiceUnitStateTableViewBase#updateOwnedServiceUnits: Owned -> dstBroker, Splitting -> sourceBroker
    assert owner_of_record({"state": "Owned", "dstBroker": "b:1", "sourceBroker": "a:1"}) == "b:1"
    assert owner_of_record({"state": "Splitting", "dstBroker": "b:1", "sourceBroker": "a:1"}) == "a:1"
    assert owner_of_record({"state": "Assigning", "dstBroker": "b:1"}) is None
    assert owner_of_record("x") is None
    assert owner_of_lock({"nativeUrl": "pulsar://h:6650", "httpUrl": "http://h:8080"}) == "h:8080"
    assert owner_of_lock({}) is None


def test_indexed_rounds_find_what_a_scan_of_every_round_finds_in_any_order() -> None:
    import random

    rng = random.Random(5)
    names = [PARENT, CHILD_LO, CHILD_HI, f"{NS}/0x00000000_0x80000000", "not a bundle"]
    seen = [(round(rng.uniform(0, 10), 2), {b: rng.sample(names, 2) for b in "ABC"}) for _ in range(200)]
    rounds = Rounds(list(reversed(seen)))  # given in any order
    topics = [topic_in(PARENT), topic_in(f"{NS}/0x00000000_0x20000000"), "persistent://other/ns/t"]
    for _ in range(300):
        lo = rng.uniform(-1, 11)
        hi = lo + rng.uniform(0, 3)
        topic = rng.choice(topics)
        scan = [frozenset(serving(claims, topic)) for at, claims in seen if lo <= at <= hi]
        indexed = [rounds.serving(i, topic) for i in rounds.between(lo, hi)]
        assert Counter(indexed) == Counter(scan)  # rounds at equal times may come in either order
