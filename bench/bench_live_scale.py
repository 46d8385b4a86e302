"""Many live brokers on one machine: what each costs and what they ask of the store (issue 29 items 3-4).

``python -m bench live_scale [--brokers 10,50,100] [--stores etcd,zk] [--managers modular,extensible]
[--brokers-per-process 1,10] [--idle] [--window 60] [--time-scale 60]``

Per cell (brokers x store x manager) one store is started (``LocalCluster``), then the brokers one after the
other, all playing the default scenario's workload (its first hour) at ``--time-scale``.  This process looks up
one topic of every workload bundle so that bundles get owners, then, for ``--window`` wall seconds, it:

* sends owned-bundle lookups straight to each topic's owner, one at a time on a fixed schedule (20/s), from
  this process, which runs nothing else (slots missed while a lookup was slow are skipped, not sent late,
  so the window lasts what it says) -- the brokers' answer time plus one local HTTP round trip (a
  redirected lookup, whose bundle the leader had just moved, is not timed); the calibration figure is the same
  lookups in the seconds before the window, right after the bundles were assigned;
* reads every broker's ``/metrics`` at the start and the end of the window: its metadata-store writes, deletes
  and notifications (``bundlewise_metadata_store_*``) per second, and the leader's shedding decision time
  (``bundlewise_lb_shedding_decision_ms``);
* reads each broker's memory from ``/proc``: resident (RSS), proportional (PSS: shared pages divided among the
  processes that map them) and private (USS: what this broker alone costs), and the CPU every broker and the
  store used during the window.

``--brokers-per-process K`` runs a cell's N brokers K to a process (``LocalCluster(brokers_per_process=K)``:
``bundlewise broker`` with ``--web`` repeated), N/K processes; memory and CPU are then read per process and the
per-broker figures are a process's divided by the brokers it runs; the totals (RSS, PSS of all processes) compare
the layouts directly.  ``--idle`` gives the brokers no workload.

Rates are per wall second at the run's time scale: Pulsar's intervals run ``--time-scale`` times faster, so
the store traffic of a real cluster of that size is about the figure divided by the time scale.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import RESULTS, write_result
from bundlewise.live.harness.cluster import LocalCluster
from bundlewise.live.harness.workload import trace_table
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.sim.scenario import bundled_scenario
from bundlewise.traffic.trace import TraceWorkload
from bundlewise.traffic.workload import GeneratedWorkload

RESULT = "live_scale"
TITLE = "Live scaling: many brokers on one machine against one store"
MANAGERS = {
    "modular": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    "extensible": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
}
LOOKUP_RATE = 20.0  # owned-bundle lookups per second, one at a time
WORKLOAD_MINUTES = 60
CLK = os.sysconf("SC_CLK_TCK")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench live_scale", description=__doc__)
    p.add_argument("--brokers", default="10,50,100", help="broker counts, comma-separated (10,50,100)")
    p.add_argument("--stores", default="etcd,zk", help="etcd, zk or both (etcd,zk)")
    p.add_argument("--managers", default="modular,extensible", help="modular, extensible or both")
    p.add_argument(
        "--brokers-per-process",
        default="1",
        help="brokers to a process, comma-separated: each cell runs once per value (1)",
    )
    p.add_argument("--idle", action="store_true", help="no workload: the brokers only register, report and lead")
    p.add_argument("--window", type=float, default=60.0, help="measured wall seconds per cell (60)")
    p.add_argument("--time-scale", type=float, default=60.0, help="the brokers' --time-scale (60)")
    p.add_argument(
        "--start-budget",
        type=float,
        default=600.0,
        help="wall seconds to start a cell's brokers; a cell past it is a row saying how far it got (600)",
    )
    p.add_argument(
        "--append", action="store_true", help="keep the rows already in bench/results/live_scale.json (one more run)"
    )
    return p.parse_args(argv)


def _memory(pid: int) -> dict[str, float]:
    """RSS, PSS and USS of one process, MB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        fields[key] = int(rest.split()[0])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss": fields["Rss"] / 1024, "pss": fields["Pss"] / 1024, "uss": uss / 1024}


def _cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / CLK  # utime + stime


