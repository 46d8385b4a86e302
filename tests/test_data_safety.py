"""Ctrl-C never costs earlier results (issue 12 item 3): SIGINT sent to the process group of a real
``simulate`` and ``pipeline`` run — as a terminal's Ctrl-C does — at several points of the run, with ``--out``
naming the results of an earlier run and ``--overwrite``.  Each time: exit status 130, one line ``error:
interrupted: OUT was left as it was``, no traceback, the earlier ``--out`` byte-for-byte as it was, and no
staging folder left beside it.

The points are found by reading the run's own progress on stderr (a strategy finished, a pipeline phase
started), not by timing; each lies before the publication, with seconds of work still to do.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SMALL = 'name = "small"\nduration = "30m"\n[[brokers]]\nname = "a"\n[[brokers]]\nname = "b"\n'
STRATEGIES = ["AvgShedder", "OverloadShedder", "ThresholdShedder"]  # AvgShedder warns before the run starts


def big_scenario() -> str:
    """About two seconds per strategy: 30 brokers, 1,024 bundles, 24,000 topics, a day at 1 minute."""
    lines = ['name = "big"', 'duration = "24h"', 'step = "1m"']
    for i in range(30):
        lines += ["[[brokers]]", f'name = "b{i}"']
    for ns in range(4):
        lines += ["[[namespaces]]", f'name = "t/n{ns}"', "bundles = 256", "topics = 6000", "msg_rate = 80000"]
    lines += ["[workload]", "diurnal_amplitude = 0.5", "noise = 0.2"]
    return "\n".join(lines) + "\n"


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def bundlewise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", *args], capture_output=True, text=True, timeout=600, check=False
    )


def interrupt_at(argv: list[str], marker: str, occurrence: int = 1, delay: float = 0.0) -> tuple[int, str]:
    """Run ``bundlewise ARGV`` in its own process group; send SIGINT to the group ``delay`` seconds after stderr
    shows the ``occurrence``-th line containing ``marker``.  Returns (exit status, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlewise.cli.main", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        occurrence -= marker in line
        if occurrence == 0:
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGINT)
            break
    else:
        proc.wait(timeout=600)
        pytest.fail(f"the run ended before {marker!r}: {''.join(seen)}")
    rest = proc.stderr.read()
    proc.wait(timeout=600)
    return proc.returncode, "".join(seen) + rest


def assert_left_as_it_was(code: int, err: str, out: Path, before: dict[str, str]) -> None:
    assert "Traceback" not in err and "Exception" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert (code, errors) == (130, [f"error: interrupted: {out} was left as it was"]), err
    assert digest(out) == before
    assert not [p for p in os.listdir(out.parent) if ".bundlewise-" in p]  # no staging folder left


@pytest.fixture(scope="module")
def earlier_simulation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("simulate")
    (d / "small.toml").write_text(SMALL)
    (d / "big.toml").write_text(big_scenario())
    done = bundlewise("simulate", "--no-progress", "--cluster", str(d / "small.toml"), "--out", str(d / "out"))
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(d / "out")) == [
        "_SUCCESS",
        "decisions.jsonl",
        "report.html",
        "summary.json",
        "timeline.parquet",
    ]
    assert (d / "out" / "_SUCCESS").read_text() == "written by bundlewise\n"  # what --overwrite may replace
    return d, d / "out"


@pytest.mark.parametrize(
    ("marker", "occurrence"),
    [("warning: AvgShedder", 1), ("100%", 1), ("100%", 2), ("100%", 3)],
    ids=["at-start", "after-1st-strategy", "after-2nd-strategy", "while-writing"],
)
def test_ctrl_c_during_simulate_leaves_the_earlier_out_intact(
    earlier_simulation: tuple[Path, Path], marker: str, occurrence: int
) -> None:
    d, out = earlier_simulation
    before = digest(out)
    argv = ["simulate", "--cluster", str(d / "big.toml"), "--out", str(out), "--overwrite", "--strategy", *STRATEGIES]
    code, err = interrupt_at(argv, marker, occurrence)
    assert_left_as_it_was(code, err, out, before)


