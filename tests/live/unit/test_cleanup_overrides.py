"""The orphan cleanup publishes its overrides 16 at a time (each key its own compare-and-set), and in the plan's
order one at a time when a ``Splitting`` orphan is among them (``live.broker.extensible.cleanup``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from bundlewise.algorithms.extensible.channel import Override
from bundlewise.live.broker.extensible.cleanup import OVERRIDE_CONCURRENCY, OrphanCleanup
from bundlewise.live.broker.tasks import Tasks
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData

DEAD, NEW = "127.0.0.1:1", "127.0.0.1:2"


class SlowChannel:
    """Records how many publications are in flight at once and in which order they started."""

    def __init__(self) -> None:
        self.me = NEW
        self.settings = SimpleNamespace(metadata_operation_timeout_s=5.0)
        self.in_flight = self.most = 0
        self.started: list[str] = []

    async def publish(self, key: str, record: ServiceUnitStateData) -> bool:
        self.started.append(key)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return True


def overrides(n: int, splitting: int | None = None) -> tuple[Override, ...]:
    def one(i: int) -> Override:
        state = ServiceUnitState.Splitting if i == splitting else ServiceUnitState.Owned
        orphan = ServiceUnitStateData(state, DEAD, DEAD if state is ServiceUnitState.Splitting else None)
        return Override(f"t/ns/{i:08x}", orphan, ServiceUnitStateData(ServiceUnitState.Owned, NEW), "test")

    return tuple(one(i) for i in range(n))


def publish(plan: tuple[Override, ...]) -> tuple[SlowChannel, float]:
    async def main() -> tuple[SlowChannel, float]:
        channel = SlowChannel()
        cleanup: Any = OrphanCleanup(
            channel,  # type: ignore[arg-type]
            is_leader=lambda: True,
            leader_known=lambda: True,
            select=lambda *a: NEW,  # type: ignore[arg-type,return-value]
            health_check=lambda b, t: asyncio.sleep(0, False),  # type: ignore[arg-type,return-value]
            remove_load_data=lambda b: asyncio.sleep(0),
            tasks=Tasks(),
        )
        started = asyncio.get_running_loop().time()
        await cleanup._override_each(plan, DEAD, False)
        return channel, asyncio.get_running_loop().time() - started

    return asyncio.run(main())


def test_a_cleanup_of_many_orphans_publishes_them_sixteen_at_a_time() -> None:
    channel, took = publish(overrides(160))
    assert len(channel.started) == 160
    assert channel.most == OVERRIDE_CONCURRENCY == 16
    assert took < 160 * 0.01 / 4  # one at a time took 1.6 s


def test_a_plan_with_a_splitting_orphan_is_published_in_its_order_one_at_a_time() -> None:
    plan = overrides(20, splitting=3)
    channel, _ = publish(plan)
    assert channel.most == 1
    assert channel.started == [o.service_unit for o in plan]
