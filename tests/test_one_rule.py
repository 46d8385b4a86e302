"""One implementation of each Pulsar rule: every vectorised stand-in equals the scalar rule it stands for.

The simulator evaluates rules for thousands of bundles and brokers at once with numpy; each of those
shortcuts is compared here, on generated inputs, with the rule the commands and the live load manager
call one value at a time.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from bundlewise.algorithms.extensible.reporting import bundle_sort_key, top_bundle_eligible, top_k_bundles
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.reporting import ReportFigures, needs_report
from bundlewise.algorithms.splitting.conditions import split_conditions, split_reasons
from bundlewise.algorithms.splitting.detector import find_bundles_to_split
from bundlewise.config import Config
from bundlewise.config.views import ReportSettings, SplitSettings
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.javamath import INT_MAX, INT_MIN, int32_sub, java_int, java_round
from bundlewise.model.load import BrokerData, LoadData, LocalBrokerData, NamespaceBundleStats
from bundlewise.sim import reporting
from bundlewise.sim.cluster import Cluster
from bundlewise.sim.extensible import java_round_array, top_k_candidates
from bundlewise.sim.leader import LeaderView
from bundlewise.traffic import cost
from bundlewise.traffic.cost import BrokerSpec, Capacities

MIB = 1024 * 1024
counts = st.integers(0, 3000)
rates = st.one_of(st.sampled_from([0.0, 30_000.0, 30_000.5, 100 * MIB, 100 * MIB + 1.0]), st.floats(0, 1e9))


def limits(max_sessions: int = 1000, max_topics: int = 1000) -> Config:
    return Config().with_values(
        {"loadBalancerNamespaceBundleMaxSessions": max_sessions, "loadBalancerNamespaceBundleMaxTopics": max_topics}
    )


# -- split conditions -------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(counts, counts, counts, rates, rates), min_size=1, max_size=30),
    st.sampled_from([-1, 0, 1000]),
    st.sampled_from([1, 1000]),
)
def test_split_conditions_on_arrays_equal_the_rule(rows: list, max_sessions: int, max_topics: int) -> None:
    cfg = limits(max_sessions, max_topics)
    topics, prod, cons, rate, tput = (np.array(c) for c in zip(*rows, strict=True))
    met = split_conditions(topics, prod + cons, rate.astype(float), tput.astype(float), cfg.view(SplitSettings))
    names = np.array(["Topics", "Sessions", "MsgRate", "Bandwidth"])
    for i, (t, p, c, r, b) in enumerate(rows):
        want = split_reasons(NamespaceBundleStats(topics=t, producerCount=p, consumerCount=c), r, b, cfg)
        assert list(names[met[i]]) == want


# -- report rule -------------------------------------------------------------------------------------


figure = st.tuples(
    st.sampled_from([0.0, 100.0, 110.0, 111.0]) | st.floats(0, 1e6),
    st.sampled_from([0.0, 1e6]) | st.floats(0, 1e9),
    st.integers(0, 20).map(float),
    st.floats(0, 1.5),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(figure, figure, st.booleans(), st.integers(0, 30 * 60_000)), min_size=1, max_size=12))
def test_vectorised_report_rule_equals_the_rule(rows: list) -> None:
    cfg = Config()
    now = 30 * 60_000
    last = tuple(np.array([r[0][k] for r in rows]) for k in range(4))
    cur = tuple(np.array([r[1][k] for r in rows]) for k in range(4))
    written = np.array([r[2] for r in rows])
    last_update = np.array([now - r[3] for r in rows], dtype=np.int64)
    got = reporting.needs_update(cfg, now, last_update, written, last, cur)  # type: ignore[arg-type]
    for i, (a, b, wrote, age) in enumerate(rows):
        previous = ReportFigures(*a) if wrote else None
        assert bool(got[i]) == needs_report(previous, ReportFigures(*b), age, cfg.view(ReportSettings))


# -- top-k bundles ------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 2e6), min_size=1, max_size=1000).map(np.array))
@example(np.array([0.49999999999999994, 0.5, 1.5, 2.5, 4503599627370497.0]))
def test_java_round_on_arrays_equals_math_round(x: np.ndarray) -> None:
    assert java_round_array(x).tolist() == [java_round(v) for v in x]


def test_java_round_follows_java_7_and_later() -> None:
    assert [java_round(v) for v in (0.5, 1.5, -0.5, -1.5, 2.4999, 0.49999999999999994)] == [1, 2, 0, -1, 2, 0]
    assert java_round(math.nan) == 0 and java_round(1e300) == 2**63 - 1
    assert java_int(3.9) == 3 and java_int(-3.9) == -3 and java_int(1e12) == INT_MAX and java_int(math.nan) == 0
    assert int32_sub(INT_MAX, -1) == INT_MIN and int32_sub(5, 7) == -2


NAMESPACES = ["t/ns", "t/quiet", "pulsar/system", "t/excluded"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(range(len(NAMESPACES))),
            st.sampled_from([0.0, 1e5, 1.5e5, 2.5e5]) | st.floats(0, 1e7),
            st.sampled_from([0.0, 1e5]) | st.floats(0, 1e7),
            st.floats(0, 1e4),
            st.integers(0, 2000),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(-1, 12),
)
def test_top_k_prefilter_keeps_every_bundle_of_the_top_k(rows: list, k: int) -> None:
    """The simulator's prefilter (eligible, first key >= k-th largest) keeps the exact top-k."""
    cfg = Config().with_values({"loadBalancerSheddingExcludedNamespaces": "t/excluded"})
    names = [f"{NAMESPACES[ns]}/0x{i:08x}_0x{i + 1:08x}" for i, (ns, *_) in enumerate(rows)]
    stats = {
        name: NamespaceBundleStats(msgRateIn=r, msgThroughputIn=tin, msgThroughputOut=tout, topics=t)
        for name, (_, tin, tout, r, t) in zip(names, rows, strict=True)
    }
    tput_in = np.array([s.msgThroughputIn for s in stats.values()])
    tput_out = np.array([s.msgThroughputOut for s in stats.values()])
    ns_index = np.array([r[0] for r in rows])
    reportable = np.array([ns not in ("pulsar/system", "t/excluded") for ns in NAMESPACES])
    eligible = (tput_in + tput_out != 0) & reportable[ns_index]
    assert eligible.tolist() == [top_bundle_eligible(n, s, cfg) for n, s in stats.items()]
    ids = top_k_candidates(np.arange(len(rows)), java_round_array(tput_in / 1e5), eligible, k)
    kept = {names[i]: stats[names[i]] for i in ids}
    assert top_k_bundles(kept, k, cfg) == top_k_bundles(stats, k, cfg)
    assert bundle_sort_key(NamespaceBundleStats(msgThroughputIn=0.5e5))[0] == 1  # Math.round, not floor


