"""When this broker served each bundle: intervals on the machine's monotonic clock.

A fault observer that samples ``ownedNamespaces`` twenty times a second sees a broker's claims at single
instants.  It cannot tell a handover that happened between two answers of one round (the old owner answered
before it let go, the new one after it took over) from two brokers serving at once, and it misses an
ownership shorter than a round (a transfer undone by an unload 25 ms later).  The journal gives it the
intervals themselves:

* an interval **opens** when the broker's serving rule can first hold for the bundle -- the extensible channel
  confirms its ownership in the current session, the modular ownership cache takes the bundle's lock -- and
  **closes** when the rule stops holding by an event: the record moves on (``Releasing``, another owner, a
  tombstone), the bundle is disabled for an unload, its lock is released or expires;
* an interval is never shorter than the time the broker served: a broker whose fencing deadline lapsed, or
  whose session changed, stops serving before the journal says so, and one that serves again after such a gap
  stays inside the same interval.  So two intervals that do not intersect prove the two brokers never served
  at once; two that do are only a candidate overlap.

The stamps are ``live.broker.clock.machine_monotonic``: CLOCK_MONOTONIC, one clock for every process of the
machine, read by system call, so the observer compares the intervals of brokers in other processes with its
own ``time.monotonic()`` instants -- a broker whose clocks libfaketime slows (the skewed-clock fault)
included.  The journal keeps the last ``limit`` closed intervals.  ``GET /admin/v2/bundlewise/serving-journal``
returns ``to_json()``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from bundlewise.live.broker.clock import machine_monotonic

LIMIT = 10_000


class ServingJournal:
    """Open intervals (bundle -> since) and the last closed ones (bundle, since, until)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.open: dict[str, float] = {}
        self.closed: deque[tuple[str, float, float]] = deque(maxlen=limit)

    def start(self, bundle: str, at: float | None = None) -> None:
        """The broker may serve ``bundle`` from now (an interval already open stays as it is)."""
        if bundle not in self.open:
            self.open[bundle] = machine_monotonic() if at is None else at

    def stop(self, bundle: str, at: float | None = None) -> None:
        """The broker stopped serving ``bundle`` (nothing when no interval is open)."""
        since = self.open.pop(bundle, None)
        if since is not None:
            self.closed.append((bundle, since, machine_monotonic() if at is None else at))

    def stop_all(self) -> None:
        for bundle in list(self.open):
            self.stop(bundle)

    def to_json(self) -> dict[str, Any]:
        """``now`` (when the snapshot was taken), ``open`` {bundle: since}, ``closed`` [[bundle, since, until]]."""
        return {
            "now": machine_monotonic(),
            "open": dict(self.open),
            "closed": [list(entry) for entry in self.closed],
        }
