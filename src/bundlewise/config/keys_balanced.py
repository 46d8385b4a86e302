"""Keys of bundlewise's own strategy, ``BalancedPlanShedder`` (docs/balanced.md): not Pulsar settings, so
every name starts with ``bundlewiseBalanced``; they are set like Pulsar's (``broker.conf``, a scenario's
``[balancer]``, ``--config``, ``--set``)."""

from __future__ import annotations

from bundlewise.config.keys import Key

BALANCED_KEYS: tuple[Key, ...] = (
    Key(
        "bundlewiseBalancedTriggerMargin",
        0.10,
        "float",
        "fraction of capacity",
        "BalancedPlanShedder: act when the most loaded broker is this far above the fleet mean, or the least "
        "loaded this far below it",
        minimum=0,
        maximum=1,
    ),
    Key(
        "bundlewiseBalancedTargetMargin",
        0.04,
        "float",
        "fraction of capacity",
        "BalancedPlanShedder: a plan stops once every broker is within this of the fleet mean (hysteresis)",
        minimum=0,
        maximum=1,
    ),
    Key(
        "bundlewiseBalancedEventMargin",
        0.06,
        "float",
        "fraction of capacity",
        "BalancedPlanShedder: a plan triggered by an overloaded or underloaded broker stops once every broker is "
        "within this of the fleet mean (never tighter than bundlewiseBalancedTargetMargin)",
        minimum=0,
        maximum=1,
    ),
    Key(
        "bundlewiseBalancedHitCount",
        2,
        "int",
        "cycles",
        "BalancedPlanShedder: consecutive cycles above the trigger before acting (an overloaded broker acts at once)",
        minimum=1,
    ),
    Key(
        "bundlewiseBalancedMaxMovesPerCycle",
        10,
        "int",
        "bundles",
        "BalancedPlanShedder: the movement budget of one cycle",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedMinGain",
        0.001,
        "float",
        "load squared",
        "BalancedPlanShedder: a move must lower the sum of squared broker loads by at least this",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedCostPerTopic",
        0.00002,
        "float",
        "load squared",
        "BalancedPlanShedder: the cost of each topic a move makes unavailable, added to the gain required",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedCostPerMove",
        0.002,
        "float",
        "load squared",
        "BalancedPlanShedder: the fixed cost of one move (a bundle unloaded and looked up again), added to the "
        "gain required",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedCooldownMinutes",
        120,
        "int",
        "minutes",
        "BalancedPlanShedder: a bundle (or any part of its hash range) moved this recently is not moved again",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedRepeatGuardMinutes",
        60,
        "int",
        "minutes",
        "BalancedPlanShedder: after its cool-down, a bundle moved within this many more minutes moves again only "
        "to relieve a broker near the overload threshold (0: off)",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedMinGainPerLoad",
        0.02,
        "float",
        "load squared per load moved",
        "BalancedPlanShedder: a move's gain must be at least this times the share of its source's binding "
        "resource it moves, unless it relieves a broker near the overload threshold (0: off)",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedIndivisibleMargin",
        0.03,
        "float",
        "fraction of capacity",
        "BalancedPlanShedder: a bundle that cannot split (one topic, or its namespace at "
        "loadBalancerNamespaceMaximumBundles) moves only if that lowers the higher load of its two brokers by "
        "at least this (0: off)",
        minimum=0,
        maximum=1,
    ),
    Key(
        "bundlewiseBalancedReturnCostShare",
        0.0,
        "float",
        "share of a move's cost",
        "BalancedPlanShedder: a move's gain must also pay this share of the cost of moving the bundle back "
        "(costPerTopic per topic plus costPerMove), unless it relieves an overloaded broker or refills an "
        "underloaded one (0: off)",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedInFlightMinutes",
        15,
        "int",
        "minutes",
        "BalancedPlanShedder: how long a move's load is credited to its destination until a report shows it",
        minimum=0,
    ),
    Key(
        "bundlewiseBalancedMergeFraction",
        0.25,
        "float",
        "fraction of each split threshold",
        "BalancedPlanShedder: when a hot bundle cannot split because its namespace is at "
        "loadBalancerNamespaceMaximumBundles, merge an adjacent pair whose combined topics, sessions, msg rate "
        "and throughput are each under this fraction of the split thresholds (0: never merge)",
        minimum=0,
        maximum=1,
    ),
    Key(
        "bundlewiseBalancedMergeMaxChildShare",
        0.8,
        "float",
        "fraction of the hot bundle's load",
        "BalancedPlanShedder: merge for a hot bundle only when the split its owner would make now (its topics' "
        "loads, the configured split algorithm) leaves no child more than this share of the bundle's msg rate or "
        "throughput, whichever is nearer its split threshold (1: any split pays)",
        minimum=0.5,
        maximum=1,
    ),
)
