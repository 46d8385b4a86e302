"""bundlewise's own strategy against Pulsar's: every strategy x every scenario of the failure-mode suite,
each target marked met / not met, and the decision time at 1,000 brokers x 100,000 bundles.

``python bench/bench_own_strategy.py`` (or ``python -m bench own_strategy``) prints the table and writes
``bench/results/own_strategy.json`` and ``bench/results/own_strategy.md``.  ``BENCH_OWN_SCENARIOS=a,b``
runs only those scenarios; ``BENCH_OWN_BROKERS=100`` times decisions on a smaller cluster (a quick check).

Where the own strategy's unloads go (``moves``): per scenario, its unloads by cause (``Overloaded``: a
broker above the overload threshold; ``Underloaded``: an idle, new or returned broker to refill; ``Balanced``:
the spread alone), how many moved a split child born within the last ``CHILD_MINUTES`` (chasing children),
and how many moved a bundle that split within ``SPLIT_SOON_MINUTES`` after (a move the split undid: its
children are unloaded and placed again).

Decision time: one ``find_bundles_for_unloading`` call on ``bench_modular``'s synthetic cluster (brokers
between 10 % and 95 % CPU), median of repeated runs, side by side with each Pulsar modular strategy; the
extensible strategies (TransferShedder, BalancedTransferShedder) on the same cluster as the extensible
stores show it (``extensible_view``: each broker's load data and its top 10 bundles).
*cold*: a fresh instance's first call; *warm*: the next call of the same instance a minute later (the
planner's in-flight moves and cool-downs in place).  Placement: one ``select`` of an unknown bundle.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_modular import BUNDLES_PER_BROKER, synthetic_cluster
from bench.common import write_result
from bundlewise.algorithms.families import ExtensibleFamily, ModularFamily
from bundlewise.algorithms.registry import SHEDDING, make_placement, shedding_names
from bundlewise.config import Config
from bundlewise.model.decisions import SplitDecision, Unload
from bundlewise.model.extensible import BrokerLoadData, BundleLoadData, ExtensibleSnapshot, TopBundlesLoadData
from bundlewise.model.load import BundleData, LoadData, NamespaceBundleStats
from bundlewise.results.record import RunResult
from bundlewise.sim.floor import static_floor
from bundlewise.sim.run import simulate, summary
from bundlewise.sim.suite import SUITE, own_names, suite_scenario, targets

RESULT = "own_strategy"
TITLE = (
    "bundlewise's own strategies (BalancedPlanShedder, BalancedTransferShedder) vs Pulsar's on the failure-mode suite"
)

OWN = "BalancedPlanShedder"
TARGET_MS = 20.0  # issue: decision time <= 20 ms at 1,000 brokers x 100,000 bundles, modular and extensible
TOP_K = 10  # loadBalancerMaxNumberOfBundlesInBundleLoadReport's default
CHILD_MINUTES = 30
SPLIT_SOON_MINUTES = 30
MINUTE_MS = 60_000
SHOWN = ("load_std_mean", "max_load_p99", "unloads", "repeat_unloads", "overloaded_broker_minutes")


def moves(result: RunResult) -> dict[str, int]:
    """Where one run's unloads go: by cause, split children chased, moves a split undid (module docstring)."""
    born: dict[str, int] = {}  # split child -> when its parent split
    split_at: dict[str, int] = {}  # bundle -> when it split
    for logged in result.decisions:
        d = logged.decision
        if isinstance(d, SplitDecision):
            split_at.setdefault(d.bundle, logged.time_ms)
            born.update(dict.fromkeys(d.children, logged.time_ms))
    out = {"Overloaded": 0, "Underloaded": 0, "Balanced": 0, "split child": 0, "split soon after": 0}
    for logged in result.decisions:
        d = logged.decision
        if not isinstance(d, Unload):
            continue
        out[str(d.cause)] = out.get(str(d.cause), 0) + 1
        if logged.time_ms - born.get(d.bundle, -(10**12)) <= CHILD_MINUTES * MINUTE_MS:
            out["split child"] += 1
        if 0 <= split_at.get(d.bundle, -1) - logged.time_ms <= SPLIT_SOON_MINUTES * MINUTE_MS:
            out["split soon after"] += 1
    return out


