"""The load-data pipeline on Apache Spark (PySpark is imported only inside this subpackage).

``session`` (the SparkSession), ``locations`` and ``outputs`` (URIs, file systems, atomic outputs),
``fragments`` and ``columnar`` (the fast path: Spark tasks reading with pyarrow), ``reading``, ``ingest``,
``keyed`` and ``transforms`` (the general path on Spark's readers and native expressions), ``frames`` (the small
tables in Arrow/numpy), ``dumps`` (Pulsar's stats dumps), ``boundaries``, ``columns``/``schemas``; ``routes``
(the route of a run, chosen once) and one module per route (``fast_driver``, ``fast_spark``, ``general_driver``,
``general_spark``) over ``handover``, ``sums``, ``finish`` and ``summary``; ``jobs`` (the run).  See docs/pipeline.md.
"""
