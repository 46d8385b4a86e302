"""Runs one command's fuzz cases in this process, one after the other, as a user would run them.

``python tests/fuzz_child.py CASES.json RESULTS.json``: each case is ``{"argv": [...], "stdin": path | null}``;
each result is ``{"code", "stdout", "stderr", "rss_mb"}`` (``rss_mb``: this process's peak so far).  One
process per command keeps the corpus fast (a start-up costs seconds on a busy machine); the process reports its
own peak memory (``peak_mb``), which the parent checks against ``os.wait4``.
"""

from __future__ import annotations

import io
import json
import resource
import sys


def run_case(case: dict[str, object]) -> dict[str, object]:
    from bundlewise.cli.main import main

    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    stdin_path = case.get("stdin")
    sys.stdin = open(str(stdin_path), encoding="utf-8") if stdin_path else io.TextIOWrapper(io.BytesIO(b""))  # noqa: SIM115
    wrappers = (
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    sys.stdout, sys.stderr = wrappers
    argv = [str(a) for a in case["argv"]]  # type: ignore[attr-defined]
    sys.argv = ["bundlewise", *argv]
    try:
        try:
            code = main(argv)
        except SystemExit as e:  # never expected: main returns its code
            code = 100 + int(e.code or 0)
        except BaseException as e:
            import traceback

            sys.stderr.write("Traceback (escaped main)\n" + "".join(traceback.format_exception(e)))
            code = 99
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdin.close()
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        for w in wrappers:
            w.flush()
    stdout, stderr = out.getvalue(), err.getvalue()
    for w in wrappers:
        w.detach()
    return {
        "code": code,
        "stdout": stdout.decode("utf-8", errors="replace"),
        "stderr": stderr.decode("utf-8", errors="replace"),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        cases = json.load(fh)
    results = [run_case(c) for c in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump({"results": results, "peak_mb": peak_mb()}, fh)


def peak_mb() -> float:
    """This process's own peak resident memory (``VmHWM``: since its ``exec``, unlike ``ru_maxrss``, which
    keeps the high-water mark of the process it was forked from)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
