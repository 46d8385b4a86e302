"""``python -m bench``: every name checked before anything runs, options reach the one benchmark named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_an_unknown_name_is_refused_before_a_known_one_runs() -> None:
    out = bench("faults", "nosuch")
    assert out.returncode == 2
    assert out.stdout == ""  # the fault campaign did not start
    assert out.stderr.startswith("error: no benchmark bench_nosuch (have: bench_clients,")


def test_help_reaches_the_named_benchmark_and_lists_them_all() -> None:
    out = bench("faults", "--help")
    assert out.returncode == 0, out.stderr
    assert "usage: python -m bench.bench_faults" in out.stdout and "--runs RUNS" in out.stdout
    top = bench("--help")
    assert top.returncode == 0
    assert "benchmarks: clients, faults," in top.stdout


def test_options_for_a_benchmark_without_any_are_refused() -> None:
    out = bench("sim", "--runs", "3")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == "error: options --runs 3: expected after one benchmark that takes options (faults, loss)\n"
    bad = bench("faults", "--runs", "0")
    assert (bad.returncode, bad.stderr) == (2, "error: --runs: expected at least 1, got 0\n")


def test_a_campaign_with_append_replaces_the_cells_it_ran_in_place_and_keeps_the_others() -> None:
    from bench.bench_faults import merged_cells

    def cell(fault: str, runs: int) -> dict[str, object]:
        return {"fault": fault, "store": "etcd", "manager": "modular", "runs": runs}

    old = [cell("a", 2), cell("b", 2), cell("c", 2)]
    assert merged_cells(old, [cell("b", 20), cell("d", 20)]) == [
        cell("a", 2),
        cell("b", 20),
        cell("c", 2),
        cell("d", 20),
    ]
    assert merged_cells(old, []) == old  # a campaign stopped before its first cell keeps the committed table
