"""The conflict resolver ``should_keep_left``, case by case against Pulsar's tests, then exhaustively.

Mirrors ``ServiceUnitStateDataConflictResolverTest`` (apache/pulsar cd87d8e5, the StorageType
variant; b4256cbb holds the same cases reformatted) and ``ServiceUnitStateCompactionStrategyTest``
(the newest stored variant without version ids, whose transfer cases the Assigning/Releasing rework
changed -- listed apart below).  True = keep the existing value (reject ``to``).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlewise.model.channel import (
    LONG_MAX,
    LONG_MIN,
    ServiceUnitState,
    ServiceUnitStateData,
    explain_conflict,
    is_valid_transition,
    should_keep_left,
)

Init, Free, Owned, Assigning, Releasing, Splitting, Deleted = list(ServiceUnitState)
ALL = list(ServiceUnitState)
dst, src = "dst", "src"
MS, ST = "MetadataStore", "SystemTopic"


def rec(state, dst_broker, source_broker=None, version=1, force=False):
    """Java's ``new ServiceUnitStateData(state, dstBroker, sourceBroker, [force,] versionId)``."""
    return ServiceUnitStateData(state, dst_broker, source_broker, force=force, timestamp=0, version_id=version)


def data(state, *brokers):
    """The Java test's ``data(state)``, ``data(state, dst)``, ``data(state, src, dst)`` (version 1)."""
    return _data(state, brokers, 1)


def data2(state, *brokers):
    """The same helpers at version 2."""
    return _data(state, brokers, 2)


def _data(state, brokers, version):
    if not brokers:
        return rec(state, "broker", None, version)
    if len(brokers) == 1:
        return rec(state, brokers[0], None, version)
    source, destination = brokers
    return rec(state, destination, source, version)


def keep(from_, to, storage=ST, check_brokers=True):
    return should_keep_left(from_, to, storage=storage, check_brokers=check_brokers)


# --- ServiceUnitStateDataConflictResolverTest ----------------------------------------------------


def test_version_id():
    """``#testVersionId``, including the ``Long.MAX_VALUE -> Long.MAX_VALUE + 1`` wrap-around."""
    assert keep(rec(Assigning, dst, version=1), rec(Assigning, dst, version=1)) is True
    assert keep(rec(Assigning, dst, version=1), rec(Assigning, dst, version=2)) is True
    assert keep(rec(Owned, dst, src, 10), rec(Releasing, "broker2", dst, 11)) is False
    assert keep(rec(Owned, dst, src, LONG_MAX), rec(Releasing, "broker2", dst, LONG_MAX + 1)) is False
    assert keep(rec(Owned, dst, src, LONG_MAX + 1), rec(Releasing, "broker2", dst, LONG_MAX + 2)) is False
    assert keep(rec(Owned, dst, src, 10), rec(Releasing, "broker2", dst, 5)) is True
    assert keep(rec(Owned, dst, src, 10), rec(Owned, "broker2", dst, 12)) is False


def test_store_type():
    """``#testStoreType``: the system topic accepts gaps (compaction), the metadata store does not."""
    assert keep(None, rec(Owned, dst, version=1), ST) is False
    assert keep(None, rec(Owned, dst, version=2), ST) is False
    assert keep(rec(Owned, dst, version=1), rec(Owned, dst, version=3), ST) is False

    assert keep(None, rec(Owned, dst, version=1), MS) is False
    assert keep(None, rec(Owned, dst, version=2), MS) is True
    assert keep(rec(Owned, dst, version=1), rec(Owned, dst, version=3), MS) is True


def test_force():
    """``#testForce``: force skips the transition check, never the version check."""
    assert keep(rec(Init, dst, version=1), rec(Init, dst, version=2, force=True)) is False
    assert keep(rec(Init, dst, version=1), rec(Init, dst, version=1, force=True)) is True


@pytest.mark.parametrize("state", ALL)
def test_tombstone(state):
    """``#testTombstone``: a tombstone is accepted whatever the current state (both storages)."""
    assert keep(data(state), None) is False
    assert keep(data(state), None, MS) is False
    assert keep(None, None, MS) is False


