"""Dispatch-rate policies and their resolution (Pulsar ``DispatchRateImpl``, ``PolicyHierarchyValue``).

A :class:`DispatchRate` is Pulsar's ``DispatchRateImpl``: messages and bytes per
``ratePeriodInSecond`` plus ``relativeToPublishRate``; builder defaults -1, -1, false, 1.

* **Normalisation** (``#normalize``): a policy is *absent* unless msg > 0 or byte > 0, so 0/0,
  -1/-1 and 0/-1 fall through to the next level.  Within a present policy a dimension <= 0 is
  unlimited and the other one is enforced (both dimensions apply: logical AND).
* **Hierarchy** (``PolicyHierarchyValue``): topic-local > topic-global > namespace > broker.
  The namespace value of the topic level is ``topicDispatchRate`` or, when absent,
  ``clusterDispatchRate``.  The subscription level looks first at the per-subscription policy
  (PIP-152), then at the topic's and the namespace's ``subscriptionDispatchRate``.
* **Broker values** come from the per-level broker keys with period 1 s and relative false; the
  broker-wide level (``dispatchThrottlingRateIn*``) reads the config only.  0 (default) or a
  negative value leaves that dimension unlimited.
* **Per partition.** A partitioned topic's topic and subscription limits apply to each
  partition separately; callers resolve one limiter per partition (``t-partition-0`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from bundlewise.config import Config
from bundlewise.config.views import DispatchSettings
from bundlewise.model import fields
from bundlewise.model.errors import InputError


class Level(Enum):
    """The throttling levels, in the order the dispatcher consults them (``#readMoreEntries``)."""

    BROKER = "broker"
    TOPIC = "topic"
    SUBSCRIPTION = "subscription"
    REPLICATOR = "replicator"


@dataclass(frozen=True, slots=True)
class DispatchRate:
    """Messages and bytes per ``period_s`` seconds; a dimension <= 0 is unlimited."""

    msg: int = -1
    byte: int = -1
    relative_to_publish_rate: bool = False
    period_s: int = 1

    @property
    def enabled(self) -> bool:
        """``DispatchRateLimiter#isDispatchRateEnabled``: at least one dimension > 0."""
        return self.msg > 0 or self.byte > 0

    def normalized(self) -> DispatchRate | None:
        """The policy, or None when both dimensions are <= 0 (``DispatchRateImpl#normalize``)."""
        return self if self.enabled else None

    def to_json(self) -> dict[str, Any]:
        return {
            "dispatchThrottlingRateInMsg": self.msg,
            "dispatchThrottlingRateInByte": self.byte,
            "relativeToPublishRate": self.relative_to_publish_rate,
            "ratePeriodInSecond": self.period_s,
        }

    @staticmethod
    def from_json(value: Any, where: str) -> DispatchRate:
        """Read Pulsar's admin JSON (``dispatchThrottlingRateInMsg``, ...); absent fields take the builder defaults."""
        d = fields.obj(value, where)
        known = (
            "dispatchThrottlingRateInMsg",
            "dispatchThrottlingRateInByte",
            "relativeToPublishRate",
            "ratePeriodInSecond",
        )
        for k in d:
            if k not in known:
                raise InputError(f"unknown field, expected one of {', '.join(known)}", field=f"{where}.{k}")
        period = fields.integer(d, "ratePeriodInSecond", where, 1, signed=True)
        return DispatchRate(
            msg=fields.integer(d, "dispatchThrottlingRateInMsg", where, -1, signed=True),
            byte=fields.integer(d, "dispatchThrottlingRateInByte", where, -1, signed=True),
            relative_to_publish_rate=fields.flag(d, "relativeToPublishRate", where, False),
            period_s=period,
        )


@dataclass(frozen=True, slots=True)
class Policies:
    """The policy values that reach one topic (partition) or subscription; None = not set.

    ``topic_*`` are topic policies (``topic_local`` wins over ``topic_global``); ``namespace_*``
    come from the namespace policies (``topicDispatchRate`` / ``clusterDispatchRate`` /
    ``subscriptionDispatchRate`` / ``replicatorDispatchRate``); ``subscription`` is the PIP-152
    per-subscription policy.
    """

    topic_local: DispatchRate | None = None
    topic_global: DispatchRate | None = None
    topic_subscription: DispatchRate | None = None
    topic_replicator: DispatchRate | None = None
    namespace_topic: DispatchRate | None = None
    namespace_cluster: DispatchRate | None = None
    namespace_subscription: DispatchRate | None = None
    namespace_replicator: DispatchRate | None = None
    subscription: DispatchRate | None = None


_LEVEL_ORDER = (Level.BROKER, Level.TOPIC, Level.SUBSCRIPTION, Level.REPLICATOR)  # DispatchSettings.broker_rates


def broker_rate(config: Config, level: Level) -> DispatchRate:
    """The broker-config value of ``level``: the per-level keys, period 1 s, never relative."""
    msg, byte = config.view(DispatchSettings).broker_rates[_LEVEL_ORDER.index(level)]
    return DispatchRate(msg=msg, byte=byte)


def resolve(level: Level, policies: Policies, config: Config) -> DispatchRate | None:
    """The effective rate of ``level`` (topic > namespace > broker), or None when the level is off."""
    return resolve_with_source(level, policies, config)[0]


def resolve_with_source(level: Level, policies: Policies, config: Config) -> tuple[DispatchRate | None, str | None]:
    """The effective rate of ``level`` and where it came from (``subscription``, ``topic``,
    ``namespace``, ``broker``; None when the level is off).

    Each policy is normalised first, so a policy with both dimensions <= 0 falls through; the
    broker value is used when no policy is present, and is off when both its keys are <= 0.
    """
    p = policies
    candidates: list[tuple[DispatchRate | None, str]] = []
    if level is Level.TOPIC:
        # the namespace's topicDispatchRate, or clusterDispatchRate only when the former is unset;
        # a set-but-disabled topicDispatchRate falls through to the broker (testClusterPolicyOverride...)
        namespace = p.namespace_topic if p.namespace_topic is not None else p.namespace_cluster
        candidates = [(p.topic_local, "topic"), (p.topic_global, "topic"), (namespace, "namespace")]
    elif level is Level.SUBSCRIPTION:
        candidates = [
            (p.subscription, "subscription"),
            (p.topic_subscription, "topic"),
            (p.namespace_subscription, "namespace"),
        ]
    elif level is Level.REPLICATOR:
        candidates = [(p.topic_replicator, "topic"), (p.namespace_replicator, "namespace")]
    for rate, source in candidates:
        if rate is not None and rate.enabled:
            return rate, source
    broker = broker_rate(config, level).normalized()
    return broker, ("broker" if broker is not None else None)
