"""Golden outputs: every bundled scenario's ``summary.json`` (its default strategies, its seed) is committed under
``tests/golden/`` and a run must reproduce it byte for byte — except each strategy's ``wall_seconds``, the one
figure that measures the machine (the contract lists it among the metrics), whose lines are masked on both sides.
The README's demo table is the golden ``default`` summary's comparison table, row for row.

``BUNDLEWISE_WRITE_GOLDEN=1 pytest tests/test_sim_golden.py`` rewrites the files after a deliberate change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from bundlewise.cli.main import main
from bundlewise.results.catalogue import comparison_table
from bundlewise.sim.scenario import bundled_names

GOLDEN = Path(__file__).parent / "golden"
README = Path(__file__).parent.parent / "README.md"
WALL = re.compile(r'^\s*"wall_seconds": [0-9.e+-]+,?\n', re.MULTILINE)


def _masked(text: str) -> str:
    return WALL.sub("", text)


@pytest.mark.parametrize("name", bundled_names())
def test_a_run_reproduces_the_golden_summary(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "--no-progress", "--cluster", name, "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 0, err
    got = (tmp_path / "summary.json").read_text()
    golden = GOLDEN / f"{name}.summary.json"
    if os.environ.get("BUNDLEWISE_WRITE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(got)
    assert len(WALL.findall(got)) == len(json.loads(got)["strategies"])
    assert _masked(got) == _masked(golden.read_text())


def test_the_readme_demo_table_is_the_golden_default() -> None:
    doc = json.loads((GOLDEN / "default.summary.json").read_text())
    table = comparison_table(doc).splitlines()
    text = README.read_text()
    section = text[text.index("## What `make demo` shows") :]
    block = section[section.index("```\n") + 4 :]
    block = block[: block.index("```")]
    shown = [line for line in block.splitlines() if line.strip()]
    assert shown[0].split() == table[1].split()  # the header: metric and the strategies
    rows = {line.split()[0]: line.split() for line in table[3:]}
    for line in shown[1:]:
        assert line.split() == rows[line.split()[0]], line
    assert {line.split()[0] for line in shown[1:]} >= {"load_std_mean", "max_load_p99", "unloads", "flaps"}
    assert "wall_seconds" not in block
