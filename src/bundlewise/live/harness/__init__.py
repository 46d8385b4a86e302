"""The ``live up`` experiment harness: local store servers (``servers``), a cluster of broker processes
(``cluster``), the scenario's events (``events``), lookup clients (``lookups``), the load sampler
(``sampler``), the ownership observer (``observer``), the run itself (``up``), its workload trace
(``workload``) and its output files (``outputs``); the fault campaign (``faults``) with its observer of every
broker and the store (``fault_observer``) and its pure checks (``overlap``).  It drives brokers from outside,
as processes."""
