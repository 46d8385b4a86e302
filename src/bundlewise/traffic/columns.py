"""Column names of topic-samples traces and of the tables made from them, as plain tuples: the one list,
shared by the trace readers and rules (``traffic``), the pipeline's Spark schemas and Arrow code and the
benchmarks."""

from __future__ import annotations

RATE_FIELDS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")
COUNT_FIELDS = ("producerCount", "consumerCount")
NUMBER_FIELDS = (*RATE_FIELDS, *COUNT_FIELDS)
TRACE_COLUMNS = ("timestamp", "topic", *NUMBER_FIELDS, "broker")
"""The columns of a canonical trace (docs/formats.md); ``broker`` (the owner when recorded) is optional."""
SAMPLE_COLUMNS = ("timestamp", "broker", "topic", "bundle", *NUMBER_FIELDS, "topics")
"""The canonical topic-samples rows every input is read into (the pipeline's ``topic_samples/``, less its
``namespace``)."""
SUM_FIELDS = (*RATE_FIELDS, "topics", *COUNT_FIELDS)
"""The summed columns of the partial bundle sums (beside ``rows``, the input rows summed)."""
AVERAGE_FIELDS = tuple(
    f"{window}{name}"
    for window in ("shortTerm", "longTerm")
    for name in ("MsgThroughputIn", "MsgThroughputOut", "MsgRateIn", "MsgRateOut")
)
"""The eight averages, named as Pulsar's ``TimeAverageBrokerData`` names its sums."""
