"""The distribute-evenly filter's incremental counts (``NamespaceBundleCounts``) equal a full re-scan.

One instance is kept over a random sequence of what the leaders do to their ``LoadData``: bundles assigned and
unassigned, reports written (listing what the broker owns then; a moved bundle stays in its old owner's report
until it writes again), preallocations added, pruned in place or replaced, bundles split and merged, brokers
leaving and joining.  After every step, every broker's count of every namespace is the distinct bundles of that
namespace in its report's ``bundles`` and its ``preallocatedBundleData`` (Pulsar's
``brokerToNamespaceToBundleRange``, ``LoadManagerShared#removeMostServicingBrokersForNamespace``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlewise.algorithms.placement import filters
from bundlewise.algorithms.placement.namespace_counts import NamespaceBundleCounts
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData
from bundlewise.model.names import bundle_namespace

BROKERS = ["a", "b", "c", "d"]
NAMESPACES = ["t/x", "t/y", "u/z"]


def scan(broker: BrokerData | None, namespace: str) -> int:
    """The definition, re-scanned: distinct bundles of ``namespace`` reported or preallocated."""
    if broker is None:
        return 0
    owned = {b for b in broker.localData.bundles if bundle_namespace(b) == namespace}
    owned.update(b for b in broker.preallocatedBundleData if bundle_namespace(b) == namespace)
    return len(owned)


class Leader:
    """A toy leader: who owns what, and the ``LoadData`` built from written reports."""

    def __init__(self) -> None:
        self.serial = 0
        self.owner: dict[str, str | None] = {}
        self.load = LoadData({n: BrokerData(LocalBrokerData()) for n in BROKERS[:2]})
        for ns in NAMESPACES:
            for _ in range(3):
                self.owner[self.new_bundle(ns)] = None

    def new_bundle(self, ns: str) -> str:
        self.serial += 1
        return f"{ns}/0x{self.serial:08x}_0x{self.serial + 1:08x}"

    def pick(self, k: int) -> str | None:
        live = sorted(self.owner)
        return live[k % len(live)] if live else None

    def apply(self, op: str, i: int, j: int) -> None:
        bundle, broker = self.pick(i), BROKERS[j % len(BROKERS)]
        brokers = self.load.brokers
        if op == "assign" and bundle is not None:
            self.owner[bundle] = broker
        elif op == "unassign" and bundle is not None:
            self.owner[bundle] = None
        elif op == "report" and broker in brokers:
            listed = [b for b, o in self.owner.items() if o == broker]
            brokers[broker].localData = LocalBrokerData(bundles=listed + listed[:1])  # a duplicate name counts once
        elif op == "preallocate" and broker in brokers and bundle is not None:
            brokers[broker].preallocatedBundleData[bundle] = BundleData.default()
        elif op == "prune" and broker in brokers:
            pre = brokers[broker].preallocatedBundleData
            for b in list(pre)[: 1 + i % 2]:
                del pre[b]
        elif op == "replace" and broker in brokers:  # the simulator's leader swaps the whole dict
            pre = brokers[broker].preallocatedBundleData
            brokers[broker].preallocatedBundleData = {b: d for b, d in pre.items() if self.owner.get(b) == broker}
        elif op == "split" and bundle is not None:
            ns, owner = bundle_namespace(bundle), self.owner.pop(bundle)
            for _ in range(2):
                self.owner[self.new_bundle(ns)] = owner
        elif op == "merge" and bundle is not None:
            ns = bundle_namespace(bundle)
            parts = [b for b in sorted(self.owner) if bundle_namespace(b) == ns][:2]
            if len(parts) == 2:
                owner = self.owner[parts[0]]
                for p in parts:
                    del self.owner[p]
                    for bd in brokers.values():
                        bd.preallocatedBundleData.pop(p, None)
                self.owner[self.new_bundle(ns)] = owner
        elif op == "leave" and broker in brokers:
            del brokers[broker]
            for b, o in self.owner.items():
                if o == broker:
                    self.owner[b] = None
        elif op == "join" and broker not in brokers:
            brokers[broker] = BrokerData(LocalBrokerData())


WHAT_LEADERS_DO = ("assign", "assign", "report", "report", "preallocate", "prune", "replace", "unassign")
OPS = st.sampled_from((*WHAT_LEADERS_DO, "split", "merge", "leave", "join"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(OPS, st.integers(0, 40), st.integers(0, 7)), max_size=60))
def test_incremental_counts_equal_the_scan_after_every_step(steps: list[tuple[str, int, int]]) -> None:
    leader = Leader()
    counts = NamespaceBundleCounts()
    for op, i, j in steps:
        leader.apply(op, i, j)
        for ns in NAMESPACES:
            got = counts.counts(BROKERS, leader.load, ns)
            assert got == {n: scan(leader.load.brokers.get(n), ns) for n in BROKERS}, (op, ns)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(OPS, st.integers(0, 40), st.integers(0, 7)), max_size=40), st.integers(0, 40))
def test_the_filter_with_kept_counts_keeps_what_a_fresh_one_keeps(steps: list[tuple[str, int, int]], k: int) -> None:
    leader = Leader()
    kept = NamespaceBundleCounts()
    for op, i, j in steps:
        leader.apply(op, i, j)
        bundle = leader.pick(k)
        if bundle is None:
            continue
        cands = sorted(leader.load.brokers)
        fresh = filters.filter_distribute_evenly(cands, bundle, leader.load)
        assert filters.filter_distribute_evenly(cands, bundle, leader.load, kept) == fresh
        least = min((scan(leader.load.brokers[n], bundle_namespace(bundle)) for n in cands), default=0)
        assert fresh == [n for n in cands if scan(leader.load.brokers[n], bundle_namespace(bundle)) == least]


def test_a_new_report_replaces_the_counts_of_the_old_one() -> None:
    load = LoadData({"a": BrokerData(LocalBrokerData(bundles=["t/x/0x0_0x1", "t/x/0x1_0x2", "t/y/0x0_0x1"]))})
    counts = NamespaceBundleCounts()
    assert counts.counts(["a", "gone"], load, "t/x") == {"a": 2, "gone": 0}
    load.brokers["a"].localData = LocalBrokerData(bundles=["t/y/0x0_0x1"])
    load.brokers["a"].preallocatedBundleData["t/x/0x5_0x6"] = BundleData.default()
    load.brokers["a"].preallocatedBundleData["t/y/0x0_0x1"] = BundleData.default()  # reported too: counted once
    assert counts.counts(["a"], load, "t/x") == {"a": 1}
    assert counts.counts(["a"], load, "t/y") == {"a": 1}