TRANSITIONS_AND_BROKERS = [
    (True, data(Init), data2(Init)),
    (False, data(Init), data2(Free)),
    (False, data(Init), data2(Assigning)),
    (False, data(Init), data2(Owned)),
    (False, data(Init), data2(Releasing)),
    (False, data(Init), data2(Splitting)),
    (False, data(Init), data2(Deleted)),
    (True, data(Assigning), data2(Init)),
    (True, data(Assigning), data2(Free)),
    (True, data(Assigning), data2(Assigning)),
    (True, data(Assigning, "dst1"), data2(Owned, "dst2")),
    (True, data(Assigning, dst), data2(Owned, src, dst)),
    (False, data(Assigning, dst), data2(Owned, dst)),
    (False, data(Assigning, src, dst), data2(Owned, src, dst)),
    (True, data(Assigning, src, dst), data2(Releasing, dst)),
    (True, data(Assigning, src, dst), data2(Releasing, src, dst)),
    (True, data(Assigning), data2(Splitting, dst)),
    (True, data(Assigning), data2(Deleted, dst)),
    (True, data(Owned), data2(Init)),
    (True, data(Owned), data2(Free)),
    (True, data(Owned), data2(Assigning)),
    (True, data(Owned), data2(Owned)),
    (True, data(Owned), data2(Releasing, dst)),
    (True, data(Owned, src, "dst1"), data2(Releasing, src, "dst2")),
    (True, data(Owned, "dst1"), data2(Releasing, "dst2")),
    (True, data(Owned, dst), data2(Releasing, dst)),
    (True, data(Owned, src, dst), data2(Releasing, None, dst)),
    (True, data(Owned, src, dst), data2(Releasing, src, None)),
    (False, data(Owned, src, dst), data2(Releasing, dst, None)),
    (True, data(Owned, src, "dst1"), data2(Releasing, src, "dst2")),
    (True, data(Owned, "src1", dst), data2(Releasing, "src2", dst)),
    (True, data(Owned, src, dst), data2(Releasing, src, dst)),
    (False, data(Owned, src, dst), data2(Releasing, dst, "dst2")),
    (True, data(Owned, src, "dst1"), data2(Splitting, src, "dst2")),
    (True, data(Owned, "dst1"), data2(Splitting, "dst2")),
    (False, data(Owned, dst), data2(Splitting, dst, None)),
    (False, data(Owned, src, dst), data2(Splitting, dst, None)),
    (True, data(Owned), data2(Deleted, dst)),
    (True, data(Releasing), data2(Init)),
    (False, data(Releasing), data2(Free)),
    (True, data(Releasing, "dst1"), data2(Free, "dst2")),
    (True, data(Releasing, "src1", dst), data2(Free, "src2", dst)),
    (True, data(Releasing, src, "dst1"), data2(Assigning, src, "dst2")),
    (True, data(Releasing, src, "dst1"), data2(Assigning, src, "dst2")),
    (True, data(Releasing, "src1", dst), data2(Assigning, "src2", dst)),
    (False, data(Releasing, src, dst), data2(Assigning, src, dst)),
    (True, data(Releasing), data2(Owned)),
    (True, data(Releasing), data2(Releasing)),
    (True, data(Releasing), data2(Splitting)),
    (True, data(Releasing), data2(Deleted, dst)),
    (True, data(Splitting), data2(Init)),
    (True, data(Splitting), data2(Free)),
    (True, data(Splitting), data2(Assigning)),
    (True, data(Splitting), data2(Owned)),
    (True, data(Splitting), data2(Releasing)),
    (True, data(Splitting), data2(Splitting)),
    (True, data(Splitting, src, "dst1"), data2(Deleted, src, "dst2")),
    (True, data(Splitting, "dst1"), data2(Deleted, "dst2")),
    (True, data(Splitting, "src1", dst), data2(Deleted, "src2", dst)),
    (False, data(Splitting, dst), data2(Deleted, dst)),
    (False, data(Splitting, src, dst), data2(Deleted, src, dst)),
    (False, data(Deleted), data2(Init)),
    (True, data(Deleted), data2(Free)),
    (True, data(Deleted), data2(Assigning)),
    (True, data(Deleted), data2(Owned)),
    (True, data(Deleted), data2(Releasing)),
    (True, data(Deleted), data2(Splitting)),
    (True, data(Deleted), data2(Deleted)),
    (False, data(Free), data2(Init)),
    (True, data(Free), data2(Free)),
    (False, data(Free), data2(Assigning)),
    (True, data(Free), data2(Assigning, src, dst)),
    (True, data(Free), data2(Owned)),
    (True, data(Free), data2(Releasing)),
    (True, data(Free), data2(Splitting)),
    (True, data(Free), data2(Deleted)),
]


