"""The metadata-store backends behind ``live.store.MetadataStore``: ZooKeeper through kazoo (``zookeeper``)
and etcd v3 through its JSON gateway (``etcd``, ``etcd_gateway``).  ``live.store.connect`` picks one by URL."""
