"""Session events and the fencing deadline (Pulsar's ``ZKSessionWatcher`` / ``EtcdSessionWatcher``).

**Watcher rules** (the same for both backends).  Every ``timeout / 15`` the store probes the
server; a probe that does not answer within one tick counts as disconnected.

* connected → first failed probe: ``ConnectionLost``;
* disconnected for ``5/6 × timeout``, or the server reports the session expired: ``SessionLost``;
* a successful probe after ConnectionLost: ``Reconnected``; after SessionLost: ``Reconnected``
  then ``SessionReestablished`` (the backend opens a new session — a new etcd lease — before
  listeners hear SessionReestablished, as ``EtcdMetadataStore#receivedSessionEvent`` does).

**Fencing deadline.**  A probe that succeeds proves the server *received* it, and a server
(re)starts a session's expiry timer on every packet it receives from the client (ZooKeeper's
``SessionTracker#touchSession``; an etcd lease keep-alive sets the lease's expiry to receipt time +
TTL).  Receipt happened no earlier than the moment we sent the probe, so the server cannot expire
the session — and delete its ephemerals — before ``sent_at + ttl`` *in the server's time*.  The
deadline is ``sent_at + ttl − margin`` of the newest successful probe *of the current session*, on
this process's monotonic clock, with

    margin = reaction + ttl × max_clock_rate_ppm / 10⁶ + scheduling_delay

(``FencingAssumption``): ``reaction`` is the caller's own reaction time (default a tenth of the
session timeout), the rate term covers a local clock that runs slower than the server's by up to
``max_clock_rate_ppm`` (default 1000 ppm = 0.1 %, ten times the worst quartz drift NTP tolerates), and
``scheduling_delay`` is the largest lateness of the session watcher's own wake-ups observed over the
last ``DELAY_WINDOW`` probes (a process that is descheduled acts late by that much).  The TTL is what
the store answered: etcd's whole-second lease TTL, ZooKeeper's negotiated timeout; both stores only
ever expire *later* than that (etcd's lessor checks expiries every 500 ms, ZooKeeper's expiry queue
rounds up to the next tick), so their granularity never shortens the session.  A broker that serves a
bundle only while ``monotonic() < deadline`` therefore stops before the server can hand the ephemeral
to anyone else, as long as the assumption holds (Pulsar itself leaves that window open; see docs/live/).
SessionLost drops the deadline to 0; a new session starts a new deadline.

**Clock check.**  Where the store exposes its own elapsed time (etcd: the remaining TTL of a reference
lease that is never kept alive, ``/v3/lease/timetolive``), the backend reports ``(local elapsed,
store elapsed at least)`` pairs; when the local clock saw less than the store's elapsed time shrunk by
the rate bound (``FencingAssumption.clocks_agree``), the assumption is broken: the fencing clock turns
*suspect* -- the deadline is 0 from then on, the watcher stops renewing the session so its ephemerals
expire and other brokers take over, and the reason is logged.  It stays so until the process restarts.

**Watchdog.**  The deadline is vouched for only while the watcher is seen alive: when more than
``WATCHDOG_FRACTION`` of the session timeout passed on the local clock since the watcher last had a
probe's outcome (normally every tick or two), the process was stopped or starved, and it serves nothing
until a probe sent after the silence is answered (a failed one does not lift it: the old deadline was counted
on the clock in doubt) -- after a pause that outlived the session, that never happens: the session is lost.
With a correct clock the deadline alone covers such a pause; the watchdog also covers a clock that ran
slow during it: a pause long enough to lose the session shows as more than a third of a session even on a
clock running at a third of the store's rate.  Without it a broker whose clock runs at half rate (the
campaign's ``skewed-owner-pause``) served, on resuming, the requests that had queued during the pause
before its watcher could learn of the loss.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from bundlewise.live.store.api import SessionEvent


class ProbeStatus(enum.Enum):
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe's outcome; for CONNECTED, the session it confirmed, when it was sent and the TTL."""

    status: ProbeStatus
    session_id: int = 0
    sent_at: float = 0.0
    ttl: float = 0.0


class SessionStateMachine:
    """Pulsar's ``checkState``: turns probe outcomes into session events.  Pure; time is passed in."""

    def __init__(self, session_timeout: float) -> None:
        self.monitor_timeout = session_timeout * 5 / 6
        self.status = SessionEvent.SessionReestablished
        self.disconnected_at: float | None = None

    def observe(self, status: ProbeStatus, now: float) -> list[SessionEvent]:
        if status is ProbeStatus.EXPIRED:
            if self.status is SessionEvent.SessionLost:
                return []
            self.status = SessionEvent.SessionLost
            return [SessionEvent.SessionLost]
        if status is ProbeStatus.DISCONNECTED:
            if self.disconnected_at is None:
                self.disconnected_at = now
            if self.status is SessionEvent.SessionLost:
                return []
            if now - self.disconnected_at >= self.monitor_timeout:
                self.status = SessionEvent.SessionLost
                return [SessionEvent.SessionLost]
            if self.status is SessionEvent.SessionReestablished:
                self.status = SessionEvent.ConnectionLost
                return [SessionEvent.ConnectionLost]
            return []
        if self.status is SessionEvent.SessionReestablished:
            return []
        self.disconnected_at = None
        events = [SessionEvent.Reconnected]
        if self.status is SessionEvent.SessionLost:
            events.append(SessionEvent.SessionReestablished)
        self.status = SessionEvent.SessionReestablished
        return events

    @property
    def is_connected(self) -> bool:
        return self.status is SessionEvent.SessionReestablished


