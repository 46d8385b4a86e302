"""The fault campaign in ``make test``: one run of a few of its cells (``bench/bench_faults.py`` runs them all,
many times).  Real stores, real broker processes, faults by signal; the observer reads every broker's served
bundles at ~20 Hz and the store's ownership locks and channel records, and checks hash-range overlap between
brokers; lookup clients record every answer (``bundlewise.live.harness.faults``).

Each cell asserts 0 overlapping ranges served by two brokers (nor owned by two in the store) and 0 double
answers; after a broker SIGKILL every topic is served again within the session timeout + 2 s (issue 23's
targets)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bundlewise.live.harness.faults import SESSION_S, Cell, RunResult

CELLS = [
    ("unload-racing-split", "etcd", "modular"),
    ("broker-kill", "etcd", "modular"),
    ("unload-racing-split", "zookeeper", "extensible"),
    ("broker-kill", "zookeeper", "extensible"),
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
