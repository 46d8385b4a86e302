"""The source broker's split plan (``ServiceUnitStateChannelImpl#splitServiceUnit``,
``#splitServiceUnitOnceAndRetry``, ``#ownChildBundles``, ``#getSplitNamespaceBundles``).

Bundle names and child ranges are those of ``ServiceUnitStateChannelTest#splitAndRetryTest``.
"""

from __future__ import annotations

import pytest

from bundlewise.algorithms.extensible.channel.settings import BUNDLE_SPLIT_RETRY_LIMIT
from bundlewise.algorithms.extensible.channel.split import forced_positions, plan_split, should_retry_split
from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData

Owned, Splitting, Deleted = ServiceUnitState.Owned, ServiceUnitState.Splitting, ServiceUnitState.Deleted
B1 = "broker-1:8080"
NS = "my-tenant/my-ns"
PARENT = f"{NS}/0x00000000_0xffffffff"
CHILD1_RANGE, CHILD2_RANGE = "0x7fffffff_0xffffffff", "0x00000000_0x7fffffff"
CHILD11, CHILD12 = f"{NS}/{CHILD1_RANGE}", f"{NS}/{CHILD2_RANGE}"
NOW = 1_700_000_000_000
WHOLE = NamespaceBundles.of(NS, [0, 0xFFFFFFFF])


def splitting(children, version=2, src=B1, force=False):
    return ServiceUnitStateData(
        Splitting,
        None,
        src,
        split_service_unit_to_dest_broker=dict.fromkeys(children),
        force=force,
        timestamp=NOW - 5,
        version_id=version,
    )


def claim(src=B1):
    return ServiceUnitStateData(Owned, src, None, timestamp=NOW, version_id=1)


def test_two_children_claim_update_and_delete():
    """``#splitAndRetryTest``: both children owned in place by the source at version 1, the namespace's
    bundles cut at the children's bounds, then the parent Deleted at the split version + 1."""
    plan = plan_split(PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE]), WHOLE, {}, NOW)
    assert plan.failure is None
    assert plan.claims == ((CHILD11, claim()), (CHILD12, claim()))
    assert plan.already_claimed == ()
    assert plan.bundles == NamespaceBundles.of(NS, [0, 0x7FFFFFFF, 0xFFFFFFFF])
    assert plan.metadata_done is False
    assert plan.deleted == ServiceUnitStateData(Deleted, None, B1, timestamp=NOW, version_id=3)
    assert plan.reason == "split at the children's bounds"


def test_a_second_attempt_claims_nothing_and_reuses_the_written_bundles():
    """Idempotent (PR #19988): children present in the view are left alone, and a namespace whose
    bundles already hold the children is not split again."""
    first = plan_split(PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE]), WHOLE, {}, NOW)
    assert first.bundles is not None
    view = dict(first.claims)
    again = plan_split(PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE]), first.bundles, view, NOW + 100)
    assert again.claims == ()
    assert again.already_claimed == (CHILD11, CHILD12)
    assert again.metadata_done is True and again.bundles == first.bundles
    assert again.deleted == ServiceUnitStateData(Deleted, None, B1, timestamp=NOW + 100, version_id=3)
    assert again.reason == "the namespace's bundles already hold the children"


def test_only_absent_children_are_claimed():
    view = {CHILD12: ServiceUnitStateData(Owned, "someone-else:8080", None, timestamp=1, version_id=4)}
    plan = plan_split(PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE]), WHOLE, view, NOW)
    assert plan.claims == ((CHILD11, claim()),)
    assert plan.already_claimed == (CHILD12,)


def test_parent_gone_and_a_child_missing_fails():
    other = NamespaceBundles.of(NS, [0, 0x40000000, 0xFFFFFFFF])
    plan = plan_split(PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE]), other, {}, NOW)
    assert plan.failure == f"Namespace bundles do not contain the child bundle: {CHILD11}"
    assert plan.deleted is None and plan.bundles is None
    assert len(plan.claims) == 2  # Pulsar claims the children before it reads the bundles