PPM = 1e-6
DEFAULT_MAX_CLOCK_RATE_PPM = 1000.0
DELAY_WINDOW = 15  # probes (one session timeout) over which the scheduling delay is the maximum
WATCHDOG_FRACTION = 1 / 3  # of the session timeout: a watcher silent longer was stopped (module docstring)


@dataclass(frozen=True, slots=True)
class FencingAssumption:
    """What the fencing deadline assumes of this process's clock; pure."""

    reaction: float  # seconds: the caller's own reaction time
    max_clock_rate_ppm: float = DEFAULT_MAX_CLOCK_RATE_PPM

    def margin(self, ttl: float, scheduling_delay: float = 0.0) -> float:
        return self.reaction + ttl * self.max_clock_rate_ppm * PPM + scheduling_delay

    def clocks_agree(self, local_elapsed: float, store_elapsed_at_least: float) -> bool:
        """False when the local clock saw less time pass than the store did, beyond the rate bound."""
        return local_elapsed >= store_elapsed_at_least * (1 - self.max_clock_rate_ppm * PPM)


class FencingClock:
    """The deadline until which the current session's ephemerals surely exist.  Pure."""

    def __init__(self, margin: float, max_clock_rate_ppm: float = 0.0, watchdog: float = math.inf) -> None:
        self.assumption = FencingAssumption(margin, max_clock_rate_ppm)
        self.watchdog = watchdog  # seconds without a probe outcome after which nothing is vouched for
        self.session_id = 0
        self.deadline = 0.0
        self.suspect: str | None = None  # why the clock assumption was found broken (sticky)
        self.heard_at: float | None = None  # when the watcher last had a probe's outcome
        self.tripped = False  # the watcher was silent too long; only an answered probe vouches again
        self._delays: list[float] = []

    def heard(self, now: float) -> None:
        """The watcher had a probe's outcome (answered or not) at ``now``: it is alive.  After a silence
        longer than the watchdog only an answered probe (``confirm``) lifts it: the old deadline was counted
        on a clock that may have run slow through the silence."""
        self.tripped = self.tripped or self.silent(now)
        self.heard_at = now

    def silent(self, now: float, since: float | None = None) -> bool:
        """More than the watchdog passed from ``since`` (default: the last outcome heard) to ``now``."""
        since = self.heard_at if since is None else since
        return since is not None and now - since > self.watchdog

    def deadline_at(self, now: float) -> float:
        """The deadline as it stands at ``now``: 0 while the watcher is overdue or tripped (module docstring:
        watchdog)."""
        return 0.0 if self.tripped or self.silent(now) else self.deadline

    @property
    def scheduling_delay(self) -> float:
        return max(self._delays, default=0.0)

    def observe_delay(self, lateness: float) -> None:
        """The watcher woke ``lateness`` seconds after it was due."""
        self._delays = [*self._delays[-(DELAY_WINDOW - 1) :], max(0.0, lateness)]

    def confirm(self, session_id: int, sent_at: float, ttl: float) -> None:
        """A probe of ``session_id`` sent at ``sent_at`` was answered; the session lives ``ttl`` s."""
        if self.heard_at is None or sent_at > self.heard_at:
            self.heard_at = sent_at
        self.tripped = False  # the server had a probe sent after any silence: the new deadline is sound
        if session_id != self.session_id:
            self.session_id = session_id
            self.deadline = 0.0
        if self.suspect is not None:
            return
        self.deadline = max(self.deadline, sent_at + ttl - self.assumption.margin(ttl, self.scheduling_delay))

    def check_clock(self, local_elapsed: float, store_elapsed_at_least: float) -> bool:
        """Compare one reading; a disagreement makes the clock suspect for good.  True while it agrees."""
        if self.suspect is None and not self.assumption.clocks_agree(local_elapsed, store_elapsed_at_least):
            self.suspect = (
                f"the local clock saw {local_elapsed:.3f} s pass while the store saw at least "
                f"{store_elapsed_at_least:.3f} s (more than {self.assumption.max_clock_rate_ppm:g} ppm apart)"
            )
            self.deadline = 0.0
        return self.suspect is None

    def invalidate(self) -> None:
        """The session is (or must be taken as) lost."""
        self.deadline = 0.0
        self.session_id = 0