@pytest.mark.parametrize(("expected", "from_", "to"), TRANSITIONS_AND_BROKERS)
def test_transitions_and_brokers(expected, from_, to):
    """``#testTransitionsAndBrokers``, one assertion per case (76 cases), on the default system topic."""
    assert keep(from_, to) is expected


def test_transitions_and_brokers_case_count():
    assert len(TRANSITIONS_AND_BROKERS) == 76


# --- ServiceUnitStateCompactionStrategyTest (pre-versionId variant) ------------------------------

# (expected, from, to) as that test asserts them; they still hold with from at v1 and to at v2.
COMPACTION_UNCHANGED = [
    (False, rec(Init, dst), rec(Init, dst, version=2, force=True)),
    (True, data(Init), data2(Init)),
    (True, data(Assigning), data2(Init)),
    (True, data(Assigning, "dst1"), data2(Owned, "dst2")),
    (True, data(Assigning, dst), data2(Owned, src, dst)),
    (False, data(Assigning, dst), data2(Owned, dst)),
    (True, data(Assigning, src, dst), data2(Releasing, dst)),
    (True, data(Assigning, src, "dst1"), data2(Releasing, src, "dst2")),
    (True, data(Assigning, "src1", dst), data2(Releasing, "src2", dst)),
    (True, data(Owned, src, "dst1"), data2(Assigning, src, "dst2")),
    (True, data(Owned, src, dst), data2(Assigning, dst)),
    (True, data(Owned, src, dst), data2(Assigning, src, dst)),
    (True, data(Owned, src, dst), data2(Assigning, dst, dst)),
    (True, data(Owned), data2(Owned)),
    (True, data(Owned), data2(Releasing, dst)),
    (True, data(Owned, src, "dst1"), data2(Releasing, src, "dst2")),
    (True, data(Owned, "dst1"), data2(Releasing, "dst2")),
    (True, data(Owned, src, "dst1"), data2(Splitting, src, "dst2")),
    (True, data(Owned, "dst1"), data2(Splitting, "dst2")),
    (False, data(Releasing), data2(Free)),
    (True, data(Releasing, "dst1"), data2(Free, "dst2")),
    (True, data(Releasing, "src1", dst), data2(Free, "src2", dst)),
    (True, data(Releasing, "dst1"), data2(Owned, "dst2")),
    (True, data(Releasing, src, "dst1"), data2(Owned, src, "dst2")),
    (True, data(Releasing, "src1", dst), data2(Owned, "src2", dst)),
    (False, data(Splitting, dst), data2(Deleted, dst)),
    (False, data(Splitting, src, dst), data2(Deleted, src, dst)),
    (False, data(Deleted), data2(Init)),
    (False, data(Free), data2(Init)),
    (False, data(Free), data2(Assigning)),
    (True, data(Free), data2(Assigning, src, dst)),
]

# Cases that test asserted before PR #19813's transfer protocol (Owned -> Assigning and
# Releasing -> Owned removed, Releasing/Splitting carrying the owner as source); the current
# resolver (and its own test, above) decides them the other way.
COMPACTION_CHANGED = [
    (True, data(Assigning, src, dst), data2(Releasing, src, dst)),  # was False: Assigning -> Releasing removed
    (True, data(Owned, src, dst), data2(Assigning, dst, "dst1")),  # was False: Owned -> Assigning removed
    (True, data(Owned, dst), data2(Releasing, dst)),  # was False: Releasing needs the owner as source
    (True, data(Owned, src, dst), data2(Releasing, dst)),  # was False: same
    (True, data(Owned, dst), data2(Splitting, dst)),  # was False: Splitting names no destination
    (True, data(Owned, src, dst), data2(Splitting, dst)),  # was False: same
    (False, data(Releasing), data2(Assigning)),  # was True: Releasing -> Assigning is the transfer step now
    (True, data(Releasing, src, dst), data2(Owned, src, dst)),  # was False: Releasing -> Owned removed
]


@pytest.mark.parametrize(("expected", "from_", "to"), COMPACTION_UNCHANGED + COMPACTION_CHANGED)
def test_compaction_strategy_cases(expected, from_, to):
    """``ServiceUnitStateCompactionStrategyTest#test`` with versions 1 -> 2."""
    assert keep(from_, to) is expected


