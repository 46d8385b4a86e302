"""Pure strategies over the model: shedding, placement, splitting and throttling; Pulsar's extensible load
manager's strategies and channel decisions (``extensible``), bundlewise's own strategy (``balanced``), each load
manager's family around one shedding strategy (``families``), the one registry of strategies (``registry``),
the leader's bundle data and shedding cycle (``leader``, ``leader_cycle``) and the report-update rule
(``reporting``).

``now`` and ``rng`` are always parameters; no strategy reads the wall clock or a global random source.
"""
