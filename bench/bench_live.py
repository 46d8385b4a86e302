"""The live load manager's targets, measured on real broker processes over loopback (docs/live/guarantees.md).

``python -m bench live`` (sizes from the environment: ``BENCH_LIVE_RUNS`` fault runs per backend, default 50;
``BENCH_LIVE_PARTS``, default ``lookups,faults,scale-out``; ``BENCH_LIVE_SCALE_OUT=0`` skips the 3-hour
scale-out runs).  For each backend (etcd, ZooKeeper):

* **lookups** on a 3-broker cluster with a 64-bundle namespace: the first lookup of every bundle (an
  assignment: non-leader -> leader -> candidate -> 200), asked of a non-leader and, side by side, of the leader
  (one hop less); then lookups of owned bundles (one 200), cold (the first of each topic at that broker) and
  warm; p50/p99 in ms.  Throughput: 4 client processes (keep-alive ``http.client``) on one broker for 5 s,
  side by side with the same clients on the broker's cheapest endpoint (``/admin/v2/brokers/ready``: the
  HTTP stack's ceiling).
* **fault campaign**: 4 brokers, session timeout 4 s, ``--time-scale 60`` (a shedding cycle a second), every
  bundle owned and clients looking every topic up continuously, an observer sampling every broker's served set
  at 25 Hz throughout; then ``BENCH_LIVE_RUNS`` runs, each a fault chosen at random (seeded): SIGKILL a broker;
  SIGSTOP one past the session timeout then SIGCONT; SIGKILL the leader while it forwards an unload; SIGKILL
  an owner while it splits.  Each run waits until every bundle is served again, restarts what it killed, and
  records the double-owner observations during it.  From the SIGKILL runs: broker loss -> every orphaned bundle
  owned again (target: session timeout + 2 s); from the leader kills: leader loss -> another broker leads, and
  -> its first shedding cycle (both from the new leader's ``bundlewise_lb_*_timestamp_seconds`` gauges, against
  the wall clock of the kill; target: session timeout + one cycle).
* **scale-out**: ``live up --cluster scale-out --brokers 5`` (5 -> 10 brokers at 1 h) under AvgShedder and
  ThresholdShedder with Pulsar's defaults, and AvgShedder tuned for fast rebalancing (``FAST_REBALANCING``),
  at ``--time-scale 60``, side by side with ``simulate`` of the same scenario: the minutes
  from the join until the load std-dev stays ≤ 0.05 (``settle_minutes`` of the ``add`` events) and until the
  new brokers reach 50 % and 80 % of the fleet's mean load; the fast-rebalancing run is repeated at
  ``--time-scale 20``, where the real seconds a shedding cycle's unloads and a lookup round take weigh a third as
  many Pulsar minutes (docs/live/guarantees.md, Scale-out), and with AvgShedder set up as Pulsar's
  docs prescribe (``AVG_SHEDDER_AS_DOCUMENTED``: the placement strategy too, ``maxUnloadPercentage=0.5``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np

from bench.common import write_result
from bundlewise.live.broker.metrics import sample_value
from bundlewise.live.harness.cluster import BrokerProcess, LocalCluster
from bundlewise.live.harness.observer import OwnershipObserver

RESULT = "live"
TITLE = "Live load manager: lookups, faults and scale-out on real broker processes"

SESSION_MS = 4000
NS = "bench/ns"


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def figures(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": pct(values, 50), "p99": pct(values, 99), "max": pct(values, 100)}


def lookup(http: httpx.Client, base: str, topic: str) -> tuple[float, int, dict[str, Any]]:
    """One lookup following redirects; (ms, hops, body)."""
    url = f"{base}/lookup/v2/topic/persistent/{NS}/{topic}"
    start = time.perf_counter()
    hops = 0
    for _ in range(50):
        r = http.get(url, timeout=10)
        if r.status_code == 307:
            hops += 1
            url = str(httpx.URL(url).join(r.headers["location"]))
            continue
        if r.status_code == 200:
            return (time.perf_counter() - start) * 1000, hops, r.json()
        time.sleep(0.05)
    raise RuntimeError(f"lookup of {topic} kept failing")


def leader_id(http: httpx.Client, c: LocalCluster) -> str | None:
    for b in c.brokers:
        if b.is_running:
            with contextlib.suppress(httpx.HTTPError):
                r = http.get(f"{b.web_url}/admin/v2/brokers/leaderBroker", timeout=1)
                if r.status_code == 200:
                    return str(r.json()["brokerId"])
    return None


def wait_until(fn: Callable[[], Any], timeout: float, every: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(every)
    return None


def topics_per_bundle(bundles: int, per: int = 1) -> list[str]:
    """Topic names covering every bundle of ``bundles`` equal bundles ``per`` times."""
    from bundlewise.model.bundles import NamespaceBundles
    from bundlewise.model.hashing import crc32_hash

    nb = NamespaceBundles.initial(NS, bundles)
    seen: dict[str, int] = {}
    out: list[str] = []
    i = 0
    while len(out) < bundles * per:
        t = f"t-{i}"
        b = nb.bundle_for_hash(crc32_hash(f"persistent://{NS}/{t}")).name
        if seen.get(b, 0) < per:
            seen[b] = seen.get(b, 0) + 1
            out.append(t)
        i += 1
    return out


# -- lookups ----------------------------------------------------------------------------------------


def _client_loop(url: str, seconds: float) -> int:
    """One client process: sequential keep-alive requests (``http.client``, the lightest client) for
    ``seconds``; returns how many were answered 200."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    path = u.path + (f"?{u.query}" if u.query else "")
    done = 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        done += r.status == 200
    conn.close()
    return done


