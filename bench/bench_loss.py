"""The loss campaign: faults under Apache Pulsar's official client, on brokers with file storage, every
acknowledged message accounted for (``bundlewise.live.harness.loss``; docs/storage.md, How it is tested).

``python -m bench loss`` (runs per fault from ``BENCH_LOSS_RUNS``, default 10: 5 faults x 10 = 50 runs per
store x manager) or ``python -m bench.bench_loss --runs N [--faults a,b] [--stores etcd] [--managers modular]``.
One cluster per store x manager (3 brokers, session timeout 4 s, shedding and automatic splits off, file storage
with ``bundlewiseLedgerFsync=always``), 2 producers at 50 msg/s (unbatched, 256 B) and 2 Failover consumers on
two topics throughout, the fault campaign's lookup clients and observer besides.  Faults: the owner of the
clients' topic SIGKILLed; that owner SIGSTOPped for the session timeout + 2 s, then woken; the leader SIGKILLed
while an admin unload of that topic's bundle runs; the owner SIGKILLed while it splits that bundle; the store
SIGSTOPped past the session timeout.  A killed broker is restarted after its run.

Per store x manager: runs; **acknowledged** sends; messages received (redeliveries included); **lost**
(acknowledged, never received within 10 s after the clients stop, and not in the topic's backlog read from the
earliest message); **duplicated** (deliveries beyond the first); failed sends; ledgers fenced, and **entries
appended after fencing** (read from the ledger files: entries beyond the count each fence recorded); overlaps and
unrecovered bundles from the observer.  Targets (issue: messages that survive every move): 0 lost, 0 appended
after fencing.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import campaign_args, write_result
from bundlewise.live.harness.faults import BROKERS, SESSION_S, RunResult
from bundlewise.live.harness.loss import FAULTS, PRODUCERS, RATE, LossCell

RESULT = "loss"
TITLE = "Loss campaign: every acknowledged message accounted for under faults, file storage, the official client"


def cell_rows(store: str, manager: str, faults: list[str], runs: int) -> dict[str, Any]:
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="bw-loss-") as work:
        cell = LossCell(store, manager, Path(work)).start()
        try:
            for i in range(runs):
                for fault in faults:
                    started = time.monotonic()
                    try:
                        r = cell.run(fault, i)
                    except Exception as e:  # a run that could not be carried out is reported, not hidden
                        r = RunResult(fault, store, manager, examples=[f"run failed: {type(e).__name__}: {e}"])
                        with contextlib.suppress(Exception):
                            cell.stop(crash=True)
                            cell.start()
                    results.append(r)
                    took = time.monotonic() - started
                    print(f"{fault} {store}/{manager} run {i + 1}: {r.as_dict()} ({took:.1f} s)", flush=True)
        finally:
            cell.stop()
    a = cell.accounting
    return {
        "store": store,
        "manager": manager,
        "runs": len(results),
        **a.as_dict(),
        "overlaps": sum(r.overlaps + r.store_overlaps for r in results),
        "unrecovered": sum(r.unrecovered for r in results),
        "failed_runs": sum(1 for r in results if any(e.startswith("run failed") for e in r.examples)),
        "examples": (a.examples or [])[:3] + sorted({e for r in results for e in r.examples})[:3],
    }


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        f"{payload['runs_per_fault']} run(s) of each of {len(payload['faults'])} faults per store x manager "
        f"({', '.join(payload['faults'])}); {payload['brokers']} brokers, session timeout "
        f"{payload['session_timeout_s']:g} s; {payload['producers']} producers x {payload['rate']:g} msg/s and as many "
        "Failover consumers of the official client throughout; file storage, fsync always. Targets: 0 lost, "
        f"0 entries appended after fencing. Wall time {payload['wall_seconds']:.0f} s.",
        "",
        "| store | manager | runs | acknowledged | received | lost | duplicated | failed sends | fenced ledgers "
        "| appended after fencing | overlaps | unrecovered |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in payload["cells"]:
        lines.append(
            f"| {r['store']} | {r['manager']} | {r['runs']} | {r['acknowledged']:,} | {r['received']:,} | {r['lost']} "
            f"| {r['duplicated']:,} | {r['failed_sends']} | {r['fenced_ledgers']} | {r['after_fencing']} "
            f"| {r['overlaps']} | {r['unrecovered']} |"
        )
    examples = [(r, e) for r in payload["cells"] for e in r["examples"]]
    if examples:
        lines += ["", "## Examples", ""]
        lines += [f"* {r['store']}/{r['manager']}: {e}" for r, e in examples]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    runs, lists = campaign_args(
        argv, "python -m bench.bench_loss", __doc__.split("\n\n")[0], "BENCH_LOSS_RUNS", 10, FAULTS
    )
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    started = time.monotonic()
    rows = [cell_rows(s, m, lists["faults"], runs) for s in lists["stores"] for m in lists["managers"]]
    payload = {
        "runs_per_fault": runs,
        "faults": lists["faults"],
        "brokers": BROKERS,
        "session_timeout_s": SESSION_S,
        "producers": PRODUCERS,
        "rate": RATE,
        "wall_seconds": round(time.monotonic() - started, 1),
        "cells": rows,
    }
    write_result(RESULT, payload, TITLE, markdown)
    print(markdown(payload))


if __name__ == "__main__":
    main(sys.argv[1:])
