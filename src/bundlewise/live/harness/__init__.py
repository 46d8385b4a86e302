"""The ``live up`` experiment harness: local store servers (``servers``), a cluster of broker processes
(``cluster``), the scenario's events (``events``), lookup clients (``lookups``), the load sampler
(``sampler``), the ownership observer (``observer``), the run itself (``up``), its workload trace
(``workload``) and its output files (``outputs``).  It drives brokers from outside, as processes."""
