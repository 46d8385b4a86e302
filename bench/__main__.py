"""Run every benchmark module (``bench/bench_*.py``), or those named: ``python -m bench NAME ...``.

Each module's ``main()`` prints its figures and writes ``bench/results/<name>.json`` itself.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    for name in wanted:
        if name not in names:
            sys.stderr.write(f"error: no benchmark {name} (have: {', '.join(names)})\n")
            return 2
        print(f"== {name}", flush=True)
        importlib.import_module(f"bench.{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
