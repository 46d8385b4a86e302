"""What a persistent topic keeps: ledger rollover, retention of consumed ledgers and backlog quotas -- the
rules alone, on plain numbers (the managed ledger in ``managed`` and the service apply them).

* **Rollover** (``ManagedLedgerImpl#currentLedgerIsFull``): the ledger being written is closed and a new one
  added once it holds ``managedLedgerMaxEntriesPerLedger`` entries or ``managedLedgerMaxSizePerLedgerMbytes``,
  or once it is ``managedLedgerMaxLedgerRolloverTimeMinutes`` old with an entry in it -- and in either case
  only when it is older than ``managedLedgerMinLedgerRolloverTimeMinutes``.
* **Retention** (``ManagedLedgerImpl#internalTrimConsumedLedgers``): the closed ledgers every subscription has
  consumed (all of them when the topic has no subscription) are deleted oldest first while each is *expired*
  (closed more than the retention time ago) or the topic is *over its retention size* (its ledgers, less those
  already chosen, above it); the first ledger that is neither ends the walk.  The ledger being written is
  never deleted.  ``-1`` is "no limit" (both ``-1``: every ledger is kept); Pulsar's defaults (0 minutes,
  0 MB) delete a consumed ledger as soon as it is closed.  A namespace's ``retention_policies`` win over
  ``broker.conf``.
* **Backlog quotas** (``BacklogQuotaManager``; a namespace's ``backlog_quota_map`` -- ``destination_storage``
  for the size, ``message_age`` for the time -- over ``backlogQuotaDefaultLimitBytes`` / ``…LimitSecond``, each
  with its policy, ``backlogQuotaDefaultRetentionPolicy`` by default): exceeded when the topic's backlog
  (from the slowest subscription's mark-delete to the end) is larger than the size limit, or its oldest
  unacknowledged message older than the time limit.  What follows is the
  policy's: ``producer_request_hold`` and ``producer_exception`` close the topic's producers and refuse new
  ones (``ProducerBlockedQuotaExceededError``, which the client retries, or ``…Exception``, which it does
  not) until the backlog is back under the quota; ``consumer_backlog_eviction`` moves the slowest
  subscriptions past their oldest messages until the backlog is under 90 % of the size limit
  (``dropBacklogForSizeLimit``) or no message is older than the time limit (``dropBacklogForTimeLimit``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bundlewise.config.views import LedgerSettings
from bundlewise.model.resources import MIB

log = logging.getLogger(__name__)

HOLD, EXCEPTION, EVICTION = "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
QUOTA_POLICIES = (HOLD, EXCEPTION, EVICTION)
EVICTION_TARGET = 0.9  # dropBacklogForSizeLimit's reduction factor


@dataclass(frozen=True, slots=True)
class Retention:
    seconds: float  # -1: no time limit
    bytes: int  # -1: no limit

    @property
    def infinite(self) -> bool:
        return self.seconds < 0 and self.bytes < 0


@dataclass(frozen=True, slots=True)
class Quota:
    limit: int  # bytes (size quota) or seconds (time quota); -1: none
    policy: str


@dataclass(frozen=True, slots=True)
class BacklogQuota:
    """A topic's two quotas: ``destination_storage`` (size) and ``message_age`` (time)."""

    size: Quota
    time: Quota

    def exceeded(self, backlog_bytes: int, oldest_age_s: float | None) -> tuple[str, Quota] | None:
        """The first quota exceeded, ``("size" | "time", its quota)``, else None."""
        return next(iter(self.all_exceeded(backlog_bytes, oldest_age_s)), None)

    def all_exceeded(self, backlog_bytes: int, oldest_age_s: float | None) -> list[tuple[str, Quota]]:
        """Every quota exceeded, the size quota first."""
        out: list[tuple[str, Quota]] = []
        if self.size.limit >= 0 and backlog_bytes > self.size.limit:
            out.append(("size", self.size))
        if self.time.limit >= 0 and oldest_age_s is not None and oldest_age_s > self.time.limit:
            out.append(("time", self.time))
        return out


