"""``bundlewise broker`` on bad input: one line ``error: …`` and exit 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bundlewise.live.harness.servers import EtcdServer, free_port


def broker(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "broker", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "etcd://127.0.0.1:1/x", "--web", "nohost"], "error: --web: expected HOST:PORT, got 'nohost'"),
        (["--store", "mysql://x:1", "--web", "127.0.0.1:1"], "error: --store: expected zk://HOST:PORT"),
        (["--store", "etcd://127.0.0.1:1", "--web", "127.0.0.1:1", "--time-scale", "0"], "error: --time-scale:"),
        (
            ["--store", "etcd://127.0.0.1:1", "--web", "127.0.0.1:1", "--set", "metadataStoreSessionTimeoutMillis=x"],
            "error: --set: metadataStoreSessionTimeoutMillis: expected a number (ms), got 'x'",
        ),
    ],
)
def test_bad_arguments(args: list[str], message: str) -> None:
    out = broker(*args)
    assert out.returncode == 2
    assert out.stderr.startswith(message), out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_the_broker_reads_its_trace_by_the_simulators_reader_and_rules(tmp_path: Path) -> None:
    """The same rows are rejected for the same reasons, in the same words, as ``simulate --workload`` rejects
    them (``traffic.rules``); what only Spark reads (a Prometheus dump) is refused before the store is opened."""
    port = free_port()
    bad = tmp_path / "trace.jsonl"
    bad.write_text('{"timestamp": -1, "topic": "t"}\n{"timestamp": 0, "topic": " "}\n')
    out = broker("--store", f"etcd://127.0.0.1:{port}", "--web", "127.0.0.1:1", "--workload", str(bad))
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "simulate", "--workload", str(bad), "--no-progress"]
    sim = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    line = (
        f"error: {bad}: no valid record: all 2 rows rejected; most frequent reasons: "
        "timestamp: expected ms since the epoch (>= 0) or ISO-8601 (1); topic: missing (1)\n"
    )
    assert out.returncode == sim.returncode == 2
    assert out.stderr == line and sim.stderr.splitlines()[-1] + "\n" == line
    dump = tmp_path / "topics.prom"
    dump.write_text('pulsar_rate_in{namespace="a/b",topic="persistent://a/b/t"} 1\n')
    out = broker("--store", f"etcd://127.0.0.1:{port}", "--web", "127.0.0.1:1", "--workload", str(dump))
    assert out.returncode == 2 and out.stderr == (
        f"error: {dump}: --workload: expected a local topic-samples trace (Parquet, CSV or JSON Lines) or the "
        "pipeline's outputs; convert remote data or Pulsar dumps with `bundlewise pipeline` first\n"
    )
    seconds = tmp_path / "seconds.jsonl"  # the input rules too: a trace written in seconds is refused
    seconds.write_text('{"timestamp": 1700000000, "topic": "persistent://a/b/t", "msgRateIn": 5}\n')
    out = broker("--store", f"etcd://127.0.0.1:{port}", "--web", "127.0.0.1:1", "--workload", str(seconds))
    assert out.returncode == 2 and out.stderr == (
        f"error: {seconds}: timestamp: 1700000000 looks like seconds since the epoch (2023-11-14 in seconds, "
        "1970-01-20 in ms); expected milliseconds: multiply by 1000 (1700000000000)\n"
    ), out.stderr


def test_unreachable_store_and_unsupported_load_manager() -> None:
    port = free_port()
    out = broker("--store", f"etcd://127.0.0.1:{port}", "--web", f"127.0.0.1:{free_port()}")
    assert out.returncode == 2 and out.stderr.splitlines()[-1].startswith(
        "error: --store: cannot open the metadata store"
    )
    out = broker(
        "--store",
        f"etcd://127.0.0.1:{port}",
        "--web",
        "127.0.0.1:1",
        "--set",
        "loadManagerClassName=org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl",
    )
    assert out.returncode == 2 and "loadManagerClassName" in out.stderr.splitlines()[-1]
    assert "expected org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl or" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_taken_web_port_is_a_one_line_error(etcd_server: EtcdServer) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = broker("--store", f"{etcd_server.url}/cli", "--web", f"127.0.0.1:{port}")
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1].startswith(f"error: --web: cannot serve on 127.0.0.1:{port}")
