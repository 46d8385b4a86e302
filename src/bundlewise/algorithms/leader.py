"""The leader's load-data bookkeeping (Pulsar ``ModularLoadManagerImpl#updateBundleData``).

Each update feeds every bundle's latest sample (its owner's ``lastStats``) into that bundle's
short- and long-term averages, starting a never-seen bundle from the default prior, drops bundles no
broker reports any more, and recomputes each broker's ``TimeAverageBrokerData`` from its bundles.
Inputs that carry the leader's view explicitly (``bundleData``, ``timeAverageData``) are used as is.
"""

from __future__ import annotations

from bundlewise.model.load import BundleData, LoadData, TimeAverageBrokerData
from bundlewise.model.snapshot import ModularSnapshot


class LeaderBundleData:
    """Bundle data the leader maintains across steps when the input does not give it."""

    def __init__(self) -> None:
        self.bundle_data: dict[str, BundleData] = {}

    def update(self, load: LoadData) -> None:
        """Sample every reported bundle once (in broker, then bundle order)."""
        seen: dict[str, BundleData] = {}
        for broker in load.brokers.values():
            for bundle, stats in broker.localData.lastStats.items():
                data = self.bundle_data.get(bundle) or BundleData.default()
                data.update(stats)
                seen[bundle] = data
        self.bundle_data = seen

    def apply(self, snap: ModularSnapshot) -> LoadData:
        """The snapshot's ``LoadData`` completed the way Pulsar's leader would hold it."""
        load = snap.load
        if not snap.bundle_data_given:
            self.update(load)
            load.bundleData = {b: d.copy() for b, d in self.bundle_data.items()}
        for name, broker in load.brokers.items():
            if name not in snap.time_average_given:
                broker.timeAverageData = TimeAverageBrokerData.of_bundles(broker.localData.bundles, load.bundleData)
        return load
