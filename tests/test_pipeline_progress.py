"""The progress line of pipeline and sweep (issue 28 item 5): on a terminal, the Spark tasks done of total and the
elapsed time, rewritten in place and cleared at the end; nothing at all when stderr is not a terminal or with
``--quiet``."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest

from bundlewise.pipeline.progress import SparkProgress

pytestmark = pytest.mark.spark


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _slow_job(spark: Any) -> list[int]:
    return spark.sparkContext.parallelize(range(4), 4).map(lambda x: time.sleep(0.6) or x).collect()  # type: ignore[no-any-return]


def test_a_terminal_sees_tasks_done_of_total_and_the_time_then_a_clean_line(spark: Any) -> None:
    term = Terminal()
    with SparkProgress(spark, "sweep", stream=term, every=0.05) as progress:
        progress.note = "4 simulations"
        assert _slow_job(spark) == [0, 1, 2, 3]
    text = term.getvalue()
    shown = [part.strip() for part in text.split("\r") if part.strip()]
    assert shown, text
    assert all(line.startswith("sweep: ") and line.endswith(" s") for line in shown)
    assert any("/4 tasks (" in line and "4 simulations" in line for line in shown), shown
    assert text.endswith("\r")  # the last write blanks the line and returns to its start


@pytest.mark.parametrize(("stream", "quiet"), [(io.StringIO(), False), (Terminal(), True)], ids=["pipe", "quiet"])
def test_no_progress_line_off_a_terminal_or_when_quiet(spark: Any, stream: io.StringIO, quiet: bool) -> None:
    with SparkProgress(spark, "pipeline", stream=stream, every=0.05, quiet=quiet):
        _slow_job(spark)
    assert stream.getvalue() == ""
