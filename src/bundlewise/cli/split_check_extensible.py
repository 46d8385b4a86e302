"""``bundlewise split-check --extensible`` (contract §3 on §6 inputs).

Every broker splits only its own bundles with its own ``ExtensibleSplitStrategy`` (Pulsar runs one
``SplitScheduler`` per broker), kept across steps so consecutive hits count.  A broker's bundle stats
are its ``topBundles`` entry (``lastStats``-shaped map, or a ``topBundlesLoadData`` list).  A
namespace's bundle count is ``--bundle-counts`` when given for it, else the number of distinct bundles
of the namespace in the snapshot.  ``splittingBundles`` (optional) lists bundles already splitting.
The scheduler's gate (``loadBalancerEnabled`` and ``loadBalancerAutoBundleSplitEnabled``) applies.
Output per step: ``{"step": i, "split": [{"bundle", "broker", "reasons": [reason]}]}``.
"""

from __future__ import annotations

import argparse
from typing import Any

from bundlewise.algorithms.extensible.split_strategy import ExtensibleSplitStrategy, SplitDecision
from bundlewise.cli.inputs import emit, iterate_steps
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot
from bundlewise.model.names import bundle_namespace as namespace_of


def run_extensible(args: argparse.Namespace, config: Config, docs: list[Any], source: str) -> int:
    given: dict[str, int] = getattr(args, "bundle_counts", None) or {}
    strategies: dict[str, ExtensibleSplitStrategy] = {}
    for step in iterate_steps(docs, config, source):
        where = f"steps[{step.index}]" if len(docs) > 1 else "snapshot"
        try:
            snap = parse_extensible_snapshot(step.doc, where, step.config.weights(), step.now)
            decisions: list[SplitDecision] = []
            if step.config["loadBalancerEnabled"] and step.config["loadBalancerAutoBundleSplitEnabled"]:
                per_ns: dict[str, set[str]] = {}
                for top in snap.top_bundles.values():
                    for b in top.topBundlesLoadData:
                        per_ns.setdefault(namespace_of(b.bundleName), set()).add(b.bundleName)

                def count(ns: str, per_ns: dict[str, set[str]] = per_ns) -> int:
                    return given[ns] if ns in given else len(per_ns.get(ns, ()))

                for broker in [*snap.top_bundles, *(b for b in strategies if b not in snap.top_bundles)]:
                    top_data = snap.top_bundles.get(broker)
                    stats = top_data.stats_by_bundle() if top_data is not None else {}
                    strategy = strategies.setdefault(broker, ExtensibleSplitStrategy())
                    decisions += strategy.find_bundles_to_split(
                        broker, stats, count, snap.splitting_bundles, step.config
                    )
        except InputError as e:
            raise e.within(source) from None
        emit({"step": step.index, "split": [d.to_json() for d in decisions]})
    return 0