def test_hot_ineligible_bundles_do_not_crowd_the_top_k_out() -> None:
    """Three hot bundles of the system namespace and one of a tenant, k = 2: the tenant's bundle is reported."""
    cfg = Config().with_values({"loadBalancerMaxNumberOfBundlesInBundleLoadReport": 2})
    names = [f"pulsar/system/0x0000000{i}_0x0000000{i + 1}" for i in range(3)] + ["t/ns/0x00000000_0xffffffff"]
    tput = np.array([9e6, 8e6, 7e6, 1e5])
    eligible = np.array([False, False, False, True])
    ids = top_k_candidates(np.arange(4), java_round_array(tput / 1e5), eligible, 2)
    assert [names[i] for i in ids] == ["t/ns/0x00000000_0xffffffff"]
    stats = {names[i]: NamespaceBundleStats(msgThroughputIn=float(tput[i])) for i in ids}
    assert [b.bundleName for b in top_k_bundles(stats, 2, cfg).topBundlesLoadData] == ["t/ns/0x00000000_0xffffffff"]


# -- cost model ----------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(1, 64), st.floats(100, 100_000), st.floats(0, 1e6), st.floats(0, 1e6), st.floats(0, 1e9)),
        min_size=1,
        max_size=8,
    )
)
def test_vectorised_cost_model_equals_the_broker_rule(rows: list) -> None:
    specs = [BrokerSpec(f"b{i}", cpu_cores=c, nic_mbps=n) for i, (c, n, *_) in enumerate(rows)]
    r_in = np.array([r[2] for r in rows])
    r_out = np.array([r[3] for r in rows])
    t_in = np.array([r[4] for r in rows])
    t_out = t_in / 3
    capacity = Capacities.of(specs)
    usage = cost.broker_usage(capacity, np.ones(len(rows), dtype=bool), r_in, r_out, t_in, t_out)
    for i, spec in enumerate(specs):
        want = spec.resources(float(r_in[i]), float(r_out[i]), float(t_in[i]), float(t_out[i]))
        assert cost.system_resources(capacity, usage, i, float(t_in[i]), float(t_out[i])) == want