def test_compaction_strategy_tombstone():
    assert keep(data(Owned), None) is False


# --- every transition, both storages ---------------------------------------------------------------

OWNER, OTHER, NEW = "b1:8080", "b2:8080", "b3:8080"


def existing(state, version=5):
    """A current record per state, shaped as the channel writes it."""
    return {
        Init: rec(Init, OWNER, None, version),
        Free: rec(Free, None, OWNER, version),
        Owned: rec(Owned, OWNER, None, version),
        Assigning: rec(Assigning, OWNER, OTHER, version),
        Releasing: rec(Releasing, NEW, OWNER, version),
        Splitting: rec(Splitting, None, OWNER, version),
        Deleted: rec(Deleted, None, OWNER, version),
    }[state]


def consistent(from_: ServiceUnitStateData, to_state, version):
    """The record the channel would publish next for ``from_ -> to_state``, with consistent brokers."""
    f = from_
    if (f.state, to_state) == (Owned, Releasing):
        return rec(Releasing, NEW, f.dst_broker, version)
    if (f.state, to_state) == (Owned, Splitting):
        return rec(Splitting, None, f.dst_broker, version)
    if (f.state, to_state) == (Free, Assigning):
        return rec(Assigning, NEW, None, version)
    if f.state in (Assigning, Releasing, Splitting) and to_state is not Init:
        return rec(to_state, f.dst_broker, f.source_broker, version)
    return rec(to_state, NEW, OWNER, version)


@pytest.mark.parametrize("storage", [ST, MS])
@pytest.mark.parametrize(("from_state", "to_state"), list(itertools.product(ALL, ALL)))
def test_every_transition_with_consistent_brokers(storage, from_state, to_state):
    f = existing(from_state)
    t = consistent(f, to_state, 6)
    expected_keep = not is_valid_transition(from_state, to_state, storage)
    assert keep(f, t, storage) is expected_keep
    assert keep(f, t, storage, check_brokers=False) is expected_keep


@pytest.mark.parametrize("storage", [ST, MS])
@pytest.mark.parametrize(("from_state", "to_state"), list(itertools.product(ALL, ALL)))
def test_force_accepts_every_transition_at_the_next_version(storage, from_state, to_state):
    f = existing(from_state)
    forced = rec(to_state, "x:1", "y:2", 6, force=True)
    assert keep(f, forced, storage) is False
    assert keep(f, rec(to_state, "x:1", "y:2", 5, force=True), storage) is True  # not newer
    assert keep(f, rec(to_state, "x:1", "y:2", 7, force=True), storage) is (storage == MS)  # gap


@pytest.mark.parametrize(("from_state", "to_state"), list(itertools.product(ALL, ALL)))
def test_a_version_gap_is_accepted_outright_on_the_system_topic_and_rejected_on_the_store(from_state, to_state):
    """Pulsar returns at the gap test: on the topic compaction dropped the values in between, so even
    an illegal transition or inconsistent brokers pass; the metadata store never skips."""
    f = existing(from_state)
    t = rec(to_state, "x:1", "y:2", 8)
    assert keep(f, t, ST) is False
    assert keep(f, t, MS) is True


@pytest.mark.parametrize("to_state", ALL)
def test_no_previous_value_on_the_system_topic(to_state):
    """``from`` None is ``Init``: every state but Init is legal, whatever the version (compaction)."""
    for version in (1, 2, 99, LONG_MIN):
        assert keep(None, rec(to_state, NEW, version=version), ST) is (to_state is Init)
    assert keep(None, rec(to_state, NEW, version=7, force=True), ST) is False


@pytest.mark.parametrize("to_state", ALL)
def test_no_previous_value_on_the_metadata_store(to_state):
    """A new key must start at version 1 -- and then any record is accepted (no transition check)."""
    assert keep(None, rec(to_state, NEW, version=1), MS) is False
    assert keep(None, rec(to_state, NEW, version=2), MS) is True
    assert keep(None, rec(to_state, NEW, version=0), MS) is True
    assert keep(None, rec(to_state, NEW, version=2, force=True), MS) is True


