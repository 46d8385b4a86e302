"""``live status`` and ``live advise`` on a store laid out as a Pulsar cluster's, written by hand.

The layout holds the values of Pulsar's own JSON shapes (``LocalBrokerData`` with the fields bundlewise does not
write -- ``lastBundleGains``, ``protocols``, ``advertisedListeners``, ``loadReportType`` --, an older broker's
``LeaderBroker`` without ``brokerId``, ``NamespaceEphemeralData`` ownership nodes, ``BundleData``,
``TimeAverageBrokerData`` and a legacy ``ResourceQuota``), on both stores.  Both commands must read it and leave
every node exactly as it was, value and version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from live_support import run

from bundlewise.live.store import connect

MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
B1, B2, B3 = "broker-1.pulsar:8080", "broker-2.pulsar:8080", "broker-3.pulsar:8080"
NS = "public/default"
BUNDLES = [f"{NS}/0x{k * 0x40000000:08x}_0x{min((k + 1) * 0x40000000, 0xFFFFFFFF):08x}" for k in range(4)]
# broker-1 owns three bundles, one of them hot; broker-2 one bundle; broker-3 none
OWNERS = {BUNDLES[0]: B1, BUNDLES[1]: B1, BUNDLES[2]: B1, BUNDLES[3]: B2}
RATES = {BUNDLES[0]: 8.0e6, BUNDLES[1]: 1.0e6, BUNDLES[2]: 0.5e6, BUNDLES[3]: 2.0e6}  # bytes/s in, out = 2x


def stats(bundle: str) -> dict[str, Any]:
    tin = RATES[bundle]
    return {
        "msgRateIn": tin / 1000,
        "msgThroughputIn": tin,
        "msgRateOut": tin / 500,
        "msgThroughputOut": 2 * tin,
        "consumerCount": 4,
        "producerCount": 2,
        "topics": 12,
        "cacheSize": 0,
    }


def report(broker: str, cpu: float, memory: float) -> dict[str, Any]:
    mine = [b for b, o in OWNERS.items() if o == broker]
    tin = sum(RATES[b] for b in mine)
    return {
        "webServiceUrl": f"http://{broker}",
        "webServiceUrlTls": None,
        "pulsarServiceUrl": f"pulsar://{broker.split(':')[0]}:6650",
        "pulsarServiceUrlTls": None,
        "persistentTopicsEnabled": True,
        "nonPersistentTopicsEnabled": True,
        "cpu": {"usage": cpu, "limit": 800.0},
        "memory": {"usage": memory, "limit": 4096.0},
        "directMemory": {"usage": 512.0, "limit": 4096.0},
        "bandwidthIn": {"usage": tin * 8 / 1000, "limit": 10000000.0},
        "bandwidthOut": {"usage": 2 * tin * 8 / 1000, "limit": 10000000.0},
        "msgThroughputIn": tin,
        "msgThroughputOut": 2 * tin,
        "msgRateIn": tin / 1000,
        "msgRateOut": tin / 500,
        "lastUpdate": 1700000000123,
        "lastStats": {b: stats(b) for b in mine},
        "numTopics": 12 * len(mine),
        "numBundles": len(mine),
        "numConsumers": 4 * len(mine),
        "numProducers": 2 * len(mine),
        "bundles": mine,
        "lastBundleGains": [],
        "lastBundleLosses": [],
        "brokerVersionString": "3.3.1",
        "protocols": {},
        "advertisedListeners": {},
        "loadManagerClassName": MODULAR,
        "loadReportType": "LocalBrokerData",
    }


def bundle_data(bundle: str) -> dict[str, Any]:
    tin = RATES[bundle]
    window = {"msgThroughputIn": tin, "msgThroughputOut": 2 * tin, "msgRateIn": tin / 1000, "msgRateOut": tin / 500}
    return {
        "shortTermData": {"maxSamples": 10, "numSamples": 10, **window},
        "longTermData": {"maxSamples": 1000, "numSamples": 412, **window},
        "topics": 12,
    }


LAYOUT: dict[str, Any] = {
    f"/loadbalance/brokers/{B1}": report(B1, cpu=720.0, memory=1843.0),  # 90 % CPU: overloaded at 85 %
    f"/loadbalance/brokers/{B2}": report(B2, cpu=160.0, memory=1024.0),
    f"/loadbalance/brokers/{B3}": report(B3, cpu=40.0, memory=512.0),
    "/loadbalance/leader": {"serviceUrl": f"http://{B2}"},  # an older broker: no brokerId
    f"/loadbalance/broker-time-average/{B1}": {
        "shortTermMsgThroughputIn": 9.5e6,
        "shortTermMsgThroughputOut": 1.9e7,
        "shortTermMsgRateIn": 9500.0,
        "shortTermMsgRateOut": 19000.0,
        "longTermMsgThroughputIn": 9.5e6,
        "longTermMsgThroughputOut": 1.9e7,
        "longTermMsgRateIn": 9500.0,
        "longTermMsgRateOut": 19000.0,
    },
    **{f"/loadbalance/bundle-data/{b}": bundle_data(b) for b in BUNDLES[:3]},
    f"/loadbalance/resource-quota/{BUNDLES[3]}": {
        "msgRateIn": 4000.0,
        "msgRateOut": 8000.0,
        "bandwidthIn": 2.0e6,
        "bandwidthOut": 4.0e6,
        "memory": 80.0,
        "dynamic": True,
    },
    **{
        f"/namespace/{b}": {
            "nativeUrl": f"pulsar://{o.split(':')[0]}:6650",
            "nativeUrlTls": None,
            "httpUrl": f"http://{o}",
            "httpUrlTls": None,
            "disabled": False,
            "advertisedListeners": {},
        }
        for b, o in OWNERS.items()
    },
    f"/admin/local-policies/{NS}": {
        "bundles": {
            "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"],
            "numBundles": 4,
        },
        "bookieAffinityGroup": None,
        "namespaceAntiAffinityGroup": None,
        "migrated": False,
    },
}


async def _write(url: str) -> None:
    store = await connect(url, session_timeout=10)
    try:
        for path, value in LAYOUT.items():
            await store.put(path, json.dumps(value).encode())
    finally:
        await store.close()


async def _tree(url: str) -> dict[str, tuple[bytes, int]]:
    """Every node under the root with its value and version."""
    store = await connect(url, session_timeout=10)
    out: dict[str, tuple[bytes, int]] = {}
    try:
        todo = ["/"]
        while todo:
            path = todo.pop()
            for child in await store.get_children(path):
                full = f"{path.rstrip('/')}/{child}"
                got = await store.get(full)
                if got is not None:
                    out[full] = (got.value, got.stat.version)
                todo.append(full)
    finally:
        await store.close()
    return out


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bundlewise.cli.main", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def pulsar_store(store_url: str) -> str:
    run(_write(store_url))
    return store_url


def test_status_reads_a_pulsar_layout_and_writes_nothing(pulsar_store: str) -> None:
    before = run(_tree(pulsar_store))
    p = cli("live", "status", "--store", pulsar_store, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["leader"] == {"brokerId": B2, "serviceUrl": f"http://{B2}"}  # derived from serviceUrl
    rows = {b["broker"]: b for b in doc["brokers"]}
    assert list(rows) == [B1, B2, B3]
    assert rows[B1]["cpu"] == 90.0 and rows[B2]["cpu"] == 20.0 and rows[B3]["cpu"] == 5.0
    assert rows[B1]["memory"] == round(1843.0 / 4096.0 * 100, 2)
    assert rows[B1]["maxUsage"] == 90.0  # the highest of the five resources
    assert (rows[B1]["bundles"], rows[B2]["bundles"], rows[B3]["bundles"]) == (3, 1, 0)
    assert (rows[B1]["ownedBundles"], rows[B2]["ownedBundles"], rows[B3]["ownedBundles"]) == (3, 1, 0)
    assert rows[B1]["topics"] == 36
    assert rows[B1]["loadManagerClassName"] == MODULAR
    assert doc["ownedBundles"] == 4
    table = cli("live", "status", "--store", pulsar_store)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0] == f"leader: {B2}"
    assert f"{B2} *" in table.stdout
    assert run(_tree(pulsar_store)) == before


def test_status_of_a_missing_root_is_an_error_and_creates_nothing(store_url: str) -> None:
    """A wrong chroot or prefix (no Pulsar layout there) is an error, not "0 brokers"."""
    p = cli("live", "status", "--store", store_url, "--format", "json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: --store: no Pulsar metadata under") and len(p.stderr.splitlines()) == 1
    a = cli("live", "advise", "--store", store_url)
    assert a.returncode == 2 and "no Pulsar metadata under" in a.stderr
    parent, _, name = store_url.rpartition("/")

    async def exists() -> bool:
        store = await connect(parent, session_timeout=10)
        try:
            return name in await store.get_children("/")
        finally:
            await store.close()

    assert not run(exists())


def test_advise_plans_what_shed_plans_on_the_same_load_and_writes_nothing(pulsar_store: str, tmp_path: Path) -> None:
    before = run(_tree(pulsar_store))
    p = cli("live", "advise", "--store", pulsar_store, "--strategy", "OverloadShedder", "--format", "json")
    assert p.returncode == 0, p.stderr
    line = json.loads(p.stdout)
    # broker-1 is above 85 %: OverloadShedder moves its hottest bundle (bundle-data throughput), to the least
    # loaded broker by the default placement (LeastLongTermMessageRate: broker-3 carries nothing)
    assert [(u["broker"], u["bundle"], u["destination"]) for u in line["unload"]] == [(B1, BUNDLES[0], B3)]
    # the same snapshot through `bundlewise shed` gives the same plan
    snapshot = {
        "timestamp": 1700000000000,
        "brokers": {
            b: {**LAYOUT[f"/loadbalance/brokers/{b}"]}
            | (
                {"timeAverageData": LAYOUT[f"/loadbalance/broker-time-average/{b}"]}
                if f"/loadbalance/broker-time-average/{b}" in LAYOUT
                else {}
            )
            for b in (B1, B2, B3)
        },
        "bundleData": {b: bundle_data(b) for b in BUNDLES[:3]},
    }
    quota = LAYOUT[f"/loadbalance/resource-quota/{BUNDLES[3]}"]
    window = {
        "msgThroughputIn": quota["bandwidthIn"],
        "msgThroughputOut": quota["bandwidthOut"],
        "msgRateIn": quota["msgRateIn"],
        "msgRateOut": quota["msgRateOut"],
    }
    snapshot["bundleData"][BUNDLES[3]] = {
        "shortTermData": {"maxSamples": 10, "numSamples": 10, **window},
        "longTermData": {"maxSamples": 1000, "numSamples": 1000, **window},
        "topics": 0,
    }
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    shed = cli("shed", "--strategy", "OverloadShedder", str(path))
    assert shed.returncode == 0, shed.stderr
    assert json.loads(shed.stdout)["unload"] == line["unload"]
    table = cli("live", "advise", "--store", pulsar_store, "--strategy", "OverloadShedder")
    assert table.returncode == 0, table.stderr
    assert BUNDLES[0] in table.stdout and table.stdout.startswith("step 0")
    assert run(_tree(pulsar_store)) == before


def test_advise_prints_the_pulsar_admin_commands(pulsar_store: str) -> None:
    p = cli("live", "advise", "--store", pulsar_store, "--strategy", "OverloadShedder", "--format", "admin")
    assert p.returncode == 0, p.stderr
    commands = [line for line in p.stdout.splitlines() if not line.startswith("#")]
    ns, rng = BUNDLES[0].rsplit("/", 1)
    assert len(commands) == 1
    assert commands[0].startswith(f"pulsar-admin namespaces unload {ns} --bundle {rng}")
    assert B3 in commands[0]  # the destination


def test_advise_refuses_an_unknown_strategy_in_one_line(pulsar_store: str) -> None:
    p = cli("live", "advise", "--store", pulsar_store, "--strategy", "NoSuchShedder")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: ") and "NoSuchShedder" in p.stderr
