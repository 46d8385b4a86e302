"""``bundlewise store start``: prints its URL as one JSON line, serves it, stops the server on Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from live_support import SESSION_TIMEOUT, run

from bundlewise.cli.main import main
from bundlewise.live.harness.servers import EtcdServer, free_port
from bundlewise.live.store import connect


def _stop(proc: subprocess.Popen[str], server_pid: int | None) -> None:
    """Stop a ``store start`` the test could not stop by Ctrl-C, and the server it started, by PID: a killed
    command cannot stop its server itself."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if server_pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGKILL)


@pytest.mark.parametrize("flags", [[], ["--zookeeper"]], ids=["etcd", "zookeeper"])
def test_store_start_prints_its_url_serves_it_and_stops_on_ctrl_c(flags: list[str], tmp_path: object) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlewise.cli.main", "store", "start", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        line = json.loads(proc.stdout.readline())
        assert line["backend"] == ("zookeeper" if flags else "etcd")
        assert line["url"].startswith("zk://127.0.0.1:" if flags else "etcd://127.0.0.1:")

        async def body() -> None:
            async with await connect(line["url"] + "/cli", session_timeout=SESSION_TIMEOUT) as s:
                await s.put("/hello", b"world", -1)
                got = await s.get("/hello")
                assert got is not None and got.value == b"world"

        run(body())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert "Traceback" not in err
        with pytest.raises(ProcessLookupError):
            os.kill(line["pid"], 0)  # the server went with it
    finally:
        _stop(proc, line.get("pid"))


def test_store_start_rejects_bad_auth_with_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", "store", "start", "--auth", "nopassword"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr == "error: --auth: expected USER:PASSWORD, got 'nopassword'\n"


def _bundlewise(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", *argv], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("flags", [[], ["--zookeeper"]], ids=["etcd", "zookeeper"])
def test_store_start_on_a_port_in_use_says_so_at_once(flags: list[str]) -> None:
    """Issue 28: it printed "ready" (another server answered on the port) and then failed pointing at a log it had
    deleted.  Now nothing starts: one line naming the port, exit 2."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _bundlewise("store", "start", "--port", str(port), *flags)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: --port: port {port} on 127.0.0.1 is in use (Address already in use); choose another\n"
    )


def test_store_start_on_a_data_directory_in_use_says_so_at_once(etcd_server: EtcdServer, tmp_path: Path) -> None:
    """Issue 28: 60 s of silence (etcd waiting for its database's lock), then a message naming the wrong cause.
    Another ``store start`` holding the directory, and an etcd of its own holding its database, are each named
    within seconds."""
    data = tmp_path / "data"
    first = subprocess.Popen(
        [sys.executable, "-m", "bundlewise.cli.main", "store", "start", "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running: dict[str, Any] = {}
    try:
        assert first.stdout is not None
        running = json.loads(first.stdout.readline())
        started = time.monotonic()
        result = _bundlewise("store", "start", "--data", str(data))
        assert time.monotonic() - started < 20  # the interpreter's start-up; the check itself is immediate
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            f"error: --data: data directory {data} is in use by another store (bundlewise store start); stop it or "
            "choose another --data\n"
        )
        (data / ".bundlewise-store.lock").unlink()  # as if an etcd not started by bundlewise held the directory
        result = _bundlewise("store", "start", "--data", str(data))
        assert result.returncode == 2
        assert result.stderr == (
            f"error: --data: data directory {data} is in use by another etcd (its files are locked); stop it or "
            "choose another --data\n"
        )
    finally:
        first.send_signal(signal.SIGINT)
        try:
            first.communicate(timeout=30)
        finally:
            _stop(first, None if first.returncode == 130 else running.get("pid"))


@pytest.mark.parametrize("scheme", ["zk", "etcd"])
@pytest.mark.parametrize("command", ["status", "advise"])
def test_a_store_that_does_not_answer_fails_within_3_s_with_one_line(
    scheme: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port nothing listens on: one ``error:`` line (the client library's log lines go to the log file), exit
    2, within 3 s (the command run in this process, its modules already imported: the interpreter's start-up
    is not the store's)."""
    import kazoo.client  # noqa: F401 - imported before the clock starts, as the CLI imports it before connecting

    monkeypatch.setenv("BUNDLEWISE_CACHE_DIR", str(tmp_path))
    port = free_port()
    main(["live", command, "--store", f"{scheme}://127.0.0.1:{port}/pulsar"])  # imports the command's modules
    capsys.readouterr()
    t0 = time.monotonic()
    code = main(["live", command, "--store", f"{scheme}://127.0.0.1:{port}/pulsar"])
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith(
        f"error: --store: no ZooKeeper answers at 127.0.0.1:{port}"
        if scheme == "zk"
        else f"error: --store: no etcd answers at http://127.0.0.1:{port}"
    ), line
    assert took <= 3.0, took
    if scheme == "zk":  # kazoo's retries were logged, to the file
        [log] = (tmp_path / "logs").glob("bundlewise-*.log")
        assert "Connection dropped" in log.read_text() or "Failed connecting" in log.read_text()
