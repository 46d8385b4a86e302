"""The modular load manager (``ModularLoadManagerImpl``) of a running broker: registration and reports
(``reporter``), every broker's copy of the load data (``aggregate``), the leader's work (``leader``), bundle
ownership with ephemeral locks and fencing (``ownership``), lookups, unload and split over it (``namespace``, the
``live.broker.namespace.NamespaceService`` of this mode) and the composition behind
``live.broker.manager.LoadManager`` (``manager``)."""

from bundlewise.live.broker.modular.manager import ModularLoadManager

__all__ = ["ModularLoadManager"]
