"""What every modular shedding strategy shares (Pulsar ``LoadData``, ``LoadManagerShared``).

* ``SheddableBundles``: Pulsar's ``LoadData#getBundleDataForLoadShedding`` (the leader's bundle data
  minus bundles of system service namespaces: ``pulsar/system``, the heartbeat namespaces
  ``pulsar/<cluster>/<host:port>`` and ``pulsar/<host:port>``, and the SLA-monitor namespace
  ``sla-monitor/<cluster>/<host:port>``) with the recently unloaded bundles removed.  Pulsar
  streams that map once per broker it sheds; here the lookup is lazy (per bundle of the broker being
  shed) so a decision over 100,000 bundles does not touch bundles no strategy looks at.
* Ordering: Pulsar sorts a stream of that map with a stable sort, so equal values keep the map's
  iteration order; bundlewise iterates maps in input order, so ties keep the order of
  ``bundleData``.
* ``select_at_least`` is the Overload/Threshold selection: bundles by short-term throughput
  descending, taken while the total is below the target or nothing is taken yet.
* Reason helpers format bytes/s and name the resource behind a broker's (weighted) max usage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter

from bundlewise.model.load import BundleData, LoadData, LocalBrokerData
from bundlewise.model.names import bundle_namespace, is_system_namespace
from bundlewise.model.resources import MIB, ResourceWeights

ADDITIONAL_THRESHOLD_PERCENT_MARGIN = 0.05

_SYSTEM_PREFIXES = ("pulsar/", "sla-monitor/")  # cheap pre-check before the pattern match


class SheddableBundles:
    """The bundles a strategy may pick in one call, looked up lazily."""

    __slots__ = ("_data", "_position", "_recent")

    def __init__(self, load: LoadData) -> None:
        self._data = load.bundleData
        self._recent = load.recentlyUnloadedBundles
        self._position: dict[str, int] | None = None

    def get(self, bundle: str) -> BundleData | None:
        data = self._data.get(bundle)
        if data is None or bundle in self._recent:
            return None
        if bundle.startswith(_SYSTEM_PREFIXES) and is_system_namespace(bundle_namespace(bundle)):
            return None
        return data

    def position(self, bundle: str) -> int:
        """Rank of ``bundle`` in ``bundleData`` order (built on first use, i.e. only to break a tie)."""
        if self._position is None:
            self._position = {b: i for i, b in enumerate(self._data)}
        return self._position[bundle]

    def ranked(self, local: LocalBrokerData, by_rate: bool = False) -> list[tuple[str, float]]:
        """The broker's sheddable bundles with their short-term throughput (or msg rate), descending.

        Ties keep ``bundleData`` order.  This is the hot path of every strategy, hence written inline.
        """
        data_map, recent = self._data, self._recent
        found = []
        for b in local.bundles:
            data = data_map.get(b)
            if data is None or b in recent:
                continue
            if b.startswith(_SYSTEM_PREFIXES) and is_system_namespace(bundle_namespace(b)):
                continue
            st = data.shortTermData
            found.append((b, st.msgRateIn + st.msgRateOut if by_rate else st.msgThroughputIn + st.msgThroughputOut))
        found.sort(key=itemgetter(1), reverse=True)  # stable, also reversed
        if len({v for _, v in found}) < len(found):
            position = self.position
            found.sort(key=lambda e: (-e[1], position(e[0])))
        return found


def select_at_least(ranked: Iterable[tuple[str, float]], target: float) -> list[tuple[str, float]]:
    """Take bundles (largest first) while the total is below ``target``, and at least one."""
    taken: list[tuple[str, float]] = []
    total = 0.0
    for bundle, value in ranked:
        if total < target or not taken:
            taken.append((bundle, value))
            total += value
        else:
            break
    return taken


@dataclass(frozen=True, slots=True)
class Dominant:
    """The resource behind a broker's max usage, for reasons."""

    resource: str
    percent: float


def dominant_resource(local: LocalBrokerData, weights: ResourceWeights | None = None) -> Dominant:
    """The resource with the highest (weighted) percent; the first of equals, in Pulsar's order."""
    r = local.resources
    items = [
        ("cpu", r.cpu, 1.0 if weights is None else weights.cpu),
        ("directMemory", r.direct_memory, 1.0 if weights is None else weights.direct_memory),
        ("bandwidthIn", r.bandwidth_in, 1.0 if weights is None else weights.bandwidth_in),
        ("bandwidthOut", r.bandwidth_out, 1.0 if weights is None else weights.bandwidth_out),
    ]
    best = Dominant("cpu", -1.0)
    for name, usage, w in items:
        p = usage.percent_usage() * w
        if p > best.percent:
            best = Dominant(name, p)
    return best


def mb(x: float) -> str:
    """Bytes/s as MB/s (1 MB = 1048576 bytes, as Pulsar's shedders count)."""
    return f"{x / MIB:.2f} MB/s"


def pct(x: float) -> str:
    """A 0..1 fraction as a percentage with two decimals."""
    return f"{x * 100:.2f}%"


def points(x: float) -> str:
    """A difference of two 0..1 fractions in percentage points."""
    return f"{x * 100:.2f} points"


def none_sheddable(broker: str) -> str:
    """Why a broker picked to shed gave no bundle."""
    return (
        f"{broker} has no bundle to shed (each was unloaded within loadBalancerSheddingGracePeriodMinutes, "
        "belongs to a system namespace or has no bundle data)"
    )


def sole_bundle(broker: str, usage: str, bundles: int) -> str:
    """Why a broker above its limit sheds nothing: Pulsar never unloads a broker's only bundle."""
    owns = "no bundle" if bundles == 0 else "a single bundle"
    return f"{broker} at {usage} owns {owns}, and a sole bundle is never shed"
