"""The cluster simulator (docs/simulator.md): the clock, the cluster state that applies decisions, the
observe -> decide -> apply engine and its adapters to the two load managers' families, broker events,
scenarios, the optional ``[dispatch]`` model, the static floor, the failure-mode suite and sweeps.  Workloads
and the cost model are ``traffic``'s; each run is a ``results.record.RunResult``, measured and written by
``results``."""
