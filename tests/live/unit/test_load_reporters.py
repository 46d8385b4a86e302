"""An extensible broker's load data stays in the store when a reporting tick follows a tombstoning event at once,
in process on the in-memory store.

A channel event that concerns the broker (here: it is the source of a ``Splitting`` record) clears its local
load record and makes a removal of its store entry due.  When the next tick ran before that removal, the tick
pushed the fresh record and the removal then deleted it; having just pushed, the reporter did not push again
before its data changed by 10 % or 15 minutes passed -- the leader, reading no load data for a busy broker that
kept splitting, skipped every unload cycle (``Skip.NoLoadData``) of a live run.  The removal now goes first.
"""

from __future__ import annotations

from pathlib import Path

from inproc import EXTENSIBLE, cluster
from live_support import run

from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData


def test_a_tick_right_after_a_tombstoning_event_leaves_the_broker_load_in_the_store(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            broker = await c.start(8081)
            ext = broker.manager
            assert isinstance(ext, ExtensibleLoadManager)
            me = broker.identity.broker_id
            await ext.reporters.report(force=True)
            assert ext.broker_load.get(me) is not None
            pushes = ext.reporters.pushes

            splitting = ServiceUnitStateData(ServiceUnitState.Splitting, me, me)
            ext.reporters.on_record("public/default/0x00000000_0xffffffff", splitting)  # a removal is due
            await ext.reporters.report()  # the tick comes first: its push must follow the removal
            await ext.reporters.report()  # nothing changed: no push
            for _ in range(3):  # whatever the event left to do
                await ext.reporters.report()

            assert ext.reporters.pushes == pushes + 1  # the cleared record was pushed once, after the removal
            assert ext.broker_load.get(me) is not None
            assert ext.top_bundles.get(me) is None  # removed; pushed again with the next bundle stats

    run(body())
