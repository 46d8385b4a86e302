"""A client sent to a bundle's new owner before that owner serves it waits for the ownership (extensible manager),
in process on the in-memory store.

The new owner writes ``Owned`` in reply to ``Assigning`` and reads its own write back; another broker's mirror
can show the ``Owned`` record first, and its lookup then sends the client to the owner before the owner serves
the bundle.  Refused there, Apache Pulsar's official client retries its first subscription only after its
operation timeout (30 s: seen when ``live up``'s real clients started on a loaded machine).  The owner now waits
(``ARRIVAL_WAIT_S``) for an ownership the mirror says is on its way, and refuses at once otherwise."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from inproc import EXTENSIBLE, cluster, create_namespace
from live_support import run

from bundlewise.live.broker.binary.service import ARRIVAL_WAIT_S, BinaryError, BinaryService
from bundlewise.live.broker.extensible.manager import ExtensibleLoadManager
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData
from bundlewise.model.hashing import crc32_hash

NS = "public/default"
LOW, HIGH = f"{NS}/0x00000000_0x80000000", f"{NS}/0x80000000_0xffffffff"
OWNED_DELAY_S = 0.5  # the owner's own Owned write takes this long (a loaded machine)


def topic_in(low: bool) -> str:
    for i in range(100):
        name = f"persistent://{NS}/t{i}"
        if (crc32_hash(name) < 0x80000000) == low:
            return name
    raise AssertionError("no topic found")


def test_a_client_sent_to_an_owner_whose_ownership_is_arriving_is_served_once_it_arrives(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path, {"loadManagerClassName": EXTENSIBLE}) as c:
            owner = await c.start(8081)
            await create_namespace(owner.store, NS, [0, 0x80000000, 0xFFFFFFFF])
            ext = owner.manager
            assert isinstance(ext, ExtensibleLoadManager)
            publish = ext.channel.publish

            async def slow_owned(key: str, record: ServiceUnitStateData) -> bool:
                if record.state is ServiceUnitState.Owned:
                    await asyncio.sleep(OWNED_DELAY_S)
                return await publish(key, record)

            ext.channel.publish = slow_owned  # type: ignore[method-assign]
            lookup = asyncio.ensure_future(owner.namespace.find(LOW, authoritative=True))
            for _ in range(200):  # the owner's mirror has the Assigning record to it; its Owned write is slow
                record = ext.channel.get(LOW)
                if record is not None and record.state is ServiceUnitState.Assigning:
                    break
                await asyncio.sleep(0.005)
            assert record is not None and record.dst_broker == owner.identity.broker_id
            assert not owner.namespace.serving(LOW) and owner.namespace.arriving(LOW)

            binary = BinaryService(owner)
            started = time.monotonic()
            topic = await binary.load(topic_in(low=True))
            waited = time.monotonic() - started
            assert topic.bundle == LOW and owner.namespace.serving(LOW)
            assert 0.2 < waited < ARRIVAL_WAIT_S  # it waited for the Owned record, not for the deadline
            await lookup

            started = time.monotonic()  # nothing on its way: refused at once, the client looks up again
            with pytest.raises(BinaryError, match="not served by this instance"):
                await binary.load(topic_in(low=False))
            assert time.monotonic() - started < 0.2
            assert not owner.namespace.arriving(HIGH)
            await binary.stop()

    run(body())


def test_a_modular_owner_never_waits(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            broker = await c.start(8081)
            await create_namespace(broker.store, NS, [0, 0x80000000, 0xFFFFFFFF])
            binary: Any = BinaryService(broker)
            assert not broker.namespace.arriving(LOW)
            with pytest.raises(BinaryError, match="not served by this instance"):
                await binary.load(topic_in(low=True))
            await binary.stop()

    run(body())
