"""The modular leader's split detection over its ``LoadData`` (Pulsar ``BundleSplitterTask#findBundlesToSplit``).

For every broker and every bundle of its ``lastStats``, in input order: the bundle is a candidate when
``split_reasons`` holds for the sample's topics and sessions and the leader's long-term rate and
throughput (0 without bundle data), and it is accepted while
``current bundles of its namespace + accepted this round < loadBalancerNamespaceMaximumBundles``.
The current count is given by the caller (``--bundle-counts``, the simulator's namespaces) or counted
from the load data.  The leader's own guards (auto split enabled, more than one broker) belong to the
caller (``ModularFamily.leader_splits``).  The result is a set of bundles: a bundle that two reports list
(it moved between them) is a candidate once, from the first broker listing it.  ``split_candidates`` is the
scan without the cap (bundlewise's own strategy reads it to see hot bundles held back by the cap) and
``within_cap`` the cap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from bundlewise.algorithms.splitting.conditions import describe, split_reasons
from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.decisions import SplitDecision
from bundlewise.model.load import LoadData
from bundlewise.model.names import bundle_namespace as namespace_of


def count_bundles(load: LoadData) -> Counter[str]:
    """Distinct bundles per namespace seen in the load data (owned or reported)."""
    seen: set[str] = set()
    for b in load.brokers.values():
        seen.update(b.localData.bundles)
        seen.update(b.localData.lastStats)
    return Counter(namespace_of(name) for name in seen)


def split_candidates(load: LoadData, config: Config) -> list[SplitDecision]:
    """Every bundle meeting a split condition, cap aside, in the detector's order (first report listing it)."""
    out: list[SplitDecision] = []
    chosen: set[str] = set()
    for broker, data in load.brokers.items():
        for bundle, stats in data.localData.lastStats.items():
            if bundle in chosen:
                continue
            bd = load.bundleData.get(bundle)
            rate = bd.longTermData.total_msg_rate if bd else 0.0
            tput = bd.longTermData.total_msg_throughput if bd else 0.0
            reasons = split_reasons(stats, rate, tput, config)
            if not reasons:
                continue
            chosen.add(bundle)
            why = describe(reasons, stats, rate, tput, config, "long-term")
            out.append(SplitDecision(bundle, broker, tuple(reasons), why))
    return out


def within_cap(candidates: list[SplitDecision], config: Config, counts: Mapping[str, int]) -> list[SplitDecision]:
    """The candidates accepted while their namespace stays under ``loadBalancerNamespaceMaximumBundles``."""
    limit = config.view(SplitSettings).max_bundles
    accepted: Counter[str] = Counter()
    out: list[SplitDecision] = []
    for d in candidates:
        ns = namespace_of(d.bundle)
        if counts.get(ns, 1) + accepted[ns] < limit:
            accepted[ns] += 1
            out.append(d)
    return out


def find_bundles_to_split(
    load: LoadData, config: Config, bundle_counts: Mapping[str, int] | None = None
) -> list[SplitDecision]:
    counts = bundle_counts if bundle_counts is not None else count_bundles(load)
    return within_cap(split_candidates(load, config), config, counts)
