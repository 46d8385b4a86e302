"""bundlewise: Apache Pulsar's broker load balancing, rebuilt in Python.

Layers (imports point down only; tests/test_layering.py checks them):

* ``model`` (pure data) <- ``config`` (Pulsar's keys, loading, per-concern views) | ``files`` (atomic outputs)
* <- ``algorithms`` (the strategies and the two load managers' families) | ``traffic`` (the cost model,
  workloads and traces) | ``results`` (the run-results contract: record, decisions row, metrics, writer)
* <- ``pipeline`` (PySpark load data) | ``sim`` (the simulator) | ``live`` (the running load manager on
  ZooKeeper or etcd)
* <- ``report`` (report.html) <- ``cli`` (the commands) <- ``demo``.

See docs/architecture.md.
"""

__version__ = "0.1.0"
