"""One running broker (``bundlewise broker``): ``service.Broker`` composes the store session, the namespace
service, ownership, emulated traffic, authentication (``auth``), the HTTP surface (``http``) and ``/metrics``
(``metrics``) with a load manager behind ``manager.LoadManager`` -- ``modular`` (``ModularLoadManagerImpl``)
or ``extensible`` (``ExtensibleLoadManagerImpl``).  See docs/live/."""
