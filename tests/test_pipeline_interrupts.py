"""Ctrl-C inside a finalizer (``pipeline.interrupts.quiet_interrupts``): Py4J releases Java objects from weakref
callbacks, and a SIGINT handler that runs there has its ``KeyboardInterrupt`` swallowed by Python ("Exception
ignored in ...", a traceback on stderr) -- the pipeline then ran to its end and exited 0 (seen once in a fresh
``make test``).  Within the block the report is dropped and the interrupt raised when the block ends.

And PySpark's accumulator server, whose connection breaks when interrupted jobs die: its ``EOFError`` traceback
reached stderr once in a fresh ``make test`` (one of ten Ctrl-C points of the pipeline's Spark work)."""

from __future__ import annotations

import signal
import sys
from typing import Any

import pytest

from bundlewise.pipeline.interrupts import quiet_interrupts


class SignalledWhileFinalized:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the finalizer


def test_an_interrupt_inside_a_finalizer_still_ends_the_block(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KeyboardInterrupt), quiet_interrupts(None):
        obj = SignalledWhileFinalized()
        del obj
        done = True  # the block itself went on: the finalizer swallowed the handler's exception
    assert done
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_the_block_restores_the_handler_and_the_unraisable_hook() -> None:
    handler, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    with quiet_interrupts(None):
        assert signal.getsignal(signal.SIGINT) is not handler and sys.unraisablehook is not hook
    assert signal.getsignal(signal.SIGINT) is handler and sys.unraisablehook is hook


def _report_a_broken_connection(spark: Any) -> None:
    """The server's error path as its handler takes it when the JVM's connection breaks mid-update: an ``EOFError``
    reported through ``handle_error`` (``socketserver``).  Called directly: the server handles one connection at a
    time and the JVM's, open once a job has run in this session, never ends while the session lives."""
    server = spark.sparkContext._accumulatorServer
    try:
        raise EOFError
    except EOFError:
        server.handle_error(None, ("127.0.0.1", 0))


@pytest.mark.spark
def test_after_ctrl_c_the_accumulator_servers_broken_connections_print_nothing(
    spark: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    server = spark.sparkContext._accumulatorServer
    try:
        with quiet_interrupts(spark):  # no Ctrl-C: socketserver reports the broken connection as it always does
            _report_a_broken_connection(spark)
        err = capfd.readouterr().err
        assert "Exception occurred during processing of request" in err and "EOFError" in err, err
        with pytest.raises(KeyboardInterrupt), quiet_interrupts(spark):
            signal.raise_signal(signal.SIGINT)
        _report_a_broken_connection(spark)  # after the block too: the process is ending
        assert capfd.readouterr().err == ""
    finally:
        vars(server).pop("handle_error", None)  # the shared session's server as it was
        spark.sparkContext.setLogLevel("WARN")
