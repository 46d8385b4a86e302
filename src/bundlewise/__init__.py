"""bundlewise: Apache Pulsar's broker load balancing, rebuilt in Python.

Layers (imports point down only): ``model`` (pure data) <- ``config`` <- ``algorithms``
<- ``pipeline`` / ``sim`` <- ``cli``.  See docs/architecture.md.
"""

__version__ = "0.1.0"
