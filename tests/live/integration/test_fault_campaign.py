"""The fault campaign in ``make test``: one run of a few of its cells (``bench/bench_faults.py`` runs them all,
many times).  Real stores, real broker processes, faults by signal; the observer reads every broker's served
bundles at ~20 Hz and the store's ownership locks and channel records, and checks hash-range overlap between
brokers; lookup clients record every answer (``bundlewise.live.harness.faults``).

Each cell asserts 0 overlapping ranges served by two brokers (nor owned by two in the store) and 0 double
answers; after a broker SIGKILL every topic is served again within the session timeout + 2 s (issue 23's
targets)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bundlewise.live.harness.fault_observer import FaultObserver
from bundlewise.live.harness.faults import SESSION_S, TOPICS, Cell, RunResult, _admin
from bundlewise.live.harness.overlap import journal_intervals
from bundlewise.live.store import connect
from bundlewise.model.bundles import Bundle
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.ranges import Overlap

CELLS = [
    ("unload-racing-split", "etcd", "modular"),
    ("broker-kill", "etcd", "modular"),
    ("unload-racing-split", "zookeeper", "extensible"),
    ("broker-kill", "zookeeper", "extensible"),
    ("store-wiped", "zookeeper", "extensible"),  # owners re-create their records before anyone assigns anew
]


@pytest.fixture(scope="module")
def cell_of(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str, str], Cell]]:
    """One cluster per store x manager for the module (started on first use, stopped by PID at the end)."""
    started: dict[tuple[str, str], Cell] = {}

    def get(store: str, manager: str) -> Cell:
        if (store, manager) not in started:
            work: Path = tmp_path_factory.mktemp(f"campaign-{store}-{manager}")
            started[(store, manager)] = Cell(store, manager, work).start()
        return started[(store, manager)]

    try:
        yield get
    finally:
        for cell in started.values():
            cell.stop()


@pytest.mark.parametrize(("fault", "store", "manager"), CELLS, ids=["/".join(c) for c in CELLS])
def test_one_run_no_overlap_no_double_answer_and_served_in_time(
    cell_of: Callable[[str, str], Cell], fault: str, store: str, manager: str
) -> None:
    r: RunResult = cell_of(store, manager).run(fault)
    assert r.observer_hz >= 10, r
    assert (r.overlaps, r.store_overlaps, r.double_answers) == (0, 0, 0), r
    assert r.unrecovered == 0, r
    assert r.time_to_served is not None, r
    if fault == "broker-kill":
        assert r.time_to_served <= SESSION_S + 2, r
    if fault == "store-wiped":
        assert r.time_to_served <= SESSION_S + 10, r  # from the store answering again


@pytest.mark.parametrize(("store", "manager"), [("etcd", "modular"), ("zookeeper", "extensible")])
def test_the_serving_journals_record_a_move_as_two_intervals_that_never_meet(
    cell_of: Callable[[str, str], Cell], store: str, manager: str
) -> None:
    """An admin unload with a destination: the old owner's journal closes its interval, the destination's opens
    after it, and every claim the observer saw from either lies inside that broker's interval."""
    cell = cell_of(store, manager)
    assert cell.observer is not None
    bundle, owner = cell.served_bundle()
    target = next(b for b in cell.live() if b.broker_id != owner)
    moved_at = time.monotonic()
    move = _admin(cell, cell.c.broker(owner), bundle, "unload", f"?destinationBroker={target.broker_id}")
    assert move() == 204
    topics = [t for t in TOPICS if Bundle.parse(bundle).includes_hash(crc32_hash(t))]
    assert cell.wait_served(topics, 30, after=moved_at + 0.5)
    snapshots = cell.observer.journals()
    assert bundle not in snapshots[owner]["open"]
    closed = [(s, u) for b, s, u in snapshots[owner]["closed"] if b == bundle and u >= moved_at]
    assert len(closed) == 1, snapshots[owner]
    since = snapshots[target.broker_id]["open"][bundle]
    assert closed[0][1] <= since, (closed, since)  # the old owner let go before the destination took over
    journals = {b: journal_intervals(j) for b, j in snapshots.items()}
    taken = min(float(j["now"]) for j in snapshots.values())
    for at, claims in cell.observer.result.history:
        for broker in (owner, target.broker_id):
            # rounds whose answers (at most round_wait = 0.2 s after the round starts) came before the snapshots
            if moved_at - 1 <= at < taken - 0.3 and bundle in claims.get(broker, []):
                # the round starts before the broker answers, and its answer comes before the next round
                assert any(s - 0.25 <= at <= u for s, u in journals[broker][bundle]), (broker, at, journals[broker])


def test_the_observer_reads_the_stores_locks_and_records_and_finds_range_overlaps(store_url: str) -> None:
    """Ownership written straight into the store: a parent's lock held by A while B holds its child's (modular),
    and a parent ``Owned`` by C while D's child is ``Splitting`` (extensible) -- two store overlaps; E's lock of
    a disjoint range and an ``Assigning`` record (no owner yet) are none."""

    def lock(broker: str) -> bytes:
        return json.dumps({"nativeUrl": f"pulsar://{broker}", "httpUrl": f"http://{broker}"}).encode()

    def record(state: str, src: str | None, dst: str | None) -> bytes:
        return json.dumps({"state": state, "sourceBroker": src, "dstBroker": dst, "versionId": 1}).encode()

    writes = {
        "/namespace/t/ns/0x00000000_0x80000000": lock("a:1"),
        "/namespace/t/ns/0x40000000_0x80000000": lock("b:1"),
        "/namespace/t/ns/0x80000000_0xffffffff": lock("e:1"),
        "/service_unit_state/t/ns/0x00000000_0x80000000": record("Owned", None, "c:1"),
        "/service_unit_state/t/ns/0x00000000_0x40000000": record("Splitting", "d:1", None),
        "/service_unit_state/t/ns/0x80000000_0xffffffff": record("Assigning", None, "c:1"),
    }

    async def write() -> None:
        async with await connect(store_url, session_timeout=10) as s:
            for path, value in writes.items():
                await s.put(path, value)

    asyncio.run(write())
    with FaultObserver(lambda: [], lambda: store_url, store_interval=0.05) as observer:
        deadline = time.monotonic() + 10
        while observer.result.store_rounds < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert observer.result.store_rounds >= 2
    assert sorted(observer.result.store_overlaps) == [
        Overlap("a:1", "t/ns/0x00000000_0x80000000", "b:1", "t/ns/0x40000000_0x80000000"),
        Overlap("c:1", "t/ns/0x00000000_0x80000000", "d:1", "t/ns/0x00000000_0x40000000"),
    ]
