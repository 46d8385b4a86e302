"""The small tables of a run, computed in Arrow, numpy and pandas (no Spark here): on the driver over the whole
table when the partial sums are small, or by Spark tasks over their share (``transforms``) — the same code.

``bundle_stage``, on every sample of some bundles (Spark: one shuffle by bundle):

1. ``finish_sums``: the partial sums (one row per (timestamp, bundle, broker) and scan task) → one
   ``NamespaceBundleStats`` sample per (timestamp, bundle): the sums, ``broker`` = the least reporting
   owner (null when none is known), ``sessions`` = producers + consumers;
2. ``averages_frame``: Pulsar's ``TimeAverageMessageData`` recurrence over each bundle's samples in time
   order (``ModularLoadManagerImpl#updateBundleData``), with the model's own ``time_average_step`` applied
   to numpy arrays;
3. ``split_reason_lists``: the conditions of ``BundleSplitterTask#findBundlesToSplit`` on every row at once,
   proven equal to ``algorithms.splitting.conditions.split_reasons`` in tests.

Then, on the stage's rows: ``split_candidates`` (every bundle of a namespace at a time: the namespace cap,
``BundleSplitterTask``'s ``count + acceptedSoFar < loadBalancerNamespaceMaximumBundles``), ``broker_load``
(every bundle of a broker at a time: ``LocalBrokerData`` totals and ``TimeAverageBrokerData#reset`` sums)
and ``overview`` (per bundle, the figures of the run's summary); ``namespaces``: each namespace's bundle
boundaries, for replaying the recorded layout.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bundlewise.algorithms.splitting.conditions import REASONS, split_conditions
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import Bundle
from bundlewise.model.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND
from bundlewise.model.load import DEFAULT_STATS, NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES, time_average_step
from bundlewise.pipeline.boundaries import Boundaries
from bundlewise.pipeline.columns import AVERAGE_FIELDS, RATE_FIELDS, SUM_FIELDS

SUMMED = (*SUM_FIELDS, "rows")
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


def split_candidates(stage: pa.Table, cap: int, counts: Boundaries | None, schema: pa.Schema) -> pa.Table:
    """The stage's rows with split reasons (all the bundles of their namespaces at those times), with the
    namespace's bundle count and the namespace cap applied in (broker, bundle) order.

    ``bundleCount`` is the namespace's current bundle count: from ``counts`` (the boundaries the bundles were
    cut by) when given, else the number of bundles of the namespace in the stage at that time.
    ``withinNamespaceCap`` is ``bundleCount + acceptedSoFar < loadBalancerNamespaceMaximumBundles``.
    """
    hot = stage.filter(pc.greater(pc.list_value_length(stage.column("reasons")), 0))
    if hot.num_rows == 0:
        return schema.empty_table()
    pdf = hot.to_pandas()
    if counts is None:
        observed = stage.group_by(["timestamp", "namespace"], use_threads=False).aggregate([("bundle", "count")])
        named = observed.rename_columns(["timestamp", "namespace", "bundleCount"]).to_pandas()
        pdf = pdf.merge(named, on=["timestamp", "namespace"], how="left")
    else:
        pdf["bundleCount"] = pdf["namespace"].map(counts.bundle_count)
    pdf = pdf.sort_values(["timestamp", "namespace", "broker", "bundle"], kind="mergesort", na_position="last")
    accepted = pdf.groupby(["timestamp", "namespace"], sort=False).cumcount()
    out = pd.DataFrame(
        {
            "timestamp": pdf["timestamp"],
            "namespace": pdf["namespace"],
            "bundle": pdf["bundle"],
            "broker": pdf["broker"],
            "topics": pdf["topics"],
            "sessions": pdf["sessions"],
            "longTermMsgRate": pdf["longTermMsgRateIn"] + pdf["longTermMsgRateOut"],
            "longTermMsgThroughput": pdf["longTermMsgThroughputIn"] + pdf["longTermMsgThroughputOut"],
            "reasons": pdf["reasons"],
            "bundleCount": pdf["bundleCount"].astype(np.int64),
            "withinNamespaceCap": (pdf["bundleCount"] + accepted) < cap,
        }
    )
    return pa.Table.from_pandas(out, preserve_index=False).select(schema.names).cast(schema)


def broker_load(stage: pa.Table, schema: pa.Schema) -> pa.Table:
    """Per (timestamp, broker) over the bundles whose owner is known: the four rate sums, bundles, topics,
    producers, consumers and the eight ``TimeAverageBrokerData`` sums."""
    known = stage.filter(pc.is_valid(stage.column("broker")))
    summed = [*RATE_FIELDS, "topics", "producerCount", "consumerCount", *AVERAGE_FIELDS]
    done = known.group_by(["timestamp", "broker"], use_threads=False).aggregate(
        [(c, "sum") for c in summed] + [("bundle", "count")]
    )
    names = {f"{c}_sum": c for c in summed} | {"bundle_count": "bundles"}
    done = done.rename_columns([names.get(c, c) for c in done.column_names])
    return done.select(schema.names).cast(schema)


def overview(stage: pa.Table) -> pa.Table:
    """Per bundle (all its samples): rows aggregated, first and last timestamp, peak total throughput and
    message rate (in + out), its brokers and the samples with split reasons."""
    cols = stage.select(["namespace", "bundle", "rows", "timestamp", "broker"])
    cols = cols.append_column("tput", pc.add(stage.column("msgThroughputIn"), stage.column("msgThroughputOut")))
    cols = cols.append_column("rate", pc.add(stage.column("msgRateIn"), stage.column("msgRateOut")))
    hot = pc.greater(pc.list_value_length(stage.column("reasons")), 0)
    cols = cols.append_column("hot", pc.cast(hot, pa.int64()))
    done = cols.group_by(["namespace", "bundle"], use_threads=False).aggregate(
        [
            ("rows", "sum"),
            ("timestamp", "min"),
            ("timestamp", "max"),
            ("tput", "max"),
            ("rate", "max"),
            ("broker", "distinct", pc.CountOptions(mode="only_valid")),
            ("hot", "sum"),
        ]
    )
    names = {
        "rows_sum": "rows",
        "timestamp_min": "t0",
        "timestamp_max": "t1",
        "tput_max": "peakThroughput",
        "rate_max": "peakMsgRate",
        "broker_distinct": "brokers",
        "hot_sum": "candidates",
    }
    return done.rename_columns([names.get(c, c) for c in done.column_names])


def namespaces(bundles: list[str], boundaries: Boundaries, schema: pa.Schema) -> pa.Table:
    """Per namespace of the run, its bundle boundaries: those the bundles were cut by (``configured``: a
    bundles file, ``--bundles`` or Pulsar's default count) when every bundle seen is one of them, else the
    ranges the input carried (``input``; ``complete`` when they tile 0x00000000..0xffffffff)."""
    seen: dict[str, list[Bundle]] = {}
    for name in bundles:
        bundle = Bundle.parse(name)
        seen.setdefault(str(bundle.namespace), []).append(bundle)
    rows = []
    for ns in sorted(seen):
        configured = boundaries.for_namespace(ns)
        cut = {(lo, hi) for lo, hi in itertools.pairwise(configured)}
        ranges = sorted({(b.lower, b.upper) for b in seen[ns]})
        if all(r in cut for r in ranges):
            bounds, source, complete = list(configured), "configured", True
        else:
            bounds = sorted({x for r in ranges for x in r})
            tiled = all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
            complete = tiled and ranges[0][0] == FULL_LOWER_BOUND and ranges[-1][1] == FULL_UPPER_BOUND
            source = "input"
        rows.append(
            {
                "namespace": ns,
                "boundaries": bounds,
                "bundleCount": len(bounds) - 1,
                "source": source,
                "complete": complete,
            }
        )
    return pa.Table.from_pylist(rows, schema=schema)
