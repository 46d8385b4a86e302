"""The load managers' background work (``live.broker.tasks``): periodic jobs that survive a failed step,
scopes that stop one part's work, and a close that stops everything."""

from __future__ import annotations

import asyncio
import logging

import pytest
from live_support import run

from bundlewise.live.broker.tasks import Tasks


def test_a_periodic_job_logs_a_failed_step_and_runs_on(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> list[int]:
        steps: list[int] = []

        async def job() -> None:
            steps.append(len(steps))
            if len(steps) == 2:
                raise RuntimeError("boom")

        tasks = Tasks()
        await tasks.open()
        tasks.every(0.01, job, "the test job", at_start=True)
        while len(steps) < 4:
            await asyncio.sleep(0.005)
        await tasks.close()
        return steps

    with caplog.at_level(logging.WARNING, logger="bundlewise.live.broker.tasks"):
        steps = run(body())
    assert len(steps) >= 4  # steps ran after the failed second one
    assert [r.getMessage() for r in caplog.records] == ["the test job failed: RuntimeError('boom')"]


def test_a_job_that_sleeps_first_has_not_run_before_its_period() -> None:
    async def body() -> None:
        ran: list[bool] = []

        async def job() -> None:
            ran.append(True)

        tasks = Tasks()
        await tasks.open()
        tasks.every(0.2, job, "late job")
        await asyncio.sleep(0.05)
        assert ran == []
        await asyncio.sleep(0.25)
        assert ran == [True]
        await tasks.close()

    run(body())


def test_a_scope_stops_its_own_tasks_and_close_stops_the_rest() -> None:
    async def body() -> None:
        tasks = Tasks()
        await tasks.open()
        scope = tasks.scope()
        mine = scope.spawn(asyncio.sleep(60), "mine")
        other = tasks.spawn(asyncio.sleep(60), "other")
        assert mine is not None and other is not None and scope.running
        scope.cancel()
        await asyncio.sleep(0)
        assert mine.cancelled() and not other.done() and not scope.running
        await tasks.close()
        assert other.cancelled()
        late = asyncio.sleep(1)
        assert tasks.spawn(late, "after close") is None  # closed: nothing runs, the coroutine is closed

    run(body())
