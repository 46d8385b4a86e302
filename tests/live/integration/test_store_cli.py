"""``bundlewise store start``: prints its URL as one JSON line, serves it, stops the server on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from live_support import SESSION_TIMEOUT, run

from bundlewise.live.store import connect


@pytest.mark.parametrize("flags", [[], ["--zookeeper"]], ids=["etcd", "zookeeper"])
def test_store_start_prints_its_url_serves_it_and_stops_on_ctrl_c(flags: list[str], tmp_path: object) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlewise.cli.main", "store", "start", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_store_start_rejects_bad_auth_with_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", "store", "start", "--auth", "nopassword"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr == "error: --auth: expected USER:PASSWORD, got 'nopassword'\n"
