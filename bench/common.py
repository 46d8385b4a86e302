"""Helpers shared by the benchmarks: timing medians and writing results."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def median_seconds(fn: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"machine": {"python": platform.python_version(), "cpus": _cpus()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path}")
    return path


def _cpus() -> int:
    import os

    return os.cpu_count() or 0
