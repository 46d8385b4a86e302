"""Apache Pulsar's official client (``pulsar-client``) on bundlewise's brokers, over loopback (docs/clients.md).

``python -m bench clients`` (sizes from the environment: ``BENCH_CLIENTS_SECONDS`` per throughput and latency
run, default 10; ``BENCH_CLIENTS_UNLOADS``, default 50).  On etcd with the modular load manager:

* **throughput** on one broker: one producer sending 1 KiB messages as fast as its pending-message window
  allows, batched (up to 1,000 messages or 10 ms a batch) and unbatched; acknowledged messages per second.
* **publish latency** on one broker at a steady 1,000 msg/s (unbatched, so every message is one ``SEND``):
  from ``send_async`` to its receipt, p50/p99/p99.9 in ms.
* **throughput with persistence**: the same batched and unbatched producers on one broker with file storage
  (``bundlewiseManagedLedgerStorage=file``, docs/storage.md) under each ``bundlewiseLedgerFsync`` policy
  (``always``, the default, with group commit; ``interval``; ``never``), side by side.
* **the producer's gap over unloads**: 3 brokers, a producer at 200 msg/s, ``BENCH_CLIENTS_UNLOADS`` unloads
  of its bundle one second apart (each to the next broker, so every unload is a real move); for each unload
  the longest time between two receipts around it, p50/p99/max in ms.

The 1-minute load average at the start and the end is recorded beside the figures: the broker is one Python
process, and its figures move with the CPU the machine leaves it.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pulsar

from bench.common import write_result
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer

RESULT = "clients"
TITLE = "Real Pulsar clients (the official pulsar-client) on bundlewise brokers: throughput, latency, unload gaps"

SIZE = 1024
QUIET = logging.getLogger("pulsar-client")
QUIET.setLevel(logging.ERROR)
TOPIC = "persistent://public/default/bench"


def pulsar_url(c: LocalCluster, i: int = 0) -> str:
    b = c.brokers[i]
    return f"pulsar://{b.host}:{b.settings['brokerServicePort']}"


def throughput(url: str, seconds: float, batched: bool, topic: str = TOPIC) -> float:
    client = pulsar.Client(url, logger=QUIET)
    producer = client.create_producer(
        f"{topic}-{'b' if batched else 'u'}",
        batching_enabled=batched,
        batching_max_messages=1000,
        batching_max_publish_delay_ms=10,
        max_pending_messages=5000,
        block_if_queue_full=True,
    )
    payload = b"x" * SIZE
    done = [0]
    lock = threading.Lock()

    def acked(res: Any, _mid: Any) -> None:
        with lock:
            done[0] += 1

    for _ in range(2000):  # warm-up
        producer.send_async(payload, acked)
    producer.flush()
    start_count = done[0]
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            producer.send_async(payload, acked)
    producer.flush()
    elapsed = time.perf_counter() - start
    rate = (done[0] - start_count) / elapsed
    client.close()
    return rate


def latency(url: str, seconds: float, rate: float = 1000.0) -> dict[str, float]:
    client = pulsar.Client(url, logger=QUIET)
    producer = client.create_producer(f"{TOPIC}-latency", batching_enabled=False, max_pending_messages=10000)
    payload = b"x" * SIZE
    samples: list[float] = []
    lock = threading.Lock()

    def sender(t0: float) -> Any:
        def acked(res: Any, _mid: Any) -> None:
            with lock:
                samples.append(time.perf_counter() - t0)

        return acked

    for _ in range(200):
        producer.send(payload)
    n = int(seconds * rate)
    start = time.perf_counter()
    for i in range(n):
        due = start + i / rate
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        producer.send_async(payload, sender(time.perf_counter()))
    producer.flush()
    client.close()
    ms = np.array(samples) * 1000
    return {
        "messages": len(samples),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p99_ms": round(float(np.percentile(ms, 99)), 3),
        "p999_ms": round(float(np.percentile(ms, 99.9)), 3),
    }


def unload_gaps(c: LocalCluster, unloads: int) -> dict[str, Any]:
    client = pulsar.Client(c.brokers[0].web_url, logger=QUIET)
    producer = client.create_producer(f"{TOPIC}-moving", batching_enabled=False)
    receipts: list[tuple[float, int]] = []
    failures: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def acked(res: Any, mid: Any) -> None:
        with lock:
            if res == pulsar.Result.Ok:
                receipts.append((time.monotonic(), mid.ledger_id()))
            else:
                failures.append(str(res))

    def run() -> None:
        next_at = time.monotonic()
        while not stop.is_set():
            producer.send_async(b"x" * SIZE, acked)
            next_at += 1 / 200
            time.sleep(max(0.0, next_at - time.monotonic()))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(2)
    web = c.brokers[0].web_url
    bundle = httpx.get(f"{web}/lookup/v2/topic/persistent/public/default/bench-moving/bundle", timeout=10).text
    moments: list[tuple[float, float]] = []
    for k in range(unloads):
        dest = c.brokers[(k + 1) % len(c.brokers)].broker_id
        url = f"{web}/admin/v2/namespaces/public/default/{bundle}/unload?destinationBroker={dest}"
        t0 = time.monotonic()
        for _ in range(5):
            r = httpx.put(url, timeout=30, follow_redirects=False)
            if r.status_code != 307:
                break
            url = r.headers["location"]
        moments.append((t0, time.monotonic()))
        time.sleep(1.0)
    time.sleep(1.0)
    stop.set()
    thread.join()
    producer.flush()
    client.close()
    times = np.array(sorted(t for t, _ in receipts))
    gaps = []
    for t0, t1 in moments:
        window = times[(times >= t0 - 0.5) & (times <= t1 + 0.9)]
        gaps.append(float(np.diff(window).max()) * 1000 if len(window) > 1 else float("nan"))
    g = np.array(gaps)
    return {
        "unloads": unloads,
        "failed_sends": len(failures),
        "gap_p50_ms": round(float(np.nanpercentile(g, 50)), 1),
        "gap_p99_ms": round(float(np.nanpercentile(g, 99)), 1),
        "gap_max_ms": round(float(np.nanmax(g)), 1),
    }


def main() -> None:
    seconds = float(os.environ.get("BENCH_CLIENTS_SECONDS", "10"))
    unloads = int(os.environ.get("BENCH_CLIENTS_UNLOADS", "50"))
    settings = {"loadBalancerSheddingEnabled": "false", "loadBalancerAutoBundleSplitEnabled": "false"}
    out: dict[str, Any] = {"store": "etcd", "loadManager": "ModularLoadManagerImpl", "message_bytes": SIZE}
    out["load_average_at_start"] = round(os.getloadavg()[0], 1)  # the machine is shared: what else ran
    with EtcdServer() as server, tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        with LocalCluster(1, store_url=server.url, settings=settings, work_dir=Path(tmp) / "one") as one:
            out["batched_msg_per_s"] = round(throughput(pulsar_url(one), seconds, batched=True))
            print(f"batched 1 KiB: {out['batched_msg_per_s']} msg/s", flush=True)
            out["unbatched_msg_per_s"] = round(throughput(pulsar_url(one), seconds, batched=False))
            print(f"unbatched 1 KiB: {out['unbatched_msg_per_s']} msg/s", flush=True)
            out["latency_at_1000_msg_per_s"] = latency(pulsar_url(one), seconds)
            print(f"publish latency at 1,000 msg/s: {out['latency_at_1000_msg_per_s']}", flush=True)
        persisted: dict[str, dict[str, float]] = {}
        for fsync in ("always", "interval", "never"):
            files = {**settings, "bundlewiseManagedLedgerStorage": "file", "bundlewiseLedgerFsync": fsync}
            with LocalCluster(1, store_url=server.url, settings=files, work_dir=Path(tmp) / f"file-{fsync}") as one:
                topic = f"{TOPIC}-file-{fsync}"
                persisted[fsync] = {
                    "batched_msg_per_s": round(throughput(pulsar_url(one), seconds, batched=True, topic=topic)),
                    "unbatched_msg_per_s": round(throughput(pulsar_url(one), seconds, batched=False, topic=topic)),
                }
            print(f"file storage, fsync {fsync}: {persisted[fsync]}", flush=True)
        out["file_storage"] = persisted
        with LocalCluster(3, store_url=server.url, settings=settings, work_dir=Path(tmp) / "three") as three:
            out["unload_gap"] = unload_gaps(three, unloads)
            print(f"producer gap over unloads: {out['unload_gap']}", flush=True)
    out["load_average_at_end"] = round(os.getloadavg()[0], 1)
    write_result(RESULT, out, TITLE)
