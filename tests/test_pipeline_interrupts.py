"""Ctrl-C inside a finalizer (``pipeline.interrupts.quiet_interrupts``): Py4J releases Java objects from weakref
callbacks, and a SIGINT handler that runs there has its ``KeyboardInterrupt`` swallowed by Python ("Exception
ignored in ...", a traceback on stderr) -- the pipeline then ran to its end and exited 0 (seen once in a fresh
``make test``).  Within the block the report is dropped and the interrupt raised when the block ends."""

from __future__ import annotations

import signal
import sys

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
