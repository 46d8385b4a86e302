"""The running load manager (contract: ``bundlewise store``, ``broker``, ``live``), in four rooms.

* ``store``: the metadata-store protocol (``MetadataStore``, Pulsar's session events, the fencing deadline,
  Pulsar's paths in ``layout``), its ``backends`` (ZooKeeper through kazoo, etcd v3 through its JSON gateway)
  and the ``recipes`` built on the protocol only (leader election, resource locks, versioned
  read-modify-write, a table view).
* ``broker``: one broker process on a store -- its identity and Pulsar's JSON values, Pulsar time, namespace
  bundles, ownership with fencing, emulated traffic, lookups/unload/split, authentication, the HTTP surface
  and ``/metrics``, and the two load managers behind one interface (``broker.modular``,
  ``broker.extensible``).
* ``harness``: the ``live up`` experiment -- local store servers, a cluster of broker processes, scheduled
  events, lookup clients, the load sampler, the double-ownership observer and the run's outputs.
* ``inspect``: read-only views of someone else's cluster (``live status``, ``live advise``) and the store
  reader they use.

Imports point down: harness -> broker -> store; inspect reads the store (and the modular aggregate's rules);
the broker never imports the harness.  See docs/live/.
"""
