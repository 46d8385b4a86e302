"""The running load manager (contract: ``bundlewise store``, ``broker``, ``live``).

``live.store`` is the foundation: one small asyncio metadata-store protocol with ZooKeeper and
etcd backends, Pulsar's session events, a fencing deadline, and recipes (leader election,
resource locks, versioned read-modify-write, a table view) built on the protocol only.
See docs/live.md.
"""
