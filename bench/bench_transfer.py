"""Benchmark of TransferShedder's decision latency (issue 4): 10 / 100 / 1,000 brokers x 100 bundles.

A seeded, skewed cluster: broker loads drawn from a log-normal (a few hot brokers, many cool ones),
each broker reporting 100 top bundles (``loadBalancerMaxNumberOfBundlesInBundleLoadReport=100``)
whose throughputs split the broker's throughput.  The snapshot is parsed once; each timed call is one
full cycle (statistics, trigger, pairing of up to 3 broker pairs, bundle walks, swaps) on a fresh
strategy with the hit-count threshold at 0, so every call decides.  ``parse+decide`` adds the JSON
snapshot parsing of an extensible snapshot.  Medians of 7 runs -> ``bench/results/transfer_shedder.json``;
target: <= 50 ms at 1,000 brokers.
"""

from __future__ import annotations

import random
from typing import Any

from bench.common import median_seconds, write_result
from bundlewise.algorithms.extensible.transfer_shedder import TransferShedder
from bundlewise.config import Config
from bundlewise.model.extensible import parse_extensible_snapshot

RESULT = "transfer_shedder"
TITLE = "TransferShedder: decision latency"

SIZES = (10, 100, 1000)
BUNDLES = 100
NOW = 1_700_000_000_000
TARGET_MS = 50.0


def cluster(brokers: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    doc: dict[str, Any] = {"timestamp": NOW, "brokers": {}, "topBundles": {}}
    step = (1 << 32) // BUNDLES
    for i in range(brokers):
        name = f"broker-{i}:8080"
        load = min(rng.lognormvariate(-1.2, 0.6), 1.5)
        weights = sorted(rng.paretovariate(1.5) for _ in range(BUNDLES))
        total_t = load * 1.25e9
        scale = total_t / sum(weights)
        doc["brokers"][name] = {
            "cpu": {"usage": load * 100, "limit": 100},
            "msgThroughputIn": total_t / 2,
            "msgThroughputOut": total_t / 2,
            "msgRateIn": total_t / 2048,
            "msgRateOut": total_t / 2048,
            "bundleCount": BUNDLES,
            "topics": 10 * BUNDLES,
            "msgThroughputEMA": total_t,
            "updatedAt": NOW,
        }

        def upper(k: int) -> int:
            return (k + 1) * step if k < BUNDLES - 1 else 0xFFFFFFFF

        doc["topBundles"][name] = {
            "topBundlesLoadData": [
                {
                    "bundleName": f"tenant/ns-{i}/0x{k * step:08x}_0x{upper(k):08x}",
                    "stats": {"msgThroughputIn": w * scale / 2, "msgThroughputOut": w * scale / 2, "topics": 10},
                }
                for k, w in enumerate(weights)
            ]
        }
    return doc


def main() -> None:
    config = Config().with_values(
        {
            "loadBalancerSheddingConditionHitCountThreshold": 0,
            "loadBalancerMaxNumberOfBundlesInBundleLoadReport": BUNDLES,
        }
    )
    rows: list[dict[str, Any]] = []
    for n in SIZES:
        doc = cluster(n)
        snap = parse_extensible_snapshot(doc, now=NOW)
        result = TransferShedder().find_bundles_for_unloading(snap, config, NOW, {}, {})

        def decide_only(s: Any = snap) -> Any:
            return TransferShedder().find_bundles_for_unloading(s, config, NOW, {}, {})

        def parse_and_decide(d: Any = doc) -> Any:
            return TransferShedder().find_bundles_for_unloading(
                parse_extensible_snapshot(d, now=NOW), config, NOW, {}, {}
            )

        decide = median_seconds(decide_only)
        whole = median_seconds(parse_and_decide, repeat=5)
        rows.append(
            {
                "brokers": n,
                "bundles_per_broker": BUNDLES,
                "decide_ms": round(decide * 1000, 3),
                "parse_and_decide_ms": round(whole * 1000, 3),
                "decisions": len(result.decisions),
                "counters": result.counters,
            }
        )
        print(
            f"  {n:5d} brokers x {BUNDLES} bundles: decide {decide * 1000:8.3f} ms   "
            f"parse+decide {whole * 1000:8.1f} ms   ({len(result.decisions)} decisions, {result.counters})"
        )
    at_1000 = next(r["decide_ms"] for r in rows if r["brokers"] == 1000)
    ok = at_1000 <= TARGET_MS
    print(f"  target <= {TARGET_MS:g} ms at 1000 brokers: {'met' if ok else 'MISSED'} ({at_1000} ms)")
    write_result(
        RESULT,
        {"strategy": "TransferShedder", "target_ms_at_1000": TARGET_MS, "target_met": ok, "results": rows},
        TITLE,
    )


if __name__ == "__main__":
    main()
