"""The fast path of topic → bundle: numeric bundle keys, names attached after the aggregation.

Most inputs name their topics in full, ``persistent://tenant/ns/local``.  For those rows (and only when
the bundle boundaries are the same for every namespace) the general resolution of ``transforms.resolve``
reduces to a few native expressions per row:

* ``canonical``: the name is already what ``TopicName.parse`` returns (domain ``persistent`` or
  ``non-persistent``, exactly three non-empty ``/``-separated parts, no surrounding spaces), so its full
  name is the name itself and its namespace is ``tenant/ns`` (``substring_index``, no regex, no copy
  of a rebuilt name);
* ``bundle_index``: the CRC-32 of the name (``NamespaceBundleFactory#getLongHashCode``) → the index i of
  bundle ``[p_i, p_{i+1})`` (``NamespaceBundles#findBundle``): by arithmetic ``min(h div seg, N - 1)`` for N
  equal bundles, else by a balanced tree of comparisons against the literal boundaries (no per-row array search);
* ``keyed_sums``: the per (timestamp, broker, canonical?, namespace, bundle index) sums — a hash aggregation
  (numeric aggregates only) — after which ``split_sums`` names the (few) canonical groups and counts the
  other rows.

Rows that are not canonical (short or V1 names, invalid names, bundles carried by the input) take the
general path (``others``; ``sums`` reads them only when ``split_sums`` counted some).  ``rows_split`` is the
per-row variant for writing ``topic_samples/``.  ``tests/test_pipeline_keyed.py`` proves both paths give the
same rows, sums and rejects.
"""

from __future__ import annotations

import itertools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from bundlewise.model.bundles import initial_boundaries
from bundlewise.model.hashing import FULL_UPPER_BOUND
from bundlewise.pipeline import columns, schemas
from bundlewise.pipeline.boundaries import Boundaries

DOMAINS = ("persistent://", "non-persistent://")
MAX_TREE_BUNDLES = 512
"""Above this many bundles a comparison tree would make the generated code too large: general path."""


def _locate_slash(topic: Column, pos: Column) -> Column:
    """1-based position of the first ``/`` at or after ``pos`` (0 if none): SQL ``locate``, column position."""
    return F.call_function("locate", F.lit("/"), topic, pos)


def canonical(topic: Column) -> tuple[Column, Column]:
    """``(is_canonical, namespace)``: is ``topic`` a valid full name ``domain://tenant/ns/local``?

    Canonical means: a known domain, then ``tenant/ns/local`` with all three non-empty and exactly two
    ``/``, and no trailing space (``TopicName.parse`` trims).  Such a name is its own full name.  Only
    positions are computed per row (``locate``); the namespace is the one substring taken.
    """
    start = F.when(topic.startswith(DOMAINS[0]), F.lit(len(DOMAINS[0]) + 1)).when(
        topic.startswith(DOMAINS[1]), F.lit(len(DOMAINS[1]) + 1)
    )
    first = _locate_slash(topic, start)
    second = _locate_slash(topic, first + 1)
    ok = (
        start.isNotNull()
        & (first > start)
        & (second > first + 1)
        & (F.length(topic) > second)
        & (_locate_slash(topic, second + 1) == 0)
        & ~topic.endswith(" ")
    )
    return F.coalesce(ok, F.lit(False)), topic.substr(start, second - start)


def uniform_bounds(boundaries: Boundaries) -> tuple[int, ...] | None:
    """The boundaries when every namespace shares them and a tree stays small, else None (general path)."""
    d = boundaries.default
    if boundaries.per_namespace or len(d) - 1 > MAX_TREE_BUNDLES:
        return None
    return d


def _tree(h: Column, bounds: tuple[int, ...], lo: int, hi: int) -> Column:
    """Index i in [lo, hi] with ``bounds[i] <= h < bounds[i + 1]``, by halving (depth log2 N)."""
    if lo == hi:
        return F.lit(lo)
    mid = (lo + hi + 1) // 2
    return F.when(h >= F.lit(bounds[mid]), _tree(h, bounds, mid, hi)).otherwise(_tree(h, bounds, lo, mid - 1))


def bundle_index(h: Column, bounds: tuple[int, ...]) -> Column:
    """The index of the bundle holding hash ``h`` (0 ≤ h ≤ 0xffffffff; the last bundle is closed)."""
    n = len(bounds) - 1
    if bounds == tuple(initial_boundaries(n)):
        seg = (FULL_UPPER_BOUND + 1) // n
        return F.least(F.floor(h / F.lit(seg)), F.lit(n - 1)).cast("int")
    return _tree(h, bounds, 0, n - 1).cast("int")


