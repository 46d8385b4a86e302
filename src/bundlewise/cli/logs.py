"""Where client libraries' log records go: a log file, or stderr with ``--verbose``.

Every command's errors are one ``error: …`` line on stderr.  The libraries under it log on their own --
kazoo (connection retries), py4j (a broken gateway connection), httpx, Spark's JVM (log4j) -- and a dozen
such lines before the one error bury it.  So by default their records go to a log file,
``$BUNDLEWISE_CACHE_DIR/logs/bundlewise-PID.log`` (default cache ``~/.cache/bundlewise``; created on the
first record only; the newest ``KEEP`` files are kept), and with ``--verbose`` to stderr.  Spark's JVM
follows the same choice (``pipeline.session``, through ``BUNDLEWISE_LOG_FILE``).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import sys

KEEP = 20
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.environ.get("BUNDLEWISE_CACHE_DIR") or os.path.join(root, "bundlewise"), "logs")


def _prune(directory: str) -> None:
    files = sorted(glob.glob(os.path.join(directory, "bundlewise-*.log")), key=os.path.getmtime)
    for old in files[:-KEEP]:
        with contextlib.suppress(OSError):
            os.remove(old)


def route_logs(verbose: bool) -> str | None:
    """Send the root logger's records (WARNING and above; INFO with ``verbose``) to stderr when ``verbose``,
    else to this process's log file, whose path is returned (and exported as ``BUNDLEWISE_LOG_FILE`` for
    Spark's JVM).  A command that configures its own logging (``broker``) replaces this."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "bundlewise", False):  # ours, from an earlier command of this process
            root.removeHandler(h)
            h.close()
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        root.setLevel(logging.INFO)
        os.environ.pop("BUNDLEWISE_LOG_FILE", None)
        path = None
    else:
        directory = log_dir()
        try:
            os.makedirs(directory, exist_ok=True)
            _prune(directory)
            path = os.path.join(directory, f"bundlewise-{os.getpid()}.log")
            handler = logging.FileHandler(path, delay=True, encoding="utf-8")
            os.environ["BUNDLEWISE_LOG_FILE"] = path
        except OSError:  # no writable cache: drop the records rather than print them
            handler, path = logging.NullHandler(), None
        root.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.bundlewise = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    return path
