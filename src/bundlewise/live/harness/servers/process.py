"""One server child process: start, wait until it answers, pause / resume / kill / restart, stop by PID.

Every started process is recorded; an ``atexit`` hook and a SIGTERM handler (installed once, and
chaining to any previous handler) stop whatever is still running, so a crashed test run or a
killed ``bundlewise store start`` leaves no server behind.  The child runs in its own process
group so a terminal's Ctrl-C reaches only the parent, which then stops the child itself.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

_RUNNING: dict[int, ServerProcess] = {}
_HOOKS_INSTALLED = False


class ServerStartError(RuntimeError):
    """The server binary is missing or the server did not answer in time."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _stop_all() -> None:
    for server in list(_RUNNING.values()):
        with contextlib.suppress(Exception):
            server.stop()


def _install_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_stop_all)
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except ValueError:
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        _stop_all()
        if callable(previous):
            previous(signum, frame)
        else:
            raise SystemExit(128 + signum)

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, on_term)


class ServerProcess(abc.ABC):
    """Base of the launchers: subclasses give ``_command()`` and ``_answers()``."""

    name = "server"

    def __init__(self, *, data_dir: str | Path | None = None, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port or free_port(host)
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix=f"bw-{self.name}-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- subclass hooks --------------------------------------------------------------------
    @abc.abstractmethod
    def _command(self) -> list[str]:
        """The server's command line."""

    @abc.abstractmethod
    def _answers(self) -> bool:
        """Whether the server answers its clients yet."""

    def _after_start(self) -> None:
        return None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The store URL of the running server (no chroot / prefix)."""

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def log_path(self) -> Path:
        return self.data_dir / f"{self.name}.log"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        _install_hooks()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            self._command(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        _RUNNING[self._proc.pid] = self
        try:
            self.wait_until_answering(timeout)
            self._after_start()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_until_answering(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise ServerStartError(f"{self.name} exited during start-up; see {self.log_path}: {self._tail()}")
            with contextlib.suppress(OSError):
                if self._answers():
                    return
            time.sleep(0.1)
        raise ServerStartError(f"{self.name} did not answer on {self.host}:{self.port} within {timeout:.0f} s")

    def _tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-600:].strip()
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the process by PID (SIGCONT first in case it is paused, SIGTERM, then SIGKILL)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _RUNNING.pop(proc.pid, None)
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
                    os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def cleanup(self) -> None:
        """Stop, and remove the data directory when it was a temporary one."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- faults ----------------------------------------------------------------------------
    def _signal(self, sig: int) -> None:
        if self._proc is None:
            raise ServerStartError(f"{self.name} is not running")
        os.kill(self._proc.pid, sig)

    def pause(self) -> None:
        """SIGSTOP: the server stops answering but keeps its sockets open."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash: no clean shutdown; ``start()`` brings it back on the same port and data."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _RUNNING.pop(proc.pid, None)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- context manager -------------------------------------------------------------------
    def __enter__(self) -> Any:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()