def test_forced_specified_positions_use_the_inner_bounds_only():
    parent = Bundle.parse(f"{NS}/0x40000000_0x80000000")
    kids = [Bundle.parse(f"{NS}/0x40000000_0x50000000"), Bundle.parse(f"{NS}/0x50000000_0x80000000")]
    assert forced_positions(parent, kids) == [0x50000000]


def test_split_of_an_inner_bundle_keeps_the_other_bundles():
    current = NamespaceBundles.of(NS, [0, 0x40000000, 0x80000000, 0xFFFFFFFF])
    parent = f"{NS}/0x40000000_0x80000000"
    plan = plan_split(parent, splitting(["0x40000000_0x60000000", "0x60000000_0x80000000"]), current, {}, NOW)
    assert plan.bundles == NamespaceBundles.of(NS, [0, 0x40000000, 0x60000000, 0x80000000, 0xFFFFFFFF])


def test_upper_case_ranges_are_claimed_under_canonical_names():
    plan = plan_split(PARENT, splitting(["0x7FFFFFFF_0xFFFFFFFF", "0x00000000_0x7FFFFFFF"]), WHOLE, {}, NOW)
    assert [k for k, _ in plan.claims] == [CHILD11, CHILD12]


def test_other_child_counts_use_the_configured_algorithms_boundaries():
    kids = ["0x00000000_0x55555555", "0x55555555_0xaaaaaaaa", "0xaaaaaaaa_0xffffffff"]
    plan = plan_split(PARENT, splitting(kids), WHOLE, {}, NOW, fallback_boundaries=[0x55555555, 0xAAAAAAAA])
    assert plan.bundles == NamespaceBundles.of(NS, [0, 0x55555555, 0xAAAAAAAA, 0xFFFFFFFF])
    assert plan.reason == "split at the configured algorithm's boundaries"
    assert plan_split(PARENT, splitting(kids), WHOLE, {}, NOW).failure == f"no split boundary inside {PARENT}"


@pytest.mark.parametrize(
    ("data", "failure"),
    [
        (ServiceUnitStateData(Owned, B1, None, timestamp=0, version_id=2), "not a split record"),
        (splitting([]), "names no children"),
        (splitting(["0x00000000"]), "bad child range"),
    ],
)
def test_unusable_records_fail(data, failure):
    plan = plan_split(PARENT, data, WHOLE, {}, NOW)
    assert plan.failure is not None and failure in plan.failure
    assert plan.deleted is None


def test_a_forced_split_override_is_run_by_its_new_source():
    """Orphan cleanup hands a stuck split to another broker (``Splitting(src = new, force)``)."""
    plan = plan_split(
        PARENT, splitting([CHILD1_RANGE, CHILD2_RANGE], version=7, src="b2:8080", force=True), WHOLE, {}, NOW
    )
    assert [c.dst_broker for _, c in plan.claims] == ["b2:8080", "b2:8080"]
    assert plan.deleted == ServiceUnitStateData(Deleted, None, "b2:8080", timestamp=NOW, version_id=8)


def test_retry_budget():
    """``#splitAndRetryTest``: 2 BadVersions then success = 3 attempts; ``#splitAndRetryFailureTest``:
    always BadVersion stops after ``BUNDLE_SPLIT_RETRY_LIMIT`` (7) attempts."""
    attempts = 0
    for bad_version in [True, True, False]:
        attempts += 1
        if not bad_version or not should_retry_split(attempts, bad_version):
            break
    assert attempts == 3
    attempts = 0
    while True:
        attempts += 1
        if not should_retry_split(attempts, bad_version=True):
            break
    assert attempts == BUNDLE_SPLIT_RETRY_LIMIT == 7
    assert should_retry_split(1, bad_version=False) is False
