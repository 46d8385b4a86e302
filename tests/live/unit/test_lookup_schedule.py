"""``live up``'s lookup rounds start on schedule (issue 29 item 4): a slow round never delays the next one.

The driver's rounds are replaced by timed stand-ins (what a round does -- HTTP lookups -- is tested with real
brokers in the integration suite); what is under test is ``LookupDriver.run``'s schedule.
"""

from __future__ import annotations

import asyncio

import pytest

from bundlewise.live.harness.lookups import LookupDriver


class _Rounds(LookupDriver):
    def __init__(self, interval: float, durations: list[float], fail_at: int | None = None) -> None:
        self.interval = interval
        self.durations = durations
        self.fail_at = fail_at
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.cancelled = 0

    async def round(self) -> None:
        loop = asyncio.get_running_loop()
        k = len(self.starts)
        self.starts.append(loop.time())
        if k == self.fail_at:
            raise RuntimeError("round failed")
        try:
            await asyncio.sleep(self.durations[k] if k < len(self.durations) else 0.0)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.ends.append(loop.time())


async def _run_for(driver: _Rounds, seconds: float) -> None:
    task = asyncio.create_task(driver.run())
    await asyncio.sleep(seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_slow_round_does_not_delay_the_next_ones() -> None:
    driver = _Rounds(0.1, [0.45])  # the first round takes four and a half intervals
    asyncio.run(_run_for(driver, 0.55))
    # rounds at 0, 0.1, ..., 0.5 -- not at 0, 0.45, 0.55 (a loaded machine may be a little late)
    assert 5 <= len(driver.starts) <= 6, driver.starts
    assert driver.starts[1] - driver.starts[0] < 0.3
    assert max(driver.ends) - driver.starts[0] >= 0.45 and len(driver.ends) == len(driver.starts)


def test_rounds_still_out_are_cancelled_with_the_driver() -> None:
    driver = _Rounds(0.1, [5.0, 5.0])
    asyncio.run(_run_for(driver, 0.15))
    assert len(driver.starts) == 2 and driver.cancelled == 2 and driver.ends == []


def test_a_failed_round_ends_the_driver_with_its_error() -> None:
    driver = _Rounds(0.05, [], fail_at=2)

    async def body() -> None:
        with pytest.raises(RuntimeError, match="round failed"):
            await asyncio.wait_for(driver.run(), 5)

    asyncio.run(body())
    assert len(driver.starts) == 3
