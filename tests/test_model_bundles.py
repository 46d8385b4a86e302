"""Topic -> bundle hashing and bundle ranges (Pulsar NamespaceBundlesTest)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlewise.model.bundles import Bundle, NamespaceBundles, initial_boundaries
from bundlewise.model.errors import HashOutOfRange, InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName, full_topic_name


def test_crc32_check_value() -> None:
    assert crc32_hash("123456789") == 0xCBF43926


@pytest.mark.parametrize(
    ("topic", "hash_", "bundle"),
    [
        ("persistent://public/default/my-topic", 0x2BAD45F7, "public/default/0x00000000_0x40000000"),
        ("persistent://public/default/my-topic-partition-2", 0xD3452319, "public/default/0xc0000000_0xffffffff"),
        ("non-persistent://public/default/my-topic", 0x831E214A, "public/default/0x80000000_0xc0000000"),
    ],
)
def test_spec_hash_examples(topic: str, hash_: int, bundle: str) -> None:
    assert crc32_hash(topic) == hash_
    assert NamespaceBundles.initial("public/default", 4).find_bundle(topic).name == bundle


def test_short_name_is_persistent_public_default() -> None:
    assert full_topic_name("my-topic") == "persistent://public/default/my-topic"
    assert full_topic_name("t/ns/x") == "persistent://t/ns/x"


def test_topic_name_parts_and_partitions() -> None:
    t = TopicName.parse("persistent://tenant/ns/orders-partition-7")
    assert (t.domain, str(t.namespace), t.local_name, t.partition_index) == (
        "persistent",
        "tenant/ns",
        "orders-partition-7",
        7,
    )
    assert str(t.partitioned_base) == "persistent://tenant/ns/orders"
    assert TopicName.parse("persistent://tenant/ns/orders").partition_index == -1
    v1 = TopicName.parse("persistent://pulsar/use/ns1/topic-1")
    assert (v1.namespace.tenant, v1.namespace.cluster, v1.namespace.namespace) == ("pulsar", "use", "ns1")
    assert str(v1) == "persistent://pulsar/use/ns1/topic-1"


@pytest.mark.parametrize("bad", ["", "ftp://a/b/c", "persistent://a/b", "persistent://a//c"])
def test_bad_topic_names(bad: str) -> None:
    with pytest.raises(InputError):
        TopicName.parse(bad)


def test_initial_boundaries() -> None:
    assert initial_boundaries(4) == [0, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF]
    assert initial_boundaries(3) == [0, 0x55555555, 0xAAAAAAAA, 0xFFFFFFFF]
    assert initial_boundaries(1) == [0, 0xFFFFFFFF]
    with pytest.raises(InputError):
        initial_boundaries(0)


def test_constructor_ranges_like_pulsar() -> None:
    nb = NamespaceBundles.of("pulsar/use/ns2", [0, 0x10000000, 0x40000000, 0xFFFFFFFF])
    assert [b.range_name for b in nb.bundles] == [
        "0x00000000_0x10000000",
        "0x10000000_0x40000000",
        "0x40000000_0xffffffff",
    ]
    assert [b.upper_closed for b in nb.bundles] == [False, False, True]


def test_naming_and_parsing() -> None:
    b = Bundle("pulsar/use/ns1", 0, 0x10000000)
    assert b.name == "pulsar/use/ns1/0x00000000_0x10000000"
    assert Bundle.parse("pulsar/use/ns1/0x00000000_0x10000000") == b
    assert Bundle.parse("t/ns/0X0000000A_0XFFFFFFFF") == Bundle("t/ns", 10, 0xFFFFFFFF)
    for bad in ["t/ns/0x1", "t/ns/zz_0x10", "0x0_0x10", "t/ns/0x10_0x10", "t/ns/0x0_0x100000000"]:
        with pytest.raises(InputError):
            Bundle.parse(bad)


def test_lookup_edges() -> None:
    nb = NamespaceBundles.initial("t/ns", 4)
    assert nb.bundle_for_hash(0).lower == 0
    assert nb.bundle_for_hash(0x3FFFFFFF).upper == 0x40000000
    assert nb.bundle_for_hash(0x40000000).lower == 0x40000000
    # The last range is closed: 0xffffffff belongs to it (docs/model.md).
    assert nb.bundle_for_hash(0xFFFFFFFF).range_name == "0xc0000000_0xffffffff"
    # Bundles that do not start at 0: a hash below the first boundary is out of range (testFindBundle).
    partial = NamespaceBundles.of("t/ns", [0xA0000000, 0xB0000000, 0xFFFFFFFF])
    with pytest.raises(HashOutOfRange):
        partial.bundle_for_hash(0x10)
    open_end = NamespaceBundles.of("t/ns", [0, 0x100])
    with pytest.raises(HashOutOfRange):
        open_end.bundle_for_hash(0x100)


def test_find_bundle_checks_namespace() -> None:
    nb = NamespaceBundles.initial("pulsar/global/ns1", 4)
    assert nb.find_bundle("persistent://pulsar/global/ns1/topic-1").includes("persistent://pulsar/global/ns1/topic-1")
    with pytest.raises(InputError):
        nb.find_bundle("persistent://pulsar/use/ns2/topic-2")


def test_split_in_two_like_pulsar() -> None:
    full = Bundle("pulsar/global/ns1", 0, 0xFFFFFFFF)
    assert [c.range_name for c in full.split_equally(2)] == ["0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"]
    left = full.split_equally(2)[0]
    assert [c.range_name for c in left.split_equally(2)] == ["0x00000000_0x3fffffff", "0x3fffffff_0x7fffffff"]


def test_split_by_fixed_boundary_docs_example() -> None:
    # Pulsar docs: bundle [0x0000, 0x8000, 0xFFFF] split at [0x4000] gives
    # [0x0000,0x4000), [0x4000,0x8000), [0x8000,0xFFFF].
    nb = NamespaceBundles.of("t/ns", [0x0000, 0x8000, 0xFFFF])
    new, children = nb.split(nb.bundles[0], [0x4000])
    assert new.boundaries == (0x0000, 0x4000, 0x8000, 0xFFFF)
    assert [(c.lower, c.upper) for c in children] == [(0x0000, 0x4000), (0x4000, 0x8000)]


def test_split_boundary_must_be_strictly_inside() -> None:
    b = Bundle("t/ns", 0, 0x40000000)
    for bad in (0, 0x40000000, 0x50000000):
        with pytest.raises(InputError):
            b.split_at([bad])
    assert [c.lower for c in b.split_at([10])] == [0, 10]
    assert not Bundle("t/ns", 5, 6).can_split
    assert Bundle("t/ns", 5, 7).can_split


boundary_sets = st.lists(st.integers(1, 0xFFFFFFFE), max_size=30, unique=True).map(
    lambda xs: [0, *sorted(xs), 0xFFFFFFFF]
)


@given(boundary_sets)
def test_bundles_tile_the_full_range(boundaries: list[int]) -> None:
    bundles = NamespaceBundles.of("t/ns", boundaries).bundles
    assert bundles[0].lower == 0 and bundles[-1].upper == 0xFFFFFFFF and bundles[-1].upper_closed
    for a, b in itertools.pairwise(bundles):
        assert a.upper == b.lower


@given(boundary_sets, st.text(min_size=1, max_size=40).filter(lambda s: "/" not in s and s.strip() == s))
def test_every_topic_maps_to_exactly_one_bundle(boundaries: list[int], local: str) -> None:
    nb = NamespaceBundles.of("t/ns", boundaries)
    topic = f"persistent://t/ns/{local}"
    found = nb.find_bundle(topic)
    assert [b for b in nb.bundles if b.includes(topic)] == [found]


@given(
    st.integers(0, 0xFFFFFFFD), st.integers(2, 0xFFFFFFFF), st.lists(st.floats(0.001, 0.999), min_size=1, max_size=5)
)
def test_children_of_a_split_lie_inside_the_parent(lower: int, span: int, cuts: list[float]) -> None:
    upper = min(lower + span, 0xFFFFFFFF)
    if upper - lower < 2:
        return
    parent = Bundle("t/ns", lower, upper)
    points = sorted({min(max(lower + 1, int(lower + f * (upper - lower))), upper - 1) for f in cuts})
    children = parent.split_at(points)
    assert children[0].lower == parent.lower and children[-1].upper == parent.upper
    assert all(parent.lower <= c.lower < c.upper <= parent.upper for c in children)
    assert all(a.upper == b.lower for a, b in itertools.pairwise(children))


def test_overlaps_is_a_shared_hash_range_in_one_namespace() -> None:
    parent = Bundle.parse("t/ns/0x00000000_0x80000000")
    left, right = parent.split_equally(2)
    assert parent.overlaps(left) and left.overlaps(parent) and parent.overlaps(right)
    assert not left.overlaps(right)  # adjacent ranges share no hash: [lower, upper)
    assert not parent.overlaps(Bundle.parse("t/ns/0x80000000_0xffffffff"))
    assert not parent.overlaps(Bundle.parse("t/other/0x00000000_0x80000000"))


def test_a_bundle_covers_itself_and_its_children_not_a_neighbour_or_another_namespace() -> None:
    parent = Bundle.parse("t/ns/0x00000000_0x80000000")
    low, high = parent.split_at([0x40000000])
    assert parent.covers(parent) and parent.covers(low) and parent.covers(high)
    assert not low.covers(parent)
    assert not parent.covers(Bundle.parse("t/ns/0x40000000_0xc0000000"))
    assert not parent.covers(Bundle.parse("t/other/0x00000000_0x40000000"))
