"""The loss campaign: faults under real clients over file storage, every acknowledged message accounted for
(``bench/bench_loss.py``, the loss-campaign test; docs/storage.md "How it is tested").

A ``LossCell`` is a fault-campaign cell (``faults.Cell``: its store, ``BROKERS`` brokers, its observer and
lookup clients) whose brokers keep persistent topics in file storage (``bundlewiseManagedLedgerStorage=file``,
cursors persisted ``managedLedgerDefaultMarkDeleteRateLimit`` times a second), with Apache Pulsar's official
client running throughout (``clients.RealClients``): ``PRODUCERS`` producers and as many Failover consumers on
``CLIENT_TOPICS`` (the campaign's first topics, which the ``owner-*`` faults aim at).  The faults (``FAULTS``):
the owner SIGKILLed, the owner SIGSTOPped past its session then woken, the leader SIGKILLed during an unload, the
owner SIGKILLed during a split, the store SIGSTOPped past the session timeout.

When the cell stops, the clients stop first (their loss check reads the backlogs while the cluster still
runs), then the storage is read directly (``LedgerStore``): for every ledger another broker fenced, the entries
on disk beyond the count the fence recorded are **entries appended after fencing** (the promise is 0).  A cell
rebuilt after a run it did not recover from accounts for its clients before the rebuild.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundlewise.live.broker.binary.ledgers import LedgerStore, scan
from bundlewise.live.harness.clients import RealClients
from bundlewise.live.harness.faults import TOPICS, Cell
from bundlewise.traffic.clients import ClientsSpec

PRODUCERS = 2
RATE = 50.0  # messages per second per producer
CLIENT_TOPICS = TOPICS[:PRODUCERS]
FILE_STORAGE = {
    "bundlewiseManagedLedgerStorage": "file",
    "bundlewiseLedgerFsync": "always",
    "defaultRetentionTimeInMinutes": -1,  # every ledger kept (both -1: infinite retention): the audit
    "defaultRetentionSizeInMB": -1,  # reads each fenced ledger's file
}
FAULTS = ("owner-kill", "owner-pause", "leader-kill-during-unload", "owner-kill-during-split", "store-pause")


@dataclass(slots=True)
class Accounting:
    """What the clients and the storage of one cell showed, summed over its rebuilds."""

    acknowledged: int = 0
    received: int = 0
    lost: int = 0
    duplicated: int = 0
    failed_sends: int = 0
    after_fencing: int = 0
    fenced_ledgers: int = 0
    examples: list[str] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "examples"}


def appended_after_fencing(data_dir: Path, seen: set[int]) -> tuple[int, int, list[str]]:
    """(entries on disk beyond what each fence recorded, fenced ledgers, examples), read from the files; the
    ledgers of ``seen`` are skipped and the fenced ones read are added to it."""
    store = LedgerStore(data_dir)
    extra, fenced, examples = 0, 0, []
    for ledger_id in store.ids():
        seal = store.read_seal(ledger_id)
        if seal is None or seal.get("state") != "fenced" or ledger_id in seen:
            continue
        seen.add(ledger_id)
        fenced += 1
        fd = os.open(store.segment_path(ledger_id), os.O_RDONLY)
        try:
            on_disk = len(scan(fd, ledger_id))
        finally:
            os.close(fd)
        recorded = int(str(seal.get("entries", 0)))
        if on_disk > recorded:
            extra += on_disk - recorded
            examples.append(f"ledger {ledger_id}: {on_disk} entries on disk, fenced at {recorded}")
    return extra, fenced, examples


class LossCell(Cell):
    """A ``faults.Cell`` with real clients over file storage (module docstring)."""

    def __init__(self, store: str, manager: str, work_dir: Path) -> None:
        super().__init__(store, manager, work_dir, settings=FILE_STORAGE)
        self.clients: RealClients | None = None
        self.accounting = Accounting(examples=[])
        self._fenced_seen: set[int] = set()

    def start(self) -> LossCell:
        super().start()
        hosts = ",".join(f"{b.host}:{b.settings['brokerServicePort']}" for b in self.live())
        spec = ClientsSpec(
            producers=PRODUCERS,
            consumers=PRODUCERS,
            rate=RATE,
            message_size=256,
            subscription="Failover",
            batching=False,
        )
        self.clients = RealClients(spec, list(CLIENT_TOPICS), f"pulsar://{hosts}", None)
        self.clients.start()
        return self

    def stop(self, crash: bool = False) -> None:
        if self.clients is not None:
            rec = self.clients.stop()
            a = self.accounting
            a.acknowledged += rec.published
            a.received += len(rec.end_to_end_ms)
            a.lost += rec.lost
            a.duplicated += rec.duplicated
            a.failed_sends += rec.failed
            self.clients = None
        if self.cluster is not None:
            extra, fenced, examples = appended_after_fencing(self.cluster.data_dir, self._fenced_seen)
            self.accounting.after_fencing += extra
            self.accounting.fenced_ledgers += fenced
            assert self.accounting.examples is not None
            self.accounting.examples += examples[:3]
        super().stop(crash)
