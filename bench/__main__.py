"""Run every benchmark module (``bench/bench_*.py``), or those named: ``python -m bench NAME ...``.

Options after one name go to that benchmark (``python -m bench faults --runs 3 --stores etcd``,
``python -m bench faults --help``); ``python -m bench --help`` lists the benchmarks.  Every name is checked
before anything runs.

Each module's ``main()`` prints its figures and writes ``bench/results/<RESULT>.json`` and ``.md`` itself
(``bench.common.write_result``).  ``python -m bench --markdown [NAME ...]`` renders the ``.md`` files again from
the committed JSON, without running anything.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path

from bench.common import RESULTS, write_markdown


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if argv and argv[0] in ("-h", "--help"):
        print((__doc__ or "").strip())
        print("\nbenchmarks: " + ", ".join(n.removeprefix("bench_") for n in names))
        return 0
    only_markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    first_option = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv[:first_option]] or names
    options = argv[first_option:]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        sys.stderr.write(f"error: no benchmark {', '.join(unknown)} (have: {', '.join(names)})\n")
        return 2
    modules = [importlib.import_module(f"bench.{name}") for name in wanted]
    if options and (len(modules) != 1 or only_markdown or not inspect.signature(modules[0].main).parameters):
        sys.stderr.write(
            f"error: options {' '.join(options)}: expected after one benchmark that takes options (faults, loss)\n"
        )
        return 2
    for name, module in zip(wanted, modules, strict=True):
        if only_markdown:
            payload = json.loads((RESULTS / f"{module.RESULT}.json").read_text())
            print(write_markdown(module.RESULT, payload, module.TITLE, getattr(module, "markdown", None)))
            continue
        print(f"== {name}", flush=True)
        if options:
            module.main(options)
        else:
            module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
