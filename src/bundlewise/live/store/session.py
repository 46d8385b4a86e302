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
the session — and delete its ephemerals — before ``sent_at + timeout``.  The deadline is
``sent_at + timeout − margin`` of the newest successful probe *of the current session*; the
margin absorbs clock-rate differences and the caller's own reaction time.  A broker that serves a
bundle only while ``monotonic() < deadline`` therefore stops before the server can hand the
ephemeral to anyone else (Pulsar itself leaves that window open; see docs/live/).
SessionLost drops the deadline to 0; a new session starts a new deadline.
"""

from __future__ import annotations

import enum
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


class FencingClock:
    """The deadline until which the current session's ephemerals surely exist.  Pure."""

    def __init__(self, margin: float) -> None:
        self.margin = margin
        self.session_id = 0
        self.deadline = 0.0

    def confirm(self, session_id: int, sent_at: float, ttl: float) -> None:
        """A probe of ``session_id`` sent at ``sent_at`` was answered; the session lives ``ttl`` s."""
        if session_id != self.session_id:
            self.session_id = session_id
            self.deadline = 0.0
        self.deadline = max(self.deadline, sent_at + ttl - self.margin)

    def invalidate(self) -> None:
        """The session is (or must be taken as) lost."""
        self.deadline = 0.0
        self.session_id = 0
