"""A scenario's built-in workload written as a topic-samples trace, so every broker process plays the same one.

The generator (``traffic.workload.GeneratedWorkload``) draws its noise afresh at each call, so brokers
cannot each run their own copy.  ``trace_table`` samples it once per scenario step from time 0 to the
duration -- the calls ``simulate`` makes, in the same order with the same seed, hence the same rates -- as
rows ``timestamp`` (ms from 0), ``topic``, the four rates and the producer/consumer counts
(docs/formats.md); ``live up`` reads it as a trace (``TraceWorkload``) and gives the brokers its digest
(``TraceWorkload.save``, a ``.npz`` file) with ``--workload``; they hold each sample until the next, as the
simulator holds a tick.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bundlewise.traffic.columns import COUNT_FIELDS, RATE_FIELDS
from bundlewise.traffic.workload import Workload


def trace_table(workload: Workload, duration: int, step: int) -> Any:
    import pyarrow as pa

    names = np.array(workload.topics.names, dtype=object)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("timestamp", "topic", *RATE_FIELDS, *COUNT_FIELDS)}
    for t in range(0, max(duration, 1), step):
        rates = workload.rates(t)
        _, producers, consumers = workload.counts(t)
        parts["timestamp"].append(np.full(len(names), t, dtype=np.int64))
        parts["topic"].append(names)
        for field, values in zip(RATE_FIELDS, rates, strict=True):
            parts[field].append(np.asarray(values, dtype=float))
        parts["producerCount"].append(np.asarray(producers, dtype=np.int64))
        parts["consumerCount"].append(np.asarray(consumers, dtype=np.int64))
    return pa.table({k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()})
