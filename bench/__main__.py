"""Run every benchmark module (``bench/bench_*.py``), or those named: ``python -m bench NAME ...``.

Each module's ``main()`` prints its figures and writes ``bench/results/<RESULT>.json`` and ``.md`` itself
(``bench.common.write_result``).  ``python -m bench --markdown [NAME ...]`` renders the ``.md`` files again from
the committed JSON, without running anything.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

from bench.common import RESULTS, write_markdown


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    only_markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    for name in wanted:
        if name not in names:
            sys.stderr.write(f"error: no benchmark {name} (have: {', '.join(names)})\n")
            return 2
        module = importlib.import_module(f"bench.{name}")
        if only_markdown:
            payload = json.loads((RESULTS / f"{module.RESULT}.json").read_text())
            print(write_markdown(module.RESULT, payload, module.TITLE, getattr(module, "markdown", None)))
            continue
        print(f"== {name}", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