@pytest.mark.parametrize("storage", [ST, MS])
@pytest.mark.parametrize(
    ("delta", "st_keep", "ms_keep"),
    [(-3, True, True), (-1, True, True), (0, True, True), (1, False, False), (2, False, True), (40, False, True)],
)
def test_version_steps(storage, delta, st_keep, ms_keep):
    f = rec(Owned, OWNER, None, 100)
    t = rec(Releasing, None, OWNER, 100 + delta)
    assert keep(f, t, storage) is (st_keep if storage == ST else ms_keep)


@pytest.mark.parametrize("storage", [ST, MS])
def test_version_overflow(storage):
    """``Long.MAX -> Long.MIN`` is the next version; anything else after MAX is older."""
    f = rec(Owned, OWNER, None, LONG_MAX)
    assert keep(f, rec(Releasing, None, OWNER, LONG_MIN), storage) is False
    assert keep(f, rec(Releasing, None, OWNER, LONG_MIN + 1), storage) is True
    assert keep(f, rec(Releasing, None, OWNER, LONG_MAX), storage) is True
    # the wrap-around still checks the transition and the brokers
    assert keep(f, rec(Assigning, NEW, None, LONG_MIN), storage) is True
    assert keep(f, rec(Releasing, None, OTHER, LONG_MIN), storage) is True
    assert keep(f, rec(Assigning, NEW, None, LONG_MIN, force=True), storage) is False
    g = rec(Releasing, None, OWNER, LONG_MIN)
    assert keep(g, rec(Free, None, OWNER, LONG_MIN + 1), storage) is False


# --- every broker check ----------------------------------------------------------------------------

BROKER_CHECKS = [
    # (from, to, keep): Owned -> Splitting
    (rec(Owned, "o"), rec(Splitting, None, "o", 2), False),
    (rec(Owned, "o"), rec(Splitting, "x", "o", 2), True),  # names a destination
    (rec(Owned, "o"), rec(Splitting, " ", "o", 2), False),  # a blank destination is none
    (rec(Owned, "o"), rec(Splitting, None, "x", 2), True),  # not from the owner
    (rec(Owned, None, "s"), rec(Splitting, None, "s", 2), True),  # owner unknown
    # Owned -> Releasing
    (rec(Owned, "o"), rec(Releasing, None, "o", 2), False),  # unload
    (rec(Owned, "o"), rec(Releasing, "e", "o", 2), False),  # transfer
    (rec(Owned, "o"), rec(Releasing, "e", None, 2), True),  # no source
    (rec(Owned, "o"), rec(Releasing, "e", "  ", 2), True),  # blank source
    (rec(Owned, "o"), rec(Releasing, "e", "x", 2), True),  # source is not the owner
    (rec(Owned, "o"), rec(Releasing, "o", "o", 2), True),  # transfer to itself
    (rec(Owned, None, "s"), rec(Releasing, None, "s", 2), True),  # owner unknown
    # Assigning -> Owned
    (rec(Assigning, "d", "s"), rec(Owned, "d", "s", 2), False),
    (rec(Assigning, "d", None), rec(Owned, "d", None, 2), False),
    (rec(Assigning, "d", "s"), rec(Owned, "x", "s", 2), True),
    (rec(Assigning, "d", "s"), rec(Owned, "d", None, 2), True),
    (rec(Assigning, "d", None), rec(Owned, "d", "", 2), True),  # "" is not null for equals
    # Releasing -> Assigning
    (rec(Releasing, "d", "s"), rec(Assigning, "d", "s", 2), False),
    (rec(Releasing, None, "s"), rec(Assigning, None, "s", 2), True),  # no destination
    (rec(Releasing, "d", "s"), rec(Assigning, "x", "s", 2), True),
    (rec(Releasing, "d", "s"), rec(Assigning, "d", "x", 2), True),
    # Releasing -> Free
    (rec(Releasing, None, "s"), rec(Free, None, "s", 2), False),
    (rec(Releasing, None, "s"), rec(Free, None, "x", 2), True),
    (rec(Releasing, "d", "s"), rec(Free, None, "s", 2), True),
    # Splitting -> Deleted
    (rec(Splitting, None, "s"), rec(Deleted, None, "s", 2), False),
    (rec(Splitting, None, "s"), rec(Deleted, None, "x", 2), True),
    (rec(Splitting, None, "s"), rec(Deleted, "d", "s", 2), True),
    # Free -> Assigning
    (rec(Free, None, "s"), rec(Assigning, "d", None, 2), False),
    (rec(Free, None, "s"), rec(Assigning, "d", "s", 2), True),  # a source on a fresh assignment
    (rec(Free, None, "s"), rec(Assigning, "d", " ", 2), False),  # a blank source is none
    (rec(Free, None, "s"), rec(Assigning, None, "s", 2), True),  # no destination
]


