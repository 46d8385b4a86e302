"""The extensible load manager (``ExtensibleLoadManagerImpl``, PIP-192) of a running broker, with its
service-unit state channel on the metadata store (PIP-378's ``ServiceUnitStateMetadataStoreTableViewImpl``).

It wires the channel's pure decisions (``algorithms.extensible.channel``) and the extensible family
(``algorithms.families.ExtensibleFamily``) onto the store layer:

* ``records``: the node values (``BrokerLookupData``, ``ServiceUnitStateData``, the load stores') and codecs;
* ``registry``: registration at ``/loadbalance/brokers/{id}`` and every broker's mirror of the registrations;
* ``load_store``: the broker-load and top-bundles stores; ``reporters``: the two reporters and their tombstones;
* ``channel``: the records, every broker's mirror, the reactions, fencing and the re-sync after a session change;
* ``assign``: owner lookups, any-broker assignment, the initiators' waits;
* ``split``: the source broker's split; ``split_scheduler``: every broker's split scheduler;
* ``cleanup``: orphan cleanup and the ownership monitor; ``leader``: the leader's unload cycle and monitor;
* ``manager``: the composition behind ``live.broker.manager.LoadManager``; ``namespace``: lookups, unload, split.

See docs/live/ and docs/extensible-channel.md.
"""

from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.live.broker.extensible.namespace import ExtensibleNamespaceService

__all__ = ["ExtensibleLoadManager", "ExtensibleNamespaceService"]
