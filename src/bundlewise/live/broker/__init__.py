"""One running broker (``bundlewise broker``): ``service.Broker`` composes the store session, emulated traffic,
authentication (``auth``), the HTTP surface (``http``) and ``/metrics`` (``metrics``) with a load manager behind
``manager.LoadManager`` -- ``modular`` (``ModularLoadManagerImpl``) or ``extensible``
(``ExtensibleLoadManagerImpl``), peers that never import each other -- each of which builds its own ownership
and namespace service (the ``namespace.NamespaceService`` protocol) and runs its background work on one task
group (``tasks``).  See docs/live/."""
