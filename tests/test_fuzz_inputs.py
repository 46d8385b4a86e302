"""Every command of ``bundlewise --help`` on odd-but-plausible inputs (the corpus of tests/fuzz_corpus.py).

For every case: exit 0 with correct output (JSON on stdout; for a byte-order mark or Windows line ends, exactly
the output of the clean file), or exit 2 with exactly one ``error:`` line, the last on stderr, naming the file or
option and what was expected — never a traceback, never exit 1 — and the process's peak memory under
``PEAK_MB`` (each command's cases run in one child process: its own ``VmHWM``, checked against ``os.wait4``).
``test_fuzz_table`` prints the table the issue asks for (inputs per command, exit codes, tracebacks, exit 1,
peak memory).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.fuzz_corpus import BUILDERS, Case, build

PEAK_MB = 1024
"""The most memory a command's child may use on the whole corpus (a 2 GB file is among its inputs)."""
CHILD = Path(__file__).with_name("fuzz_child.py")
CHILD_SECONDS = 300
ROOT = Path(__file__).resolve().parent.parent
SPARK = ("pipeline",)
TABLE: dict[str, dict[str, Any]] = {}


def run_corpus(cases: list[Case], work: Path) -> tuple[list[dict[str, Any]], float]:
    """Run ``cases`` in one child; their results and the child's peak RSS in MB (its own ``VmHWM``; at most what
    ``os.wait4`` reports, which also counts the memory of the pytest process it was forked from).  A Spark
    JVM the pipeline starts is a process of its own and not counted."""
    spec, results = work / "cases.json", work / "results.json"
    spec.write_text(json.dumps([{"argv": c.argv, "stdin": c.stdin} for c in cases]))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    argv = [sys.executable, str(CHILD), str(spec), str(results)]
    with open(work / "child.err", "wb") as err:
        proc = subprocess.Popen(argv, env=env, stderr=err, cwd=work, start_new_session=True)
        watchdog = threading.Timer(CHILD_SECONDS, os.killpg, (proc.pid, signal.SIGKILL))  # a case that started a
        watchdog.start()  # server instead of refusing its input: the child and all it started are killed
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            watchdog.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # anything the cases left running
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, (work / "child.err").read_text()[-3000:]
    done = json.loads(results.read_text())
    assert done["peak_mb"] <= usage.ru_maxrss / 1024 + 1
    return done["results"], done["peak_mb"]


def json_output(stdout: str) -> list[Any]:
    """The JSON document or JSON Lines on stdout (each line must parse)."""
    text = stdout.strip()
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def timeless(stdout: str) -> list[Any]:
    """The output without what differs from run to run (``wall_seconds``, the pipeline's ``seconds``)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("wall_seconds", "seconds")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(doc) for doc in json_output(stdout)]


def verdict(case: Case, result: dict[str, Any], results: list[dict[str, Any]]) -> str | None:
    """What is wrong with ``result`` for ``case`` (None: nothing)."""
    code, out, err = result["code"], result["stdout"], result["stderr"]
    if "Traceback" in err or "internal error" in err:
        return f"crashed: {err[-600:]}"
    if code not in (0, 2):
        return f"exit {code}: {err[-300:]}"
    allowed = {"same": (0,), "ok": (0,), "refuse": (2,), "either": (0, 2)}[case.expect]
    if code not in allowed:
        return f"exit {code}, expected {allowed}: {err.strip()[-400:]}"
    if code == 0:
        if case.command in ("store", "broker", "live"):
            return "a server command exited 0 on a bad input"
        try:
            docs = json_output(out)
        except json.JSONDecodeError as e:
            return f"stdout is not JSON: {e}: {out[:200]!r}"
        if not docs:
            return "exit 0 without output"
        base = case.base if case.expect == "same" else case.extra.get("like")
        if base is not None and timeless(out) != timeless(results[base]["stdout"]):
            return f"output differs from the clean file's: {out[:300]!r}"
        return None
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    if len(errors) != 1 or lines[-1] != errors[0]:
        return f"expected exactly one error: line, last on stderr: {err[-600:]!r}"
    others = [line for line in lines[:-1] if not line.startswith(("warning: ", "note: "))]
    if others:
        return f"stderr holds more than the error line: {others[:3]}"
    if case.names and case.names not in errors[0]:
        return f"the error line does not name {case.names!r}: {errors[0]}"
    if len(errors[0]) < len("error: ") + 12:
        return f"the error line says too little: {errors[0]}"
    return None


def check_command(command: str, tmp_path: Path) -> None:
    cases = build(command, tmp_path)
    results, peak = run_corpus(cases, tmp_path)
    problems = [
        f"{c.label} {c.argv[1:]}: {v}" for c, r in zip(cases, results, strict=True) if (v := verdict(c, r, results))
    ]
    codes = Counter(r["code"] for r in results)
    TABLE[command] = {
        "inputs": len(cases),
        "exit 0": codes.get(0, 0),
        "exit 2": codes.get(2, 0),
        "exit 1": codes.get(1, 0),
        "tracebacks": sum("Traceback" in r["stderr"] for r in results),
        "peak MB": round(peak),
    }
    assert not problems, "\n".join(problems)
    assert peak < PEAK_MB, f"{command}: peak RSS {peak:.0f} MB"


@pytest.mark.parametrize("command", [c for c in BUILDERS if c not in SPARK])
def test_fuzz_command(command: str, tmp_path: Path) -> None:
    check_command(command, tmp_path)


@pytest.mark.spark
@pytest.mark.parametrize("command", SPARK)
def test_fuzz_spark_command(command: str, tmp_path: Path) -> None:
    check_command(command, tmp_path)


def test_the_corpus_covers_every_command() -> None:
    from bundlewise.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(BUILDERS)  # type: ignore[arg-type]


def test_fuzz_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the table of the runs above (run with ``-s`` to see it)."""
    if not TABLE:
        pytest.skip("no fuzz run in this session")
    head = ["command", "inputs", "exit 0", "exit 2", "exit 1", "tracebacks", "peak MB"]
    rows = [head] + [[name, *(str(v) for v in row.values())] for name, row in TABLE.items()]
    with capsys.disabled():
        sys.stdout.write("\n" + "\n".join(" | ".join(r) for r in rows) + "\n")
    assert all(row["exit 1"] == 0 and row["tracebacks"] == 0 for row in TABLE.values())
