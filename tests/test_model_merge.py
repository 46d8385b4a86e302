"""Merging adjacent bundles (``NamespaceBundles.merge``): the inverse of a split, validated like one; and the merge
decision (``model.decisions.MergeDecision``) with its ``decisions.jsonl`` line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.decisions import Label, Logged, MergeDecision, MergeReason
from bundlewise.model.errors import InputError
from bundlewise.results.decisions import decision_row

NS = "t/ns"


def test_split_then_merge_gives_the_parent_and_the_namespace_back() -> None:
    start = NamespaceBundles.initial(NS, 4)
    parent = start.bundles[1]
    after_split, children = start.split(parent, [0x50000000, 0x60000000])
    assert [c.name for c in children] == [
        "t/ns/0x40000000_0x50000000",
        "t/ns/0x50000000_0x60000000",
        "t/ns/0x60000000_0x80000000",
    ]
    merged_ns, merged = after_split.merge(children)
    assert merged == parent and merged.name == "t/ns/0x40000000_0x80000000"
    assert merged_ns == start


def test_merging_two_of_three_children_keeps_the_third() -> None:
    ns, children = NamespaceBundles.initial(NS, 1).split(Bundle(NS, 0, 0xFFFFFFFF), [0x40000000, 0x80000000])
    merged_ns, merged = ns.merge(reversed(children[1:]))  # order does not matter
    assert merged == Bundle(NS, 0x40000000, 0xFFFFFFFF)
    assert merged_ns.boundaries == (0, 0x40000000, 0xFFFFFFFF)
    assert merged_ns.bundle_for_hash(0xFFFFFFFF) == merged  # the closed last bundle stays closed


@pytest.mark.parametrize(
    ("picks", "message"),
    [
        ([0], "need at least 2 bundles, got 1"),
        ([0, 2], "t/ns/0x00000000_0x40000000 and t/ns/0x80000000_0xc0000000 are not adjacent"),
    ],
)
def test_merge_refuses_fewer_than_two_or_a_gap(picks: list[int], message: str) -> None:
    ns = NamespaceBundles.initial(NS, 4)
    with pytest.raises(InputError, match=message):
        ns.merge([ns.bundles[i] for i in picks])


def test_merge_refuses_bundles_that_are_not_current() -> None:
    ns = NamespaceBundles.initial(NS, 4)
    with pytest.raises(InputError, match="t/ns/0x00000000_0x20000000 is not one of the current bundles of t/ns"):
        ns.merge([Bundle(NS, 0, 0x20000000), Bundle(NS, 0x20000000, 0x40000000)])
    with pytest.raises(InputError, match="not one of the current bundles"):
        ns.merge([Bundle("t/other", 0, 0x40000000), ns.bundles[1]])


@given(
    n=st.integers(1, 16),
    which=st.integers(0, 15),
    cuts=st.lists(st.integers(1, 2**20), min_size=1, max_size=5),
)
def test_merge_undoes_any_split(n: int, which: int, cuts: list[int]) -> None:
    start = NamespaceBundles.initial(NS, n)
    parent = start.bundles[which % n]
    points = sorted({parent.lower + c % (parent.upper - parent.lower - 1) + 1 for c in cuts})
    after, children = start.split(parent, points)
    assert len(after) == n + len(points)
    back, merged = after.merge(children)
    assert merged == parent and back == start


def test_a_merge_decision_and_its_decisions_jsonl_line() -> None:
    d = MergeDecision(
        "t/ns/0x80000000_0xffffffff",
        "b",
        ("t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"),
        ("a", "b"),
        "t/ns/0x00000000_0x40000000",
        "t/ns is at its cap",
    )
    assert d.to_json() == {
        "bundle": "t/ns/0x80000000_0xffffffff",
        "broker": "b",
        "parts": ["t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"],
        "owners": ["a", "b"],
        "unblocks": "t/ns/0x00000000_0x40000000",
        "reason": "BundleCap",
    }
    assert d.moved == ("t/ns/0x80000000_0xc0000000",) and d.label is Label.SUCCESS
    assert d.cause is MergeReason.BUNDLE_CAP
    line = Logged("BalancedPlanShedder", 3, 180_000, d.done(["a", "b"], "b", " (note)"))
    assert line.type == "merge"
    assert json.dumps(decision_row(line)) == json.dumps(
        {
            "strategy": "BalancedPlanShedder",
            "tick": 3,
            "time_ms": 180_000,
            "time": "3m",
            "type": "merge",
            "bundle": "t/ns/0x80000000_0xffffffff",
            "broker": "b",
            "parts": ["t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"],
            "owners": ["a", "b"],
            "moved": ["t/ns/0x80000000_0xc0000000"],
            "unblocks": "t/ns/0x00000000_0x40000000",
            "reason": "merge (BundleCap): t/ns is at its cap (note)",
            "label": "Success",
            "cause": "BundleCap",
            "leader": None,
        }
    )
    nobody = MergeDecision(
        "t/ns/0x00000000_0xffffffff",
        None,
        ("t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"),
        (None, None),
        "x",
    )
    assert nobody.moved == () and nobody.to_json()["broker"] is None
    with pytest.raises(ValueError, match="need 2 or more parts, each with its owner"):
        MergeDecision("t/ns/0x00000000_0xffffffff", "a", ("t/ns/0x00000000_0xffffffff",), ("a",), "x")
