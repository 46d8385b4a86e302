"""Run a scenario with several strategies (``simulate``, docs/simulator.md).

* ``simulate(scenario, strategies, trace=None, progress=None)`` runs one ``Engine`` per strategy on the
  same workload (a fresh generator with the scenario's seed each time, or the same trace), so the
  strategies see identical traffic; each run is a ``results.record.RunResult``.
* ``summary(scenario, results)`` is ``{"scenario": name, "strategies": {NAME: METRICS}}``.
* ``run_info(scenario)`` is what the report says about the scenario (``results.record.RunInfo``).

The files of ``--out`` are written by the one writer of run results, ``results.write.write_run``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bundlewise.algorithms.registry import SheddingEntry
from bundlewise.config import Config
from bundlewise.config.views import PlacementSettings
from bundlewise.model.errors import InputError
from bundlewise.results import write
from bundlewise.results.record import BurstInfo, EventInfo, RunInfo, RunResult
from bundlewise.sim.engine import Engine
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.layout import RecordedLayout
from bundlewise.traffic.trace import TraceWorkload
from bundlewise.traffic.workload import GeneratedWorkload, Workload

ProgressFactory = Callable[[str], Callable[[int, int], None]]


def make_workload(scenario: Scenario, trace: TraceWorkload | None) -> Workload:
    if trace is not None:
        return trace
    return GeneratedWorkload(scenario.namespaces, scenario.workload, scenario.seed)


def simulate(
    scenario: Scenario,
    strategies: Sequence[str | SheddingEntry],
    trace: TraceWorkload | None = None,
    progress: ProgressFactory | None = None,
    config: Config | None = None,
    layout: RecordedLayout | None = None,
) -> list[RunResult]:
    """One run per strategy; strategy names may repeat only once each.  With a recorded ``layout`` the runs
    start from it (``sim.layout``)."""
    results = []
    seen: set[str] = set()
    for strategy in strategies:
        label = strategy if isinstance(strategy, str) else strategy.name
        engine = Engine(
            scenario,
            make_workload(scenario, trace),
            strategy,
            config,
            progress(label) if progress else None,
            layout=layout,
        )
        if engine.strategy in seen:
            raise InputError(f"strategy {engine.strategy!r} given twice", field="--strategy")
        seen.add(engine.strategy)
        results.append(engine.run())
    return results


def summary(scenario: Scenario, results: Sequence[RunResult]) -> dict[str, Any]:
    return write.summary(scenario.name, results)


def run_info(scenario: Scenario) -> RunInfo:
    """The scenario as the report describes it."""
    return RunInfo(
        name=scenario.name,
        description=scenario.description,
        brokers=len(scenario.brokers),
        namespaces=len(scenario.namespaces),
        duration=scenario.duration,
        step=scenario.step,
        seed=scenario.seed,
        overload=scenario.config.view(PlacementSettings).overload_threshold,
        events=tuple(EventInfo(e.at, e.action, e.broker, e.down_for) for e in scenario.events),
        bursts=tuple(BurstInfo(b.at, b.duration, b.namespace, b.factor) for b in scenario.workload.bursts),
        dispatch=scenario.dispatch is not None,
    )
