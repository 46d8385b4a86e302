"""Per-concern views of the configuration: small frozen settings objects, each built once from a ``Config``.

Code reads settings through these views (``config.view(SplitSettings)``) instead of looking keys up by
name: the key names live here and in the key tables only.  ``Config.check`` builds every view of
``ALL_VIEWS``, so a misspelt key fails when a command starts (and in the test suite), never in the
middle of a run.  Units are converted once: minutes and seconds to milliseconds, percentages to
fractions where the rule compares fractions, MiB to bytes.

A view reads a ``Mapping[str, Any]`` (a ``Config``), so this module needs nothing else of ``config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bundlewise.model.channel import StorageType
from bundlewise.model.errors import InputError
from bundlewise.model.resources import MIB

MINUTE_MS = 60_000
SECOND_MS = 1000


def _class_name(value: Any) -> str:
    """``org.apache...impl.ThresholdShedder`` -> ``ThresholdShedder``."""
    return str(value).strip().rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class LeaderSettings:
    """The leader's periodic work (``ModularLoadManagerImpl#doLoadShedding``, ``UnloadScheduler#execute``,
    ``BundleSplitterTask``, ``SplitScheduler``)."""

    enabled: bool
    shedding_strategy: str  # as configured (short or Pulsar class name)
    shedding_enabled: bool
    shedding_interval_ms: int
    grace_period_ms: int
    excluded_namespaces: frozenset[str]
    auto_split: bool
    unload_split_children: bool
    split_interval_ms: int
    bundle_data_interval_ms: int

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> LeaderSettings:
        return cls(
            enabled=bool(c["loadBalancerEnabled"]),
            shedding_strategy=str(c["loadBalancerLoadSheddingStrategy"]),
            shedding_enabled=bool(c["loadBalancerSheddingEnabled"]),
            shedding_interval_ms=int(c["loadBalancerSheddingIntervalMinutes"]) * MINUTE_MS,
            grace_period_ms=int(c["loadBalancerSheddingGracePeriodMinutes"]) * MINUTE_MS,
            excluded_namespaces=frozenset(c["loadBalancerSheddingExcludedNamespaces"]),
            auto_split=bool(c["loadBalancerAutoBundleSplitEnabled"]),
            unload_split_children=bool(c["loadBalancerAutoUnloadSplitBundlesEnabled"]),
            split_interval_ms=int(c["loadBalancerSplitIntervalMinutes"]) * MINUTE_MS,
            bundle_data_interval_ms=int(c["loadBalancerResourceQuotaUpdateIntervalMinutes"]) * MINUTE_MS,
        )

    @property
    def shedding_active(self) -> bool:
        """``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled``."""
        return self.enabled and self.shedding_enabled

    @property
    def splitting_active(self) -> bool:
        """``loadBalancerEnabled`` and ``loadBalancerAutoBundleSplitEnabled`` (the split scheduler's gate)."""
        return self.enabled and self.auto_split


@dataclass(frozen=True, slots=True)
class ReportSettings:
    """When brokers rewrite their load reports (``needBrokerDataUpdate``, both load managers)."""

    threshold_percentage: float
    max_interval_ms: int
    history: float
    top_bundles: int

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> ReportSettings:
        return cls(
            threshold_percentage=float(c["loadBalancerReportUpdateThresholdPercentage"]),
            max_interval_ms=int(c["loadBalancerReportUpdateMaxIntervalMinutes"]) * MINUTE_MS,
            history=float(c["loadBalancerHistoryResourcePercentage"]),
            top_bundles=int(c["loadBalancerMaxNumberOfBundlesInBundleLoadReport"]),
        )


@dataclass(frozen=True, slots=True)
class PlacementSettings:
    """Choosing a broker for a bundle (``ModularLoadManagerImpl#selectBroker``,
    ``ExtensibleLoadManagerImpl#selectAsync``)."""

    strategy: str  # as configured (short or Pulsar class name)
    overload_threshold: float  # fraction
    max_topics: int
    distribute_evenly: bool
    prefer_later_versions: bool
    load_manager_class: str
    explicit_load_manager_class: str | None  # set explicitly, not defaulted
    usage_difference: float  # LeastResourceUsageWithWeight's margin, fraction
    history: float
    excluded_namespaces: frozenset[str]
    failure_domains: bool  # failureDomainsEnabled: anti-affinity spreads over failure domains too

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> PlacementSettings:
        explicit = getattr(c, "explicit", {}).get("loadManagerClassName")
        return cls(
            strategy=str(c["loadBalancerLoadPlacementStrategy"]),
            overload_threshold=float(c["loadBalancerBrokerOverloadedThresholdPercentage"]) / 100.0,
            max_topics=int(c["loadBalancerBrokerMaxTopics"]),
            distribute_evenly=bool(c["loadBalancerDistributeBundlesEvenlyEnabled"]),
            prefer_later_versions=bool(c["preferLaterVersions"]),
            load_manager_class=str(c["loadManagerClassName"]),
            explicit_load_manager_class=None if explicit is None else str(explicit),
            usage_difference=float(c["loadBalancerAverageResourceUsageDifferenceThresholdPercentage"]) / 100.0,
            history=float(c["loadBalancerHistoryResourcePercentage"]),
            excluded_namespaces=frozenset(c["loadBalancerSheddingExcludedNamespaces"]),
            failure_domains=bool(c["failureDomainsEnabled"]),
        )

    @property
    def strategy_name(self) -> str:
        return _class_name(self.strategy)


@dataclass(frozen=True, slots=True)
class SplitSettings:
    """When and where bundles split (``BundleSplitterTask``, ``DefaultNamespaceBundleSplitStrategyImpl``,
    ``NamespaceBundleSplitAlgorithm``)."""

    max_topics: int
    max_sessions: int  # <= 0 disables the rule
    max_msg_rate: float
    max_bandwidth_bytes: float
    max_bundles: int  # per namespace
    hit_threshold: int
    max_splits_per_cycle: int
    default_algorithm: str
    flow_tolerance: float  # 1 + flowOrQpsDifferenceThresholdPercentage / 100
    default_bundles: int  # bundles of a new namespace

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> SplitSettings:
        return cls(
            max_topics=int(c["loadBalancerNamespaceBundleMaxTopics"]),
            max_sessions=int(c["loadBalancerNamespaceBundleMaxSessions"]),
            max_msg_rate=float(c["loadBalancerNamespaceBundleMaxMsgRate"]),
            max_bandwidth_bytes=float(c["loadBalancerNamespaceBundleMaxBandwidthMbytes"]) * MIB,
            max_bundles=int(c["loadBalancerNamespaceMaximumBundles"]),
            hit_threshold=int(c["loadBalancerNamespaceBundleSplitConditionHitCountThreshold"]),
            max_splits_per_cycle=int(c["loadBalancerMaxNumberOfBundlesToSplitPerCycle"]),
            default_algorithm=str(c["defaultNamespaceBundleSplitAlgorithm"]),
            flow_tolerance=1 + float(c["flowOrQpsDifferenceThresholdPercentage"]) / 100.0,
            default_bundles=int(c["defaultNumberOfNamespaceBundles"]),
        )


@dataclass(frozen=True, slots=True)
class OverloadSettings:
    """``OverloadShedder``."""

    overload_threshold: float  # fraction

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> OverloadSettings:
        return cls(float(c["loadBalancerBrokerOverloadedThresholdPercentage"]) / 100.0)


@dataclass(frozen=True, slots=True)
class ThresholdSettings:
    """``ThresholdShedder``."""

    threshold: float  # percentage points as a fraction
    min_throughput: float  # bytes/s
    history: float
    lower_boundary: bool

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> ThresholdSettings:
        return cls(
            threshold=float(c["loadBalancerBrokerThresholdShedderPercentage"]) / 100.0,
            min_throughput=float(c["loadBalancerBundleUnloadMinThroughputThreshold"]) * MIB,
            history=float(c["loadBalancerHistoryResourcePercentage"]),
            lower_boundary=bool(c["lowerBoundarySheddingEnabled"]),
        )


@dataclass(frozen=True, slots=True)
class UniformSettings:
    """``UniformLoadShedder``."""

    msg_rate_difference: float  # percent; <= 0 disables
    throughput_multiplier: float  # <= 0 disables
    max_unload_percentage: float
    min_unload_message: int
    min_unload_throughput: int
    max_bundles: int  # -1 unlimited

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> UniformSettings:
        return cls(
            msg_rate_difference=float(c["loadBalancerMsgRateDifferenceShedderThreshold"]),
            throughput_multiplier=float(c["loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold"]),
            max_unload_percentage=float(c["maxUnloadPercentage"]),
            min_unload_message=int(c["minUnloadMessage"]),
            min_unload_throughput=int(c["minUnloadMessageThroughput"]),
            max_bundles=int(c["maxUnloadBundleNumPerShedding"]),
        )


@dataclass(frozen=True, slots=True)
class AvgShedderSettings:
    """``AvgShedder``."""

    low_threshold: float
    high_threshold: float
    hit_count_low: int
    hit_count_high: int
    max_unload_percentage: float
    min_unload_message: int
    min_unload_throughput: int

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> AvgShedderSettings:
        return cls(
            low_threshold=float(c["loadBalancerAvgShedderLowThreshold"]),
            high_threshold=float(c["loadBalancerAvgShedderHighThreshold"]),
            hit_count_low=int(c["loadBalancerAvgShedderHitCountLowThreshold"]),
            hit_count_high=int(c["loadBalancerAvgShedderHitCountHighThreshold"]),
            max_unload_percentage=float(c["maxUnloadPercentage"]),
            min_unload_message=int(c["minUnloadMessage"]),
            min_unload_throughput=int(c["minUnloadMessageThroughput"]),
        )


@dataclass(frozen=True, slots=True)
class TransferSettings:
    """``TransferShedder`` (the extensible load manager's shedding strategy)."""

    target_std: float
    hit_count_threshold: int
    transfer_enabled: bool
    debug_mode: bool
    max_brokers_per_cycle: int
    data_ttl_ms: int
    shedding_delay_ms: int
    overload_threshold: float  # fraction
    excluded_namespaces: frozenset[str]
    bundles_with_policies: bool

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> TransferSettings:
        return cls(
            target_std=float(c["loadBalancerBrokerLoadTargetStd"]),
            hit_count_threshold=int(c["loadBalancerSheddingConditionHitCountThreshold"]),
            transfer_enabled=bool(c["loadBalancerTransferEnabled"]),
            debug_mode=bool(c["loadBalancerDebugModeEnabled"]),
            max_brokers_per_cycle=int(c["loadBalancerMaxNumberOfBrokerSheddingPerCycle"]),
            data_ttl_ms=int(c["loadBalancerBrokerLoadDataTTLInSeconds"]) * SECOND_MS,
            shedding_delay_ms=int(c["loadBalanceSheddingDelayInSeconds"]) * SECOND_MS,
            overload_threshold=float(c["loadBalancerBrokerOverloadedThresholdPercentage"]) / 100.0,
            excluded_namespaces=frozenset(c["loadBalancerSheddingExcludedNamespaces"]),
            bundles_with_policies=bool(c["loadBalancerSheddingBundlesWithPoliciesEnabled"]),
        )


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    """Dispatch throttling (``DispatchRateLimiter``, the dispatchers' read sizing)."""

    limiter_factory: str
    precise_flow_control: bool
    throttle_non_backlog: bool
    max_read_bytes: int
    max_read_batch: int
    count_entries: bool  # dispatchThrottlingOnBatchMessageEnabled
    broker_rates: tuple[tuple[int, int], ...]  # (msg, byte) of the broker, topic, subscription, replicator levels

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> DispatchSettings:
        return cls(
            limiter_factory=str(c["dispatchRateLimiterFactoryClassName"]),
            precise_flow_control=bool(c["preciseDispatcherFlowControl"]),
            throttle_non_backlog=bool(c["dispatchThrottlingOnNonBacklogConsumerEnabled"]),
            max_read_bytes=int(c["dispatcherMaxReadSizeBytes"]),
            max_read_batch=int(c["dispatcherMaxReadBatchSize"]),
            count_entries=bool(c["dispatchThrottlingOnBatchMessageEnabled"]),
            broker_rates=(
                (int(c["dispatchThrottlingRateInMsg"]), int(c["dispatchThrottlingRateInByte"])),
                (int(c["dispatchThrottlingRatePerTopicInMsg"]), int(c["dispatchThrottlingRatePerTopicInByte"])),
                (
                    int(c["dispatchThrottlingRatePerSubscriptionInMsg"]),
                    int(c["dispatchThrottlingRatePerSubscriptionInByte"]),
                ),
                (
                    int(c["dispatchThrottlingRatePerReplicatorInMsg"]),
                    int(c["dispatchThrottlingRatePerReplicatorInByte"]),
                ),
            ),
        )


@dataclass(frozen=True, slots=True)
class SimSettings:
    """The simulator's own keys."""

    unload_blip_seconds: float

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> SimSettings:
        return cls(float(c["unloadBlipSeconds"]))


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """A running broker (``PulsarService``, ``ModularLoadManagerImpl``, ``NamespaceService``): its session,
    identity, task periods and timeouts, in real milliseconds before ``--time-scale``."""

    session_timeout_ms: int
    operation_timeout_ms: int
    cluster: str
    broker_service_port: int
    persistent_topics: bool
    non_persistent_topics: bool
    report_interval_ms: int
    unload_timeout_ms: int
    load_manager_class: str
    split_algorithms: tuple[str, ...]
    stats_interval_ms: int
    max_clock_rate_ppm: float

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> BrokerSettings:
        return cls(
            session_timeout_ms=int(c["metadataStoreSessionTimeoutMillis"]),
            operation_timeout_ms=int(c["metadataStoreOperationTimeoutSeconds"]) * SECOND_MS,
            cluster=str(c["clusterName"]),
            broker_service_port=int(c["brokerServicePort"]),
            persistent_topics=bool(c["enablePersistentTopics"]),
            non_persistent_topics=bool(c["enableNonPersistentTopics"]),
            report_interval_ms=int(c["loadBalancerReportUpdateMinIntervalMillis"]),
            unload_timeout_ms=int(c["namespaceBundleUnloadingTimeoutMs"]),
            load_manager_class=str(c["loadManagerClassName"]),
            split_algorithms=tuple(c["supportedNamespaceBundleSplitAlgorithms"]),
            stats_interval_ms=int(c["statsUpdateFrequencyInSecs"]) * SECOND_MS,
            max_clock_rate_ppm=float(c["bundlewiseFencingMaxClockRatePpm"]),
        )


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """Who may act (``AuthenticationProviderToken``, ``AuthorizationService``, ``PulsarWebResource``)."""

    authentication: bool
    authorization: bool
    super_users: frozenset[str]
    anonymous_role: str | None
    secret_key: str | None
    public_key: str | None
    public_alg: str
    role_claim: str
    audience_claim: str | None
    audience: str | None
    authenticate_metrics: bool
    client_plugin: str
    client_parameters: str

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> AuthSettings:
        def opt(key: str) -> str | None:
            value = c[key]
            return None if value is None or str(value).strip() == "" else str(value).strip()

        return cls(
            authentication=bool(c["authenticationEnabled"]),
            authorization=bool(c["authorizationEnabled"]),
            super_users=frozenset(c["superUserRoles"]),
            anonymous_role=opt("anonymousUserRole"),
            secret_key=opt("tokenSecretKey"),
            public_key=opt("tokenPublicKey"),
            public_alg=str(c["tokenPublicAlg"]),
            role_claim=str(c["tokenAuthClaim"]),
            audience_claim=opt("tokenAudienceClaim"),
            audience=opt("tokenAudience"),
            authenticate_metrics=bool(c["authenticateMetricsEndpoint"]),
            client_plugin=str(c["brokerClientAuthenticationPlugin"] or ""),
            client_parameters=str(c["brokerClientAuthenticationParameters"] or ""),
        )


@dataclass(frozen=True, slots=True)
class BalancedSettings:
    """bundlewise's own ``BalancedPlanShedder`` (``bundlewiseBalanced*``, docs/balanced.md)."""

    trigger_margin: float
    target_margin: float
    event_margin: float
    hit_count: int
    max_moves: int
    min_gain: float
    cost_per_topic: float
    cost_per_move: float
    cooldown_ms: int
    in_flight_ms: int
    overload_threshold: float  # fraction
    repeat_guard_ms: int
    min_gain_per_load: float
    indivisible_margin: float
    return_cost_share: float
    max_bundles: int  # loadBalancerNamespaceMaximumBundles: a bundle of a namespace at it cannot split

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> BalancedSettings:
        return cls(
            trigger_margin=float(c["bundlewiseBalancedTriggerMargin"]),
            target_margin=float(c["bundlewiseBalancedTargetMargin"]),
            event_margin=float(c["bundlewiseBalancedEventMargin"]),
            hit_count=int(c["bundlewiseBalancedHitCount"]),
            max_moves=int(c["bundlewiseBalancedMaxMovesPerCycle"]),
            min_gain=float(c["bundlewiseBalancedMinGain"]),
            cost_per_topic=float(c["bundlewiseBalancedCostPerTopic"]),
            cost_per_move=float(c["bundlewiseBalancedCostPerMove"]),
            cooldown_ms=int(c["bundlewiseBalancedCooldownMinutes"]) * MINUTE_MS,
            in_flight_ms=int(c["bundlewiseBalancedInFlightMinutes"]) * MINUTE_MS,
            overload_threshold=float(c["loadBalancerBrokerOverloadedThresholdPercentage"]) / 100.0,
            repeat_guard_ms=int(c["bundlewiseBalancedRepeatGuardMinutes"]) * MINUTE_MS,
            min_gain_per_load=float(c["bundlewiseBalancedMinGainPerLoad"]),
            indivisible_margin=float(c["bundlewiseBalancedIndivisibleMargin"]),
            return_cost_share=float(c["bundlewiseBalancedReturnCostShare"]),
            max_bundles=int(c["loadBalancerNamespaceMaximumBundles"]),
        )


@dataclass(frozen=True, slots=True)
class MergeSettings:
    """When ``BalancedPlanShedder`` merges cold bundles at a namespace's cap (docs/balanced.md, Merge)."""

    fraction: float  # a pair merges when each combined figure is under this fraction of its split threshold
    max_child_share: float  # a merge is for a hot bundle whose split leaves no child more than this of its load

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> MergeSettings:
        return cls(
            fraction=float(c["bundlewiseBalancedMergeFraction"]),
            max_child_share=float(c["bundlewiseBalancedMergeMaxChildShare"]),
        )


TABLE_VIEWS = {
    "ServiceUnitStateTableViewImpl": StorageType.SystemTopic,
    "ServiceUnitStateMetadataStoreTableViewImpl": StorageType.MetadataStore,
}
TABLE_VIEW_KEY = "loadManagerServiceUnitStateTableViewClassName"
TOMBSTONE_KEY = "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"
IN_FLIGHT_KEY = "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis"


def storage_of(table_view_class: str) -> StorageType:
    """The storage a table-view class name (full or short) stands for: ``ServiceUnitStateTableViewImpl`` the
    system topic (Pulsar's default), ``ServiceUnitStateMetadataStoreTableViewImpl`` the metadata store (PIP-378)."""
    try:
        return TABLE_VIEWS[_class_name(table_view_class)]
    except KeyError:
        raise InputError(
            f"expected one of {', '.join(TABLE_VIEWS)}, got {table_view_class!r}", field=TABLE_VIEW_KEY
        ) from None


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    """The extensible manager's service-unit-state channel (``ServiceUnitStateChannelImpl``'s constructor and
    fields), with Pulsar's constructor check: the tombstone delay (``…TombstoneDelayTimeInSeconds`` x 1000)
    must be at least the in-flight wait (``…InFlightServiceUnitStateWaitingTimeInMillis``), otherwise the
    channel -- and the broker -- does not start.  Built where a channel starts, not by ``Config.check`` (so it
    is not in ``ALL_VIEWS``): a modular broker's configuration is not refused for the channel's keys."""

    in_flight_wait_ms: int = 30_000
    tombstone_delay_ms: int = 3_600_000
    monitor_interval_s: int = 60
    multi_phase_unload: bool = True
    storage: StorageType = StorageType.SystemTopic
    metadata_operation_timeout_s: int = 30
    max_concurrent_overrides: int = 64
    unloading_timeout_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.tombstone_delay_ms < self.in_flight_wait_ms:
            raise InputError(
                f"expected a tombstone delay of at least the in-flight wait ({self.in_flight_wait_ms} ms), "
                f"got {self.tombstone_delay_ms // SECOND_MS} s",
                field=TOMBSTONE_KEY,
            )

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> ChannelSettings:
        return cls(
            in_flight_wait_ms=int(c[IN_FLIGHT_KEY]),
            tombstone_delay_ms=int(c[TOMBSTONE_KEY]) * SECOND_MS,
            monitor_interval_s=int(c["loadBalancerServiceUnitStateMonitorIntervalInSeconds"]),
            multi_phase_unload=bool(c["loadBalancerMultiPhaseBundleUnload"]),
            storage=storage_of(str(c[TABLE_VIEW_KEY])),
            metadata_operation_timeout_s=int(c["metadataStoreOperationTimeoutSeconds"]),
            max_concurrent_overrides=int(c["loadBalancerServiceUnitStateMaxConcurrentOverrides"]),
            unloading_timeout_ms=int(c["namespaceBundleUnloadingTimeoutMs"]),
        )


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """Topics on a running broker (``BrokerService``: auto-creation, the binary protocol's limits)."""

    auto_create: bool
    auto_create_partitioned: bool
    default_partitions: int
    max_message_size: int
    keep_alive_s: int
    storage: str  # "memory" or "file"
    data_dir: str
    fsync: str
    fsync_interval_s: float
    cursor_flush_s: float
    mark_delete_rate: float  # cursor persists per second while acknowledging (0: no limit)

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> TopicSettings:
        return cls(
            auto_create=bool(c["allowAutoTopicCreation"]),
            auto_create_partitioned=str(c["allowAutoTopicCreationType"]) == "partitioned",
            default_partitions=int(c["defaultNumPartitions"]),
            max_message_size=int(c["maxMessageSize"]),
            keep_alive_s=int(c["keepAliveIntervalSeconds"]),
            storage=str(c["bundlewiseManagedLedgerStorage"]),
            data_dir=str(c["bundlewiseLedgerDataDir"]),
            fsync=str(c["bundlewiseLedgerFsync"]),
            fsync_interval_s=int(c["bundlewiseLedgerFsyncIntervalMillis"]) / 1000,
            cursor_flush_s=float(c["managedLedgerCursorPositionFlushSeconds"]),
            mark_delete_rate=float(c["managedLedgerDefaultMarkDeleteRateLimit"]),
        )


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """A persistent topic's ledgers on file storage: rollover (``ManagedLedgerConfig``), retention and backlog
    quotas as ``broker.conf`` sets them (a namespace's policies win, read when the topic loads).  Sizes in
    bytes, times in seconds; ``-1`` keeps Pulsar's meaning ("no limit")."""

    max_entries_per_ledger: int
    max_bytes_per_ledger: int
    min_rollover_s: float
    max_rollover_s: float
    retention_s: float  # -1: for ever
    retention_bytes: int  # -1: no limit
    retention_check_s: float
    quota_check_enabled: bool
    quota_check_s: float
    quota_limit_bytes: int  # -1: none
    quota_limit_s: int  # -1: none
    quota_policy: str

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> LedgerSettings:
        minutes = int(c["defaultRetentionTimeInMinutes"])
        megabytes = int(c["defaultRetentionSizeInMB"])
        return cls(
            max_entries_per_ledger=int(c["managedLedgerMaxEntriesPerLedger"]),
            max_bytes_per_ledger=int(c["managedLedgerMaxSizePerLedgerMbytes"]) * MIB,
            min_rollover_s=int(c["managedLedgerMinLedgerRolloverTimeMinutes"]) * 60.0,
            max_rollover_s=int(c["managedLedgerMaxLedgerRolloverTimeMinutes"]) * 60.0,
            retention_s=-1.0 if minutes < 0 else minutes * 60.0,
            retention_bytes=-1 if megabytes < 0 else megabytes * MIB,
            retention_check_s=float(c["retentionCheckIntervalInSeconds"]),
            quota_check_enabled=bool(c["backlogQuotaCheckEnabled"]),
            quota_check_s=float(c["backlogQuotaCheckIntervalInSeconds"]),
            quota_limit_bytes=int(c["backlogQuotaDefaultLimitBytes"]),
            quota_limit_s=int(c["backlogQuotaDefaultLimitSecond"]),
            quota_policy=str(c["backlogQuotaDefaultRetentionPolicy"]),
        )


ALL_VIEWS = (
    LeaderSettings,
    ReportSettings,
    PlacementSettings,
    SplitSettings,
    OverloadSettings,
    ThresholdSettings,
    UniformSettings,
    AvgShedderSettings,
    TransferSettings,
    DispatchSettings,
    SimSettings,
    BrokerSettings,
    AuthSettings,
    BalancedSettings,
    MergeSettings,
    TopicSettings,
    LedgerSettings,
)
