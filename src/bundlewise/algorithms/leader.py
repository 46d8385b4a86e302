"""The modular leader's load-data bookkeeping (Pulsar ``ModularLoadManagerImpl#updateAll``/``#updateBundleData``).

Each update feeds every bundle's latest sample (its owner's ``lastStats``) into that bundle's
short- and long-term averages (``BundleData#update``), starting a never-seen bundle from the default
prior, drops bundles no broker reports any more, and recomputes each broker's
``TimeAverageBrokerData`` from its bundles.  Inputs that carry the leader's view explicitly
(``bundleData``, ``timeAverageData``) are used as is.

``LeaderBundleData.refresh(load)`` is what a leader does with the brokers' reports it has read
(``LoadData.brokers`` holding their ``LocalBrokerData``); ``apply(snapshot)`` the same for a recorded
snapshot.  The simulator keeps these averages in arrays (``sim.leader``) and a test proves the two equal.

``top_k_bundles`` is ``#selectTopKBundle``: the bundles whose data the leader persists every
``loadBalancerResourceQuotaUpdateIntervalMinutes`` -- all when ``loadBalancerMaxNumberOfBundlesInBundleLoadReport``
is <= 0, else the ``K x brokers`` largest (bundles of ``loadBalancerSheddingExcludedNamespaces`` left out),
largest first.  Bundles are ordered by their short-term data, then their long-term data, each by
``TimeAverageMessageData#compareTo`` (throughput in, then out, at a 1e5 B/s resolution, then the total
message rate at 100 msg/s); equal bundles keep their order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings, ReportSettings
from bundlewise.model.load import BundleData, LoadData, TimeAverageBrokerData, TimeAverageMessageData
from bundlewise.model.names import bundle_namespace
from bundlewise.model.snapshot import ModularSnapshot

THROUGHPUT_RESOLUTION = 1e5
MSG_RATE_RESOLUTION = 100.0


class LeaderBundleData:
    """Bundle data the leader maintains across updates."""

    def __init__(self) -> None:
        self.bundle_data: dict[str, BundleData] = {}

    def update(self, load: LoadData) -> None:
        """Sample every reported bundle (in broker, then bundle order): each report is read as reported, so a
        bundle two reports list (it moved; the old owner's report is older) gets both samples, the earlier
        broker's first, as Pulsar's leader samples it."""
        seen: dict[str, BundleData] = {}
        for broker in load.brokers.values():
            for bundle, stats in broker.localData.lastStats.items():
                data = seen.get(bundle) or self.bundle_data.get(bundle) or BundleData.default()
                data.update(stats)
                seen[bundle] = data
        self.bundle_data = seen

    def refresh(self, load: LoadData, keep_time_averages: Collection[str] = ()) -> LoadData:
        """One ``updateAll`` over ``load``'s reports: its bundle data and every broker's time averages
        (except those of ``keep_time_averages``) recomputed; returns ``load``."""
        self.update(load)
        load.bundleData = {b: d.copy() for b, d in self.bundle_data.items()}
        self.time_averages(load, keep_time_averages)
        return load

    @staticmethod
    def time_averages(load: LoadData, keep: Collection[str] = ()) -> None:
        """``TimeAverageBrokerData#reset`` of every broker not in ``keep``, from ``load.bundleData``."""
        for name, broker in load.brokers.items():
            if name not in keep:
                broker.timeAverageData = TimeAverageBrokerData.of_bundles(broker.localData.bundles, load.bundleData)

    def apply(self, snap: ModularSnapshot) -> LoadData:
        """The snapshot's ``LoadData`` completed the way Pulsar's leader would hold it."""
        if snap.bundle_data_given:
            self.time_averages(snap.load, snap.time_average_given)
            return snap.load
        return self.refresh(snap.load, snap.time_average_given)


def _message_key(d: TimeAverageMessageData) -> tuple[int, int, int]:
    """``TimeAverageMessageData#compareTo`` as a sort key (values compared at their resolutions)."""
    return (
        int(d.msgThroughputIn // THROUGHPUT_RESOLUTION),
        int(d.msgThroughputOut // THROUGHPUT_RESOLUTION),
        int(d.total_msg_rate // MSG_RATE_RESOLUTION),
    )


def top_k_bundles(bundle_data: Mapping[str, BundleData], broker_count: int, config: Config) -> list[str]:
    """``#selectTopKBundle``: the bundles whose data the leader writes (module docstring), largest first."""
    excluded = config.view(LeaderSettings).excluded_namespaces
    eligible = [b for b in bundle_data if bundle_namespace(b) not in excluded]
    k = config.view(ReportSettings).top_bundles
    if k <= 0:
        return eligible
    count = min(k * max(1, broker_count), len(eligible))
    ranked = sorted(
        eligible,
        key=lambda b: (_message_key(bundle_data[b].shortTermData), _message_key(bundle_data[b].longTermData)),
        reverse=True,
    )
    return ranked[:count]