# -- the leader's bookkeeping ---------------------------------------------------------------------------


def _cluster(n_bundles: int) -> Cluster:
    ns = NamespaceBundles.initial("t/ns", n_bundles)
    empty = np.zeros(0, dtype=np.int64)
    return Cluster([BrokerSpec("a"), BrokerSpec("b")], ["a", "b"], [ns], [], empty)


# one written report per broker and step: (slots, msgRateIn, msgThroughputIn, topics, sessions) per bundle id;
# slots 2 means both reports list the bundle (it moved and the old owner has not rewritten its report)
report_step = st.dictionaries(
    st.integers(0, 7),
    st.tuples(st.integers(0, 2), st.floats(0, 1e5), st.floats(0, 1e8), st.integers(0, 2000), st.integers(0, 3000)),
    max_size=8,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(report_step, min_size=1, max_size=6), st.sampled_from([1, 1000]))
def test_leader_arrays_equal_the_leader_bookkeeping(steps: list, max_topics: int) -> None:
    """``sim.leader.LeaderView`` (arrays) keeps the same bundle data, time averages and split candidates as
    ``algorithms.leader.LeaderBundleData`` over the same written reports, a bundle listed by both reports
    included (each report read as reported: two samples per update)."""
    cfg = limits(max_topics=max_topics)
    cluster = _cluster(8)
    view = LeaderView(cluster)
    scalar = LeaderBundleData()
    for step in steps:
        reports: dict[str, LocalBrokerData] = {}
        for slot in (0, 1):
            ids = sorted(b for b, sample in step.items() if sample[0] in (slot, 2))
            stats = {
                cluster.bundle_names[b]: NamespaceBundleStats(
                    msgRateIn=step[b][1] * (slot + 1),
                    msgThroughputIn=step[b][2],
                    topics=step[b][3] + slot,
                    producerCount=step[b][4],
                )
                for b in ids
            }
            local = LocalBrokerData.of_stats(LocalBrokerData().resources, stats)
            reports[cluster.names[slot]] = local
            vals = np.array([[step[b][2], 0.0, step[b][1] * (slot + 1), 0.0] for b in ids]).reshape(-1, 4)
            topics = np.array([step[b][3] + slot for b in ids], dtype=np.int64)
            sessions = np.array([step[b][4] for b in ids], dtype=np.int64)
            view.write_report(slot, local, np.array(ids, dtype=np.int64), vals, topics, sessions, 0.0)
        view.update_bundle_data()
        load = scalar.refresh(LoadData({b: BrokerData(r) for b, r in reports.items()}))
        assert dict(view.load.bundleData.items()) == load.bundleData
        for name, broker in load.brokers.items():
            assert view.load.brokers[name].timeAverageData == broker.timeAverageData
        counts = {"t/ns": 8}
        assert find_bundles_to_split(view.split_load(cfg), cfg, counts) == find_bundles_to_split(load, cfg, counts)


