"""The channel's records: states, ``ServiceUnitStateData``, ``Unload``, ``Split`` and their JSON.

Each test names the Pulsar test method it mirrors (``pulsar-broker/src/test/java/org/apache/pulsar/
broker/loadbalance/extensions/channel/``): ``ServiceUnitStateTest`` (the StorageType variant),
``ServiceUnitStateDataTest`` (the variant with the seven-component record and ``equalsTest``),
``models/UnloadTest`` (fe4cf5d4) and ``models/SplitTest`` (4593988c).
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import pytest

from bundlewise.model.channel import (
    LONG_MAX,
    LONG_MIN,
    VERSION_ID_INIT,
    ServiceUnitState,
    ServiceUnitStateData,
    Split,
    StorageType,
    Unload,
    is_active_state,
    is_in_flight_state,
    is_valid_transition,
    java_long,
    next_version_id,
    state_of,
)
from bundlewise.model.errors import InputError

Init, Free, Owned, Assigning, Releasing, Splitting, Deleted = (
    ServiceUnitState.Init,
    ServiceUnitState.Free,
    ServiceUnitState.Owned,
    ServiceUnitState.Assigning,
    ServiceUnitState.Releasing,
    ServiceUnitState.Splitting,
    ServiceUnitState.Deleted,
)
ALL = list(ServiceUnitState)


# --- ServiceUnitStateTest ------------------------------------------------------------------------


def test_members_in_pulsar_order():
    assert [s.value for s in ServiceUnitState] == [
        "Init",
        "Free",
        "Owned",
        "Assigning",
        "Releasing",
        "Splitting",
        "Deleted",
    ]


def test_in_flights():
    """``ServiceUnitStateTest#testInFlights``."""
    assert [is_in_flight_state(s) for s in ALL] == [False, False, False, True, True, True, False]
    assert is_in_flight_state(None) is False  # no record is Init


def test_active():
    """``ServiceUnitStateTest#testActive``."""
    assert [is_active_state(s) for s in ALL] == [False, False, True, True, True, True, False]
    assert is_active_state(None) is False


# The expected legal transitions, row by row, exactly as the two Java tests assert them.
SYSTEM_TOPIC_LEGAL = {
    Init: {Free, Owned, Assigning, Releasing, Splitting, Deleted},
    Free: {Init, Assigning},
    Assigning: {Owned},
    Owned: {Releasing, Splitting},
    Releasing: {Free, Assigning},
    Splitting: {Deleted},
    Deleted: {Init},
}
METADATA_STORE_LEGAL = {
    Init: {Assigning},
    Free: {Assigning},
    Assigning: {Owned},
    Owned: {Releasing, Splitting},
    Releasing: {Free, Assigning},
    Splitting: {Deleted},
    Deleted: {Init},
}


@pytest.mark.parametrize(("from_", "to"), list(itertools.product(ALL, ALL)))
def test_transitions_over_system_topic(from_, to):
    """``ServiceUnitStateTest#testTransitionsOverSystemTopic``: all 49 pairs."""
    assert is_valid_transition(from_, to, StorageType.SystemTopic) is (to in SYSTEM_TOPIC_LEGAL[from_])
    assert is_valid_transition(from_, to, "SystemTopic") is (to in SYSTEM_TOPIC_LEGAL[from_])


@pytest.mark.parametrize(("from_", "to"), list(itertools.product(ALL, ALL)))
def test_transitions_over_metadata_store(from_, to):
    """``ServiceUnitStateTest#testTransitionsOverMetadataStore``: all 49 pairs."""
    assert is_valid_transition(from_, to, StorageType.MetadataStore) is (to in METADATA_STORE_LEGAL[from_])
    assert is_valid_transition(from_, to, "MetadataStore") is (to in METADATA_STORE_LEGAL[from_])


def test_legal_transition_counts():
    st = sum(is_valid_transition(a, b, "SystemTopic") for a, b in itertools.product(ALL, ALL))
    ms = sum(is_valid_transition(a, b, "MetadataStore") for a, b in itertools.product(ALL, ALL))
    assert (st, ms) == (15, 9)


