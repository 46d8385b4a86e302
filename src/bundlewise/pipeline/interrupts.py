"""Ctrl-C during a command on Spark: the running jobs cancelled, one ``KeyboardInterrupt``, no Py4J traceback.

PySpark installs its own SIGINT handler (``SparkContext``): it calls ``cancelAllJobs`` over the main thread's
Py4J connection — the very connection that is waiting for the running job — which breaks that connection, and
Py4J then logs the ``KeyboardInterrupt`` with two tracebacks through the root logger.  ``quiet_interrupts``
replaces it for the duration of a command: Spark's logging is turned off (a context stopped half-way logs
errors with Java stack traces) and the jobs are cancelled from a thread of their own (its own Py4J
connection), ``KeyboardInterrupt`` is raised in the main thread, and the root logger gets a handler that
drops records, so Py4J's ``logging.exception`` prints nothing (bundlewise itself never logs through it).
An error that reaches the end of the block after Ctrl-C -- the job it cancelled failing with
``SPARK_JOB_CANCELLED``, or its Python workers (which get the terminal's SIGINT too) dying -- is the
interrupt too: ``KeyboardInterrupt``, never a ``Py4JJavaError`` and exit 1.  The command's own cleanup
then runs (``files.atomic`` discards the staging folder) and ``cli.main`` prints one line.  A Ctrl-C whose handler
runs inside a finalizer (Py4J releases Java objects from weakref callbacks) has its ``KeyboardInterrupt``
swallowed by Python as "Exception ignored in ..." with a traceback on stderr: within the block that report is
dropped, and the block raises the interrupt when it ends.

PySpark's accumulator server (a ``socketserver`` thread in the driver that the JVM sends task updates to) prints
"Exception occurred during processing of request" and an ``EOFError`` traceback when that connection breaks, as
it does when the interrupted jobs and their workers die (seen once in a fresh ``make test``).  Once Ctrl-C has
fired, the server's errors are dropped for the rest of the process, which is ending with the interrupt; before,
they print as ``socketserver`` prints them.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any


@contextlib.contextmanager
def quiet_interrupts(spark: Any | None = None) -> Iterator[None]:
    """Within the block, Ctrl-C cancels ``spark``'s jobs (when given) and raises ``KeyboardInterrupt``."""
    root = logging.getLogger()
    drop = logging.NullHandler()
    root.addHandler(drop)
    if threading.current_thread() is not threading.main_thread():
        try:
            yield
        finally:
            root.removeHandler(drop)
        return

    def cancel() -> None:
        with contextlib.suppress(Exception):
            if spark is not None:
                spark.sparkContext.setLogLevel("OFF")  # stopping half-way logs errors nobody needs to read
                spark.sparkContext.cancelAllJobs()

    fired = threading.Event()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        first = not fired.is_set()
        fired.set()
        if spark is not None and first:
            threading.Thread(target=cancel, name="bundlewise-cancel", daemon=True).start()
        raise KeyboardInterrupt

    def unraisable(u: Any) -> None:
        if isinstance(u.exc_value, KeyboardInterrupt):  # raised inside a finalizer (a Py4J object's): re-raised below
            return
        previous_hook(u)

    previous = signal.signal(signal.SIGINT, interrupted)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    restore_server = _quiet_accumulator_server(spark, fired)
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException:
        if fired.is_set():  # the job failed because Ctrl-C cancelled it (or killed its workers): an interrupt
            raise KeyboardInterrupt from None
        raise
    else:
        if fired.is_set():  # the handler's KeyboardInterrupt was swallowed (it fired inside a finalizer)
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
        root.removeHandler(drop)
        if not fired.is_set():  # interrupted: the server stays quiet until the process ends
            restore_server()


def _quiet_accumulator_server(spark: Any | None, fired: threading.Event) -> Callable[[], None]:
    """Drop the accumulator server's error reports once ``fired`` is set; returns what undoes it."""
    server = getattr(getattr(spark, "sparkContext", None), "_accumulatorServer", None)
    if server is None or not hasattr(server, "handle_error"):
        return lambda: None
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not fired.is_set():
            report(request, client_address)

    server.handle_error = handle_error
    return lambda: setattr(server, "handle_error", report)
