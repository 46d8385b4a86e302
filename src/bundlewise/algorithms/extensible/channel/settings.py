"""The channel's settings and fixed constants (``ServiceUnitStateChannelImpl`` constructor and fields).

``ChannelSettings.from_config`` reads the keys the channel uses and applies Pulsar's constructor
check: the tombstone delay (``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`` x 1000) must be
at least the in-flight wait (``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``), otherwise
the channel -- and the broker -- does not start.  ``loadManagerServiceUnitStateTableViewClassName``
picks the storage: ``ServiceUnitStateTableViewImpl`` is the system topic (Pulsar's default),
``ServiceUnitStateMetadataStoreTableViewImpl`` the metadata store (PIP-378).
"""

from __future__ import annotations

from dataclasses import dataclass

from bundlewise.config import Config, short_class_name
from bundlewise.model.channel import StorageType
from bundlewise.model.errors import InputError

MAX_CLEAN_UP_DELAY_S = 180  # MAX_CLEAN_UP_DELAY_TIME_IN_SECS: Jittery cleanup delay, Stable threshold
MIN_CLEAN_UP_DELAY_S = 0  # MIN_CLEAN_UP_DELAY_TIME_IN_SECS: Stable cleanup delay
OWNERSHIP_CLEAN_UP_MAX_WAIT_MS = 5000  # flush timeout; wait for non-system bundles to leave
OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_MS = 100
MAX_CHANNEL_OWNER_ELECTION_WAIT_S = 10
MAX_BROKER_HEALTH_CHECK_RETRY = 3
MAX_BROKER_HEALTH_CHECK_DELAY_MS = 1000
BUNDLE_SPLIT_RETRY_LIMIT = 7  # NamespaceService.BUNDLE_SPLIT_RETRY_LIMIT
SPLIT_RETRY_DELAY_MS = 100

TABLE_VIEWS = {
    "ServiceUnitStateTableViewImpl": StorageType.SystemTopic,
    "ServiceUnitStateMetadataStoreTableViewImpl": StorageType.MetadataStore,
}
TABLE_VIEW_KEY = "loadManagerServiceUnitStateTableViewClassName"
TOMBSTONE_KEY = "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"
IN_FLIGHT_KEY = "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis"


def storage_of(table_view_class: str) -> StorageType:
    """The storage a table-view class name (full or short) stands for."""
    try:
        return TABLE_VIEWS[short_class_name(table_view_class)]
    except KeyError:
        raise InputError(
            f"expected one of {', '.join(TABLE_VIEWS)}, got {table_view_class!r}", field=TABLE_VIEW_KEY
        ) from None


@dataclass(frozen=True, slots=True)
class ChannelSettings:
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
                f"got {self.tombstone_delay_ms // 1000} s",
                field=TOMBSTONE_KEY,
            )

    @classmethod
    def from_config(cls, config: Config) -> ChannelSettings:
        return cls(
            in_flight_wait_ms=int(config[IN_FLIGHT_KEY]),
            tombstone_delay_ms=int(config[TOMBSTONE_KEY]) * 1000,
            monitor_interval_s=int(config["loadBalancerServiceUnitStateMonitorIntervalInSeconds"]),
            multi_phase_unload=bool(config["loadBalancerMultiPhaseBundleUnload"]),
            storage=storage_of(str(config[TABLE_VIEW_KEY])),
            metadata_operation_timeout_s=int(config["metadataStoreOperationTimeoutSeconds"]),
            max_concurrent_overrides=int(config["loadBalancerServiceUnitStateMaxConcurrentOverrides"]),
            unloading_timeout_ms=int(config["namespaceBundleUnloadingTimeoutMs"]),
        )
