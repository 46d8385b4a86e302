"""Benchmark figures people read are generated, never kept by hand: each ``bench/results/<name>.md`` is the
rendering of the ``<name>.json`` its benchmark wrote (``bench.common.write_result``), and the README points to
those files instead of quoting figures."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import bench.bench_clients
import bench.bench_faults
import bench.bench_fleet
import bench.bench_ledgers
import bench.bench_live
import bench.bench_live_scale
import bench.bench_loss
import bench.bench_modular
import bench.bench_node_client
import bench.bench_own_live
import bench.bench_own_strategy
import bench.bench_pipeline
import bench.bench_placement
import bench.bench_sim
import bench.bench_sim_trace
import bench.bench_throttling
import bench.bench_transfer
import pytest
from bench.common import RESULTS, generic_markdown, render

ROOT = Path(__file__).resolve().parent.parent
MODULES = [getattr(bench, name) for name in sorted(dir(bench)) if name.startswith("bench_")]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.RESULT)
def test_each_markdown_is_generated_from_its_json(module: ModuleType) -> None:
    payload = json.loads((RESULTS / f"{module.RESULT}.json").read_text())
    text = render(module.RESULT, payload, module.TITLE, getattr(module, "markdown", None))
    assert (RESULTS / f"{module.RESULT}.md").read_text() == text


def test_every_result_has_its_benchmark() -> None:
    assert sorted(p.stem for p in RESULTS.glob("*.json")) == sorted(m.RESULT for m in MODULES)
    assert sorted(p.stem for p in RESULTS.glob("*.md")) == sorted(m.RESULT for m in MODULES)
    assert sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py")) == sorted(m.__name__[6:] for m in MODULES)


def test_the_generic_rendering_tables_records_and_sections() -> None:
    payload = {"machine": {"cpus": 2}, "target_ms": 50.0, "runs": {"a": {"ms": 1.5, "n": 1200}, "b": {"ms": 2}}}
    payload["nested"] = {"what": "x|y", "deeper": {"p99": None}}
    assert generic_markdown(payload).splitlines() == [
        "| figure | value |",
        "|---|---|",
        "| target_ms | 50 |",
        "",
        "## runs",
        "",
        "| key | ms | n |",
        "|---|---|---|",
        "| a | 1.5 | 1,200 |",
        "| b | 2 | - |",
        "",
        "## nested",
        "",
        "| figure | value |",
        "|---|---|",
        "| what | x\\|y |",
        "",
        "### deeper",
        "",
        "| figure | value |",
        "|---|---|",
        "| p99 | - |",
        "",
    ]


def test_the_readme_points_to_the_generated_figures() -> None:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Benchmarks") : text.index("## Documentation")]
    for module in MODULES:
        assert f"(bench/results/{module.RESULT}.md)" in section, module.RESULT
    assert "| benchmark | figure |" not in section  # no hand-kept table of figures