@dataclass(frozen=True, slots=True)
class TopicLimits:
    """The rules one loaded topic lives by: ``broker.conf`` with its namespace's policies over it."""

    rollover: LedgerSettings
    retention: Retention
    quota: BacklogQuota | None  # None: quotas are not checked (backlogQuotaCheckEnabled=false)


def should_roll(entries: int, size: int, age_s: float, s: LedgerSettings) -> bool:
    """Whether the ledger being written rolls over (module docstring)."""
    if entries <= 0:
        return False
    full = entries >= s.max_entries_per_ledger or size >= s.max_bytes_per_ledger
    if not (full or age_s >= s.max_rollover_s):
        return False
    return age_s > s.min_rollover_s if s.min_rollover_s > 0 else True


@dataclass(frozen=True, slots=True)
class ClosedLedger:
    first: int  # index of its first entry in the topic's log
    entries: int
    size: int  # bytes
    closed_at: float  # seconds (the clock ``now`` is on)


def ledgers_to_trim(closed: Sequence[ClosedLedger], total_size: int, keep_from: int, now: float, r: Retention) -> int:
    """How many of the oldest closed ledgers (oldest first, the ledger being written not among them) are
    deleted: consumed (every entry below ``keep_from``, the lowest index a subscription still needs) and expired
    or over the retention size (module docstring).  ``total_size``: the bytes of all the topic's ledgers."""
    if r.infinite:
        return 0
    chosen = chosen_size = 0
    for ledger in closed:
        if ledger.first + ledger.entries > keep_from:
            break
        expired = r.seconds >= 0 and now - ledger.closed_at > r.seconds
        over = r.bytes >= 0 and total_size - chosen_size > r.bytes
        if not (expired or over):
            break
        chosen += 1
        chosen_size += ledger.size
    return chosen


def _policies(raw: bytes | None, where: str) -> dict[str, object]:
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError as e:
        log.warning("ignoring the retention and backlog quota of %s: %s", where, e)
        return {}
    return doc if isinstance(doc, dict) else {}


def topic_limits(raw_policies: bytes | None, s: LedgerSettings, where: str) -> TopicLimits:
    """A topic's limits: ``broker.conf``'s, with its namespace's ``retention_policies`` and the
    ``destination_storage`` quota of its ``backlog_quota_map`` over them (an unreadable value is logged and
    ignored: the broker's apply)."""
    doc = _policies(raw_policies, where)
    retention = Retention(s.retention_s, s.retention_bytes)
    found = doc.get("retention_policies")
    if isinstance(found, dict):
        try:
            minutes = int(found.get("retentionTimeInMinutes", 0))
            megabytes = int(found.get("retentionSizeInMB", 0))
            retention = Retention(-1.0 if minutes < 0 else minutes * 60.0, -1 if megabytes < 0 else megabytes * MIB)
        except (TypeError, ValueError) as e:
            log.warning("ignoring the retention policies of %s: %s", where, e)
    quota: BacklogQuota | None = None
    if s.quota_check_enabled:
        by_type = doc.get("backlog_quota_map")
        by_type = by_type if isinstance(by_type, dict) else {}
        size = Quota(s.quota_limit_bytes, s.quota_policy)
        time = Quota(s.quota_limit_s, s.quota_policy)
        size = _quota(by_type.get("destination_storage"), "limitSize", size, where)
        time = _quota(by_type.get("message_age"), "limitTime", time, where)
        quota = BacklogQuota(size, time)
    return TopicLimits(s, retention, quota)


def _quota(found: object, limit_key: str, default: Quota, where: str) -> Quota:
    """One quota of a namespace's ``backlog_quota_map`` (``default`` when absent or unreadable)."""
    if not isinstance(found, dict):
        return default
    try:
        policy = str(found.get("policy", default.policy))
        if policy not in QUOTA_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(QUOTA_POLICIES)}, got {policy!r}")
        limit = found.get(limit_key, found.get("limit") if limit_key == "limitSize" else None)
        return Quota(default.limit if limit is None else int(limit), policy)
    except (TypeError, ValueError) as e:
        log.warning("ignoring a backlog quota of %s: %s", where, e)
        return default
