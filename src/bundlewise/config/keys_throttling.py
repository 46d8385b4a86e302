"""Keys of message dispatch throttling, with Pulsar's ``ServiceConfiguration`` defaults.

Rates are per second (broker-derived rates always use a 1 s period).  0, the default, means no
limit; negative values are accepted and mean the same (``DispatchRateImpl#normalize``).
"""

from __future__ import annotations

from bundlewise.config.keys import Key
from bundlewise.model.resources import MIB

PERSISTENT = "org.apache.pulsar.broker.service.persistent."

THROTTLING_KEYS: tuple[Key, ...] = (
    Key("dispatchThrottlingRateInMsg", 0, "int", "msg/s", "Broker-wide dispatch limit in messages; 0 = off"),
    Key("dispatchThrottlingRateInByte", 0, "int", "bytes/s", "Broker-wide dispatch limit in bytes; 0 = off"),
    Key("dispatchThrottlingRatePerTopicInMsg", 0, "int", "msg/s", "Default per-topic (per-partition) limit; 0 = off"),
    Key(
        "dispatchThrottlingRatePerTopicInByte", 0, "int", "bytes/s", "Default per-topic (per-partition) limit; 0 = off"
    ),
    Key(
        "dispatchThrottlingRatePerSubscriptionInMsg",
        0,
        "int",
        "msg/s",
        "Default per-subscription limit (per partition); 0 = off",
    ),
    Key(
        "dispatchThrottlingRatePerSubscriptionInByte",
        0,
        "int",
        "bytes/s",
        "Default per-subscription limit (per partition); 0 = off",
    ),
    Key("dispatchThrottlingRatePerReplicatorInMsg", 0, "int", "msg/s", "Default per-replicator limit; 0 = off"),
    Key("dispatchThrottlingRatePerReplicatorInByte", 0, "int", "bytes/s", "Default per-replicator limit; 0 = off"),
    Key(
        "dispatchThrottlingRateRelativeToPublishRate",
        False,
        "bool",
        "",
        "Broker flag for relative limits (read only for the broker level, where Pulsar forces false)",
    ),
    Key("dispatchThrottlingOnBatchMessageEnabled", False, "bool", "", "Charge entries instead of messages"),
    Key(
        "dispatchThrottlingOnNonBacklogConsumerEnabled",
        True,
        "bool",
        "",
        "Throttle caught-up (non-backlogged) cursors too",
    ),
    Key(
        "dispatchThrottlingForFilteredEntriesEnabled",
        False,
        "bool",
        "",
        "Also charge entries rejected by entry filters",
        dynamic=False,
    ),
    Key("dispatcherMaxReadBatchSize", 100, "int", "entries", "Maximum entries per read", minimum=1),
    Key("dispatcherMinReadBatchSize", 1, "int", "entries", "Read batch after read failures", minimum=1),
    Key("dispatcherMaxReadSizeBytes", 5 * MIB, "int", "bytes", "Maximum bytes per read", minimum=1),
    Key("preciseDispatcherFlowControl", False, "bool", "", "Size reads by average messages per entry"),
    Key(
        "dispatchRateLimiterFactoryClassName",
        PERSISTENT + "DispatchRateLimiterFactoryAsyncTokenBucket",
        "str",
        "class",
        "Dispatch limiter implementation: ...AsyncTokenBucket (PIP-322) or ...Classic",
        dynamic=False,
    ),
)
