"""Where ``BalancedPlanShedder`` places a bundle that has no owner (a lookup after a restart, a split child,
a new topic): onto the candidate whose load AFTER taking it is lowest.

Pulsar's ``LeastLongTermMessageRate`` ranks brokers by long-term message rate and ignores capacity,
``AvgShedder`` picks a random candidate for a bundle it did not plan (``AvgShedder#selectBroker``), and
``LeastResourceUsageWithWeight`` ranks by a usage history that does not move within one burst of lookups --
so a restart's orphaned bundles can all land on the one broker that looked emptiest.  Here:

* each candidate's usage is its latest report plus its preallocated bundles (``preallocatedBundleData``,
  which the modular assignment flow, ``ModularLoadManagerImpl#selectBroker``, fills after every choice)
  plus the moves in flight (``estimate.broker_usage``): a burst of lookups in one cycle sees every earlier
  assignment of that burst;
* the bundle's usage comes from its short-term ``BundleData``; a split child the leader has no sample of yet
  weighs what its topics carried when its owner split it (``SplitDecision.measured``: one child of a hot
  partitioned topic may carry nearly all of the parent); any other bundle without samples (a split
  child, whose data Pulsar's leader starts from the 50 msg/s prior) is estimated from the bundle of its
  namespace that a report still lists and whose range contains it (its parent), in proportion to the
  range, else as the mean bundle of its namespace -- otherwise every child of a burst of splits looks
  tiny and the whole burst lands on the one least loaded broker;
* the pick minimises ``load(candidate + bundle)`` -- on a mixed fleet a 32-core broker at 50 % takes the bundle
  before an 8-core one at 45 % when the bundle is 10 % of the small one -- ties to the first candidate in
  name order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bundlewise.algorithms.balanced.estimate import (
    ZERO,
    CostModel,
    InFlight,
    Vector,
    add,
    broker_usage,
    fleet_limits,
    load_of,
)
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.load import BundleData, LoadData, NamespaceBundleStats
from bundlewise.model.resources import ResourceWeights

Indexed = tuple[Bundle, NamespaceBundleStats]

# lastStats map -> its bundles by namespace, in the map's order.  A report's ``lastStats`` is built once and
# never edited (a new report brings a new map), so the index of a map is computed once; each entry keeps its
# map alive, so an ``id`` cannot be reused while it is cached, and the size check catches a map edited anyway.
_INDEX: dict[int, tuple[dict[str, NamespaceBundleStats], int, dict[str, list[Indexed]]]] = {}


def _by_namespace(stats: dict[str, NamespaceBundleStats], brokers: int) -> dict[str, list[Indexed]]:
    hit = _INDEX.get(id(stats))
    if hit is not None and hit[0] is stats and hit[1] == len(stats):
        return hit[2]
    out: dict[str, list[Indexed]] = {}
    for name, st in stats.items():
        try:
            parsed = Bundle.parse(name)
        except InputError:
            continue
        out.setdefault(parsed.namespace, []).append((parsed, st))
    if len(_INDEX) >= 4 * brokers + 64:  # the maps of reports long replaced
        _INDEX.clear()
    _INDEX[id(stats)] = (stats, len(stats), out)
    return out


def unknown_bundle(bundle: str, load: LoadData, model: CostModel) -> Vector:
    """The estimated usage of a bundle without samples (module docstring): the first reported bundle of its
    namespace whose range contains it (brokers and their ``lastStats`` in order), else the namespace's mean."""
    try:
        me = Bundle.parse(bundle)
    except InputError:
        return model.of_data(BundleData.default())
    total: Vector = ZERO
    count = 0
    brokers = len(load.brokers)
    for broker in load.brokers.values():
        for other, st in _by_namespace(broker.localData.lastStats, brokers).get(me.namespace, ()):
            v = model.of_stats(st)
            if other.covers(me) and other != me:
                share = (me.upper - me.lower) / (other.upper - other.lower)
                return (v[0] * share, v[1] * share, v[2] * share)
            total = add(total, v)
            count += 1
    if count == 0:
        return model.of_data(BundleData.default())
    return (total[0] / count, total[1] / count, total[2] / count)


def least_loaded_after(
    candidates: Sequence[str],
    bundle: str,
    bundle_data: BundleData,
    load: LoadData,
    model: CostModel,
    in_flight: Iterable[InFlight],
    weights: ResourceWeights,
    assumed: dict[str, Vector],
    measured: NamespaceBundleStats | None = None,
) -> tuple[str | None, float]:
    """The candidate with the lowest load once it holds the bundle, and that load; the bundle's estimated
    usage is recorded in ``assumed`` (the caller's memory of what each placed bundle weighs).  ``measured``:
    the bundle's load at its split, used while the leader has no sample of it."""
    usage = broker_usage(load, model, in_flight, assumed)
    if bundle_data.shortTermData.numSamples > 0:
        vector = model.of_data(bundle_data)
    elif measured is not None:
        vector = model.of_stats(measured)
    else:
        vector = unknown_bundle(bundle, load, model)
    assumed[bundle] = vector
    best: tuple[str | None, float] = (None, 0.0)
    limits = fleet_limits(load.brokers)
    for name in sorted(candidates):
        if name not in usage:
            continue
        after = load_of(add(usage[name], vector), limits[name], weights)
        if best[0] is None or after < best[1]:
            best = (name, after)
    return best
