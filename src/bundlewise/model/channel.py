"""The extensible load manager's service-unit state channel records (PIP-192), and the conflict resolver.

Every bundle ("service unit") of the extensible load manager has one ownership record,
``ServiceUnitStateData`` (Pulsar ``extensions/channel/ServiceUnitStateData``), whose ``state`` is a
``ServiceUnitState``:

* ``Init`` (no record, or a tombstone), ``Free`` (semi-terminal), ``Owned`` (terminal),
  ``Assigning``/``Releasing``/``Splitting`` (in flight), ``Deleted`` (semi-terminal).
  In flight = {Assigning, Releasing, Splitting}; active = in flight + {Owned}
  (``ServiceUnitState#isInFlightState``, ``#isActiveState``).
* Legal transitions depend on where the channel lives (``ServiceUnitState#isValidTransition``):
  the system topic (``SystemTopic``) also allows ``Init -> anything`` and ``Free -> Init`` because
  compaction can drop history; the metadata store (``MetadataStore``) only ``Init -> Assigning``.
* A record needs a state, and a state other than ``Free`` needs a non-blank destination or source
  broker.  ``versionId`` is a Java ``long``: it wraps from ``Long.MAX_VALUE`` to ``Long.MIN_VALUE``.
  A new key starts at ``VERSION_ID_INIT = 1``; every change publishes the previous ``versionId + 1``
  (``ServiceUnitStateChannelImpl#getNextVersionId``).  A record built without ``timestamp`` is stamped
  with the wall clock, as Pulsar's convenience constructors do; the channel logic always passes its
  own ``now``.

``should_keep_left(from_, to)`` is ``ServiceUnitStateDataConflictResolver#shouldKeepLeft``: True keeps
the existing value ``from_`` and drops ``to``.  Its rules, in order: a tombstone (``to is None``) is
accepted; versions must grow (the wrap-around ``MAX -> MIN`` counts as growth); a version that skips
one or more is rejected on the metadata store but accepted outright on the system topic (compaction
dropped the values between, so nothing else is checked); on the metadata store a new key must start
at 1 and is then accepted outright; a forced record is accepted; the transition must be legal;
finally the broker checks (``explain_conflict`` names the rule that decided).

``Unload`` and ``Split`` are the commands the channel turns into records (``extensions/models``).
The JSON form of a record is Pulsar's (``state``, ``dstBroker``, ``sourceBroker``,
``splitServiceUnitToDestBroker``, ``force``, ``timestamp``, ``versionId``): ``to_json``/``from_json``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bundlewise.model import fields
from bundlewise.model.errors import InputError

VERSION_ID_INIT = 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


class ServiceUnitState(StrEnum):
    Init = "Init"
    Free = "Free"
    Owned = "Owned"
    Assigning = "Assigning"
    Releasing = "Releasing"
    Splitting = "Splitting"
    Deleted = "Deleted"


class StorageType(StrEnum):
    SystemTopic = "SystemTopic"
    MetadataStore = "MetadataStore"


S = ServiceUnitState
IN_FLIGHT_STATES = frozenset({S.Assigning, S.Releasing, S.Splitting})
_TRANSITIONS: dict[StorageType, dict[ServiceUnitState, frozenset[ServiceUnitState]]] = {
    StorageType.SystemTopic: {
        S.Init: frozenset({S.Free, S.Owned, S.Assigning, S.Releasing, S.Splitting, S.Deleted}),
        S.Free: frozenset({S.Assigning, S.Init}),
        S.Owned: frozenset({S.Splitting, S.Releasing}),
        S.Assigning: frozenset({S.Owned}),
        S.Releasing: frozenset({S.Assigning, S.Free}),
        S.Splitting: frozenset({S.Deleted}),
        S.Deleted: frozenset({S.Init}),
    },
    StorageType.MetadataStore: {
        S.Init: frozenset({S.Assigning}),
        S.Free: frozenset({S.Assigning}),
        S.Owned: frozenset({S.Splitting, S.Releasing}),
        S.Assigning: frozenset({S.Owned}),
        S.Releasing: frozenset({S.Assigning, S.Free}),
        S.Splitting: frozenset({S.Deleted}),
        S.Deleted: frozenset({S.Init}),
    },
}


def _state(value: Any) -> ServiceUnitState:
    if value is None:
        return S.Init
    try:
        return ServiceUnitState(value)
    except ValueError:
        raise ValueError(f"unknown service unit state {value!r}") from None


def storage_type(value: StorageType | str) -> StorageType:
    try:
        return StorageType(value)
    except ValueError:
        raise ValueError(f"storage must be 'SystemTopic' or 'MetadataStore', got {value!r}") from None


def is_in_flight_state(state: ServiceUnitState | str | None) -> bool:
    """Assigning, Releasing or Splitting (``None`` is ``Init``)."""
    return _state(state) in IN_FLIGHT_STATES


def is_active_state(state: ServiceUnitState | str | None) -> bool:
    """In flight, or Owned."""
    s = _state(state)
    return s in IN_FLIGHT_STATES or s is S.Owned


def is_valid_transition(
    from_: ServiceUnitState | str | None,
    to: ServiceUnitState | str | None,
    storage: StorageType | str = StorageType.SystemTopic,
) -> bool:
    """``ServiceUnitState#isValidTransition(from, to, storageType)``; ``None`` is ``Init``."""
    return _state(to) in _TRANSITIONS[storage_type(storage)][_state(from_)]


