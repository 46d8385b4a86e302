"""Decisions as data: what a load manager decides, with a label, a reason and a text a person can read.

Pulsar's extensible load manager labels every decision (``UnloadDecision``, ``SplitDecision``):
``Label`` is ``Success``/``Skip``/``Failure`` and the reason an enum; the modular strategies only log
text.  bundlewise gives every decision both: the enum (counted, compared) and ``reason``, the text the
commands print (a modular strategy's figures, or the enum's name for TransferShedder).

* ``Unload``: move ``bundle`` off ``broker``; ``destination`` when one is planned or chosen.  A
  ``Skip`` unload is one the leader planned and did not carry out (``reason`` says why).
* ``SplitDecision``: split ``bundle`` of ``broker``; ``reasons`` are the conditions met, in Pulsar's
  order (the modular leader reports all, the extensible strategy the first).  Once carried out it
  also names the ``algorithm`` and the ``children``, and -- when the owner had its topics' rates -- each
  child's ``measured`` load (the sum of its topics' stats), so placement need not guess a child's share.
* ``MergeDecision``: merge adjacent ``parts`` of a namespace into ``bundle``, owned afterwards by
  ``broker`` (None when no part had an owner), to make room under the namespace's bundle cap for the
  split of ``unblocks``.  Pulsar has no merge: only bundlewise's own strategy decides one
  (docs/balanced.md, Merge).
* ``SplitStep``: what the leader's split step decides at once: merges first, then splits.
* ``Assignment``: ``bundle`` goes to ``broker`` at a lookup; ``best`` is every broker the strategy
  would have picked from at random.
* ``Logged``: one line of ``decisions.jsonl``: a decision with the strategy, the tick and the time, for an
  unload the throughput moved and whether it is a flap, and in a live run the broker that decided it.  A
  merge's line has the type ``merge``.  The line's JSON is written and read in one place,
  ``bundlewise.results.decisions``.

The decisions' ``to_json`` methods give the commands' field names (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bundlewise.model.load import NamespaceBundleStats


class Label(StrEnum):
    """``UnloadDecision.Label`` / ``SplitDecision.Label``."""

    SUCCESS = "Success"
    SKIP = "Skip"
    FAILURE = "Failure"


class UnloadReason(StrEnum):
    """``UnloadDecision.Reason``."""

    OVERLOADED = "Overloaded"
    UNDERLOADED = "Underloaded"
    BALANCED = "Balanced"
    NO_BUNDLES = "NoBundles"
    COOL_DOWN = "CoolDown"
    OUTDATED_DATA = "OutDatedData"
    NO_LOAD_DATA = "NoLoadData"
    NO_BROKERS = "NoBrokers"
    HIT_COUNT = "HitCount"
    ADMIN = "Admin"
    UNKNOWN = "Unknown"


class SplitReason(StrEnum):
    """``SplitDecision.Reason``: the four conditions first, in the order they are checked."""

    TOPICS = "Topics"
    SESSIONS = "Sessions"
    MSG_RATE = "MsgRate"
    BANDWIDTH = "Bandwidth"
    ADMIN = "Admin"
    BALANCED = "Balanced"
    UNKNOWN = "Unknown"


class MergeReason(StrEnum):
    """Why bundles merge (bundlewise's own: Pulsar never merges)."""

    BUNDLE_CAP = "BundleCap"  # the namespace is at loadBalancerNamespaceMaximumBundles and a hot bundle waits


SPLIT_CONDITIONS = (SplitReason.TOPICS, SplitReason.SESSIONS, SplitReason.MSG_RATE, SplitReason.BANDWIDTH)


def counter_key(label: Label, reason: StrEnum) -> str:
    """Pulsar's metric label ``Label.Reason``, e.g. ``Success.Overloaded``."""
    return f"{label}.{reason}"


@dataclass(frozen=True, slots=True)
class Unload:
    """One unload (or transfer) of a bundle; ``reason`` is the text, ``cause`` Pulsar's enum."""

    broker: str
    bundle: str
    reason: str
    destination: str | None = None
    label: Label = Label.SUCCESS
    cause: UnloadReason = UnloadReason.OVERLOADED

    @classmethod
    def of(cls, broker: str, bundle: str, cause: UnloadReason, destination: str | None = None) -> Unload:
        """A decision whose text is its reason's name (the extensible vocabulary)."""
        return cls(broker, bundle, str(cause), destination, Label.SUCCESS, cause)

    def to(self, destination: str | None) -> Unload:
        """The same decision with ``destination``."""
        return Unload(self.broker, self.bundle, self.reason, destination, self.label, self.cause)

    def skipped(self, why: str) -> Unload:
        """The same decision, not carried out, because ``why``."""
        return Unload(self.broker, self.bundle, why, None, Label.SKIP, self.cause)

    @property
    def counter(self) -> str:
        return counter_key(self.label, self.cause)

    def to_json(self) -> dict[str, Any]:
        if self.label is Label.SKIP:
            return {"broker": self.broker, "bundle": self.bundle, "reason": self.reason}
        return {"broker": self.broker, "bundle": self.bundle, "destination": self.destination, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SplitDecision:
    """A bundle to split, with the conditions it met; ``algorithm``/``children`` once carried out."""

    bundle: str
    broker: str
    reasons: tuple[SplitReason, ...]
    detail: str = ""  # the conditions with their figures
    label: Label = Label.SUCCESS
    algorithm: str | None = None
    children: tuple[str, ...] = ()
    measured: tuple[NamespaceBundleStats, ...] = ()  # each child's load from its topics, in ``children`` order

    @property
    def reason(self) -> SplitReason:
        """The first condition met (the extensible strategy's ``SplitDecision.reason``)."""
        return self.reasons[0]

    def done(
        self, algorithm: str, children: Sequence[str], measured: Sequence[NamespaceBundleStats] = ()
    ) -> SplitDecision:
        """The split carried out with ``algorithm`` into ``children``, with their ``measured`` loads if known."""
        if measured and len(measured) != len(children):
            raise ValueError(f"split of {self.bundle}: {len(measured)} measured loads for {len(children)} children")
        return SplitDecision(
            self.bundle, self.broker, self.reasons, self.detail, self.label, algorithm, tuple(children), tuple(measured)
        )

    def measured_children(self) -> dict[str, NamespaceBundleStats]:
        """Child -> its measured load (empty when the split carried none)."""
        return dict(zip(self.children, self.measured, strict=True)) if self.measured else {}

    def to_json(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "broker": self.broker, "reasons": [str(r) for r in self.reasons]}


@dataclass(frozen=True, slots=True)
class MergeDecision:
    """Adjacent ``parts`` (in hash order) of one namespace become ``bundle``, owned by ``broker``.

    ``owners`` are the parts' owners (None: unowned); a part owned by another broker than ``broker`` moves
    (its topics are unavailable as in an unload).  ``unblocks`` is the hot bundle whose split it makes room for."""

    bundle: str
    broker: str | None
    parts: tuple[str, ...]
    owners: tuple[str | None, ...]
    unblocks: str
    detail: str = ""  # the pair's figures against the split thresholds
    label: Label = Label.SUCCESS
    cause: MergeReason = MergeReason.BUNDLE_CAP

    def __post_init__(self) -> None:
        if len(self.parts) < 2 or len(self.owners) != len(self.parts):
            raise ValueError(f"merge into {self.bundle}: need 2 or more parts, each with its owner")

    @property
    def moved(self) -> tuple[str, ...]:
        """The parts whose topics change broker: owned, by another broker than the merged bundle's."""
        return tuple(p for p, o in zip(self.parts, self.owners, strict=True) if o is not None and o != self.broker)

    def done(self, owners: Sequence[str | None], broker: str | None, note: str = "") -> MergeDecision:
        """The merge as carried out: the parts' actual owners and the merged bundle's owner."""
        return MergeDecision(
            self.bundle, broker, self.parts, tuple(owners), self.unblocks, self.detail + note, self.label, self.cause
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "broker": self.broker,
            "parts": list(self.parts),
            "owners": list(self.owners),
            "unblocks": self.unblocks,
            "reason": str(self.cause),
        }


@dataclass(frozen=True, slots=True)
class SplitStep:
    """The leader's split step: merges (applied first) and splits."""

    merges: tuple[MergeDecision, ...] = ()
    splits: tuple[SplitDecision, ...] = ()


@dataclass(frozen=True, slots=True)
class Assignment:
    """A lookup's choice: ``broker`` (None: no broker available), among ``best``."""

    bundle: str
    broker: str | None
    best: tuple[str, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"selected": self.broker, "best": list(self.best)}


Decision = Unload | SplitDecision | MergeDecision | Assignment


@dataclass(frozen=True, slots=True)
class Logged:
    """One line of ``decisions.jsonl``."""

    strategy: str
    tick: int
    time_ms: int
    decision: Decision
    throughput: float | None = None  # an unload: in + out bytes/s of the bundle when it moved
    flap: bool | None = None  # an unload: the bundle had moved within the flap window before
    note: str = ""  # appended to the reason (a split whose children were unloaded)
    leader: str | None = None  # the broker that decided it (a live run); None in a simulation

    @property
    def type(self) -> str:
        if isinstance(self.decision, Unload):
            return "unload"
        if isinstance(self.decision, SplitDecision):
            return "split"
        if isinstance(self.decision, MergeDecision):
            return "merge"
        return "assignment"