def run_scenario(name: str) -> dict[str, Any]:
    scenario = suite_scenario(name)
    results = simulate(scenario, list(shedding_names()))
    doc = summary(scenario, results)
    floor = static_floor(scenario)
    out: dict[str, Any] = {"floor": floor.to_json(), "strategies": {}, "targets": {}, "moves": {}}
    for r in results:
        if r.strategy in own_names(doc):
            out["moves"][r.strategy] = moves(r)
    for strategy, m in doc["strategies"].items():
        starts = [e["reach_80_minutes"] for e in m["events"] if e["action"] in ("add", "return")]
        out["strategies"][strategy] = {k: m[k] for k in SHOWN} | {"reach_80_minutes": starts}
    for own in own_names(doc):
        out["targets"][own] = [t.to_json() for t in targets(name, own, doc, floor)]
    return out


def _ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def extensible_view(load: LoadData, now: int, top_k: int = TOP_K) -> ExtensibleSnapshot:
    """The same cluster as the extensible manager's stores show it: each broker's load data (its weighted max
    usage as the EMA) and its ``top_k`` bundles by throughput (``loadBalancerMaxNumberOfBundlesInBundleLoadReport``)."""
    weights = Config().weights()
    brokers: dict[str, BrokerLoadData] = {}
    top: dict[str, TopBundlesLoadData] = {}
    for name, bd in load.brokers.items():
        local = bd.localData
        usage = local.resources.weighted_max_usage(weights)
        brokers[name] = BrokerLoadData(
            resources=local.resources,
            msgThroughputIn=local.msgThroughputIn,
            msgThroughputOut=local.msgThroughputOut,
            msgRateIn=local.msgRateIn,
            msgRateOut=local.msgRateOut,
            bundleCount=len(local.bundles),
            topics=local.numTopics,
            weightedMaxEMA=usage,
            updatedAt=now,
        )
        stats = []
        for b in local.bundles:
            st = load.bundleData[b].shortTermData
            stats.append(
                (
                    st.msgThroughputIn + st.msgThroughputOut,
                    BundleLoadData(
                        b,
                        NamespaceBundleStats(st.msgRateIn, st.msgThroughputIn, st.msgRateOut, st.msgThroughputOut),
                    ),
                )
            )
        stats.sort(key=lambda x: -x[0])
        top[name] = TopBundlesLoadData(tuple(e for _, e in stats[:top_k]))
    names = tuple(sorted(brokers))
    return ExtensibleSnapshot(now, brokers, top, names, None, {}, {})


def decision_times(brokers: int, repeat: int) -> dict[str, Any]:
    load = synthetic_cluster(brokers)
    config = Config()
    rows: dict[str, Any] = {}
    for name in [n for n, e in SHEDDING.items() if e.family is ModularFamily]:
        cfg = config.with_values({"minUnloadMessage": 100}) if name == "AvgShedder" else config
        cold, warm, moves = [], [], 0
        for _ in range(repeat):
            s = SHEDDING[name].factory()
            t0 = time.perf_counter()
            moves = len(s.find_bundles_for_unloading(load, cfg, 60_000))
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            s.find_bundles_for_unloading(load, cfg, 120_000)
            warm.append(time.perf_counter() - t0)
        rows[name] = {
            "cold_ms": round(statistics.median(cold) * 1000, 3),
            "warm_ms": round(statistics.median(warm) * 1000, 3),
            "unloads": moves,
        }
    snap = extensible_view(load, 60_000)
    first_hit = config.with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})  # act at once, as the rest
    for name in [n for n, e in SHEDDING.items() if e.family is ExtensibleFamily]:
        cold, warm, moves = [], [], 0
        for _ in range(repeat):
            x = SHEDDING[name].factory()
            t0 = time.perf_counter()
            moves = len(x.find_bundles_for_unloading(snap, first_hit, 60_000, {}, {}).decisions)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            x.find_bundles_for_unloading(snap, first_hit, 120_000, {}, {})
            warm.append(time.perf_counter() - t0)
        rows[name] = {
            "cold_ms": round(statistics.median(cold) * 1000, 3),
            "warm_ms": round(statistics.median(warm) * 1000, 3),
            "unloads": moves,
        }
    place: dict[str, float] = {}
    bundle = "tenant-0/ns-new/0x00000000_0x00001000"
    cands = sorted(load.brokers)
    for name in (OWN, "LeastLongTermMessageRate", "LeastResourceUsageWithWeight"):
        p = make_placement(name)
        rng = random.Random(1)
        place[name] = round(
            _ms(lambda p=p, r=rng: p.select(cands, bundle, BundleData.default(), load, config, r), repeat), 3
        )
    return {"brokers": brokers, "bundles": brokers * BUNDLES_PER_BROKER, "shedding": rows, "placement_ms": place}


