"""The pipeline's outputs as a recording to replay: which dataset carries the workload, and the layout it starts from.

``bundlewise pipeline --out OUT`` writes ``topic_samples/`` (one row per sample and topic, with its ``bundle`` and
``broker``), ``bundle_load/`` (one row per sample and bundle, with its ``broker``) and ``namespaces/`` (each
namespace's boundaries and whether they were configured or carried by the input); docs/pipeline.md.  A replay
(``simulate --workload OUT``, ``OUT/topic_samples/`` or ``OUT/bundle_load/``) reads:

* the workload: ``topic_samples/`` when there is one, else ``bundle_load/`` (each bundle then stands for its
  topics, ``traffic.trace``);
* the **layout at the first sample** (``layout_of``): each bundle with the time it first appears and its broker
  then (the least broker name when two brokers report it at that time, as ``bundle_load/`` names it).  Taking
  the bundles in order of first appearance, a bundle overlapping one already taken (a split during the
  recording: the children appear after the parent) is left out; a namespace's boundaries are the ranges taken,
  plus, when ``namespaces/`` says they were configured, those boundaries (bundles without samples), plus
  0x00000000 and 0xffffffff; the gaps between the ranges a dump carried become bundles without topics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND
from bundlewise.traffic.layout import RecordedLayout

DATASETS = ("topic_samples", "bundle_load")


@dataclass(frozen=True)
class Recording:
    """Where a recording's workload and its namespaces are."""

    samples: str  # a folder: topic_samples/ or bundle_load/
    namespaces: str | None  # namespaces/, when the run wrote one


def find_recording(path: str) -> Recording | None:
    """``path`` as a pipeline output (the whole ``--out`` folder, or one of its workload datasets), or None."""
    root = path.rstrip("/")
    if os.path.isdir(root):
        for name in DATASETS:
            if os.path.isdir(os.path.join(root, name)):
                return Recording(os.path.join(root, name), _namespaces(root))
        if os.path.basename(root) in DATASETS:
            return Recording(root, _namespaces(os.path.dirname(root)))
    return None


def _namespaces(root: str) -> str | None:
    folder = os.path.join(root, "namespaces")
    return folder if os.path.isdir(folder) else None


def read_namespaces(folder: str | None) -> dict[str, tuple[int, ...]]:
    """The configured boundaries of ``namespaces/`` (namespaces whose boundaries the input carried: none)."""
    if folder is None:
        return {}
    try:
        table = pq.read_table(folder, columns=["namespace", "boundaries", "source"])
    except (OSError, pa.ArrowInvalid) as e:
        raise InputError(f"cannot read: {e}", source=folder) from None
    return {
        str(r["namespace"]): tuple(int(x) for x in r["boundaries"])
        for r in table.to_pylist()
        if r["source"] == "configured"
    }


def layout_of(samples: pa.Table, configured: dict[str, tuple[int, ...]], source: str) -> RecordedLayout:
    """The layout at the first sample (module docstring) from samples with ``timestamp``, ``bundle``, ``broker``."""
    if "bundle" not in samples.column_names or samples.num_rows == 0:
        return RecordedLayout({ns: b for ns, b in configured.items()}, {}, source)
    table = pa.table(
        {
            "timestamp": samples.column("timestamp"),
            "bundle": samples.column("bundle").cast(pa.string()),
            "broker": samples.column("broker").cast(pa.string())
            if "broker" in samples.column_names
            else pa.nulls(samples.num_rows, pa.string()),
        }
    ).filter(pc.is_valid(pc.field("bundle")))
    first = table.group_by("bundle").aggregate([("timestamp", "min")])
    at = table.join(first, keys="bundle").filter(pc.field("timestamp") == pc.field("timestamp_min"))
    owners = at.filter(pc.is_valid(pc.field("broker"))).group_by("bundle").aggregate([("broker", "min")])
    owner = dict(zip(owners.column("bundle").to_pylist(), owners.column("broker_min").to_pylist(), strict=True))
    order = np.lexsort(
        (np.array(first.column("bundle").to_pylist(), dtype=object), first.column("timestamp_min").to_numpy())
    )
    names = first.column("bundle").to_pylist()
    taken: dict[str, list[tuple[int, int]]] = {}
    owners_taken: dict[str, str] = {}
    for i in order:
        try:
            b = Bundle.parse(names[i])
        except InputError as e:
            raise InputError(f"bundle {names[i]!r}: {e}", source=source) from None
        ns = str(b.namespace)
        ranges = taken.setdefault(ns, [])
        if any(lo < b.upper and b.lower < hi for lo, hi in ranges):
            continue  # a split during the recording: the children appear after their parent
        ranges.append((b.lower, b.upper))
        if owner.get(names[i]) is not None:
            owners_taken[b.name] = owner[names[i]]
    boundaries: dict[str, tuple[int, ...]] = {}
    for ns in sorted(set(taken) | set(configured)):
        points = {FULL_LOWER_BOUND, FULL_UPPER_BOUND, *configured.get(ns, ())}
        for lo, hi in taken.get(ns, []):
            points.update((lo, hi))
        boundaries[ns] = tuple(sorted(points))
    return RecordedLayout(boundaries, owners_taken, source)
