"""Broker events of a scenario: who is up at the start, and which events change anything.

**The rule** (docs/simulator.md, Events):

* A broker's *first* event decides how it starts: a listed broker (``[[brokers]]``) whose first event is
  ``add`` starts absent and joins at that event; one whose first event is ``remove`` or ``restart`` (or that
  has no event) is up at the start.  A broker named only by an ``add`` event starts absent.
* Events apply in time order; at one time, a restart's return comes first, then the file's events in file
  order.  ``add`` starts a broker that is down; ``remove`` stops one that is up, for good (until an ``add``);
  ``restart`` stops one that is up and starts it again, empty, ``down_for`` later (its *return*).
* An event that finds the broker already in the state it asks for changes nothing: it is dropped with a
  warning (a ``restart`` of a broker that is down has no return either; a return that finds the broker up
  again, because an ``add`` brought it back early, is dropped with a warning too).

``initial_brokers`` applies the first-event rule; ``transitions`` walks the events and returns the ones that
change a broker's state, with the warnings.  Pulsar has no such events: they stand for an operator starting,
stopping or bouncing a broker process (``ModularLoadManagerImpl#start``/``#stop``, an expired session).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bundlewise.model.durations import format_duration


class EventLike(Protocol):
    @property
    def at(self) -> int: ...
    @property
    def action(self) -> str: ...
    @property
    def broker(self) -> str: ...
    @property
    def down_for(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Transition:
    """A change of one broker's state: ``add``/``return`` start it, ``remove``/``restart`` stop it."""

    at: int
    action: str
    broker: str
    event: int  # the index of the scenario event it comes from (a return: its restart's)

    @property
    def starts(self) -> bool:
        return self.action in ("add", "return")


def initial_brokers(listed: Sequence[str], events: Iterable[EventLike]) -> tuple[str, ...]:
    """The listed brokers up at time 0: those whose first event (in time order) is not ``add``."""
    first: dict[str, str] = {}
    for e in sorted(events, key=lambda ev: ev.at):
        first.setdefault(e.broker, e.action)
    return tuple(b for b in listed if first.get(b) != "add")


def _describe(e: EventLike, i: int) -> str:
    return f"events[{i}] ({e.action} {e.broker} at {format_duration(e.at)})"


def transitions(initial: Iterable[str], events: Sequence[EventLike]) -> tuple[list[Transition], list[str]]:
    """The events that change a broker's state, in the order they apply, and one warning per event (or
    return) that changes nothing."""
    up = set(initial)
    # (time, 0 for a return / 1 for a file event, sequence) orders the queue
    queue: list[tuple[int, int, int, str, str, int]] = [
        (e.at, 1, i, e.action, e.broker, i) for i, e in sorted(enumerate(events), key=lambda p: p[1].at)
    ]
    heapq.heapify(queue)
    out: list[Transition] = []
    warnings: list[str] = []
    seq = len(events)
    while queue:
        at, _, _, action, broker, index = heapq.heappop(queue)
        is_up = broker in up
        if action in ("add", "return"):
            if is_up:
                what = _describe(events[index], index)
                if action == "add":
                    warnings.append(f"{what}: {broker} is already up; the event changes nothing")
                else:
                    warnings.append(
                        f"{what}: {broker} is up again before its return at {format_duration(at)}; the return"
                        " changes nothing"
                    )
                continue
            up.add(broker)
        else:
            if not is_up:
                warnings.append(f"{_describe(events[index], index)}: {broker} is not up; the event changes nothing")
                continue
            up.discard(broker)
            if action == "restart":
                heapq.heappush(queue, (at + events[index].down_for, 0, seq, "return", broker, index))
                seq += 1
        out.append(Transition(at, action, broker, index))
    return out, warnings