def test_default_storage_is_the_system_topic_and_unknown_storage_is_rejected():
    assert is_valid_transition(Init, Owned) is True  # SystemTopic rules
    with pytest.raises(ValueError, match="SystemTopic"):
        is_valid_transition(Init, Owned, "ZooKeeper")


# --- ServiceUnitStateDataTest --------------------------------------------------------------------


def test_constructors():
    """``ServiceUnitStateDataTest#testConstructors``: brokers in order, a wall-clock stamp by default."""
    before = time.time_ns() // 1_000_000
    data1 = ServiceUnitStateData(Owned, "A", version_id=1)
    assert (data1.state, data1.dst_broker, data1.source_broker) == (Owned, "A", None)
    assert data1.timestamp >= before > 0
    time.sleep(0.01)
    data2 = ServiceUnitStateData(Assigning, "A", "B", version_id=1)
    assert (data2.state, data2.dst_broker, data2.source_broker) == (Assigning, "A", "B")
    assert data2.timestamp > data1.timestamp


def test_defaults():
    d = ServiceUnitStateData(Owned, "A", timestamp=5)
    assert (d.split_service_unit_to_dest_broker, d.force, d.timestamp, d.version_id) == (None, False, 5, 1)
    assert VERSION_ID_INIT == 1


def test_null_state():
    """``ServiceUnitStateDataTest#testNullState`` (Java: NullPointerException)."""
    with pytest.raises(ValueError):
        ServiceUnitStateData(None, "A", version_id=1)


def test_null_brokers():
    """``ServiceUnitStateDataTest#testNullBrokers`` (Java: IllegalArgumentException)."""
    with pytest.raises(ValueError, match="Empty broker"):
        ServiceUnitStateData(Owned, None, None, version_id=1)


def test_empty_brokers():
    """``ServiceUnitStateDataTest#testEmptyBrokers``; blank (whitespace) counts as empty too."""
    with pytest.raises(ValueError, match="Empty broker"):
        ServiceUnitStateData(Owned, "", "", version_id=1)
    with pytest.raises(ValueError, match="Empty broker"):
        ServiceUnitStateData(Owned, "  ", None, version_id=1)


@pytest.mark.parametrize("state", [s for s in ALL if s is not Free])
def test_every_state_but_free_needs_a_broker(state):
    with pytest.raises(ValueError):
        ServiceUnitStateData(state, None, version_id=1)
    assert ServiceUnitStateData(state, None, "src", version_id=1).source_broker == "src"
    assert ServiceUnitStateData(state, "dst", None, version_id=1).dst_broker == "dst"


def test_free_may_name_no_broker():
    assert ServiceUnitStateData(Free, None, None, version_id=1).state is Free


def test_unknown_state_is_rejected_and_names_are_accepted():
    assert ServiceUnitStateData("Owned", "A").state is Owned
    with pytest.raises(ValueError, match="unknown service unit state"):
        ServiceUnitStateData("Transferring", "A")


def test_zero_version_id():
    """``ServiceUnitStateDataTest#testZeroVersionId``: ``Long.MAX_VALUE + 1`` wraps to ``Long.MIN_VALUE``."""
    d = ServiceUnitStateData(Owned, "A", version_id=LONG_MAX + 1)
    assert d.version_id == LONG_MIN == -(2**63)
    assert ServiceUnitStateData(Owned, "A", version_id=LONG_MAX + 2).version_id == LONG_MIN + 1
    assert ServiceUnitStateData(Owned, "A", version_id=LONG_MIN - 1).version_id == LONG_MAX


def test_version_id_must_be_an_integer():
    with pytest.raises(ValueError):
        ServiceUnitStateData(Owned, "A", version_id=1.5)
    with pytest.raises(ValueError):
        ServiceUnitStateData(Owned, "A", version_id=True)


def test_java_long_and_next_version():
    assert java_long(LONG_MAX + 1) == LONG_MIN
    assert java_long(2**64 + 7) == 7
    assert next_version_id(None) == 1
    assert next_version_id(ServiceUnitStateData(Owned, "A", version_id=41)) == 42
    assert next_version_id(ServiceUnitStateData(Owned, "A", version_id=LONG_MAX)) == LONG_MIN
    assert state_of(None) is Init
    assert state_of(ServiceUnitStateData(Deleted, "A")) is Deleted