@pytest.mark.parametrize("storage", [ST, MS])
@pytest.mark.parametrize(("from_", "to", "expected"), BROKER_CHECKS)
def test_every_broker_check(storage, from_, to, expected):
    assert keep(from_, to, storage) is expected
    assert keep(from_, to, storage, check_brokers=False) is False  # checks off: legal transition, next version


def test_no_broker_checks_from_init_or_free_to_init_or_deleted_to_init():
    assert keep(rec(Free, None, "s"), rec(Init, "anyone", version=2), ST) is False
    assert keep(rec(Deleted, None, "s"), rec(Init, "anyone", version=2), MS) is False
    assert keep(rec(Init, "x"), rec(Owned, "anyone", version=2), ST) is False


def test_explain_names_the_rule():
    assert explain_conflict(rec(Owned, "o"), None) == (False, "accepted: a tombstone is always accepted")
    kept, why = explain_conflict(rec(Owned, "o"), rec(Releasing, "e", "x", 2))
    assert kept and "source == owner" in why
    kept, why = explain_conflict(None, rec(Owned, "o", version=3), storage=MS)
    assert kept and "start at version 1" in why
    kept, why = explain_conflict(rec(Owned, "o", version=1), rec(Owned, "o", version=3), storage=MS)
    assert kept and "skips" in why
    kept, why = explain_conflict(rec(Owned, "o"), rec(Free, None, "o", 2), storage=MS)
    assert kept and "not a legal transition on the MetadataStore channel" in why
    assert explain_conflict(rec(Owned, "o"), rec(Free, None, "o", 2, force=True)) == (
        False,
        "accepted: forced override",
    )


def test_unknown_storage_is_rejected():
    with pytest.raises(ValueError):
        keep(None, rec(Owned, "o"), "Topic")


# --- properties --------------------------------------------------------------------------------------

BROKERS = st.sampled_from([None, "", "b1", "b2", "b3"])


@st.composite
def records(draw, version=None):
    state = draw(st.sampled_from(ALL))
    d = draw(BROKERS)
    s = draw(BROKERS)
    if state is not Free and not d and not s:
        d = "b1"
    v = draw(st.integers(min_value=LONG_MAX - 3, max_value=LONG_MAX + 3) | st.integers(-3, 12))
    return rec(state, d, s, v if version is None else version, force=draw(st.booleans()))


@given(st.none() | records(), st.none() | records(), st.sampled_from([ST, MS]), st.booleans())
def test_resolver_is_deterministic_and_pure(from_, to, storage, check):
    first = should_keep_left(from_, to, storage=storage, check_brokers=check)
    again = should_keep_left(from_, to, storage=storage, check_brokers=check)
    assert first is again
    assert explain_conflict(from_, to, storage=storage, check_brokers=check)[0] is first
    # the inputs are untouched
    assert should_keep_left(from_, to, storage=storage, check_brokers=check) is first


@given(records(), records())
def test_metadata_store_accepts_only_what_the_system_topic_accepts(from_, to):
    if not should_keep_left(from_, to, storage=MS):
        assert not should_keep_left(from_, to, storage=ST)


@given(st.lists(st.none() | records(), max_size=40))
@settings(max_examples=300)
def test_accepted_metadata_store_chain_has_consecutive_versions(proposals):
    """Feed proposals through the MetadataStore rules in order: the accepted values form a chain that
    starts at 1 after every tombstone and then grows by exactly one (Java ``long`` arithmetic)."""
    current = None
    for proposal in proposals:
        if should_keep_left(current, proposal, storage=MS):
            continue
        if proposal is not None:
            expected = (
                1 if current is None else (current.version_id + 1 if current.version_id != LONG_MAX else LONG_MIN)
            )
            assert proposal.version_id == expected
        current = proposal


@given(st.lists(records(), min_size=1, max_size=30))
def test_accepted_non_forced_metadata_store_chain_only_takes_legal_steps(proposals):
    current = None
    for proposal in [p for p in proposals if not p.force]:
        if not should_keep_left(current, proposal, storage=MS):
            if current is not None:
                assert is_valid_transition(current.state, proposal.state, MS)
            current = proposal
