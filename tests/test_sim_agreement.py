"""The simulator's true load and the load the leader computes from the reports agree, as far as Pulsar lets them.

A broker rewrites its report when its weighted max usage moved more than
``loadBalancerReportUpdateThresholdPercentage`` points since its last report (``#needBrokerDataUpdate``), so
after every tick's reports, for every broker up, the load the leader computes from the report it holds
(``LocalBrokerData``'s weighted max usage, float32 as Pulsar's) is within 10 points of what the broker
measures — and equal to it (to float32 precision) at a tick the broker wrote.  What a broker measures is the
traffic it delivers: equal to the workload's demand (the metrics' true load) whenever it delivers exactly what
the workload asks of it (no backlog drained, none made).
Checked over every bundled scenario with every modular strategy.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from bundlewise.config.views import ReportSettings
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.scenario import bundled_names, bundled_scenario

MODULAR = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")


@pytest.mark.parametrize("strategy", MODULAR)
@pytest.mark.parametrize("name", bundled_names())
def test_the_leaders_load_agrees_with_what_the_brokers_measure(name: str, strategy: str) -> None:
    sc = dataclasses.replace(bundled_scenario(name), duration=120 * 60_000)
    seen: dict[str, Any] = {"checked": 0, "written": 0}

    def probe(engine: Engine, phase: str) -> None:
        if phase != "splits":  # after the reports and the leader's update
            return
        assert engine.measured is not None
        weights = engine.config.weights()
        measured = engine.measured.usage.weighted_max(weights)
        threshold = engine.config.view(ReportSettings).threshold_percentage / 100
        for slot, name_ in enumerate(engine.cluster.names):
            if not engine.cluster.up[slot]:
                assert name_ not in engine.leader.load.brokers
                continue
            local = engine.leader.load.brokers[name_].localData
            leader = local.weighted_max_usage(weights)
            assert abs(leader - measured[slot]) <= threshold + 1e-6
            if engine.last_update[slot] == engine.clock.now:
                assert leader == pytest.approx(measured[slot], rel=1e-6, abs=1e-6)
                seen["written"] += 1
            seen["checked"] += 1

    result = Engine(sc, make_workload(sc, None), strategy, probe=probe).run()
    assert seen["checked"] > 0 and seen["written"] > 0
    assert result.delivered_load is not None and result.delivered_bytes is not None
    assert result.demand_bytes is not None
    # a broker that delivered exactly what was asked this tick (no backlog drained, none made) measured the demand
    quiet = result.up & np.isclose(result.delivered_bytes, result.demand_bytes, rtol=1e-12, atol=0)
    np.testing.assert_allclose(result.delivered_load[quiet], result.true_load[quiet], rtol=1e-9, atol=1e-12)
    assert quiet.sum() > 0.5 * result.up.sum()
