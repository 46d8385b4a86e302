"""Progress of a command's Spark work on a terminal: one line rewritten in place.

A thread polls Spark's status tracker (``SparkContext.statusTracker``: the active stages' task counts) every
half second and writes ``\\r<label>: stage 3: 12/40 tasks (30 %), 8.3 s`` to stderr -- plus whatever figure
the command knows so far (``note``: rows read, simulations done).  Only when stderr is a terminal and not
``quiet``: a log or a pipe gets the command's own step lines and nothing else.  The line is cleared when the
block ends, so the command's next output starts on a clean line.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO


class SparkProgress:
    """``with SparkProgress(spark, "pipeline"):`` -- the progress line while the block runs."""

    def __init__(
        self, spark: Any, label: str, *, quiet: bool = False, stream: TextIO | None = None, every: float = 0.5
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and self.stream.isatty()
        self.spark = spark
        self.label = label
        self.every = every
        self.note = ""  # a figure the command sets as it learns it, e.g. "1,500,000 rows"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bundlewise-progress", daemon=True)
        self._t0 = time.monotonic()
        self._width = 0

    def line(self) -> str:
        """What the line says now."""
        parts = []
        tracker = self.spark.sparkContext.statusTracker()
        for sid in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(sid)
            if info is not None and info.numTasks > 0:
                share = 100 * info.numCompletedTasks // info.numTasks
                parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks ({share} %)")
        if self.note:
            parts.append(self.note)
        parts.append(f"{time.monotonic() - self._t0:.1f} s")
        return f"{self.label}: " + ", ".join(parts)

    def _write(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self._write(self.line())
            except Exception:  # the context is stopping: the line is a courtesy, never an error
                return

    def __enter__(self) -> SparkProgress:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.enabled:
            return
        self._stop.set()
        self._thread.join(timeout=2)
        if self._width:
            self._write("")
            self.stream.write("\r")
            self.stream.flush()
