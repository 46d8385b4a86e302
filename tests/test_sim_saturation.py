"""Capacity saturation (``traffic.saturation``, ``sim.backlog``) and sessions sampled and held like rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlewise.results.decisions import decision_row
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.scenario import parse_scenario
from bundlewise.traffic import saturation
from bundlewise.traffic.cost import BrokerSpec, Capacities
from bundlewise.traffic.trace import TraceWorkload

# one broker, an 8 Mbit/s NIC (1e6 bytes/s); 50 msg/s of 10 kB in (0.5e6 bytes/s), tripled for the first 5 minutes
NIC_BOUND = {
    "name": "nic-bound",
    "duration": "12m",
    "brokers": [{"name": "a", "nic_mbps": 8}],
    "namespaces": [
        {"name": "t/ns", "bundles": 1, "topics": 1, "msg_rate": 50, "msg_size": 10_000, "fanout": 0},
    ],
    "workload": {"bursts": [{"namespace": "t/ns", "at": "0m", "duration": "5m", "factor": 3}]},
}


def test_a_broker_over_its_nic_reports_the_limit_and_queues_the_rest() -> None:
    sc = parse_scenario(NIC_BOUND, "nic.toml")
    r = Engine(sc, make_workload(sc, None), "OverloadShedder").run()
    assert r.delivered_load is not None and r.backlog_bytes is not None
    # demand over capacity stays visible (1.5); what the broker measures and reports is capped at its NIC
    assert r.true_load[:5, 0] == pytest.approx([1.5] * 5)
    assert r.delivered_load[:9, 0] == pytest.approx([1.0] * 9)
    assert np.nanmax(r.reported_load) <= 1.0 + 1e-6
    # the backlog (bytes) grows by 3e7 a minute during the burst, then drains by 3e7 a minute
    assert r.backlog_bytes[:, 0] == pytest.approx([3e7, 6e7, 9e7, 1.2e8, 1.5e8, 1.2e8, 9e7, 6e7, 3e7, 0, 0, 0])
    m = r.metrics
    # fresh bytes missing their minute: 3e7, 6e7, 9e7, 9e7, 9e7, then 3e7 for four minutes while draining
    assert m["undelivered_bytes"] == 4.8e8
    assert m["saturated_broker_minutes"] == 9.0
    assert m["backlog_age_max_minutes"] == 3.0  # the bytes of minute 4 wait until minute 6
    assert m["max_load_p99"] == pytest.approx(1.5)
    assert r.bytes_delivered + r.bytes_waiting == pytest.approx(float(r.workload_bytes.sum()) * 60)  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.5, 32),
    st.floats(0, 2),
    st.sampled_from([1.0, 100.0, 10_000.0]),
    st.tuples(*[st.floats(0, 5e9)] * 4),
)
def test_service_factors_on_arrays_equal_the_rule(cores: float, base: float, nic: float, traffic: tuple) -> None:
    spec = BrokerSpec("b", cpu_cores=cores, cpu_base_cores=base, nic_mbps=nic)
    rate_in, rate_out = traffic[0] / 1e3, traffic[1] / 1e3
    want = saturation.served(spec, rate_in, rate_out, traffic[2], traffic[3])
    got = saturation.service_factors(
        Capacities.of([spec]), np.array([rate_in]), np.array([rate_out]), np.array([traffic[2]]), np.array([traffic[3]])
    )
    assert (float(got[0][0]), float(got[1][0])) == pytest.approx(want, rel=1e-12)
    # what is delivered fits: at most all cores, at most the NIC each way
    s_in, s_out = want
    assert spec.cores_used(rate_in * s_in, rate_out * s_out, traffic[2] * s_in, traffic[3] * s_out) <= max(
        cores, base
    ) * (1 + 1e-9)
    assert traffic[2] * s_in <= nic * 1e6 / 8 * (1 + 1e-9) and traffic[3] * s_out <= nic * 1e6 / 8 * (1 + 1e-9)


def _burst_of_sessions() -> pd.DataFrame:
    """Two topics of one bundle: 10 sessions each for 5 minutes, then 100 each (with a little more traffic, so
    the broker rewrites its report)."""
    rows = []
    for minute in range(10):
        for t in ("a", "b"):
            many = minute >= 5
            rows.append(
                {
                    "timestamp": 1_700_000_000_000 + minute * 60_000,
                    "topic": f"persistent://t/ns/{t}",
                    "msgRateIn": 200.0 if many else 100.0,
                    "msgRateOut": 0.0,
                    "msgThroughputIn": 2e5 if many else 1e5,
                    "msgThroughputOut": 0.0,
                    "producerCount": 60 if many else 5,
                    "consumerCount": 40 if many else 5,
                }
            )
    return pd.DataFrame(rows)


def test_sessions_hold_from_each_sample_so_a_burst_splits_when_it_comes() -> None:
    doc = {
        "duration": "10m",
        "brokers": [{"name": "a"}, {"name": "b"}],
        "namespaces": [{"name": "t/ns", "bundles": 1}],
        "balancer": {"loadBalancerNamespaceBundleMaxSessions": 100},
    }
    sc = parse_scenario(doc, "s.toml")
    trace = TraceWorkload(_burst_of_sessions(), "sessions.jsonl")
    r = Engine(sc, trace, "OverloadShedder").run()
    splits = [decision_row(d) for d in r.decisions if d.type == "split"]
    # 20 sessions until minute 5 (no split), then 200 > 100: the split comes with the burst, not at minute 0
    assert splits and splits[0]["time_ms"] == 5 * 60_000
    assert "Sessions" in splits[0]["reason"]