def test_equals():
    """``ServiceUnitStateDataTest#equalsTest``: every component takes part in equality."""
    d1 = ServiceUnitStateData(
        Assigning, "A", "B", split_service_unit_to_dest_broker={"A": "B"}, force=True, timestamp=0, version_id=1
    )
    d2 = ServiceUnitStateData(
        Assigning, "A", "B", split_service_unit_to_dest_broker={"A": "B"}, force=True, timestamp=0, version_id=1
    )
    assert d1 == d2 and hash(d1) == hash(d2)
    d3 = ServiceUnitStateData(Assigning, "C", "B", version_id=1)
    d4 = ServiceUnitStateData(
        Assigning, "A", "B", split_service_unit_to_dest_broker={"A": "C"}, force=True, timestamp=0, version_id=1
    )
    assert d1 != d3
    assert d1 != d4
    d5 = dataclasses.replace(d1, version_id=2)
    assert d1 != d5
    d6 = dataclasses.replace(d1, dst_broker="C")
    assert d1 != d6


def test_record_is_frozen():
    d = ServiceUnitStateData(Owned, "A", timestamp=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.state = Free  # type: ignore[misc]
    assert d.split_service_unit_to_dest_broker is None
    s = ServiceUnitStateData(Splitting, None, "A", split_service_unit_to_dest_broker={"x": None}, timestamp=1)
    assert s.split_service_unit_to_dest_broker == {"x": None}
    with pytest.raises(TypeError):
        s.split_service_unit_to_dest_broker["x"] = "B"  # type: ignore[index]


# --- JSON ----------------------------------------------------------------------------------------


def test_json_write_and_read():
    """``ServiceUnitStateDataTest#jsonWriteAndReadTest``: a round trip gives an equal record."""
    src = ServiceUnitStateData(Assigning, "A", "B", version_id=1)
    assert ServiceUnitStateData.from_json(src.to_json()) == src


def test_json_shape_is_pulsars():
    d = ServiceUnitStateData(
        Owned, "broker-2.pulsar:8080", "broker-1.pulsar:8080", timestamp=1700000100456, version_id=7
    )
    assert d.to_json() == {
        "state": "Owned",
        "dstBroker": "broker-2.pulsar:8080",
        "sourceBroker": "broker-1.pulsar:8080",
        "splitServiceUnitToDestBroker": None,
        "force": False,
        "timestamp": 1700000100456,
        "versionId": 7,
    }
    assert list(d.to_json()) == [
        "state",
        "dstBroker",
        "sourceBroker",
        "splitServiceUnitToDestBroker",
        "force",
        "timestamp",
        "versionId",
    ]


def test_json_split_record_and_unknown_fields():
    raw = {
        "state": "Splitting",
        "dstBroker": None,
        "sourceBroker": "broker-1.pulsar:8080",
        "splitServiceUnitToDestBroker": {"0x00000000_0x20000000": None, "0x20000000_0x40000000": "b2:8080"},
        "force": False,
        "timestamp": 1700000200000,
        "versionId": 3,
        "somethingNew": {"ignored": True},
    }
    d = ServiceUnitStateData.from_json(raw)
    assert d.state is Splitting and d.version_id == 3 and d.source_broker == "broker-1.pulsar:8080"
    assert d.split_service_unit_to_dest_broker == {"0x00000000_0x20000000": None, "0x20000000_0x40000000": "b2:8080"}
    assert ServiceUnitStateData.from_json(d.to_json()) == d


def test_json_absent_fields_take_javas_defaults():
    d = ServiceUnitStateData.from_json({"state": "Free"})
    assert (d.dst_broker, d.source_broker, d.force, d.timestamp, d.version_id) == (None, None, False, 0, 0)


def test_json_long_extremes_survive():
    raw = ServiceUnitStateData(Owned, "A", timestamp=LONG_MAX, version_id=LONG_MIN).to_json()
    d = ServiceUnitStateData.from_json(raw)
    assert (d.timestamp, d.version_id) == (LONG_MAX, LONG_MIN)


@pytest.mark.parametrize(
    ("raw", "field", "expect"),
    [
        ({"state": "owned", "dstBroker": "a"}, "state", "expected one of"),
        ({"dstBroker": "a"}, "state", "expected one of"),
        ({"state": 3, "dstBroker": "a"}, "state", "expected one of"),
        ({"state": "Owned", "dstBroker": 5}, "dstBroker", "expected a string"),
        ({"state": "Owned", "dstBroker": "a", "sourceBroker": []}, "sourceBroker", "expected a string"),
        ({"state": "Owned", "dstBroker": "a", "force": "yes"}, "force", "expected true or false"),
        ({"state": "Owned", "dstBroker": "a", "versionId": "7"}, "versionId", "whole number"),
        ({"state": "Owned", "dstBroker": "a", "versionId": 1.5}, "versionId", "whole number"),
        ({"state": "Owned", "dstBroker": "a", "versionId": 2**63}, "versionId", "Java long"),
        ({"state": "Owned", "dstBroker": "a", "timestamp": True}, "timestamp", "whole number"),
        (
            {"state": "Owned", "dstBroker": "a", "splitServiceUnitToDestBroker": []},
            "splitServiceUnitToDestBroker",
            "object",
        ),
        (
            {"state": "Owned", "dstBroker": "a", "splitServiceUnitToDestBroker": {"r": 1}},
            "splitServiceUnitToDestBroker.r",
            "broker or null",
        ),
        ({"state": "Owned"}, "", "Empty broker"),
    ],
)
def test_json_wrong_types_are_rejected_naming_the_field(raw, field, expect):
    with pytest.raises(InputError, match=expect) as e:
        ServiceUnitStateData.from_json(raw, "p11.json")
    assert e.value.field == ("p11.json" + (f".{field}" if field else ""))
    assert str(e.value).startswith("p11.json")


def test_json_not_an_object():
    with pytest.raises(InputError, match="JSON object"):
        ServiceUnitStateData.from_json(["Owned"], "x")


# --- models/UnloadTest, models/SplitTest ---------------------------------------------------------


def test_unload_constructors():
    """``UnloadTest#testConstructors``."""
    unload1 = Unload("A", "B")
    assert (unload1.source_broker, unload1.service_unit, unload1.dest_broker) == ("A", "B", None)
    assert unload1.is_transfer is False and unload1.force is False
    unload2 = Unload("A", "B", "C")
    assert (unload2.source_broker, unload2.service_unit, unload2.dest_broker) == ("A", "B", "C")
    assert unload2.is_transfer is True


def test_unload_null_source_broker():
    """``UnloadTest#testNullSourceBroker``."""
    with pytest.raises(ValueError):
        Unload(None, "A")


def test_unload_null_service_unit():
    """``UnloadTest#testNullServiceUnit``."""
    with pytest.raises(ValueError):
        Unload("A", None)


def test_split_constructor():
    """``SplitTest#testConstructor`` (two children, as the ``Split`` record requires since Pulsar 3.0)."""
    mapping = {"C": "test", "D": "test"}
    split = Split("A", "B", mapping)
    assert (split.service_unit, split.source_broker) == ("A", "B")
    assert split.split_service_unit_to_dest_broker == mapping


@pytest.mark.parametrize("children", [{}, {"C": "test"}, {"C": "test", "D": "test", "E": "test"}])
def test_split_refuses_anything_but_two_children(children: dict[str, str]) -> None:
    """``SplitTest#testInvalidSplitServiceUnitToDestBroker``: none, one or three children is an
    ``IllegalArgumentException`` in Pulsar's ``Split`` constructor."""
    with pytest.raises(ValueError, match=f"exactly 2 children, got {len(children)}"):
        Split("A", "B", children)


def test_split_null_bundle():
    """``SplitTest#testNullBundle``."""
    with pytest.raises(ValueError):
        Split(None, "A", {})


def test_split_allows_no_source_and_no_children():
    assert Split("A", None, None).split_service_unit_to_dest_broker is None
