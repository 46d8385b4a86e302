"""The channel's fixed constants (``ServiceUnitStateChannelImpl`` fields).

Its configurable settings are a config view, ``config.views.ChannelSettings`` (``config.view(ChannelSettings)``),
with Pulsar's constructor check.
"""

from __future__ import annotations

MAX_CLEAN_UP_DELAY_S = 180  # MAX_CLEAN_UP_DELAY_TIME_IN_SECS: Jittery cleanup delay, Stable threshold
MIN_CLEAN_UP_DELAY_S = 0  # MIN_CLEAN_UP_DELAY_TIME_IN_SECS: Stable cleanup delay
OWNERSHIP_CLEAN_UP_MAX_WAIT_MS = 5000  # flush timeout; wait for non-system bundles to leave
OWNERSHIP_CLEAN_UP_WAIT_RETRY_DELAY_MS = 100
MAX_CHANNEL_OWNER_ELECTION_WAIT_S = 10
MAX_BROKER_HEALTH_CHECK_RETRY = 3
MAX_BROKER_HEALTH_CHECK_DELAY_MS = 1000
BUNDLE_SPLIT_RETRY_LIMIT = 7  # NamespaceService.BUNDLE_SPLIT_RETRY_LIMIT
SPLIT_RETRY_DELAY_MS = 100