def _hammer(url: str, seconds: float, clients: int = 4) -> float:
    """Requests per second that ``clients`` client processes get answered by one broker."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(clients) as pool:
        counts = list(pool.map(_client_loop, [url] * clients, [seconds] * clients))
    return sum(counts) / seconds


def bench_lookups(backend: str) -> dict[str, Any]:
    settings = {"defaultNumberOfNamespaceBundles": 64}
    with LocalCluster(3, backend=backend, settings=settings) as c, httpx.Client() as http:
        leader = wait_until(lambda: leader_id(http, c), 30)
        lead = c.broker(leader)
        other = next(b for b in c.brokers if b.broker_id != leader)
        topics = topics_per_bundle(64, per=2)
        first_via_other: list[float] = []
        first_via_leader: list[float] = []
        hops: list[int] = []
        for k, t in enumerate(topics[::2]):  # one topic per bundle: the assignment
            via = other if k % 2 == 0 else lead
            ms, h, _ = lookup(http, via.web_url, t)
            (first_via_other if via is other else first_via_leader).append(ms)
            hops.append(h)
        cold = [lookup(http, other.web_url, t)[0] for t in topics[1::2]]  # owned bundles, new topics
        warm = [lookup(http, other.web_url, t)[0] for t in topics * 10]
        owned_topic = topics[0]
        path = f"/lookup/v2/topic/persistent/{NS}/{owned_topic}"
        per_broker = _hammer(other.web_url + path, 5.0)
        ceiling = _hammer(other.web_url + "/admin/v2/brokers/ready", 5.0)
    return {
        "first_assignment_ms_via_non_leader": figures(first_via_other),
        "first_assignment_ms_via_leader": figures(first_via_leader),
        "first_assignment_hops_max": max(hops),
        "owned_lookup_ms_cold": figures(cold),
        "owned_lookup_ms_warm": figures(warm),
        "lookups_per_second_one_broker": round(per_broker, 1),
        "ready_endpoint_per_second_one_broker": round(ceiling, 1),
    }


# -- the fault campaign -----------------------------------------------------------------------------


@contextmanager
def looking_up(c: LocalCluster, topics: list[str]) -> Iterator[None]:
    """Clients that keep looking every topic up through the running brokers (Pulsar's reconnection)."""
    stop = threading.Event()

    def run() -> None:
        i = 0
        with httpx.Client() as http:
            while not stop.is_set():
                live = [b for b in list(c.brokers) if b.is_running]
                for t in topics:
                    if stop.is_set() or not live:
                        break
                    with contextlib.suppress(Exception):
                        r = http.get(f"{live[i % len(live)].web_url}/lookup/v2/topic/persistent/{NS}/{t}", timeout=0.5)
                        for _ in range(3):
                            if r.status_code != 307:
                                break
                            r = http.get(r.headers["location"], timeout=0.5)
                    i += 1
                stop.wait(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


class Campaign:
    def __init__(self, c: LocalCluster, observer: OwnershipObserver, http: httpx.Client, rng: random.Random) -> None:
        self.c, self.observer, self.http, self.rng = c, observer, http, rng

    def running(self) -> list[BrokerProcess]:
        return [b for b in self.c.brokers if b.is_running]

    def bundles(self) -> set[str]:
        for b in self.running():
            with contextlib.suppress(httpx.HTTPError, ValueError):
                r = self.http.get(f"{b.web_url}/admin/v2/namespaces/{NS}/bundles", timeout=2)
                if r.status_code == 200:
                    bounds = r.json()["boundaries"]
                    return {f"{NS}/{lo}_{hi}" for lo, hi in itertools.pairwise(bounds)}
        return set()

    def served(self, exclude: set[str] = frozenset()) -> set[str]:  # type: ignore[assignment]
        live = {b.broker_id for b in self.running()} - exclude
        last = dict(self.observer.result.last)
        return {x for broker, s in last.items() if broker in live for x in s}

    def all_served(self, exclude: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
        want = self.bundles()
        return bool(want) and want <= self.served(exclude)

    def owner_of(self, bundle: str) -> BrokerProcess | None:
        for b in self.running():
            if bundle in self.observer.result.last.get(b.broker_id, []):
                return b
        return None

    def leadership_times(self, b: BrokerProcess) -> tuple[float | None, float | None]:
        """When ``b`` won its leadership and ran its first shedding cycle after that win, by its own gauges
        (Unix seconds; docs/live/broker.md), so the figures hold no polling."""
        with contextlib.suppress(httpx.HTTPError):
            text = self.http.get(f"{b.web_url}/metrics", timeout=1).text
            won = sample_value(text, "bundlewise_lb_leader_since_timestamp_seconds")
            return won, sample_value(text, "bundlewise_lb_first_shedding_cycle_timestamp_seconds")
        return None, None

    def restart(self, b: BrokerProcess) -> None:
        if not b.is_running:
            b.start(120)
        with contextlib.suppress(Exception):
            b.resume()

    def run_one(self, kind: str) -> dict[str, Any]:
        c, http = self.c, self.http
        leader = wait_until(lambda: leader_id(http, c), 30)
        before = len(self.observer.result.double_owners)
        row: dict[str, Any] = {"fault": kind}
        if kind == "kill":
            victim = self.rng.choice(self.running())
            t0 = time.monotonic()
            victim.kill()
            self.observer.result.last.pop(victim.broker_id, None)
            ok = wait_until(lambda: self.all_served({victim.broker_id}), 60)
            row["reassign_seconds"] = round(time.monotonic() - t0, 3) if ok else None
            self.restart(victim)
        elif kind == "pause":
            victim = self.rng.choice(self.running())
            victim.pause()
            time.sleep(SESSION_MS / 1000 + 1.0)
            victim.resume()
            ok = wait_until(self.all_served, 60)
        elif kind == "leader-kill-during-unload":
            lead = c.broker(leader)
            others = [b for b in self.running() if b is not lead]
            bundle = next((x for x in sorted(self.bundles()) if (o := self.owner_of(x)) and o is not lead), None)
            dest = self.rng.choice(others)
            if bundle is not None:
                ns, rng = bundle.rsplit("/", 1)
                url = f"{lead.web_url}/admin/v2/namespaces/{ns}/{rng}/unload?destinationBroker={dest.broker_id}"
                threading.Thread(target=lambda: self._quiet_put(url), daemon=True).start()
                time.sleep(0.005)
            t0 = time.time()  # the brokers' gauges are Unix seconds of the same clock
            lead.kill()
            self.observer.result.last.pop(lead.broker_id, None)
            new = wait_until(lambda: (x := leader_id(http, c)) and x != leader and x, 60)
            won = ran = None
            if new:
                broker = c.broker(new)

                def cycled() -> tuple[float | None, float | None] | None:
                    times = self.leadership_times(broker)
                    return times if all(times) else None

                won, ran = wait_until(cycled, 30) or (None, None)
            row["failover_seconds"] = round(won - t0, 3) if won else None
            row["first_cycle_seconds"] = round(ran - t0, 3) if ran else None
            ok = wait_until(lambda: self.all_served({lead.broker_id}), 60)
            self.restart(lead)
        else:  # kill during a split
            lead = c.broker(leader)
            bundle = next((x for x in sorted(self.bundles()) if (o := self.owner_of(x)) and o is not lead), None)
            owner = self.owner_of(bundle) if bundle else None
            if owner is None:
                return {"fault": kind, "skipped": True}
            ns, rng = bundle.rsplit("/", 1) if bundle else ("", "")
            threading.Thread(
                target=lambda: self._quiet_put(f"{owner.web_url}/admin/v2/namespaces/{ns}/{rng}/split"), daemon=True
            ).start()
            time.sleep(0.01)
            owner.kill()
            self.observer.result.last.pop(owner.broker_id, None)
            ok = wait_until(lambda: self.all_served({owner.broker_id}), 60)
            self.restart(owner)
        wait_until(lambda: len(self.running()) == len(c.brokers) and self.all_served(), 60)
        row["recovered"] = bool(ok)
        row["double_owners"] = len(self.observer.result.double_owners) - before
        return row

    def _quiet_put(self, url: str) -> None:
        with contextlib.suppress(Exception), httpx.Client() as h:
            h.put(url, timeout=5)


def bench_faults(backend: str, runs: int, seed: int) -> dict[str, Any]:
    settings = {
        "defaultNumberOfNamespaceBundles": 16,
        "metadataStoreSessionTimeoutMillis": SESSION_MS,
        "loadBalancerSheddingEnabled": "true",
    }
    kinds = ["kill", "pause", "leader-kill-during-unload", "kill-during-split"]
    rng = random.Random(seed)
    rows = []
    with LocalCluster(4, backend=backend, settings=settings, time_scale=60) as c, httpx.Client() as http:
        wait_until(lambda: leader_id(http, c), 30)
        topics = topics_per_bundle(16, per=3)
        for t in topics:
            lookup(http, c.brokers[0].web_url, t)
        observer = OwnershipObserver(lambda: [b.web_url for b in c.brokers if b.is_running], interval=0.04)
        observer.start()
        try:
            with looking_up(c, topics):
                wait_until(lambda: Campaign(c, observer, http, rng).all_served(), 30)
                campaign = Campaign(c, observer, http, rng)
                for k in range(runs):
                    row = campaign.run_one(rng.choice(kinds))
                    rows.append(row)
                    print(f"  {backend} run {k + 1}/{runs}: {row}", flush=True)
        finally:
            obs = observer.stop()
    reassign = [r["reassign_seconds"] for r in rows if r.get("reassign_seconds") is not None]
    failover = [r["failover_seconds"] for r in rows if r.get("failover_seconds") is not None]
    first = [r["first_cycle_seconds"] for r in rows if r.get("first_cycle_seconds") is not None]
    return {
        "runs": len(rows),
        "by_fault": {k: sum(1 for r in rows if r["fault"] == k) for k in kinds},
        "double_owner_observations": len(obs.double_owners),
        "observer_rate_hz": round(obs.rate, 1),
        "not_recovered": sum(1 for r in rows if not r.get("recovered", True)),
        "reassign_seconds": figures(reassign),
        "leader_failover_seconds": figures(failover),
        "leader_first_cycle_seconds": figures(first),
        "targets": {"reassign_seconds": SESSION_MS / 1000 + 2, "first_cycle_seconds": SESSION_MS / 1000 + 1},
        "rows": rows,
    }


# -- scale-out: live vs simulate --------------------------------------------------------------------


def _join_figures(doc: dict[str, Any], strategy: str) -> dict[str, Any]:
    m = doc["strategies"][strategy]
    adds = [e for e in m["events"] if e["action"] == "add"]
    first = min((e["time_ms"] for e in adds), default=0)
    last = max((e["time_ms"] for e in adds), default=0)
    settle = [e["settle_minutes"] for e in adds]

    def worst(key: str) -> float | None:
        reach = [e[key] for e in adds]
        return None if not reach or None in reach else max(reach)

    return {
        "join_at_minutes": round(first / 60_000, 2),
        "last_join_at_minutes": round(last / 60_000, 2),
        "settle_minutes_after_join": None if not settle or None in settle else max(settle),
        "reach_50_minutes_worst": worst("reach_50_minutes"),
        "reach_80_minutes_worst": worst("reach_80_minutes"),
        "load_std_mean": m["load_std_mean"],
        "unloads": m["unloads"],
        "flaps": m["flaps"],
    }


FAST_REBALANCING = (
    "loadBalancerSheddingGracePeriodMinutes=1",
    "loadBalancerAvgShedderHitCountHighThreshold=1",
    "loadBalancerAvgShedderHitCountLowThreshold=1",
)
"""AvgShedder tuned to act on the first hit, with a one-minute grace period (the defaults: 2 / 8 hits, 30 min)."""

AVG_SHEDDER_AS_DOCUMENTED = (
    "loadBalancerLoadPlacementStrategy=org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
    "maxUnloadPercentage=0.5",
)
"""AvgShedder set up as Pulsar's load-balancing docs prescribe: the placement strategy too (so each unloaded bundle
goes to the broker its pair planned; with the default placement, destinations come from
LeastLongTermMessageRate) and ``maxUnloadPercentage=0.5`` (a triggered pair is evened out in one step)."""


def bench_scale_out(strategy: str, settings: tuple[str, ...] = (), time_scale: int = 60) -> dict[str, Any]:
    sets = [x for kv in settings for x in ("--set", kv)]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "bundlewise.cli.main"]
        live = subprocess.run(
            [*cmd, "live", "up", "--cluster", "scale-out", "--brokers", "5", "--strategy", strategy,
             "--time-scale", str(time_scale), "--no-progress", "--out", f"{tmp}/live", *sets],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        sim = subprocess.run(
            [*cmd, "simulate", "--cluster", "scale-out", "--strategy", strategy, "--no-progress", *sets],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    return {
        "live": _join_figures(json.loads(live.stdout), strategy),
        "simulate": _join_figures(json.loads(sim.stdout), strategy),
    }


def main() -> None:
    runs = int(os.environ.get("BENCH_LIVE_RUNS", "50"))
    parts = os.environ.get("BENCH_LIVE_PARTS", "lookups,faults,scale-out").split(",")
    if os.environ.get("BENCH_LIVE_SCALE_OUT", "1") == "0":
        parts = [p for p in parts if p != "scale-out"]
    result: dict[str, Any] = {"session_timeout_ms": SESSION_MS, "backends": {}}
    for backend in ("etcd", "zk"):
        t0 = time.monotonic()
        entry: dict[str, Any] = {}
        if "lookups" in parts:
            entry["lookups"] = bench_lookups(backend)
            print(f"{backend} lookups: {json.dumps(entry['lookups'])}", flush=True)
        if "faults" in parts:
            entry["faults"] = bench_faults(backend, runs, seed=15)
            summary = {k: v for k, v in entry["faults"].items() if k != "rows"}
            print(f"{backend} faults: {json.dumps(summary)}", flush=True)
        if entry:
            entry["wall_seconds"] = round(time.monotonic() - t0)
            result["backends"][backend] = entry
    if "scale-out" in parts:
        result["scale_out"] = {}
        for label, strategy, settings, scale in (
            ("AvgShedder", "AvgShedder", (), 60),
            ("ThresholdShedder", "ThresholdShedder", (), 60),
            ("AvgShedder, fast rebalancing", "AvgShedder", FAST_REBALANCING, 60),
            ("AvgShedder, fast rebalancing, --time-scale 20", "AvgShedder", FAST_REBALANCING, 20),
            (
                "AvgShedder as documented, fast rebalancing",
                "AvgShedder",
                (*FAST_REBALANCING, *AVG_SHEDDER_AS_DOCUMENTED),
                60,
            ),
        ):
            row = bench_scale_out(strategy, settings, scale)
            result["scale_out"][label] = {"settings": list(settings), "time_scale": scale, **row}
            print(f"scale-out {label}: {json.dumps(result['scale_out'][label])}", flush=True)
    write_result(RESULT, result, TITLE)


if __name__ == "__main__":
    main()
