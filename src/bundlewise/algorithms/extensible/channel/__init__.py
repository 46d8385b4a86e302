"""The service-unit state channel of the extensible load manager, as pure decisions over records
(``ServiceUnitStateChannelImpl`` and its table views).  The records and the conflict resolver live in
``bundlewise.model.channel``; whoever owns the metadata store applies these decisions.

* ``events``: the record that starts an assignment, unload/transfer or split;
* ``reactions``: what a broker does with each accepted record (publish, close, tombstone, split, lookups);
* ``ownership``: which keys a broker owns by its view;
* ``lookup``: the owner-lookup decision table, its waits and timeouts;
* ``split``: the source broker's split plan (children claims, new bundles, the parent's ``Deleted``);
* ``cleanup``: metadata health, registration events and orphan cleanup with forced overrides;
* ``monitor``: the leader's ownership monitor (inactive brokers, stuck in-flight keys, tombstones);
* ``settings``: the configuration keys and constants the channel uses.

See docs/extensible-channel.md.
"""

from bundlewise.algorithms.extensible.channel.cleanup import (
    CleanupPlan,
    DeletionDecision,
    MetadataState,
    Override,
    Selector,
    SessionEvent,
    SessionHistory,
    is_orphan,
    on_broker_deleted,
    override_for,
    plan_cleanup,
)
from bundlewise.algorithms.extensible.channel.events import assign_record, split_record, unload_record
from bundlewise.algorithms.extensible.channel.lookup import ChannelState, LookupAction, OwnerLookup, lookup_owner
from bundlewise.algorithms.extensible.channel.monitor import MonitorPlan, plan_monitor
from bundlewise.algorithms.extensible.channel.ownership import owned_service_units, owns
from bundlewise.algorithms.extensible.channel.reactions import (
    Close,
    LookupCompletion,
    LookupOutcome,
    Reaction,
    react,
    react_existing,
)
from bundlewise.algorithms.extensible.channel.split import SplitPlan, plan_split
from bundlewise.config.views import ChannelSettings

__all__ = [
    "ChannelSettings",
    "ChannelState",
    "CleanupPlan",
    "Close",
    "DeletionDecision",
    "LookupAction",
    "LookupCompletion",
    "LookupOutcome",
    "MetadataState",
    "MonitorPlan",
    "Override",
    "OwnerLookup",
    "Reaction",
    "Selector",
    "SessionEvent",
    "SessionHistory",
    "SplitPlan",
    "assign_record",
    "is_orphan",
    "lookup_owner",
    "on_broker_deleted",
    "override_for",
    "owned_service_units",
    "owns",
    "plan_cleanup",
    "plan_monitor",
    "plan_split",
    "react",
    "react_existing",
    "split_record",
    "unload_record",
]
