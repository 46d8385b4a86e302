"""``model.ranges.overlaps``: hash-range overlap between brokers, not name equality."""

from __future__ import annotations

from bundlewise.model.ranges import Overlap, overlaps

PARENT = "t/ns/0xe0000000_0xffffffff"
LEFT = "t/ns/0xe0000000_0xefffffff"
RIGHT = "t/ns/0xefffffff_0xffffffff"


def test_parent_and_child_on_two_brokers_overlap() -> None:
    # issue 23 item 1: the parent on A, its children on B
    assert overlaps({"a": [PARENT], "b": [LEFT, RIGHT]}) == [
        Overlap("a", PARENT, "b", LEFT),
        Overlap("a", PARENT, "b", RIGHT),
    ]


def test_adjacent_ranges_do_not_overlap() -> None:
    assert overlaps({"a": [LEFT], "b": [RIGHT]}) == []


def test_same_broker_is_no_violation() -> None:
    assert overlaps({"a": [PARENT, LEFT]}) == []


def test_same_name_on_two_brokers_overlaps() -> None:
    assert overlaps({"b": [LEFT], "a": [LEFT]}) == [Overlap("a", LEFT, "b", LEFT)]


def test_other_namespace_does_not_overlap() -> None:
    assert overlaps({"a": [PARENT], "b": ["t/other/0xe0000000_0xefffffff"]}) == []


def test_range_nested_after_a_short_one() -> None:
    # a sorted scan must not stop at the first non-overlapping neighbour of a wide range
    wide = "t/ns/0x00000000_0x80000000"
    assert overlaps({"a": [wide], "b": ["t/ns/0x00000000_0x10000000", "t/ns/0x40000000_0x50000000"]}) == [
        Overlap("a", wide, "b", "t/ns/0x00000000_0x10000000"),
        Overlap("a", wide, "b", "t/ns/0x40000000_0x50000000"),
    ]