def _metrics(client: httpx.Client, url: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in client.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("bundlewise_"):
            name, _, value = line.rpartition(" ")
            out[name.split("{", 1)[0]] = float(value)
    return out


def _topics_per_bundle(trace_topics: list[str], namespaces: dict[str, int]) -> list[str]:
    """One workload topic in every bundle of every namespace (its initial bundles)."""
    chosen: dict[str, str] = {}
    for ns, count in namespaces.items():
        bundles = NamespaceBundles.initial(ns, count)
        for topic in trace_topics:
            if f"/{ns}/" in topic:
                chosen.setdefault(bundles.find_bundle(topic).name, topic)
    return list(chosen.values())


def _lookup_path(topic: str) -> str:
    kind, rest = topic.split("://", 1)
    return f"/lookup/v2/topic/{kind}/{rest}"


def _owners(client: httpx.Client, entry: str, topics: list[str], attempts: int = 20) -> dict[str, str]:
    """Each topic's owner (its web URL), assigning the bundle when it has none (redirects followed)."""
    out: dict[str, str] = {}
    for topic in topics:
        for _ in range(attempts):
            r = client.get(entry + _lookup_path(topic), follow_redirects=True, timeout=30)
            if r.status_code == 200:
                out[topic] = r.json()["httpUrl"]
                break
            time.sleep(0.5)
    return out


def _timed_lookups(client: httpx.Client, owners: dict[str, str], seconds: float) -> list[float]:
    """Owned-bundle lookups straight to the owner on a fixed schedule; ms of those the owner answered itself (one
    that was redirected -- its bundle moved -- is not timed, and its topic's owner is looked up again)."""
    out: list[float] = []
    items = list(owners.items())
    start = time.perf_counter()
    k = 0
    while (due := start + k / LOOKUP_RATE) < start + seconds:
        late = time.perf_counter() - due
        if late > 1 / LOOKUP_RATE:  # slots missed while a lookup was slow are skipped, never sent late
            k += int(late * LOOKUP_RATE)
            continue
        time.sleep(max(0.0, -late))
        topic, owner = items[k % len(items)]
        t = time.perf_counter()
        r = client.get(owner + _lookup_path(topic), timeout=30)
        if r.status_code == 200:
            out.append((time.perf_counter() - t) * 1000)
        else:  # the bundle moved (the leader sheds): find its owner again, untimed
            owners.update(_owners(client, owner, [topic], attempts=1))
            items[k % len(items)] = (topic, owners.get(topic, owner))
        k += 1
    return out


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p99": None}
    a = np.array(values)
    return {
        "n": len(values),
        "p50": round(float(np.percentile(a, 50)), 2),
        "p99": round(float(np.percentile(a, 99)), 2),
    }


def cell(
    brokers: int,
    store: str,
    manager: str,
    window: float,
    time_scale: float,
    trace: str,
    topics: list[str],
    start_budget: float = 600.0,
    per_process: int = 1,
    idle: bool = False,
) -> dict[str, Any]:
    settings = {"loadManagerClassName": MANAGERS[manager], "metadataStoreSessionTimeoutMillis": 10_000}
    cluster = LocalCluster(0, backend=store, settings=settings, time_scale=time_scale, workload=None if idle else trace)
    row: dict[str, Any] = {
        "brokers": brokers,
        "store": store,
        "manager": manager,
        "time_scale": time_scale,
        "brokers_per_process": per_process,
        "workload": "none" if idle else "default",
    }
    try:
        cluster.start()
        t0 = time.perf_counter()
        _start(cluster, brokers, per_process, start_budget, t0)
        row["start_seconds"] = round(time.perf_counter() - t0, 1)
        with httpx.Client() as client:
            owners = _owners(client, cluster.brokers[0].web_url, topics)
            row["owned_topics"] = len(owners)
            row["calibration_ms"] = _quantiles(_timed_lookups(client, owners, min(10.0, window / 6)))
            pids = sorted({b.pid for b in cluster.brokers if b.pid is not None})  # each process once
            share = {p: sum(1 for b in cluster.brokers if b.pid == p) for p in pids}
            server_pid = cluster.server.pid if cluster.server is not None else None
            before = [_metrics(client, b.web_url) for b in cluster.brokers]
            cpu0 = sum(_cpu_seconds(p) for p in pids)
            store_cpu0 = _cpu_seconds(server_pid) if server_pid else 0.0
            w0 = time.perf_counter()
            lookups = _timed_lookups(client, owners, window)
            elapsed = time.perf_counter() - w0
            after = [_metrics(client, b.web_url) for b in cluster.brokers]
            cpu1 = sum(_cpu_seconds(p) for p in pids)
            store_cpu1 = _cpu_seconds(server_pid) if server_pid else 0.0
        proc_mem = [_memory(p) for p in pids]
        mem = [{k: v / share[p] for k, v in m.items()} for p, m in zip(pids, proc_mem, strict=True)]  # a broker's

        def per_broker_rate(name: str) -> float:
            deltas = [a.get(name, 0.0) - b.get(name, 0.0) for a, b in zip(after, before, strict=True)]
            return round(statistics.fmean(deltas) / elapsed, 3)

        leader = [m for m in after if "bundlewise_lb_shedding_cycles" in m]
        row.update(
            window_seconds=round(elapsed, 1),
            rss_mb_median=round(statistics.median(m["rss"] for m in mem), 1),
            pss_mb_median=round(statistics.median(m["pss"] for m in mem), 1),
            uss_mb_median=round(statistics.median(m["uss"] for m in mem), 1),
            uss_mb_max=round(max(m["uss"] for m in mem), 1),
            brokers_pss_gb=round(sum(m["pss"] for m in proc_mem) / 1024, 2),
            processes=len(pids),
            rss_total_mb=round(sum(m["rss"] for m in proc_mem), 1),
            pss_total_mb=round(sum(m["pss"] for m in proc_mem), 1),
            uss_total_mb=round(sum(m["uss"] for m in proc_mem), 1),
            puts_per_s_per_broker=per_broker_rate("bundlewise_metadata_store_puts"),
            put_kb_per_s_per_broker=round(per_broker_rate("bundlewise_metadata_store_put_bytes") / 1024, 2),
            deletes_per_s_per_broker=per_broker_rate("bundlewise_metadata_store_deletes"),
            notifications_per_s_per_broker=per_broker_rate("bundlewise_metadata_store_notifications"),
            brokers_cpu_percent=round(100 * (cpu1 - cpu0) / elapsed, 1),
            store_cpu_percent=round(100 * (store_cpu1 - store_cpu0) / elapsed, 1),
            leader_decision_ms=leader[0].get("bundlewise_lb_shedding_decision_ms") if leader else None,
            leader_cycles_in_window=(
                leader[0]["bundlewise_lb_shedding_cycles"]
                - next(
                    (
                        b.get("bundlewise_lb_shedding_cycles", 0.0)
                        for a, b in zip(after, before, strict=True)
                        if a is leader[0]
                    ),
                    0.0,
                )
                if leader
                else 0
            ),
            lookup_ms=_quantiles(lookups),
        )
    finally:
        cluster.stop()
        cluster.cleanup()
    return row


def _start(cluster: LocalCluster, brokers: int, per_process: int, budget: float, t0: float) -> None:
    """Start ``brokers`` brokers one process after the other, ``per_process`` to a process."""
    up = 0
    while up < brokers:
        if time.perf_counter() - t0 > budget:
            raise TimeoutError(f"only {up} of {brokers} brokers up after {time.perf_counter() - t0:.0f} s")
        k = min(per_process, brokers - up)
        if per_process == 1:
            cluster.add_broker(timeout=120)
        else:
            cluster.add_group([()] * k, timeout=120 + 10 * k)
        if (up + k) // 10 > up // 10:
            print(f"   {up + k}/{brokers} brokers up ({time.perf_counter() - t0:.0f} s)", flush=True)
        up += k


def markdown(payload: dict[str, Any]) -> str:
    head = (
        "| brokers | per process | workload | store | manager | time scale | start s "
        "| RSS / PSS / USS MB per broker (median) | all processes RSS / PSS MB "
        "| puts/s | put KB/s | deletes/s | notifications/s | brokers CPU % | store CPU % | leader decision ms "
        "| lookup p50 / p99 ms (n; calibration p50 / p99, n) |"
    )
    lines = [
        payload["note"],
        "",
        "Per-broker rates are per wall second and per broker, at the row's time scale: Pulsar's intervals ran "
        "that much faster.",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for r in payload["rows"]:
        if "error" in r:
            lines.append(
                f"| {r['brokers']} | {r.get('brokers_per_process', 1)} | {r.get('workload', 'default')} "
                f"| {r['store']} | {r['manager']} | {r.get('time_scale', '')} | failed: {r['error']} |"
            )
            continue
        lk, cal = r["lookup_ms"], r["calibration_ms"]
        lines.append(
            f"| {r['brokers']} | {r.get('brokers_per_process', 1)} | {r.get('workload', 'default')} "
            f"| {r['store']} | {r['manager']} | {r.get('time_scale', payload['time_scale'])} "
            f"| {r['start_seconds']} "
            f"| {r['rss_mb_median']} / {r['pss_mb_median']} / {r['uss_mb_median']} "
            f"| {_totals(r)} "
            f"| {r['puts_per_s_per_broker']} | {r['put_kb_per_s_per_broker']} | {r['deletes_per_s_per_broker']} "
            f"| {r['notifications_per_s_per_broker']} | {r['brokers_cpu_percent']} | {r['store_cpu_percent']} "
            f"| {r['leader_decision_ms']} | {lk['p50']} / {lk['p99']} (n {lk['n']}; {cal['p50']} / {cal['p99']}, "
            f"n {cal['n']}) |"
        )
    return "\n".join(lines) + "\n"


def _totals(r: dict[str, Any]) -> str:
    """All processes' RSS / PSS in MB (rows from before the layouts were measured: PSS alone, from its GB)."""
    if "rss_total_mb" in r:
        return f"{r['rss_total_mb']:,.0f} / {r['pss_total_mb']:,.0f}"
    return f"- / {r['brokers_pss_gb'] * 1024:,.0f}"


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    scenario = bundled_scenario("default")
    generated = GeneratedWorkload(scenario.namespaces, scenario.workload, scenario.seed)
    work = Path(tempfile.mkdtemp(prefix="bw-scale-"))
    trace = work / "workload.npz"  # the digest live up gives its brokers
    TraceWorkload(trace_table(generated, WORKLOAD_MINUTES * 60_000, scenario.step), scenario.name).save(trace)
    topics = _topics_per_bundle(list(generated.topics.names), {n.name: n.bundles for n in scenario.namespaces})
    rows: list[dict[str, Any]] = []
    if args.append and (RESULTS / f"{RESULT}.json").exists():
        rows = json.loads((RESULTS / f"{RESULT}.json").read_text())["rows"]
    try:
        _cells(args, str(trace), topics, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _cells(args: argparse.Namespace, trace: str, topics: list[str], rows: list[dict[str, Any]]) -> None:
    layouts = [int(x) for x in args.brokers_per_process.split(",")]
    for brokers in (int(x) for x in args.brokers.split(",")):
        for store in args.stores.split(","):
            for manager in args.managers.split(","):
                for k in layouts:
                    print(f"== {brokers} brokers ({k} per process), {store}, {manager}", flush=True)
                    try:
                        row = cell(
                            brokers, store, manager, args.window, args.time_scale, trace, topics, args.start_budget,
                            k, args.idle,
                        )  # fmt: skip
                    except Exception as e:  # a cell that cannot run is a figure too
                        row = {
                            "brokers": brokers, "store": store, "manager": manager, "brokers_per_process": k,
                            "workload": "none" if args.idle else "default", "error": f"{type(e).__name__}: {e}",
                        }  # fmt: skip
                    print("   " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True)
                    rows.append(row)
                    _write(args, rows)  # after every cell: a long run stopped early keeps what it measured


def _write(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    payload = {
        "note": (
            f"{os.cpu_count()} CPUs; the default scenario's workload (first {WORKLOAD_MINUTES} min; none where the "
            f"row says so) at each row's --time-scale; N brokers in N / (per process) processes; "
            f"{args.window:.0f} s measured per cell after the brokers started and every workload bundle was assigned; "
            f"lookups {LOOKUP_RATE:.0f}/s from the benchmark's process"
        ),
        "time_scale": args.time_scale,
        "rows": rows,
    }
    write_result(RESULT, payload, TITLE, markdown)