# -- hash positions ---------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.integers(-5, 2**33).map(str),
        st.integers(0, 2**32).map(lambda n: f"0x{n:08x}"),
        st.integers(0, 2**32).map(lambda n: f" 0X{n:X} "),
        st.sampled_from(["", "0x", "x10", "1e3", "0x-5", "ff", "1_000"]),
    )
)
def test_bounds_positions_and_boundary_lists_are_read_alike(text: str) -> None:
    from bundlewise.cli.bundle import parse_boundaries
    from bundlewise.model.bundles import (
        parse_bound_value,  # the pipeline's bundles files and bundle --bundles-file
        parse_position,
    )
    from bundlewise.model.errors import InputError

    try:
        want: int | None = parse_position(text)
    except ValueError:
        want = None
    for read in (lambda: parse_boundaries(text)[0], lambda: parse_bound_value(text, "b")):
        try:
            got: int | None = read()
        except InputError:
            got = None
        assert got == want


# -- the modular strategies on the leader's lazy arrays and on plain load data ------------------------------------


modular_step = st.dictionaries(
    st.integers(0, 11),
    st.tuples(st.integers(0, 2), st.floats(0, 5e4), st.floats(0, 5e7), st.integers(1, 50)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"]),
    st.lists(st.tuples(modular_step, st.lists(st.floats(0, 1.2), min_size=3, max_size=3)), min_size=1, max_size=5),
)
def test_strategies_decide_alike_on_the_leaders_arrays_and_on_plain_load_data(strategy: str, steps: list) -> None:
    """The simulator hands the strategies ``LeaderView.load`` — bundle data built lazily from arrays — where the
    commands hand them plain ``LoadData``: every shedding cycle must decide the same."""
    import copy
    import random

    from bundlewise.algorithms.registry import make_family
    from bundlewise.model.resources import ResourceUsage, SystemResources

    ns = NamespaceBundles.initial("t/ns", 12)
    empty = np.zeros(0, dtype=np.int64)
    cluster = Cluster([BrokerSpec("a"), BrokerSpec("b"), BrokerSpec("c")], ["a", "b", "c"], [ns], [], empty)
    view = LeaderView(cluster)
    cfg = Config().with_values({"loadBalancerBrokerThresholdShedderPercentage": 1})
    lazy, plain = make_family(strategy, cfg), make_family(strategy, cfg)
    for k, (step, usage) in enumerate(steps):
        for slot in range(3):
            ids = np.array(sorted(b for b, s in step.items() if s[0] == slot), dtype=np.int64)
            stats = {
                cluster.bundle_names[b]: NamespaceBundleStats(
                    msgRateIn=step[b][1], msgThroughputIn=step[b][2], topics=step[b][3]
                )
                for b in ids
            }
            res = SystemResources(
                cpu=ResourceUsage(usage[slot] * 800, 800),
                bandwidth_in=ResourceUsage(usage[slot] * 1e6 * 0.9, 1e6),
                bandwidth_out=ResourceUsage(0, 1e6),
            )
            local = LocalBrokerData.of_stats(res, stats)
            vals = np.array([[step[b][2], 0.0, step[b][1], 0.0] for b in ids]).reshape(-1, 4)
            topics = np.array([step[b][3] for b in ids], dtype=np.int64)
            view.write_report(slot, local, ids, vals, topics, np.zeros(len(ids), dtype=np.int64), 0.0)
        view.update_bundle_data()
        materialised = LoadData(
            copy.deepcopy(view.load.brokers),
            {b: d.copy() for b, d in view.load.bundleData.items()},
            dict(view.load.recentlyUnloadedBundles),
        )
        now = k * 60_000
        got = lazy.shed(view.load, cfg, now, random.Random(k))
        want = plain.shed(materialised, cfg, now, random.Random(k))
        assert got.unloaded == want.unloaded
        assert view.load.recentlyUnloadedBundles == materialised.recentlyUnloadedBundles


# -- a trace's sample and hold, against the rule read row by row ---------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from(["a", "b", "c", "t/ns/d"]), st.floats(0, 1e4), st.integers(0, 9)),
        min_size=1,
        max_size=40,
    )
)
def test_trace_step_function_equals_the_rule_read_row_by_row(rows: list) -> None:
    """At any time the latest sample group at or before it holds (rates and sessions), a topic absent from it is
    idle, and of two rows of one topic in one group the later holds."""
    import pyarrow as pa

    from bundlewise.model.names import full_topic_name
    from bundlewise.traffic.trace import TraceWorkload

    table = pa.table(
        {
            "timestamp": [1000 + 60_000 * r[0] for r in rows],
            "topic": [r[1] for r in rows],
            "msgRateIn": [r[2] for r in rows],
            "msgRateOut": [0.0] * len(rows),
            "msgThroughputIn": [0.0] * len(rows),
            "msgThroughputOut": [0.0] * len(rows),
            "producerCount": [r[3] for r in rows],
        }
    )
    trace = TraceWorkload(table, "t")
    names = trace.topics.names
    t0 = min(1000 + 60_000 * r[0] for r in rows)
    for now in range(0, 6 * 60_000 + 1, 30_000):
        group = max((1000 + 60_000 * r[0] for r in rows if 1000 + 60_000 * r[0] - t0 <= now), default=None)
        want_rate = dict.fromkeys(names, 0.0)
        want_prod = dict.fromkeys(names, 0)
        for r in rows:  # in input order: the later row of a topic in the group holds
            if 1000 + 60_000 * r[0] == group:
                want_rate[full_topic_name(r[1])] = r[2]
                want_prod[full_topic_name(r[1])] = r[3]
        assert trace.rates(now)[0].tolist() == [want_rate[n] for n in names]
        assert trace.counts(now)[1].tolist() == [want_prod[n] for n in names]