def java_long(value: int) -> int:
    """``value`` as Java's 64-bit ``long`` arithmetic leaves it (two's complement wrap-around)."""
    return (value - LONG_MIN) % 2**64 + LONG_MIN


def is_blank(text: str | None) -> bool:
    """``StringUtils.isBlank``: None, empty or whitespace only."""
    return text is None or not text.strip()


class ChildMap(Mapping[str, str | None]):
    """An immutable ``{child range: destination broker or None}`` (Java ``Map<String, Optional<String>>``)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str | None]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> str | None:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return repr(self._items)


SPLIT_CHILDREN = 2  # a bundle split always yields two children (Pulsar's ``Split`` record)


def _child_map(value: Mapping[str, str | None] | None) -> ChildMap | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"split children must be a mapping of range to broker, got {value!r}")
    return value if isinstance(value, ChildMap) else ChildMap(value)


def _version(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"version_id must be an integer, got {value!r}")
    return java_long(value)


@dataclass(frozen=True, slots=True, init=False)
class ServiceUnitStateData:
    """One ownership record; immutable, equal when every field is equal (Pulsar's record semantics)."""

    state: ServiceUnitState
    dst_broker: str | None
    source_broker: str | None
    split_service_unit_to_dest_broker: ChildMap | None
    force: bool
    timestamp: int
    version_id: int

    def __init__(
        self,
        state: ServiceUnitState | str,
        dst_broker: str | None,
        source_broker: str | None = None,
        *,
        split_service_unit_to_dest_broker: Mapping[str, str | None] | None = None,
        force: bool = False,
        timestamp: int | None = None,
        version_id: int = VERSION_ID_INIT,
    ) -> None:
        if state is None:
            raise ValueError("state must not be None")
        s = _state(state)
        if s is not S.Free and is_blank(dst_broker) and is_blank(source_broker):
            raise ValueError(f"Empty broker: a {s} record needs a destination or a source broker")
        object.__setattr__(self, "state", s)
        object.__setattr__(self, "dst_broker", dst_broker)
        object.__setattr__(self, "source_broker", source_broker)
        object.__setattr__(self, "split_service_unit_to_dest_broker", _child_map(split_service_unit_to_dest_broker))
        object.__setattr__(self, "force", bool(force))
        object.__setattr__(self, "timestamp", time.time_ns() // 1_000_000 if timestamp is None else int(timestamp))
        object.__setattr__(self, "version_id", _version(version_id))

    def to_json(self) -> dict[str, Any]:
        """Pulsar's JSON object (Jackson bean names, record order)."""
        children = self.split_service_unit_to_dest_broker
        return {
            "state": self.state.value,
            "dstBroker": self.dst_broker,
            "sourceBroker": self.source_broker,
            "splitServiceUnitToDestBroker": None if children is None else dict(children),
            "force": self.force,
            "timestamp": self.timestamp,
            "versionId": self.version_id,
        }

    @classmethod
    def from_json(cls, value: Any, where: str = "ServiceUnitStateData") -> ServiceUnitStateData:
        """Read Pulsar's JSON: unknown fields ignored, wrong types rejected with the field's path.

        Absent fields take Jackson's defaults for the record components: null, ``false``, 0.
        """
        d = fields.obj(value, where)
        state = d.get("state")
        if not isinstance(state, str) or state not in ServiceUnitState.__members__:
            raise InputError(f"expected one of {', '.join(ServiceUnitState)}, got {state!r}", field=f"{where}.state")
        children = d.get("splitServiceUnitToDestBroker")
        if children is not None:
            fields.obj(children, f"{where}.splitServiceUnitToDestBroker")
            for k, v in children.items():
                if v is not None and not isinstance(v, str):
                    raise InputError(
                        f"expected a broker or null, got {v!r}", field=f"{where}.splitServiceUnitToDestBroker.{k}"
                    )
        try:
            return cls(
                state,
                fields.text(d, "dstBroker", where),
                fields.text(d, "sourceBroker", where),
                split_service_unit_to_dest_broker=children,
                force=fields.flag(d, "force", where, False),
                timestamp=_long(d, "timestamp", where),
                version_id=_long(d, "versionId", where),
            )
        except InputError:
            raise
        except ValueError as e:
            raise InputError(f"expected a valid record: {e}", field=where) from None


def _long(d: Mapping[str, Any], key: str, where: str) -> int:
    """A Java ``long`` field: a whole number in range (absent or null is 0, as for a primitive)."""
    value = d.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not LONG_MIN <= value <= LONG_MAX:
        raise InputError(f"expected a whole number in the Java long range, got {value!r}", field=f"{where}.{key}")
    return value


def state_of(data: ServiceUnitStateData | None) -> ServiceUnitState:
    """``ServiceUnitStateData.state(data)``: no record means ``Init``."""
    return S.Init if data is None else data.state


def next_version_id(data: ServiceUnitStateData | None) -> int:
    """``getNextVersionId``: 1 for a new key, else the current version + 1 (wrapping)."""
    return VERSION_ID_INIT if data is None else java_long(data.version_id + 1)


@dataclass(frozen=True, slots=True)
class Unload:
    """Unload (``dest_broker`` None) or transfer a service unit (Pulsar ``models/Unload``)."""

    source_broker: str
    service_unit: str
    dest_broker: str | None = None
    force: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        if self.source_broker is None:
            raise ValueError("source_broker must not be None")
        if self.service_unit is None:
            raise ValueError("service_unit must not be None")

    @property
    def is_transfer(self) -> bool:
        """``isTransferCommand(Unload)``: a destination is present."""
        return self.dest_broker is not None


@dataclass(frozen=True, slots=True)
class Split:
    """Split a service unit into the children named by range (Pulsar ``models/Split``).

    A bundle splits into exactly two children: a children map of any other size is refused, as Pulsar's
    ``Split`` constructor refuses it with an ``IllegalArgumentException`` (``None``, no map, stays allowed).
    """

    service_unit: str
    source_broker: str | None
    split_service_unit_to_dest_broker: Mapping[str, str | None] | None

    def __post_init__(self) -> None:
        if self.service_unit is None:
            raise ValueError("service_unit must not be None")
        children = _child_map(self.split_service_unit_to_dest_broker)
        if children is not None and len(children) != SPLIT_CHILDREN:
            raise ValueError(f"a split names exactly {SPLIT_CHILDREN} children, got {len(children)}")
        object.__setattr__(self, "split_service_unit_to_dest_broker", children)


def _changed(a: ServiceUnitStateData, b: ServiceUnitStateData) -> bool:
    """The resolver's ``notEquals``: destination or source differs."""
    return a.dst_broker != b.dst_broker or a.source_broker != b.source_broker


def _broker_check(f: ServiceUnitStateData, t: ServiceUnitStateData) -> str | None:
    """Why the brokers of a legal transition ``f -> t`` are inconsistent, or None when they agree.

    A ``from`` record without a destination makes Pulsar's ``equals`` throw; the write then fails,
    which is a rejection here.
    """
    pair = (f.state, t.state)
    if pair == (S.Owned, S.Splitting):
        if not is_blank(t.dst_broker):
            return "Owned -> Splitting must not name a destination"
        if f.dst_broker is None or f.dst_broker != t.source_broker:
            return "Owned -> Splitting must come from the owner (source == owner)"
    elif pair == (S.Owned, S.Releasing):
        if is_blank(t.source_broker):
            return "Owned -> Releasing needs a source broker"
        if f.dst_broker is None or f.dst_broker != t.source_broker:
            return "Owned -> Releasing must be released by the owner (source == owner)"
        if f.dst_broker == t.dst_broker:
            return "Owned -> Releasing must not transfer to the owner itself"
    elif pair == (S.Assigning, S.Owned):
        if _changed(f, t):
            return "Assigning -> Owned must keep destination and source"
    elif pair == (S.Releasing, S.Assigning):
        if is_blank(t.dst_broker):
            return "Releasing -> Assigning needs a destination"
        if _changed(f, t):
            return "Releasing -> Assigning must keep destination and source"
    elif pair in ((S.Releasing, S.Free), (S.Splitting, S.Deleted)):
        if _changed(f, t):
            return f"{f.state} -> {t.state} must keep destination and source"
    elif pair == (S.Free, S.Assigning) and (not is_blank(t.source_broker) or is_blank(t.dst_broker)):
        return "Free -> Assigning needs a destination and no source"
    return None


def explain_conflict(
    from_: ServiceUnitStateData | None,
    to: ServiceUnitStateData | None,
    *,
    storage: StorageType | str = StorageType.SystemTopic,
    check_brokers: bool = True,
) -> tuple[bool, str]:
    """``(keep_left, the rule that decided)`` -- the resolver with its reason."""
    st = storage_type(storage)
    if to is None:
        return False, "accepted: a tombstone is always accepted"
    if from_ is not None:
        wrapped = from_.version_id == LONG_MAX and to.version_id == LONG_MIN
        if not wrapped:
            if from_.version_id >= to.version_id:
                return True, f"rejected: version {to.version_id} is not above the current {from_.version_id}"
            if from_.version_id < to.version_id - 1:
                if st is StorageType.MetadataStore:
                    return True, f"rejected: version {to.version_id} skips versions after {from_.version_id}"
                return False, f"accepted: version {to.version_id} skips versions (the topic was compacted)"
    elif st is StorageType.MetadataStore:
        if to.version_id != VERSION_ID_INIT:
            return True, f"rejected: a new key must start at version 1, got {to.version_id}"
        return False, "accepted: a new key at version 1"
    if to.force:
        return False, "accepted: forced override"
    prev = state_of(from_)
    if not is_valid_transition(prev, to.state, st):
        return True, f"rejected: {prev} -> {to.state} is not a legal transition on the {st} channel"
    if check_brokers and from_ is not None:
        why = _broker_check(from_, to)
        if why is not None:
            return True, f"rejected: {why}"
    return False, f"accepted: {prev} -> {to.state}"


def should_keep_left(
    from_: ServiceUnitStateData | None,
    to: ServiceUnitStateData | None,
    *,
    storage: StorageType | str = StorageType.SystemTopic,
    check_brokers: bool = True,
) -> bool:
    """``ServiceUnitStateDataConflictResolver#shouldKeepLeft``: True keeps ``from_`` and rejects ``to``."""
    return explain_conflict(from_, to, storage=storage, check_brokers=check_brokers)[0]