def markdown(payload: dict[str, Any]) -> str:
    """The suite's tables and the decision time, from ``own_strategy.json``'s payload."""
    scenarios, timing = payload["scenarios"], payload["decision_time"]
    lines: list[str] = []
    for name, r in scenarios.items():
        lines += [
            f"## {name}",
            "",
            "| strategy | " + " | ".join(SHOWN) + " | reach_80_minutes |",
            "|---" * (len(SHOWN) + 2) + "|",
        ]
        for strategy, m in r["strategies"].items():
            reach = ", ".join("never" if x is None else f"{x:g}" for x in m["reach_80_minutes"]) or "-"
            cells = [f"{m[k]:.4g}" if isinstance(m[k], float) else str(m[k]) for k in SHOWN]
            lines.append(f"| {strategy} | " + " | ".join(cells) + f" | {reach} |")
        f = r["floor"]
        lines.append(
            f"| static floor | {f['load_std_mean']:.4g} | {f['max_load_p99']:.4g} | - | - | "
            f"{f['overloaded_broker_minutes']:g} | - |"
        )
        for own, ts in r["targets"].items():
            lines += ["", f"Targets of {own}:", "", "| target | status | figures |", "|---|---|---|"]
            lines += [f"| {t['target']} | {t['status']} | {t['detail']} |" for t in ts]
        for own, mv in r["moves"].items():
            lines += ["", f"Where the unloads of {own} go:", "", "| " + " | ".join(mv) + " |", "|---" * len(mv) + "|"]
            lines.append("| " + " | ".join(str(v) for v in mv.values()) + " |")
        lines.append("")
    lines += [
        f"## Decision time at {timing['brokers']:,} brokers x {timing['bundles']:,} bundles (median ms)",
        "",
        "| strategy | cold | warm | unloads |",
        "|---|---|---|---|",
    ]
    for name, row in timing["shedding"].items():
        lines.append(f"| {name} | {row['cold_ms']:.3f} | {row['warm_ms']:.3f} | {row['unloads']} |")
    lines += ["", "| placement (one select) | ms |", "|---|---|"]
    lines += [f"| {n} | {v:.3f} |" for n, v in timing["placement_ms"].items()]
    lines.append("")
    for own in (n for n in timing["shedding"] if n in SHEDDING and SHEDDING[n].own):
        row = timing["shedding"][own]
        ok = max(row["cold_ms"], row["warm_ms"]) <= TARGET_MS
        lines.append(f"{own}: decision <= {TARGET_MS:g} ms: {'met' if ok else 'NOT met'}")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    wanted = [s for s in os.environ.get("BENCH_OWN_SCENARIOS", "").split(",") if s] or list(SUITE)
    scenarios = {}
    for name in wanted:
        t0 = time.perf_counter()
        scenarios[name] = run_scenario(name)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    brokers = int(os.environ.get("BENCH_OWN_BROKERS", "1000"))
    timing = decision_times(brokers, 7 if brokers >= 1000 else 15)
    write_result(RESULT, {"target_ms": TARGET_MS, "scenarios": scenarios, "decision_time": timing}, TITLE, markdown)


if __name__ == "__main__":
    main()