def write_trace(path: Path, rows: int) -> None:
    rng = random.Random(7)
    with path.open("w") as fh:
        fh.write("timestamp,topic,msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut\n")
        for n in range(rows):
            t, k = divmod(n, 5000)
            fh.write(f"{t * 60000},persistent://t/ns/topic-{k},{rng.random() * 100:.2f},10,1000,1000\n")


@pytest.fixture(scope="module")
def earlier_pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("pipeline")
    write_trace(d / "small.csv", 2000)
    write_trace(d / "big.csv", 1_500_000)
    done = bundlewise("pipeline", "--input", str(d / "small.csv"), "--out", str(d / "out"))
    assert done.returncode == 0, done.stderr
    assert (d / "out" / "_SUCCESS").read_text() == "written by bundlewise\n"  # what --overwrite may replace
    datasets = [name for name in os.listdir(d / "out") if name != "_SUCCESS"]
    assert datasets and all((d / "out" / name / "_SUCCESS").exists() for name in datasets)
    return d, d / "out"


@pytest.mark.spark
@pytest.mark.parametrize(
    "marker",
    ["WARNING: Using incubator modules", "reading", "scanning"],
    ids=["while-the-jvm-starts", "reading", "while-scanning"],
)
def test_ctrl_c_during_the_pipeline_leaves_the_earlier_out_intact(
    earlier_pipeline: tuple[Path, Path], marker: str
) -> None:
    d, out = earlier_pipeline
    before = digest(out)
    code, err = interrupt_at(["pipeline", "--input", str(d / "big.csv"), "--out", str(out), "--overwrite"], marker)
    assert_left_as_it_was(code, err, out, before)


# -- issue 28: ten points of Spark work each, for pipeline and sweep ---------------------------------------

TEN = [round(0.3 * k, 1) for k in range(10)]  # seconds after the marker: 0 .. 2.7 s into the Spark work


def assert_one_clean_line(code: int, err: str, out: Path, before: dict[str, str]) -> None:
    """Exit 130; of what the command itself says, exactly one line, the error; no Java or Py4J trace; ``--out``
    as it was.  (The JVM's start-up warning and the progress lines printed before the interrupt are not errors.)"""
    assert "Traceback" not in err and "Exception" not in err and "py4j" not in err.lower(), err
    assert "\tat " not in err and "ERROR" not in err, err  # no Java stack frame, no log4j error line
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert (code, errors) == (130, [f"error: interrupted: {out} was left as it was"]), err
    assert err.rstrip("\n").splitlines()[-1] == errors[0], err  # the last line: nothing after it
    assert digest(out.parent if out.is_file() else out) == before
    assert not [p for p in os.listdir(out.parent) if ".bundlewise-" in p]


@pytest.mark.spark
@pytest.mark.parametrize("delay", TEN)
def test_sigint_at_ten_points_of_the_pipelines_spark_work_exits_130_with_one_line(
    earlier_pipeline: tuple[Path, Path], delay: float
) -> None:
    d, out = earlier_pipeline
    before = digest(out)
    argv = ["pipeline", "--input", str(d / "big.csv"), "--out", str(out), "--overwrite"]
    code, err = interrupt_at(argv, "scanning", delay=delay)
    assert_one_clean_line(code, err, out, before)


@pytest.fixture(scope="module")
def earlier_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    (d / "small.toml").write_text(SMALL)
    out = d / "earlier" / "sweep.parquet"
    out.parent.mkdir()
    argv = ["sweep", "--cluster", str(d / "small.toml"), "--grid", "strategy=OverloadShedder", "--out", str(out)]
    done = bundlewise(*argv, "--master", "local[1]")
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.spark
@pytest.mark.parametrize("delay", TEN)
def test_sigint_at_ten_points_of_the_sweeps_spark_work_exits_130_with_one_line(
    earlier_sweep: Path, delay: float
) -> None:
    """The default scenario's default grid: 30 simulations as Spark tasks on two cores, tens of seconds of
    work after the ``sweep:`` line."""
    before = digest(earlier_sweep.parent)
    argv = ["sweep", "--master", "local[2]", "--out", str(earlier_sweep), "--overwrite"]
    code, err = interrupt_at(argv, "sweep: ", delay=delay)
    assert_one_clean_line(code, err, earlier_sweep, before)
