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
import fcntl
import os
import random
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
    """The server binary is missing, its port or data directory is taken, or it did not answer in time."""


class ServerInUseError(ServerStartError):
    """What the server needs is taken: ``what`` is ``"port"`` or ``"data"`` (the data directory)."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(message)
        self.what = what


PORT_ATTEMPTS = 5
"""How many free ports a server whose port nobody named tries before it gives up."""


PORT_RANGE_ENV = "BUNDLEWISE_PORT_RANGE"
"""``LOW-HIGH``: where ``free_port`` picks ports (default ``20000-32767``, below Linux's ephemeral range, so an
outgoing connection's source port never takes a port chosen for a server).  Processes that start servers side
by side (the test suite's two workers) give each its own range; child processes inherit it."""
DEFAULT_PORT_RANGE = (20000, 32767)
_ports = random.Random()
_handed_out: set[int] = set()
"""Ports this process already chose: a server picked but not yet listening must not be picked again."""


def port_range() -> tuple[int, int]:
    text = os.environ.get(PORT_RANGE_ENV, "")
    low, _, high = text.partition("-")
    if low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535:
        return int(low), int(high)
    return DEFAULT_PORT_RANGE


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, picked at random in ``port_range()`` (a bind proves it free)."""
    low, high = port_range()
    for _ in range(200):
        port = _ports.randint(low, high)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # the range is full: any port the kernel gives
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port_free(host: str, port: int, what: str = "port") -> None:
    """``ServerStartError`` naming the port when something already listens on ``host:port`` (checked before
    the server starts: a server answering there would pass for ours)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: only a listener blocks it
        try:
            s.bind((host, port))
        except OSError as e:
            raise ServerInUseError(
                "port", f"{what} {port} on {host} is in use ({e.strerror}); choose another"
            ) from None


def locked_by_other(path: Path) -> bool:
    """Whether another process holds an ``flock`` on ``path`` (etcd's bbolt database, our lock file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


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
        self._port_chosen = port is None  # ours to change while the server has never run (a race for a free port)
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix=f"bw-{self.name}-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._lock_fd: int | None = None

    expiry_granularity_ms = 0
    """How late after its timeout the server may expire a session (a store: its expiry check's period), so a
    fault test's bound on a failover can name it."""

    exclusive_data_dir = True
    """Whether the server owns its data directory alone (a store: yes, locked while it runs; broker processes
    of one local cluster share one log directory, so they do not lock it)."""

    # -- subclass hooks --------------------------------------------------------------------
    @abc.abstractmethod
    def _command(self) -> list[str]:
        """The server's command line."""

    @abc.abstractmethod
    def _answers(self) -> bool:
        """Whether the server answers its clients yet."""

    def _after_start(self) -> None:
        return None

    def _data_in_use(self) -> bool:
        """Whether a server this object did not start holds the data directory (subclasses add their own
        lock, e.g. etcd's database)."""
        return False

    def _lock_data_dir(self) -> None:
        """Hold ``.bundlewise-store.lock`` in the data directory while the server runs; refuse at once when
        another ``store start`` holds it, or the server's own files are locked by a process of its own."""
        lock = self.data_dir / ".bundlewise-store.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ServerInUseError(
                "data",
                f"data directory {self.data_dir} is in use by another store (bundlewise store start); stop it or "
                "choose another --data",
            ) from None
        self._lock_fd = fd
        if self._data_in_use():
            self._unlock_data_dir()
            raise ServerInUseError(
                "data",
                f"data directory {self.data_dir} is in use by another {self.name} (its files are locked); stop it "
                "or choose another --data",
            )

    def _unlock_data_dir(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

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
        """Start the server and wait until it answers.  Refused at once, before anything starts, when the port
        is taken or the data directory is in use; a server that exits while starting is reported with the
        cause its log gives (``_cause``)."""
        _install_hooks()
        for attempt in range(PORT_ATTEMPTS):
            try:
                check_port_free(self.host, self.port)
                break
            except ServerInUseError:  # a port we chose was taken meanwhile by another process: choose again
                if not self._port_chosen or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port(self.host)
        self._port_chosen = False  # a restart keeps the URL its clients know
        if self.exclusive_data_dir and self._lock_fd is None:
            self._lock_data_dir()
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
                raise ServerStartError(f"{self.name} exited during start-up: {self._cause()} (log: {self.log_path})")
            with contextlib.suppress(OSError):
                if self._answers():
                    return
            time.sleep(0.1)
        raise ServerStartError(f"{self.name} did not answer on {self.host}:{self.port} within {timeout:.0f} s")

    def _cause(self) -> str:
        """The reason the log gives for an exit: a port in use, else the log's last line."""
        tail = self._tail()
        if "address already in use" in tail.lower():
            return "a port it listens on is in use by another process"
        lines = [line for line in tail.splitlines() if line.strip()]
        return lines[-1][-300:] if lines else "no message"

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
        self._unlock_data_dir()

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
