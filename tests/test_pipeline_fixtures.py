"""Inputs shaped exactly like Pulsar's for the pipeline tests (helpers only: no tests here)."""

from __future__ import annotations

from typing import Any


def topic_stats(
    rate_in: float, rate_out: float, tput_in: float, tput_out: float, producers: int, consumers_per_sub: list[int]
) -> dict[str, Any]:
    """One topic of ``/admin/v2/broker-stats/topics`` as ``PersistentTopic#updateRates`` writes it."""
    subs = {
        f"sub-{i}": {
            "consumers": [
                {
                    "consumerName": f"c{i}-{k}",
                    "msgRateOut": rate_out,
                    "msgThroughputOut": tput_out,
                    "msgRateRedeliver": 0.0,
                    "availablePermits": 1000,
                }
                for k in range(n)
            ],
            "msgBacklog": 0,
            "msgRateExpired": 0.0,
            "msgRateOut": rate_out,
            "msgThroughputOut": tput_out,
            "msgRateRedeliver": 0.0,
            "numberOfEntriesSinceFirstNotAckedMessage": 1,
            "totalNonContiguousDeletedMessagesRange": 0,
            "type": "Shared",
        }
        for i, n in enumerate(consumers_per_sub)
    }
    return {
        "publishers": [],
        "replication": {},
        "subscriptions": subs,
        "producerCount": producers,
        "averageMsgSize": tput_in / rate_in if rate_in else 0.0,
        "msgRateIn": rate_in,
        "msgRateOut": rate_out,
        "msgInCount": 1000,
        "bytesInCount": 100000,
        "msgOutCount": 900,
        "bytesOutCount": 90000,
        "msgThroughputIn": tput_in,
        "msgThroughputOut": tput_out,
        "storageSize": 4096,
        "backlogSize": 0,
        "pendingAddEntriesCount": 0,
    }


def topics_dump_broker1() -> dict[str, Any]:
    """broker-1 owns public/default's first quarter bundle (2 topics, one a partition) and a t/ns bundle."""
    return {
        "public/default": {
            "0x00000000_0x40000000": {
                "persistent": {
                    "persistent://public/default/my-topic": topic_stats(10.0, 20.0, 1000.0, 2000.0, 1, [1, 1]),
                    "persistent://public/default/my-topic-partition-0": topic_stats(5.0, 5.0, 500.0, 500.0, 2, [1]),
                },
            },
        },
        "t/ns": {
            "0x80000000_0xc0000000": {
                "persistent": {"persistent://t/ns/a": topic_stats(1.0, 0.0, 100.0, 0.0, 1, [])},
                "non-persistent": {"non-persistent://t/ns/live": topic_stats(2.0, 2.0, 20.0, 20.0, 1, [3])},
            },
        },
    }


def topics_dump_broker2() -> dict[str, Any]:
    return {
        "public/default": {
            "0xc0000000_0xffffffff": {
                "persistent": {
                    "persistent://public/default/my-topic-partition-2": topic_stats(7.0, 7.0, 70.0, 70.0, 1, [2]),
                },
            },
        },
    }


def load_report() -> dict[str, Any]:
    """``/admin/v2/broker-stats/load-report`` of a modular-load-manager broker (LocalBrokerData)."""
    return {
        "webServiceUrl": "http://broker-1:8080",
        "pulsarServiceUrl": "pulsar://broker-1:6650",
        "persistentTopicsEnabled": True,
        "nonPersistentTopicsEnabled": True,
        "cpu": {"usage": 350.0, "limit": 800.0},
        "memory": {"usage": 1024.0, "limit": 4096.0},
        "directMemory": {"usage": 100.0, "limit": 4096.0},
        "bandwidthIn": {"usage": 1000.0, "limit": 10000.0},
        "bandwidthOut": {"usage": 2000.0, "limit": 10000.0},
        "msgThroughputIn": 1500.0,
        "msgThroughputOut": 2500.0,
        "msgRateIn": 15.0,
        "msgRateOut": 25.0,
        "lastUpdate": 1700000000000,
        "lastStats": {
            "public/default/0x00000000_0x40000000": {
                "msgRateIn": 15.0,
                "msgThroughputIn": 1500.0,
                "msgRateOut": 25.0,
                "msgThroughputOut": 2500.0,
                "consumerCount": 3,
                "producerCount": 3,
                "topics": 2,
                "cacheSize": 0,
            },
            "public/default/0x40000000_0x80000000": {"msgRateIn": -1.0, "topics": 1},
        },
        "numTopics": 3,
        "numBundles": 2,
        "numConsumers": 3,
        "numProducers": 3,
        "bundles": ["public/default/0x00000000_0x40000000", "public/default/0x40000000_0x80000000"],
        "lastBundleGains": [],
        "lastBundleLosses": [],
        "brokerVersionString": "3.2.0",
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    }


_L = 'cluster="standalone",namespace="public/default",topic="persistent://public/default/my-topic"'
PROMETHEUS = (
    "# TYPE pulsar_rate_in gauge\n"
    'pulsar_rate_in{cluster="standalone"} 0 1700000000001\n'
    f"pulsar_rate_in{{{_L}}} 10.0 1700000000000\n"
    f"pulsar_rate_out{{{_L}}} 20.0 1700000000000\n"
    f"pulsar_throughput_in{{{_L}}} 1000\n"
    f"pulsar_throughput_out{{{_L}}} 2000\n"
    f"pulsar_producers_count{{{_L}}} 1\n"
    f"pulsar_consumers_count{{{_L}}} 2\n"
    f"pulsar_storage_size{{{_L}}} 4096\n"
    'pulsar_rate_in{cluster="standalone",namespace="public/default"} 10.0\n'
    'pulsar_rate_in{cluster="standalone",namespace="public/default",topic="persistent://public/default/x"} NaN\n'
)
