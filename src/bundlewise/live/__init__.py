"""The running load manager (contract: ``bundlewise store``, ``broker``, ``live``).

``live.store`` is the foundation: one small asyncio metadata-store protocol with ZooKeeper and
etcd backends, Pulsar's session events, a fencing deadline, and recipes (leader election,
resource locks, versioned read-modify-write, a table view) built on the protocol only.

On it, one broker (``broker``): its identity and Pulsar's JSON values (``values``), Pulsar time
(``clock``), namespaces' bundles (``policies``), ownership with fencing (``ownership``), emulated
traffic (``traffic``), lookups, unload and split (``namespace``), token authentication and
authorization (``auth``), its admin client (``admin_client``), the HTTP surface (``http``) and
``/metrics`` (``metrics``); the load manager behind one interface (``manager``), the modular one in
``modular``.  ``cluster`` starts a local cluster of broker processes and ``observer`` watches their
served sets for double ownership.  See docs/live.md.
"""
