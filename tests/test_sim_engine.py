"""The simulator's parts: clock, cost model, report-update rule, topic mapping, metrics, trace workload."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlewise.config import Config
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.durations import format_duration, parse_duration
from bundlewise.model.errors import InputError
from bundlewise.results.measure import Counters, settle_minutes
from bundlewise.sim import reporting
from bundlewise.sim.clock import Clock
from bundlewise.sim.cluster import Cluster
from bundlewise.traffic import cost
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.trace import TraceWorkload


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("6h", 21_600_000),
        ("1m", 60_000),
        ("30s", 30_000),
        ("500ms", 500),
        ("1h30m", 5_400_000),
        ("1d", 86_400_000),
        (90, 90_000),
    ],
)
def test_durations_parse_to_milliseconds(text: object, ms: int) -> None:
    assert parse_duration(text, "duration") == ms


@pytest.mark.parametrize("bad", ["6 hours", "h", "", -1, True, "1x"])
def test_bad_durations_name_the_field(bad: object) -> None:
    with pytest.raises(InputError, match=r"f\.toml: step: expected a duration"):
        parse_duration(bad, "step", "f.toml")


def test_clock_counts_ticks_and_due_tasks() -> None:
    c = Clock(step_ms=60_000, duration_ms=3_600_000)
    assert c.ticks == 60
    c.tick = 5
    assert c.now == 300_000
    assert c.every(300_000, 0) and not c.every(300_000, 60_000)
    assert format_duration(5_400_000) == "1h30m"


def _cluster(cores: float = 8, nic: float = 10000) -> Cluster:
    ns = NamespaceBundles.initial("t/ns", 4)
    names = [f"persistent://t/ns/topic-{i}" for i in range(200)]
    return Cluster(
        [BrokerSpec("b1", cpu_cores=cores, nic_mbps=nic), BrokerSpec("b2")],
        ["b1"],
        [ns],
        names,
        np.zeros(200, dtype=np.int64),
    )


def test_cost_model_follows_contract_formula() -> None:
    cl = _cluster(cores=4, nic=1000)
    # 10,000 msg/s in + 10,000 out, 10 MiB/s in + 10 MiB/s out
    u = cost.broker_usage(
        cl.capacity,
        cl.up,
        np.array([10_000.0, 0]),
        np.array([10_000.0, 0]),
        np.array([10 * 2**20, 0.0]),
        np.array([10 * 2**20, 0.0]),
    )
    cores = 0.2 + 20_000 * 10e-6 + (20 * 2**20 / 1024) * 2e-6
    assert u.cpu_cores[0] == pytest.approx(cores)
    assert u.cpu[0] == pytest.approx(cores / 4)
    assert u.bandwidth_in[0] == pytest.approx(10 * 2**20 * 8 / 1e9)
    assert u.cpu[1] == 0.0  # b2 is down: no usage
    res = cost.system_resources(cl.capacity, u, 0, 10 * 2**20, 10 * 2**20)
    assert res.cpu.limit == 400.0 and res.cpu.usage == pytest.approx(cores * 100)
    assert res.bandwidth_in.limit == 1_000_000.0  # kbit/s
    assert res.bandwidth_in.percent_usage() == pytest.approx(u.bandwidth_in[0] * 100, rel=1e-6)


def test_report_update_rule_threshold_and_max_interval() -> None:
    cfg = Config()
    last = (np.array([100.0, 100.0, 100.0, 0.0]), np.array([1e6] * 4), np.array([4.0] * 4), np.array([0.5] * 4))
    cur = (np.array([110.0, 111.0, 100.0, 5.0]), np.array([1e6] * 4), np.array([4.0] * 4), np.array([0.5] * 4))
    written = np.array([True, True, True, True])
    out = reporting.needs_update(cfg, 60_000, np.zeros(4, dtype=np.int64), written, last, cur)
    # 10 % is not more than 10 %; 11 % is; no change; 0 -> 5 is an infinite change
    assert out.tolist() == [False, True, False, True]
    late = reporting.needs_update(cfg, 15 * 60_000 + 1, np.zeros(4, dtype=np.int64), written, last, last)
    assert late.all()
    on_time = reporting.needs_update(cfg, 15 * 60_000, np.zeros(4, dtype=np.int64), written, last, last)
    assert not on_time.any()


def test_weighted_max_change_counts_in_points() -> None:
    cfg = Config()
    z = np.zeros(1)
    last = (np.ones(1), np.ones(1), np.ones(1), np.array([0.50]))
    assert not reporting.needs_update(
        cfg, 0, z.astype(np.int64), np.ones(1, bool), last, (np.ones(1), np.ones(1), np.ones(1), np.array([0.60]))
    )[0]
    assert reporting.needs_update(
        cfg, 0, z.astype(np.int64), np.ones(1, bool), last, (np.ones(1), np.ones(1), np.ones(1), np.array([0.61]))
    )[0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 0xFFFFFFFE), min_size=1, max_size=6, unique=True))
def test_vectorised_topic_mapping_matches_the_model(cuts: list[int]) -> None:
    cl = _cluster()
    bundle = cl.bundle_objs[0]
    inside = [c for c in cuts if bundle.lower < c < bundle.upper]
    if inside:
        cl.split(0, inside)
    ns = cl.ns_bundles[0]
    for t, name in enumerate(cl.topic_names):
        assert cl.bundle_names[cl.topic_bundle[t]] == ns.find_bundle(name).name


def test_split_children_keep_the_owner_and_take_the_topics() -> None:
    cl = _cluster()
    cl.owner[:] = 0
    parent = cl.bundle_objs[1]
    mid = parent.lower + (parent.upper - parent.lower) // 2
    topics_before = set(cl.topics_of(1).tolist())
    kids = cl.split(1, [mid])
    assert not cl.alive[1] and cl.owner[kids].tolist() == [0, 0]
    assert set(cl.topics_of(kids[0]).tolist()) | set(cl.topics_of(kids[1]).tolist()) == topics_before


def test_settle_minutes_needs_ten_quiet_minutes() -> None:
    times = np.arange(40) * 60_000
    std = np.full(40, 0.2)
    std[5:20] = 0.01  # quiet from minute 5 for 15 minutes
    assert settle_minutes(times, std, [0]) == 5.0
    assert settle_minutes(times, std, [6 * 60_000]) == 0.0  # an event inside a quiet run settles at once
    assert settle_minutes(times, std, [0, 6 * 60_000]) == 5.0  # the worst of the two
    assert settle_minutes(times, std, [0, 21 * 60_000]) is None
    std2 = np.full(40, 0.2)
    std2[30:] = 0.0  # quiet for exactly the last 10 ticks
    assert settle_minutes(times, std2, [0]) == 30.0


def test_flaps_count_unloads_within_two_hours() -> None:
    c = Counters()
    assert not c.unload("b", 0, 10.0, 3, 1.0)
    assert c.unload("b", 7_200_000, 5.0, 3, 1.0)
    assert not c.unload("b", 7_200_000 * 2 + 1, 5.0, 3, 1.0)
    assert (c.unloads, c.flaps, c.throughput_moved_bytes, c.topic_unavailable_seconds) == (3, 1, 20.0, 9.0)


def test_trace_is_a_step_function_and_absent_topics_are_idle() -> None:
    frame = pd.DataFrame(
        {
            "timestamp": [1000, 1000, 61_000],
            "topic": ["a", "persistent://x/y/b", "a"],
            "msgRateIn": [10.0, 20.0, 30.0],
            "msgRateOut": [0.0, 0.0, 0.0],
            "msgThroughputIn": [100.0, 200.0, 300.0],
            "msgThroughputOut": [0.0, 0.0, 0.0],
            "producerCount": [1, 2, 1],
            "consumerCount": [0, 0, 3],
        }
    )
    wl = TraceWorkload(frame, "trace.jsonl")
    assert wl.topics.names == ["persistent://public/default/a", "persistent://x/y/b"]
    assert wl.namespaces == ["public/default", "x/y"]
    assert wl.rates(0)[0].tolist() == [10.0, 20.0]  # trace time 0 = first timestamp
    assert wl.rates(59_999)[0].tolist() == [10.0, 20.0]
    assert wl.rates(60_000)[0].tolist() == [30.0, 0.0]  # b absent from the sample: idle
    # sessions are sampled and held like the rates: a's 0 consumers at first, 3 from the second sample on
    assert [c.tolist() for c in wl.counts(0)] == [[1, 1], [1, 2], [0, 0]]
    assert [c.tolist() for c in wl.counts(60_000)] == [[1, 1], [1, 0], [3, 0]]


def test_trace_from_an_arrow_table_equals_the_trace_from_a_frame() -> None:
    import pyarrow as pa

    frame = pd.DataFrame(
        {
            "timestamp": [61_000, 1000, 1000, 61_000],
            "topic": ["a", "persistent://x/y/b", "a", "a"],
            "msgRateIn": [30.0, 20.0, 10.0, 31.0],
            "msgRateOut": [0.0, 1.0, 2.0, 3.0],
            "msgThroughputIn": [300.0, 200.0, 100.0, 310.0],
            "msgThroughputOut": [0.0, 0.0, 0.0, 0.0],
            "consumerCount": [3, 0, None, 1],
        }
    )
    from_frame = TraceWorkload(frame, "t")
    from_arrow = TraceWorkload(pa.Table.from_pandas(frame, preserve_index=False), "t")
    for now in (0, 60_000, 120_000):
        assert [r.tolist() for r in from_frame.rates(now)] == [r.tolist() for r in from_arrow.rates(now)]
    # rows in (timestamp, topic) order: of two rows of one topic and time the later one holds
    assert from_arrow.rates(60_000)[0].tolist() == [31.0, 0.0]
    for now in (0, 60_000):
        assert [c.tolist() for c in from_arrow.counts(now)] == [c.tolist() for c in from_frame.counts(now)]
    assert from_arrow.counts(60_000)[2].tolist() == [1, 0]  # the later of a's two rows at 61 s: 1 consumer
    with pytest.raises(InputError, match="t: missing column 'msgRateIn'"):
        TraceWorkload(pa.table({"timestamp": [1], "topic": ["a"]}), "t")


def test_simulated_brokers_report_the_one_broker_version() -> None:
    """The simulator's reports carry ``model.load.BROKER_VERSION`` (3.3.1), as the live brokers' do."""
    import dataclasses

    from bundlewise.model.load import BROKER_VERSION
    from bundlewise.sim.engine import Engine
    from bundlewise.sim.run import make_workload
    from bundlewise.sim.scenario import bundled_scenario

    scenario = dataclasses.replace(bundled_scenario("default"), duration=5 * 60_000)
    engine = Engine(scenario, make_workload(scenario, None), "OverloadShedder")
    engine.run()
    versions = {b.localData.brokerVersionString for b in engine.leader.load.brokers.values()}
    assert versions == {BROKER_VERSION} == {"3.3.1"}
