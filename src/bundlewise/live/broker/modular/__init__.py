"""The modular load manager (``ModularLoadManagerImpl``) of a running broker: registration and reports
(``reporter``), every broker's copy of the load data (``aggregate``), the leader's work (``leader``) and
the composition behind ``live.broker.manager.LoadManager`` (``manager``)."""

from bundlewise.live.broker.modular.manager import ModularLoadManager

__all__ = ["ModularLoadManager"]