def range_suffixes(bounds: tuple[int, ...]) -> Column:
    """A literal array of ``0xllllllll_0xuuuuuuuu`` per bundle index (``NamespaceBundle#getBundleRange``)."""
    names = [f"0x{lo:08x}_0x{hi:08x}" for lo, hi in itertools.pairwise(bounds)]
    return F.array(*[F.lit(s) for s in names])


def bundle_name(namespace: Column, index: Column, bounds: tuple[int, ...]) -> Column:
    """``tenant/ns/0x…_0x…`` of bundle ``index`` of ``namespace``."""
    return F.concat(namespace, F.lit("/"), F.element_at(range_suffixes(bounds), index + 1))


def tag(samples: DataFrame, bounds: tuple[int, ...]) -> DataFrame:
    """Adds ``_fast`` (canonical name, no carried bundle) and the keys ``namespace`` and ``_idx``, which only
    mean something where ``_fast`` holds.  The keys are computed unconditionally: inside ``when(_fast, …)``
    Spark would not share the name positions between the test and the keys (measured 8.1 s vs 5.0 s for
    the 10M-row keyed sums)."""
    ok, namespace = canonical(F.col("topic"))
    index = bundle_index(F.crc32(F.col("topic").cast("binary")), bounds)
    return (
        samples.withColumn("_fast", F.col("bundle").isNull() & ok)
        .withColumn("namespace", namespace)
        .withColumn("_idx", index)
    )


def keyed_sums(tagged: DataFrame) -> DataFrame:
    """Sums per (timestamp, broker, _fast, namespace, _idx): the canonical rows' groups, and groups with
    ``_fast`` false whose ``rows`` count the other rows, which ``others`` then takes one by one."""
    return partial_sums(tagged, ["timestamp", "broker", "_fast", "namespace", "_idx"])


def split_sums(sums: DataFrame, bounds: tuple[int, ...]) -> tuple[DataFrame, int]:
    """``keyed_sums`` → (canonical sums with ``bundle`` named, the number of other rows).  One small action."""
    other_rows = sums.where(~F.col("_fast")).agg(F.sum("rows")).first()
    fast = with_bundle_names(sums.where(F.col("_fast")).drop("_fast"), bounds)
    return fast, int(other_rows[0] or 0) if other_rows is not None else 0


def _barrier(tagged: DataFrame) -> DataFrame:
    """A non-deterministic column: filters above it are not pushed below, so ``_fast`` is computed once."""
    return tagged.withColumn("_part", F.spark_partition_id())


def others(tagged: DataFrame) -> DataFrame:
    """The rows the fast path does not take, in ``TOPIC_SAMPLES`` shape (for ``transforms.resolve``)."""
    rows = _barrier(tagged)
    return rows.where(~F.col("_fast") & (F.col("_part") >= 0)).select(*schemas.TOPIC_SAMPLES.fieldNames())


def rows_split(tagged: DataFrame, bounds: tuple[int, ...]) -> tuple[DataFrame, DataFrame]:
    """Per row: (canonical rows in the resolved shape, bundle named per row; the other rows as samples).

    Two filters of one input: ``sums`` writes the first, and runs the second only when the input may hold
    other rows (its Parquet row count differs from the rows written, or is not known).  Routing the
    canonical rows through ``transforms.resolve`` instead (one pass) measured 50 s vs 27 s for 10M rows.
    """
    cols = [c for c in schemas.TOPIC_SAMPLES.fieldNames() if c != "bundle"]
    rows = _barrier(tagged)
    fast = rows.where(F.col("_fast") & (F.col("_part") >= 0))
    named = fast.withColumn("bundle", bundle_name(F.col("namespace"), F.col("_idx"), bounds))
    return named.select(*cols[:3], "bundle", "namespace", *cols[3:]), others(tagged)


def partial_sums(df: DataFrame, keys: list[str]) -> DataFrame:
    """Per ``keys`` (which include ``timestamp`` and ``broker``): the sums and the row count (numeric only)."""
    return df.groupBy(*keys).agg(*[F.sum(c).alias(c) for c in columns.SUM_FIELDS], F.count(F.lit(1)).alias("rows"))


def with_bundle_names(sums: DataFrame, bounds: tuple[int, ...]) -> DataFrame:
    """Keyed partial sums (``namespace``, ``_idx``) → the same with ``bundle`` named, ``_idx`` dropped."""
    return sums.withColumn("bundle", bundle_name(F.col("namespace"), F.col("_idx"), bounds)).drop("_idx")
