"""Traffic: what brokers carry and what it costs them, shared by the simulator, the live brokers and the pipeline.

Imports only ``model`` and ``config`` (and numpy, pyarrow).  Modules: ``cost`` (a broker's capacity and the
cost model: traffic -> CPU and NIC usage in Pulsar's units) and ``saturation`` (what a broker at its limit
delivers), ``workload`` (the built-in generator of topic rates), ``trace`` (a recorded trace as a step
function over time, from an Arrow table), ``columns``, ``rules`` and ``readers`` (a topic-samples trace's
columns, the one set of rules that keeps or rejects a row, and its reading with pyarrow), ``recording`` and
``layout`` (the pipeline's outputs as a recording and the layout it starts from).
"""
