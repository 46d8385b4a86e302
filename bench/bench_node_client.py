"""Apache Pulsar's Node.js client (``pulsar-client`` from npm) on bundlewise's brokers: produce, consume and unload
(docs/clients.md §6).

``python -m bench node_client`` runs ``bench/node_client/produce_consume_unload.js`` once per store and load
manager (etcd and ZooKeeper; modular and extensible) against three real brokers: a consumer subscribed before
the first send, a producer sending ``BENCH_NODE_MESSAGES`` messages (default 2,000) at ``BENCH_NODE_RATE`` per
second (default 200), and an unload of the topic's bundle to another broker half way through.  It records what
was sent, acknowledged and received, the duplicates, the client's reconnects and the longest gap between two
receipts around the unload.

The Node addon is not installed by ``make``: it is built from sources against the Pulsar C++ client (the
commands are in docs/clients.md §6).  ``BUNDLEWISE_NODE_PULSAR`` names the built ``pulsar-client`` package
directory (the one holding its ``index.js``); ``BUNDLEWISE_NODE`` the ``node`` executable (default ``node`` on
``PATH``).  Without the package the benchmark says so and leaves the committed results alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import write_result
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.servers import EtcdServer, ZooKeeperServer

RESULT = "node_client"
TITLE = "Node.js pulsar-client (npm, built from source) on bundlewise brokers: produce, consume, unload"

SCRIPT = Path(__file__).parent / "node_client" / "produce_consume_unload.js"
BASE = {
    "loadBalancerSheddingEnabled": "false",
    "loadBalancerAutoBundleSplitEnabled": "false",
}
MANAGERS: dict[str, dict[str, Any]] = {
    "modular": {},
    "extensible": {
        "loadManagerClassName": EXTENSIBLE_LOAD_MANAGER,
        "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 5000,
        "loadBalancerServiceUnitStateMonitorIntervalInSeconds": 1,
    },
}
STORES = {"etcd": EtcdServer, "zookeeper": ZooKeeperServer}


def run_once(c: LocalCluster, node: str, package: Path, messages: int, rate: float, topic: str) -> dict[str, Any]:
    b = c.brokers[0]
    config = {
        "module": str(package),
        "serviceUrl": f"pulsar://{b.host}:{b.settings['brokerServicePort']}",
        "webUrl": b.web_url,
        "topic": topic,
        "messages": messages,
        "rate": rate,
        "brokers": [{"id": x.broker_id, "port": int(x.settings["brokerServicePort"])} for x in c.brokers],
    }
    timeout = messages / rate + 120
    done = subprocess.run([node, str(SCRIPT), json.dumps(config)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the Node script failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def markdown(payload: dict[str, Any]) -> str:
    runs = payload["runs"]
    cols = [
        "sent",
        "acked",
        "failed",
        "received_unique",
        "duplicates",
        "missing",
        "producer_reconnects",
        "consumer_reconnects",
        "unload_request_ms",
        "unload_gap_ms",
    ]
    lines = [
        f"Client: `pulsar-client` {payload['node_client']} (Node {payload['node']}) on the Pulsar C++ client "
        f"{payload['cpp_client']}; {payload['messages']} messages at {payload['rate']:g}/s, one unload of the "
        "topic's bundle to another broker half way, three brokers.",
        "",
        "| run | " + " | ".join(cols) + " | moved |",
        "|---|" + "---|" * (len(cols) + 1),
    ]
    for name, r in runs.items():
        moved = r["owner_after"] == r["unload_destination"] != r["owner_before"] and len(r["stored_by"]) == 2
        lines.append(f"| {name} | " + " | ".join(str(r[k]) for k in cols) + f" | {'yes' if moved else 'no'} |")
    lines += [
        "",
        "`missing`: acknowledged sends the consumer never received; `duplicates`: receptions beyond the first; "
        "`unload_gap_ms`: the longest time between two receipts around the unload; `moved`: the destination owns "
        "the topic afterwards and the receipts' message ids name both brokers (old owner, then destination).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    package = os.environ.get("BUNDLEWISE_NODE_PULSAR", "")
    node = os.environ.get("BUNDLEWISE_NODE", "node")
    if not package or not (Path(package) / "index.js").is_file() or shutil.which(node) is None:
        sys.stderr.write(
            "skipped: set BUNDLEWISE_NODE_PULSAR to a pulsar-client package built from source "
            "(docs/clients.md §6) and BUNDLEWISE_NODE to node; results left as committed\n"
        )
        return
    messages = int(os.environ.get("BENCH_NODE_MESSAGES", "2000"))
    rate = float(os.environ.get("BENCH_NODE_RATE", "200"))
    stores = os.environ.get("BENCH_NODE_STORES", "etcd,zookeeper").split(",")
    managers = os.environ.get("BENCH_NODE_MANAGERS", "modular,extensible").split(",")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    meta = json.loads((Path(package) / "package.json").read_text())
    cpp = (Path(package) / "pulsar-client-cpp.txt").read_text().split("CPP_CLIENT_VERSION=")[1].split()[0]
    out: dict[str, Any] = {
        "node": version,
        "node_client": meta["version"],
        "cpp_client": cpp,
        "messages": messages,
        "rate": rate,
        "runs": {},
    }
    for kind in stores:
        with STORES[kind]() as server, tempfile.TemporaryDirectory(prefix="bench-node-") as tmp:
            for manager in managers:
                settings = {**BASE, **MANAGERS[manager]}
                with LocalCluster(3, store_url=server.url, settings=settings, work_dir=Path(tmp) / manager) as c:
                    name = f"{kind}/{manager}"
                    figures = run_once(c, node, Path(package), messages, rate, "persistent://public/default/node")
                    out["runs"][name] = figures
                    print(f"{name}: {json.dumps(figures)}", flush=True)
    write_result(RESULT, out, TITLE, markdown)
