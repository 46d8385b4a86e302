"""The brokers' serving journals (``live.broker.journal``) and the fault campaign's checks that read them
(``live.harness.overlap``): a sampled overlap that is a handover between the two answers of one observer round,
overlaps and ownerships shorter than a round."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from bundlewise.live.broker.journal import ServingJournal
from bundlewise.live.harness.faults import libfaketime
from bundlewise.live.harness.overlap import (
    handover_in_a_round,
    journal_intervals,
    journal_overlaps,
    served_per_journal,
)
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.ranges import Overlap

NS = "t/ns"
LOW = f"{NS}/0x00000000_0x80000000"
HIGH = f"{NS}/0x80000000_0xffffffff"
FULL = f"{NS}/0x00000000_0xffffffff"


def test_a_journal_opens_once_closes_once_and_keeps_the_last_closed_intervals() -> None:
    j = ServingJournal(limit=2)
    j.start(LOW, 1.0)
    j.start(LOW, 2.0)  # already open: the earlier start stands
    j.stop(LOW, 3.0)
    j.stop(LOW, 4.0)  # nothing open: nothing recorded
    j.start(HIGH, 5.0)
    j.stop(HIGH, 6.0)
    j.start(LOW, 7.0)
    j.stop(LOW, 8.0)
    j.start(HIGH, 9.0)
    snap = j.to_json()
    assert snap["closed"] == [[HIGH, 5.0, 6.0], [LOW, 7.0, 8.0]]  # limit 2: the first interval is gone
    assert snap["open"] == {HIGH: 9.0}
    assert journal_intervals({**snap, "now": 10.0}) == {HIGH: [(5.0, 6.0), (9.0, 10.0)], LOW: [(7.0, 8.0)]}


def test_stop_all_closes_every_open_interval() -> None:
    j = ServingJournal()
    j.start(LOW, 1.0)
    j.start(HIGH, 2.0)
    j.stop_all()
    assert j.open == {} and [b for b, _, _ in j.closed] == [LOW, HIGH]


PAIR = Overlap("A", LOW, "B", LOW)


def test_a_handover_between_the_two_answers_of_a_round_is_refuted_by_disjoint_intervals() -> None:
    # A answered at 10.00 (it served until 10.02), B at 10.05 (it served from 10.04): never at once
    journals = {"A": {LOW: [(1.0, 10.02)]}, "B": {LOW: [(10.04, 20.0)]}}
    assert handover_in_a_round(PAIR, [(10.00, 10.05)], journals)


def test_intervals_that_intersect_are_a_candidate_overlap() -> None:
    journals = {"A": {LOW: [(1.0, 10.06)]}, "B": {LOW: [(10.04, 20.0)]}}
    assert not handover_in_a_round(PAIR, [(10.00, 10.05)], journals)


def test_a_claim_outside_its_own_journal_or_a_missing_journal_refutes_nothing() -> None:
    # the journal disagrees with the claim (A claimed at 10.00, its journal ends at 9.0): trust the claim
    assert not handover_in_a_round(PAIR, [(10.00, 10.05)], {"A": {LOW: [(1.0, 9.0)]}, "B": {LOW: [(10.04, 20.0)]}})
    assert not handover_in_a_round(PAIR, [(10.00, 10.05)], {"B": {LOW: [(10.04, 20.0)]}})  # A was killed
    journals = {"A": {LOW: [(1.0, 10.02)]}, "B": {LOW: [(10.04, 20.0)]}}
    assert not handover_in_a_round(PAIR, [], journals)


def test_every_round_of_a_pair_must_be_a_handover() -> None:
    journals = {"A": {LOW: [(1.0, 10.02), (30.0, 40.0)]}, "B": {LOW: [(10.04, 35.0)]}}
    assert handover_in_a_round(PAIR, [(10.00, 10.05)], journals)
    assert not handover_in_a_round(PAIR, [(10.00, 10.05), (31.0, 31.0)], journals)  # the second round: both serve


def test_journal_overlaps_find_what_no_round_saw_and_ignore_time_before_the_run() -> None:
    journals = {
        "A": {FULL: [(1.0, 10.010)]},
        "B": {HIGH: [(10.000, 10.020)]},  # 10 ms of B beside A's parent: shorter than a round
        "C": {LOW: [(0.5, 2.0)]},  # beside A before the run started
    }
    assert journal_overlaps(journals, since=5.0) == [Overlap("A", FULL, "B", HIGH)]
    assert journal_overlaps({"A": {FULL: [(1.0, 10.0)]}, "B": {HIGH: [(10.0, 12.0)]}}, since=0.0) == []  # touching


def test_an_answer_is_confirmed_by_an_ownership_shorter_than_a_round() -> None:
    topic = "persistent://t/ns/x"
    inside = LOW if crc32_hash(topic) < 0x80000000 else HIGH
    journals = {"B": {inside: [(10.000, 10.025)]}}
    assert served_per_journal(journals, "B", topic, 9.0, 12.0)
    assert not served_per_journal(journals, "B", topic, 10.03, 12.0)  # it had let go before the window
    assert not served_per_journal(journals, "A", topic, 9.0, 12.0)
    other = HIGH if inside == LOW else LOW
    assert not served_per_journal({"B": {other: [(9.0, 12.0)]}}, "B", topic, 9.0, 12.0)


def test_a_claim_whose_instant_is_unknown_refutes_nothing() -> None:
    # a broker whose clock is not the machine's: the observer drops its instants and journal
    journals = {"A": {LOW: [(1.0, 10.02)]}, "B": {LOW: [(10.04, 20.0)]}}
    assert not handover_in_a_round(PAIR, [(None, 10.05)], journals)
    assert not handover_in_a_round(PAIR, [(10.00, None)], journals)


SLEEPER = """
import json, time
from bundlewise.live.broker.journal import ServingJournal
j = ServingJournal()
j.start("x")
time.sleep(1.0)
j.stop("x")
print(json.dumps([j.to_json(), time.monotonic()]))
"""


def test_a_broker_under_libfaketime_stamps_its_journal_on_the_machines_clock() -> None:
    """The skewed-clock fault's broker (clocks at half rate): its own ``time.monotonic`` is not the machine's, its
    journal is -- the observer can read it beside the others'."""
    env = {**os.environ, "LD_PRELOAD": libfaketime(), "FAKETIME": "+0 x0.5", "FAKETIME_NO_CACHE": "1"}
    before = time.monotonic()
    out = subprocess.run([sys.executable, "-c", SLEEPER], env=env, capture_output=True, text=True, timeout=60)
    after = time.monotonic()
    assert out.returncode == 0, out.stderr
    snap, its_own = json.loads(out.stdout)
    ((_, since, until),) = snap["closed"]
    assert before <= since < until <= snap["now"] <= after
    assert until - since >= 1.9  # one second of its half-rate clock: two of the machine's
    assert not before <= its_own <= after  # libfaketime did fake the broker's time.monotonic
