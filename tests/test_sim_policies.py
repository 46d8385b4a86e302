"""The simulator with placement constraints in force (the bundled ``isolated-namespace`` scenario).

Over the whole timeline, for every strategy: no bundle of the isolated namespace is owned outside its primary
brokers while one of them is up, and no bundle of a shared namespace is owned by a primary (a policy's primaries
are not shared brokers, ``NamespaceIsolationPolicies#isSharedBroker``)."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.registry import shedding_names
from bundlewise.model.errors import InputError
from bundlewise.model.names import bundle_namespace
from bundlewise.sim.cluster import UNOWNED
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.scenario import bundled_scenario, parse_scenario

PRIMARIES = {"broker-1", "broker-2"}


@pytest.mark.parametrize("strategy", shedding_names())
def test_no_isolated_bundle_is_ever_owned_outside_its_primaries(strategy: str) -> None:
    sc = bundled_scenario("isolated-namespace")
    assert sc.policies.isolation.present("acme/isolated")
    seen = {"ticks": 0, "isolated": 0, "moves": 0}
    last: dict[int, int] = {}

    def probe(engine: Engine, phase: str) -> None:
        cl = engine.cluster
        up = {cl.names[s] for s in range(len(cl.names)) if cl.up[s]}
        primary_up = bool(up & PRIMARIES)
        for bid, slot in enumerate(cl.owner):
            if slot == UNOWNED:
                continue
            owner = cl.names[int(slot)]
            ns = bundle_namespace(cl.bundle_names[bid])
            if ns == "acme/isolated":
                seen["isolated"] += 1
                if primary_up:
                    assert owner in PRIMARIES, f"{engine.clock.now} ({phase}): {cl.bundle_names[bid]} on {owner}"
            else:
                assert owner not in PRIMARIES, f"{engine.clock.now} ({phase}): {cl.bundle_names[bid]} on {owner}"
            if last.get(bid, int(slot)) != int(slot):
                seen["moves"] += 1
            last[bid] = int(slot)
        seen["ticks"] += 1

    result = Engine(sc, make_workload(sc, None), strategy, probe=probe).run()
    assert result.refused == 0
    assert seen["ticks"] > 100 and seen["isolated"] > 0
    assert seen["moves"] > 0  # the restarts moved bundles: the check saw ownership change


def test_a_bad_policies_section_names_the_scenario_file_and_field() -> None:
    doc = {"brokers": [{"name": "b"}], "policies": {"antiAffinityGroups": {"t/ns": 1}}}
    with pytest.raises(InputError, match=r"x\.toml: policies\.antiAffinityGroups\.t/ns"):
        parse_scenario(doc, "x.toml")
