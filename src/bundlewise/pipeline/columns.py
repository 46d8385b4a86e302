"""Column names of the pipeline's tables, as plain tuples (no Spark): shared by the Spark schemas
(``schemas``), the Arrow code in the tasks (``columnar``, ``fragments``, ``frames``) and the benchmark."""

from __future__ import annotations

RATE_FIELDS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")
COUNT_FIELDS = ("producerCount", "consumerCount")
NUMBER_FIELDS = (*RATE_FIELDS, *COUNT_FIELDS)
TRACE_COLUMNS = ("timestamp", "topic", *NUMBER_FIELDS, "broker")
"""The columns of a canonical trace (docs/pipeline.md, Inputs)."""
SAMPLE_COLUMNS = ("timestamp", "broker", "topic", "bundle", *NUMBER_FIELDS, "topics")
"""The canonical topic-samples rows every input is read into (``schemas.TOPIC_SAMPLES``; ``dumps`` rows)."""
SUM_FIELDS = (*RATE_FIELDS, "topics", *COUNT_FIELDS)
"""The summed columns of the partial bundle sums (beside ``rows``, the input rows summed)."""
AVERAGE_FIELDS = tuple(
    f"{window}{name}"
    for window in ("shortTerm", "longTerm")
    for name in ("MsgThroughputIn", "MsgThroughputOut", "MsgRateIn", "MsgRateOut")
)
"""The eight averages, named as Pulsar's ``TimeAverageBrokerData`` names its sums."""
