"""Strategy families: what each of Pulsar's two load managers decides, around one shedding strategy.

A family brings a shedding strategy together with the placement and the split strategy of its load
manager, and explains its decisions (``model.decisions``).  It reads only what that load manager's
nodes have:

* ``ModularFamily`` (``ModularLoadManagerImpl``): the leader's ``LoadData`` -- the brokers'
  ``LocalBrokerData`` reports, with the bundle data the leader keeps (``algorithms.leader``);
* ``ExtensibleFamily`` (``ExtensibleLoadManagerImpl``): the broker-load store, the top-bundles store and
  the registered brokers, gathered in an ``ExtensibleSnapshot``; plus each broker's own bundle stats for
  its split strategy.

Families are made by name from the one registry (``algorithms.registry``); the simulator, the commands
and the live load manager adapt their own data to these inputs (docs/architecture.md).
"""

from bundlewise.algorithms.families.extensible import ExtensibleFamily
from bundlewise.algorithms.families.modular import ModularFamily

Family = ModularFamily | ExtensibleFamily

__all__ = ["ExtensibleFamily", "Family", "ModularFamily"]
