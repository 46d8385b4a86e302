"""Traffic: what brokers carry and what it costs them, shared by the simulator and the live brokers.

Imports only ``model`` and ``config`` (and numpy).  Modules: ``cost`` (a broker's capacity and the cost
model: traffic -> CPU and NIC usage in Pulsar's units), ``workload`` (the built-in generator of topic
rates) and ``trace`` (a recorded trace as a step function over time, from an Arrow table or a pandas
frame: the reader of the file lives with the caller).
"""
