"""The cluster simulator: clock, workloads, cluster state, Pulsar's leader cycles, metrics, scenarios."""
