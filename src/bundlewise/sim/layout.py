"""The starting cluster: which namespaces, cut into which bundles, owned by which brokers.

``build_cluster`` (docs/simulator.md, Initial state):

* Namespaces: the workload's (in its order), then the scenario's others, then any other the recorded layout
  holds.  A namespace takes its bundles from, first match wins: the scenario's ``bundles`` when the scenario
  sets it; the recorded layout's boundaries (a replay: ``simulate --workload`` on the pipeline's outputs);
  the scenario's entry (its default of 4); ``defaultNumberOfNamespaceBundles`` (Pulsar's count for a new
  namespace, ``PoliciesUtil#getBundles``).
* Owners: a namespace's ``owner`` takes all its bundles; else a bundle's recorded owner (its broker at the
  first sample) when that broker is up at the start; else bundles are dealt round-robin over the starting
  brokers in namespace order — except that a recorded layout's bundles without topics (the gaps between the
  ranges the recording carried) start unowned, as in Pulsar a bundle nobody looks up has no owner.  The
  cluster is taken to be already running, so these initial owners are not counted as assignments.

``replay_scenario`` adds the brokers a recording names but the scenario does not (with ``[broker_defaults]``,
up at the start), and ``layout_notes`` the warnings a run's layout earns.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bundlewise.algorithms.placement.constraints import apply_namespace_policies
from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.sim.cluster import Cluster
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.workload import Workload


def _namespaces(scenario: Scenario, workload: Workload, layout: RecordedLayout | None) -> list[str]:
    names = list(workload.namespaces)
    names += [n.name for n in scenario.namespaces if n.name not in names]
    if layout is not None:
        names += [ns for ns in layout.boundaries if ns not in names]
    return names


def _bundles(ns: str, scenario: Scenario, layout: RecordedLayout | None, default_n: int) -> NamespaceBundles:
    spec = next((n for n in scenario.namespaces if n.name == ns), None)
    if spec is not None and spec.bundles_given:
        return NamespaceBundles.initial(ns, spec.bundles)
    if layout is not None and ns in layout.boundaries:
        return NamespaceBundles.of(ns, layout.boundaries[ns])
    return NamespaceBundles.initial(ns, spec.bundles if spec is not None else default_n)


def build_cluster(
    scenario: Scenario, workload: Workload, config: Config, layout: RecordedLayout | None = None
) -> Cluster:
    """The starting cluster (module docstring)."""
    default_n = config.view(SplitSettings).default_bundles
    ns_bundles = [_bundles(ns, scenario, layout, default_n) for ns in _namespaces(scenario, workload, layout)]
    t = workload.topics
    cluster = Cluster(scenario.brokers, scenario.initial, ns_bundles, t.names, t.namespace, t.hashes)
    specs = {n.name: n for n in scenario.namespaces}
    initial = [cluster.index[n] for n in scenario.initial]
    has_topics = np.bincount(cluster.topic_bundle, minlength=cluster.n_bundles) > 0
    k = 0
    for ns, ids in zip(cluster.ns_bundles, cluster.ns_ids, strict=True):
        owner = specs[ns.namespace].owner if ns.namespace in specs else None
        recorded = layout is not None and ns.namespace in layout.boundaries and not _given(scenario, ns.namespace)
        for bid in ids:
            if owner is not None:
                cluster.owner[bid] = cluster.index[owner]
                continue
            if recorded and layout is not None:
                slot = cluster.index.get(layout.owners.get(cluster.bundle_names[bid], ""))
                if slot is not None and cluster.up[slot]:
                    cluster.owner[bid] = slot
                    continue
                if not has_topics[bid]:
                    continue
            allowed = initial if not scenario.policies else allowed_slots(cluster, scenario, ns.namespace)
            if allowed:
                cluster.owner[bid] = allowed[k % len(allowed)]
                k += 1
    return cluster


def allowed_slots(cluster: Cluster, scenario: Scenario, namespace: str) -> list[int]:
    """The initial brokers the scenario's isolation policies allow the namespace on (``applyNamespacePolicies``)."""
    names = apply_namespace_policies(namespace, list(scenario.initial), scenario.policies.isolation)
    return [cluster.index[n] for n in names]


def _given(scenario: Scenario, ns: str) -> bool:
    return any(n.name == ns and n.bundles_given for n in scenario.namespaces)


def replay_scenario(scenario: Scenario, layout: RecordedLayout) -> Scenario:
    """``scenario`` with the recording's brokers it does not list, added up at the start with its
    ``[broker_defaults]``."""
    known = {b.name for b in scenario.brokers}
    extra = [replace(scenario.broker_defaults, name=b) for b in layout.brokers() if b not in known]
    if not extra:
        return scenario
    return replace(
        scenario,
        brokers=(*scenario.brokers, *extra),
        initial=(*scenario.initial, *(b.name for b in extra)),
    )


def layout_notes(scenario: Scenario, workload: Workload, config: Config, layout: RecordedLayout | None) -> list[str]:
    """Warnings about where bundles come from: a scenario's ``bundles`` overriding a recorded layout, recorded
    brokers the scenario did not list, namespaces taking Pulsar's default count."""
    notes = []
    default_n = config.view(SplitSettings).default_bundles
    if layout is not None:
        known = {b.name for b in scenario.brokers}
        added = [b for b in layout.brokers() if b not in known]
        if added:
            notes.append(
                f"warning: {layout.source}: {len(added)} recorded broker(s) not in the scenario join it with its"
                f" [broker_defaults]: {', '.join(added[:5])}{' …' if len(added) > 5 else ''}"
            )
        for n in scenario.namespaces:
            if n.bundles_given and n.name in layout.boundaries:
                recorded = len(layout.boundaries[n.name]) - 1
                notes.append(
                    f"warning: {n.name}: the scenario's {n.bundles} bundles replace the {recorded} recorded;"
                    " its bundles are dealt round-robin"
                )
    listed = {n.name for n in scenario.namespaces} | (set(layout.boundaries) if layout is not None else set())
    missing = [ns for ns in workload.namespaces if ns not in listed]
    if missing:
        notes.append(
            f"warning: {len(missing)} namespace(s) of the workload are neither in the scenario nor recorded; they"
            f" take defaultNumberOfNamespaceBundles = {default_n} bundles: {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''}"
        )
    return notes
