"""What a Spark task computes on its share of the per-bundle table, in Arrow and numpy (no Spark here).

``transforms.bundle_load`` shuffles the partial sums by bundle, so one task holds every sample of its
bundles, and runs ``bundle_stage`` on them:

1. ``finish_sums``: the partial sums (one row per (timestamp, bundle, broker) and scan task) → one
   ``NamespaceBundleStats`` sample per (timestamp, bundle): the sums, ``broker`` = the least reporting
   owner (null when none is known), ``sessions`` = producers + consumers;
2. ``averages_frame``: Pulsar's ``TimeAverageMessageData`` recurrence over each bundle's samples in time
   order (``TimeAverageMessageData#update``), with the model's own ``time_average_step`` applied to numpy arrays;
3. ``split_reason_lists``: the conditions of ``BundleSplitterTask`` on every row at once
   (``algorithms.splitting.conditions.split_conditions``, proven equal to ``split_reasons`` in tests).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from bundlewise.algorithms.splitting.conditions import REASONS, split_conditions
from bundlewise.config.views import SplitSettings
from bundlewise.model.load import DEFAULT_STATS, NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES, time_average_step
from bundlewise.pipeline import schemas

SUMMED = (*schemas.SUM_FIELDS, "rows")
"""The columns of the partial sums that are summed again when the partial sums are finished."""
_PRIOR = {
    "MsgThroughputIn": DEFAULT_STATS.msgThroughputIn,
    "MsgThroughputOut": DEFAULT_STATS.msgThroughputOut,
    "MsgRateIn": DEFAULT_STATS.msgRateIn,
    "MsgRateOut": DEFAULT_STATS.msgRateOut,
}


def finish_sums(partial: pa.Table) -> pd.DataFrame:
    """Partial sums → one row per (timestamp, bundle), in no particular order."""
    aggregates = [(c, "sum") for c in SUMMED] + [("namespace", "first"), ("broker", "min")]
    done = partial.group_by(["timestamp", "bundle"], use_threads=False).aggregate(aggregates)
    renamed = done.rename_columns(
        [c.removesuffix("_sum").removesuffix("_first").removesuffix("_min") for c in done.column_names]
    )
    pdf = renamed.to_pandas()
    pdf["sessions"] = pdf["producerCount"] + pdf["consumerCount"]
    return pdf


def _field_of(name: str) -> str:
    """``MsgRateIn`` → ``msgRateIn``."""
    return name[0].lower() + name[1:]


def averages_frame(pdf: pd.DataFrame) -> pd.DataFrame:
    """Pulsar's ``TimeAverageMessageData`` recurrence over each bundle's samples in time order.

    Vectorised across bundles: step k updates the k-th sample of every bundle at once with the model's
    ``time_average_step`` (numpy applies the same IEEE-754 operations as the scalar version).  Returns the
    frame sorted by (bundle, timestamp) with ``shortTermSamples``, ``longTermSamples`` and the eight averages.
    """
    pdf = pdf.sort_values(["bundle", "timestamp"], kind="mergesort").reset_index(drop=True)
    n = len(pdf)
    codes = pd.factorize(pdf["bundle"])[0]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if n else np.array([], dtype=np.int64)
    lengths = np.diff(np.r_[starts, n])
    rank = np.arange(n) - np.repeat(starts, lengths)
    for window, max_samples in (("shortTerm", NUM_SHORT_SAMPLES), ("longTerm", NUM_LONG_SAMPLES)):
        pdf[f"{window}Samples"] = np.minimum(rank + 1, max_samples).astype(np.int32)
        for name, prior in _PRIOR.items():
            x = pdf[_field_of(name)].to_numpy(dtype=np.float64)
            out = np.empty(n, dtype=np.float64)
            prev = np.full(len(starts), prior, dtype=np.float64)
            for k in range(int(lengths.max()) if n else 0):
                active = lengths > k
                rows = starts[active] + k
                value = time_average_step(prev[active], min(k + 1, max_samples), x[rows])
                out[rows] = value
                prev[active] = value
            pdf[f"{window}{name}"] = out
    return pdf


SplitThresholds = SplitSettings
"""The split settings shipped to the tasks (``config.views.SplitSettings``)."""


def split_reason_lists(pdf: pd.DataFrame, limits: SplitThresholds) -> pa.ListArray:
    """Per row, the split conditions met (``REASONS`` order; empty for fewer than 2 topics): the split
    rule (``split_conditions``) on the latest sample's topics and sessions and the long-term rate and
    throughput (in + out)."""
    topics = pdf["topics"].to_numpy()
    sessions = (pdf["producerCount"] + pdf["consumerCount"]).to_numpy()
    rate = (pdf["longTermMsgRateIn"] + pdf["longTermMsgRateOut"]).to_numpy()
    tput = (pdf["longTermMsgThroughputIn"] + pdf["longTermMsgThroughputOut"]).to_numpy()
    met = split_conditions(topics, sessions, rate, tput, limits)
    offsets = np.r_[0, np.cumsum(met.sum(axis=1))].astype(np.int32)
    values = np.asarray(REASONS, dtype=object)[np.nonzero(met)[1]]  # row-major: each row's reasons in order
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.string()))


def bundle_stage(partial: pa.Table, limits: SplitThresholds, schema: pa.Schema) -> pa.Table:
    """The partial sums of some bundles (all their samples) → their ``bundle_load`` rows with ``reasons``."""
    pdf = averages_frame(finish_sums(partial))
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    table = table.append_column("reasons", split_reason_lists(pdf, limits))
    return table.select(schema.names).cast(schema)