# -- the extensible split strategy on the prefiltered stats and on every bundle --------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 1), counts, counts, rates, rates), min_size=8, max_size=8),
        min_size=1,
        max_size=6,
    )
)
def test_extensible_splits_on_the_prefiltered_stats_equal_those_on_every_bundle(steps: list) -> None:
    """``ExtensibleManager.splits`` hands each broker's split strategy only the bundles meeting a split condition;
    over several intervals (hit counters) it decides what the strategy decides over all its bundles."""
    from bundlewise.algorithms.registry import make_family
    from bundlewise.sim.extensible import ExtensibleManager
    from bundlewise.sim.tickview import Measured, TickView
    from bundlewise.traffic.cost import Usage

    cfg = limits(max_sessions=1000, max_topics=1000).with_values({"loadBalancerSplitIntervalMinutes": 1})
    ns = NamespaceBundles.initial("t/ns", 8)
    empty = np.zeros(0, dtype=np.int64)
    cluster = Cluster([BrokerSpec("a"), BrokerSpec("b")], ["a", "b"], [ns], [], empty)
    manager = ExtensibleManager(make_family("TransferShedder", cfg))  # type: ignore[arg-type]
    reference = make_family("TransferShedder", cfg)
    zero = np.zeros(2)
    for k, rows in enumerate(steps):
        cluster.owner[:8] = [r[0] for r in rows]
        rate = np.array([[r[3] / 2, r[3] / 2, r[4] / 2, r[4] / 2] for r in rows])
        topics = np.array([r[1] for r in rows], dtype=np.int64)
        sessions = np.array([r[2] for r in rows], dtype=np.int64)
        measured = Measured(
            rate, topics, sessions, np.zeros(8, dtype=np.int64), np.zeros((2, 4)), Usage(zero, zero, zero, zero)
        )
        view = TickView(cluster, measured)
        manager.observe(view, cfg, k * 60_000)
        got = manager.splits(cfg, {"t/ns": 8}, True, k * 60_000)
        want = []
        for slot, name in enumerate(("a", "b")):
            stats = view.stats_of(np.flatnonzero(cluster.owner[:8] == slot))
            want += reference.broker_splits(name, stats, lambda _ns: 8, (), cfg)  # type: ignore[union-attr]
        assert got == want
        event(f"{'a split' if got else 'no split'} decided")
