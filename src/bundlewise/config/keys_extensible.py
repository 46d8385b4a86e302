"""Keys of the extensible load manager (PIP-192 / PIP-220), with Pulsar's ``ServiceConfiguration`` defaults.

Keys the modular load manager shares (history percentage, weights, overload threshold, split
thresholds, excluded namespaces, ...) live in ``keys_modular`` and are not repeated here.
"""

from __future__ import annotations

from bundlewise.config.keys import Key

EXTENSIBLE_LOAD_MANAGER = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
CHANNEL = "org.apache.pulsar.broker.loadbalance.extensions.channel."

EXTENSIBLE_KEYS: tuple[Key, ...] = (
    Key(
        "loadBalancerDebugModeEnabled",
        False,
        "bool",
        "",
        "Extra logs; also makes TransferShedder count swapped-back traffic (a quirk of TransferShedder)",
    ),
    Key(
        "loadBalanceSheddingDelayInSeconds",
        180,
        "int",
        "seconds",
        "TransferShedder: cool-down of a broker after an unload from it",
        minimum=0,
    ),
    Key(
        "loadBalancerBrokerLoadDataTTLInSeconds",
        1800,
        "int",
        "seconds",
        "TransferShedder: broker load data older than this is ignored",
        minimum=0,
    ),
    Key(
        "loadBalancerBrokerLoadTargetStd",
        0.25,
        "float",
        "load std (fraction)",
        "TransferShedder: target std of broker load; also sets the under-load multiplier",
        minimum=0,
    ),
    Key(
        "loadBalancerSheddingConditionHitCountThreshold",
        3,
        "int",
        "cycles",
        "TransferShedder: shed only after more than this many consecutive triggering cycles",
        minimum=0,
    ),
    Key(
        "loadBalancerTransferEnabled",
        True,
        "bool",
        "",
        "TransferShedder: transfer to a pre-assigned destination instead of a plain unload",
    ),
    Key(
        "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
        3,
        "int",
        "brokers",
        "TransferShedder: at most this many source brokers per cycle",
        minimum=0,
    ),
    Key(
        "loadBalancerSheddingBundlesWithPoliciesEnabled",
        False,
        "bool",
        "",
        "Allow shedding bundles of namespaces with isolation or anti-affinity policies",
    ),
    Key("loadBalancerSplitIntervalMinutes", 1, "int", "minutes", "Extensible split cycle period", minimum=1),
    Key(
        "loadBalancerMaxNumberOfBundlesToSplitPerCycle",
        10,
        "int",
        "bundles",
        "Extensible split: at most this many splits per cycle and broker",
        minimum=1,
    ),
    Key(
        "loadBalancerNamespaceBundleSplitConditionHitCountThreshold",
        3,
        "int",
        "cycles",
        "Extensible split: split only after more than this many consecutive hits",
        minimum=0,
    ),
    Key(
        "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds",
        3600,
        "int",
        "seconds",
        "Tombstone semi-terminal service-unit states after this long",
        minimum=0,
    ),
    Key(
        "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis",
        30000,
        "int",
        "ms",
        "Lookup wait and in-flight state timeout",
        minimum=0,
    ),
    Key(
        "loadBalancerServiceUnitStateMonitorIntervalInSeconds",
        60,
        "int",
        "seconds",
        "Leader ownership monitor period",
        minimum=1,
    ),
    Key("loadBalancerServiceUnitStateMaxConcurrentOverrides", 64, "int", "overrides", "Cleanup batch size", minimum=1),
    Key(
        "loadBalancerMultiPhaseBundleUnload",
        True,
        "bool",
        "",
        "Transfer keeps connections until the destination owns the bundle",
        dynamic=False,
    ),
    Key(
        "loadManagerServiceUnitStateTableViewClassName",
        CHANNEL + "ServiceUnitStateTableViewImpl",
        "str",
        "class",
        "Where the service-unit state channel lives",
        dynamic=False,
    ),
    Key(
        "loadBalancerServiceUnitTableViewSyncer",
        "None",
        "str",
        "name",
        "Migration syncer between the two channel stores",
    ),
    Key(
        "metadataStoreOperationTimeoutSeconds",
        30,
        "int",
        "seconds",
        "Registry, filter and split-boundary timeouts",
        dynamic=False,
        minimum=0,
    ),
)
