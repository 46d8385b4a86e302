"""Ledger files: appends per second of 1 KB messages under each fsync policy, one message per entry and
batches of 10 (``live.broker.binary.ledgers``, docs/storage.md).  ``always`` twice: a sync per entry
(``Ledger.append``'s own policy), and group commit as a broker runs it (``GroupCommit``: entries arrive
``ARRIVAL`` at a time, as frames in one read, each waits for a sync that covers it).

This is the storage alone (a ``Ledger``'s ``append`` in a loop, in a temporary directory on the machine's
disk), an upper bound of what a broker with ``bundlewiseManagedLedgerStorage=file`` can store; the
issue's target for a broker is 10,000 msg/s of 1 KB messages with batching and the default policy
(``always``).  Writes bench/results/ledgers.json.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from typing import Any

from bench.common import write_result
from bundlewise.live.broker.binary.ledgers import FSYNC_POLICIES, GroupCommit, LedgerStore

RESULT = "ledgers"
TITLE = "Ledger files: appends per second under each fsync policy"

MESSAGE_BYTES = 1024
BATCH = 10
SECONDS = 2.0  # per policy and entry size
TARGET_MSG_S = 10_000
ARRIVAL = 50  # entries appended between two turns of the event loop
GROUP = "always (group commit)"


def _rate(policy: str, messages_per_entry: int) -> dict[str, float]:
    root = tempfile.mkdtemp(prefix="bw-bench-ledgers-")
    body = b"x" * (MESSAGE_BYTES * messages_per_entry)
    try:
        if policy == GROUP:
            entries, elapsed = asyncio.run(_grouped(LedgerStore(root, fsync="always"), body, messages_per_entry))
        else:
            ledger = LedgerStore(root, fsync=policy).create()
            entries = 0
            start = time.perf_counter()
            while (elapsed := time.perf_counter() - start) < SECONDS:
                for _ in range(ARRIVAL):
                    ledger.append(body, 0, messages_per_entry)
                entries += ARRIVAL
            ledger.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "entries_per_s": round(entries / elapsed, 1),
        "messages_per_s": round(entries * messages_per_entry / elapsed, 1),
    }


async def _grouped(store: LedgerStore, body: bytes, messages: int) -> tuple[int, float]:
    """Entries appended ``ARRIVAL`` at a time; the time until the last one is synced."""
    ledger = store.create()
    commit = GroupCommit(ledger)
    entries = 0
    last: asyncio.Future[None] | None = None
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        for _ in range(ARRIVAL):
            ledger.append(body, 0, messages, sync=False)
            last = commit.request()
        entries += ARRIVAL
        await asyncio.sleep(0)
    if last is not None:
        await last
    elapsed = time.perf_counter() - start
    await commit.settle()
    ledger.close()
    return entries, elapsed


def main() -> None:
    rows: dict[str, Any] = {}
    for policy in (*FSYNC_POLICIES, GROUP):
        for size in (1, BATCH):
            key = f"{policy}, {size} msg/entry"
            rows[key] = {"fsync": policy, "messages_per_entry": size, **_rate(policy, size)}
            row = rows[key]
            print(f"{key:<28} {row['entries_per_s']:>10,.0f} entries/s {row['messages_per_s']:>12,.0f} msg/s")
    default_batched = rows[f"{GROUP}, {BATCH} msg/entry"]["messages_per_s"]
    met = default_batched >= TARGET_MSG_S
    verdict = "met" if met else "MISSED"
    print(f"{GROUP}, batches of {BATCH}: {default_batched:,.0f} msg/s, target >= {TARGET_MSG_S:,}: {verdict}")
    write_result(
        RESULT,
        {
            "message_bytes": MESSAGE_BYTES,
            "seconds_per_row": SECONDS,
            "target_msg_per_s": TARGET_MSG_S,
            "target_met_by_storage_alone": met,
            "rows": rows,
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
