"""The load-data pipeline on Apache Spark (PySpark is imported only inside this subpackage).

Modules: ``session`` (the SparkSession), ``schemas`` (table schemas), ``dumps`` (pure-Python parsers of
Pulsar's stats dumps), ``boundaries`` (where bundle boundaries come from), ``ingest`` (every format into
the canonical topic-samples table + rejects), ``transforms`` (pure DataFrame functions) and ``jobs``
(the only code reading and writing paths).  See docs/pipeline.md.
"""
