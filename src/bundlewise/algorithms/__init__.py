"""Pure strategies over the model: shedding, placement, splitting, throttling.

``now`` and ``rng`` are always parameters; no strategy reads the wall clock or a global random source.
"""
