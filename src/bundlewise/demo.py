"""``make demo``: the bundled default scenario under every shedding strategy.

Prints the comparison table (stdout) with a progress bar per strategy (stderr) and writes
``summary.json``, ``timeline.parquet``, ``decisions.jsonl`` and ``report.html`` under ``./demo-out/``
(replaced whole on every run: it is the demo's own folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bundlewise.cli.main import main as cli

OUT = Path("demo-out")


def run() -> int:
    code = cli(["simulate", "--out", str(OUT), "--overwrite", "--format", "table"])
    if code == 0:
        sys.stdout.write(f"\nreport: {(OUT / 'report.html').resolve()}\n")
    return code


if __name__ == "__main__":
    raise SystemExit(run())
