"""The schemas of the pipeline's tables (docs/pipeline.md describes every column).

* ``TOPIC_SAMPLES``: the one canonical input table every format is read into (docs/pipeline.md, Inputs): one row
  per (timestamp, topic) — or, for load reports, per (timestamp, bundle) with ``topic`` null and
  ``topics`` the bundle's topic count.  ``bundle`` is set when the input carries the owning bundle
  (broker-stats/topics dumps, load reports); ``broker`` when it carries the owner.
* ``REJECTS``: malformed records with the file they came from and the reason.
* ``BROKER_REPORTS``: broker-level rows of load-report dumps (resources and reported totals).
* ``BUNDLE_LOAD`` / ``BROKER_LOAD`` / ``SPLIT_CANDIDATES`` / ``NAMESPACES``: the transforms' outputs.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from bundlewise.pipeline.columns import AVERAGE_FIELDS, BROKER_REPORT_FIELDS, RATE_FIELDS

TOPIC_SAMPLES = StructType(
    [
        StructField("timestamp", LongType(), False),
        StructField("broker", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("bundle", StringType(), True),
        StructField("msgRateIn", DoubleType(), False),
        StructField("msgRateOut", DoubleType(), False),
        StructField("msgThroughputIn", DoubleType(), False),
        StructField("msgThroughputOut", DoubleType(), False),
        StructField("producerCount", LongType(), False),
        StructField("consumerCount", LongType(), False),
        StructField("topics", LongType(), False),
    ]
)

REJECTS = StructType(
    [
        StructField("source", StringType(), True),
        StructField("record", StringType(), True),
        StructField("reason", StringType(), False),
    ]
)

_REPORT_TYPES = {"timestamp": LongType(), "broker": StringType(), "numTopics": LongType(), "numBundles": LongType()}
BROKER_REPORTS = StructType([StructField(f, _REPORT_TYPES.get(f, DoubleType()), False) for f in BROKER_REPORT_FIELDS])
"""Resources (usage, limit), ``maxResourceUsage`` and the reported totals: doubles; the rest as typed here."""

BUNDLE_LOAD = StructType(
    [
        StructField("timestamp", LongType(), False),
        StructField("namespace", StringType(), False),
        StructField("bundle", StringType(), False),
        StructField("broker", StringType(), True),
        *[StructField(f, DoubleType(), False) for f in RATE_FIELDS],
        StructField("topics", LongType(), False),
        StructField("producerCount", LongType(), False),
        StructField("consumerCount", LongType(), False),
        StructField("sessions", LongType(), False),
        StructField("shortTermSamples", IntegerType(), False),
        StructField("longTermSamples", IntegerType(), False),
        *[StructField(f, DoubleType(), False) for f in AVERAGE_FIELDS],
    ]
)

BUNDLE_STAGE = StructType(
    [
        *BUNDLE_LOAD.fields,
        StructField("rows", LongType(), False),
        StructField("reasons", ArrayType(StringType(), False), False),
    ]
)
"""``BUNDLE_LOAD`` as the transforms carry it: plus the input rows summed and the split reasons."""

BROKER_LOAD = StructType(
    [
        StructField("timestamp", LongType(), False),
        StructField("broker", StringType(), False),
        *[StructField(f, DoubleType(), False) for f in RATE_FIELDS],
        StructField("bundles", LongType(), False),
        StructField("topics", LongType(), False),
        StructField("producerCount", LongType(), False),
        StructField("consumerCount", LongType(), False),
        *[StructField(f, DoubleType(), False) for f in AVERAGE_FIELDS],
    ]
)

SPLIT_CANDIDATES = StructType(
    [
        StructField("timestamp", LongType(), False),
        StructField("namespace", StringType(), False),
        StructField("bundle", StringType(), False),
        StructField("broker", StringType(), True),
        StructField("topics", LongType(), False),
        StructField("sessions", LongType(), False),
        StructField("longTermMsgRate", DoubleType(), False),
        StructField("longTermMsgThroughput", DoubleType(), False),
        StructField("reasons", ArrayType(StringType(), False), False),
        StructField("bundleCount", LongType(), False),
        StructField("withinNamespaceCap", BooleanType(), False),
    ]
)

NAMESPACES = StructType(
    [
        StructField("namespace", StringType(), False),
        StructField("boundaries", ArrayType(LongType(), False), False),
        StructField("bundleCount", LongType(), False),
        StructField("source", StringType(), False),
        StructField("complete", BooleanType(), False),
    ]
)
"""Per namespace of a run: its bundle boundaries, ``configured`` or carried by the ``input``."""
