"""The broker's pure rules: values, metrics text, redirects and error pages, traffic, top-k, the clock."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from starlette.requests import Request

from bundlewise.algorithms.leader import top_k_bundles
from bundlewise.config import Config
from bundlewise.live.broker import metrics, values
from bundlewise.live.broker.clock import PulsarClock
from bundlewise.live.broker.http.render import error_page, redirect_location, server_error
from bundlewise.live.broker.manager import Sample, decision_samples, leadership_samples, usage_gauges
from bundlewise.live.broker.outcomes import Redirect
from bundlewise.live.broker.traffic import EmulatedTraffic
from bundlewise.live.store.api import StoreOps
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import BundleData, LocalBrokerData, NamespaceBundleStats
from bundlewise.model.resources import ResourceUsage, SystemResources
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.trace import TraceWorkload

ID = values.BrokerIdentity("broker-1.pulsar", 8080, 6650, "c1")


def request(path: str, query: str = "", method: str = "GET", headers: dict[str, str] | None = None) -> Request:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "scheme": "http",
        "server": ("b1", 8080),
    }
    return Request(scope)


def test_identity_and_pulsar_values() -> None:
    assert ID.broker_id == "broker-1.pulsar:8080"
    assert values.BrokerIdentity("host.", 80, 6650, "c").broker_id == "host:80"
    assert values.leader_broker(ID) == {"brokerId": "broker-1.pulsar:8080", "serviceUrl": "http://broker-1.pulsar:8080"}
    assert values.leader_id({"serviceUrl": "http://old:8080"}) == "old:8080"
    assert values.namespace_ephemeral_data(ID) == {
        "nativeUrl": "pulsar://broker-1.pulsar:6650",
        "nativeUrlTls": None,
        "httpUrl": "http://broker-1.pulsar:8080",
        "httpUrlTls": None,
        "disabled": False,
        "advertisedListeners": {},
    }
    assert json.dumps(values.lookup_data("pulsar://b2:6650", "http://b2:8080"), separators=(",", ":")) == (
        '{"brokerUrl":"pulsar://b2:6650","httpUrl":"http://b2:8080","nativeUrl":"pulsar://b2:6650","brokerUrlSsl":""}'
    )
    report = values.local_broker_data(ID, LocalBrokerData(), start_ms=1_700_000_000_000)
    assert list(report)[:4] == [
        "webServiceUrl",
        "pulsarServiceUrl",
        "persistentTopicsEnabled",
        "nonPersistentTopicsEnabled",
    ]
    # as Pulsar's ObjectMapper writes LocalBrokerData: nulls left out, the maxResourceUsage getter, startTimestamp
    assert "webServiceUrlTls" not in report and "pulsarServiceUrlTls" not in report
    assert None not in report.values()
    assert (report["maxResourceUsage"], report["startTimestamp"]) == (0.0, 1_700_000_000_000)
    busy = LocalBrokerData(resources=SystemResources(cpu=ResourceUsage(400.0, 800.0)))
    assert values.local_broker_data(ID, busy)["maxResourceUsage"] == 0.5
    assert report["loadReportType"] == "LocalBrokerData"
    # LocalBrokerData#equals: the URLs only, so a new report is the same lock value
    other = values.local_broker_data(ID, LocalBrokerData(msgRateIn=5.0))
    assert values.same_broker(report, other)
    assert not values.same_broker(
        report, values.local_broker_data(values.BrokerIdentity("b2", 1, 2, "c"), LocalBrokerData())
    )
    assert values.boundaries_of(values.local_policies([0, 0x80000000, 0xFFFFFFFF])) == [0, 0x80000000, 0xFFFFFFFF]


def test_metrics_text_as_pulsar_writes_it() -> None:
    text = metrics.render(
        "standalone",
        [
            Sample("pulsar_lb_cpu_usage", (("broker", "b1"), ("metric", "loadBalancing")), 26.5625),
            Sample("pulsar_lb_unload_bundle_total", (("metric", "bundleUnloading"),), 3),
        ],
        [("pulsar_broker_lookup_answers", 7)],
    )
    assert text == (
        "# TYPE pulsar_lb_cpu_usage gauge\n"
        'pulsar_lb_cpu_usage{cluster="standalone", broker="b1", metric="loadBalancing"} 26.5625\n'
        "# TYPE pulsar_lb_unload_bundle_total gauge\n"
        'pulsar_lb_unload_bundle_total{cluster="standalone", metric="bundleUnloading"} 3\n'
        "# TYPE pulsar_broker_lookup_answers counter\n"
        'pulsar_broker_lookup_answers{cluster="standalone"} 7\n'
    )


def test_a_brokers_store_traffic_is_counted_on_its_metrics() -> None:
    ops = StoreOps()
    ops.put(b"abc")
    ops.put(b"")
    ops.delete()
    ops.notifications += 5
    text = metrics.render("c1", [], metrics.store_counters(ops))
    assert text == (
        "# TYPE bundlewise_metadata_store_puts counter\n"
        'bundlewise_metadata_store_puts{cluster="c1"} 2\n'
        "# TYPE bundlewise_metadata_store_put_bytes counter\n"
        'bundlewise_metadata_store_put_bytes{cluster="c1"} 3\n'
        "# TYPE bundlewise_metadata_store_deletes counter\n"
        'bundlewise_metadata_store_deletes{cluster="c1"} 1\n'
        "# TYPE bundlewise_metadata_store_notifications counter\n"
        'bundlewise_metadata_store_notifications{cluster="c1"} 5\n'
    )


def test_the_leaders_decision_time_is_a_gauge_with_its_cycle_count() -> None:
    text = metrics.render("c1", decision_samples(7, 12.34567))
    assert text == (
        "# TYPE bundlewise_lb_shedding_cycles gauge\n"
        'bundlewise_lb_shedding_cycles{cluster="c1", metric="bundleUnloading"} 7\n'
        "# TYPE bundlewise_lb_shedding_decision_ms gauge\n"
        'bundlewise_lb_shedding_decision_ms{cluster="c1", metric="bundleUnloading"} 12.346\n'
    )


def test_the_leaders_win_and_first_cycle_are_unix_time_gauges_present_once_each_happened() -> None:
    assert leadership_samples(None, None) == []
    assert metrics.render("c1", leadership_samples(1764430000.12345, None)) == (
        "# TYPE bundlewise_lb_leader_since_timestamp_seconds gauge\n"
        'bundlewise_lb_leader_since_timestamp_seconds{cluster="c1", metric="bundleUnloading"} 1764430000.123\n'
    )
    text = metrics.render("c1", leadership_samples(1764430000.0, 1764430001.0105))
    assert (
        'bundlewise_lb_first_shedding_cycle_timestamp_seconds{cluster="c1", metric="bundleUnloading"} 1764430001.01'
        in text
    )
    # what the fault tests and the benchmark read back
    assert metrics.sample_value(text, "bundlewise_lb_leader_since_timestamp_seconds") == 1764430000.0
    assert metrics.sample_value(text, "bundlewise_lb_first_shedding_cycle_timestamp_seconds") == 1764430001.01
    assert metrics.sample_value(text, "bundlewise_lb_leader_since") is None


def test_redirects_keep_the_path_and_query_and_set_authoritative() -> None:
    r = request("/lookup/v2/topic/persistent/t/ns/my+topic%3A1", "authoritative=false&listenerName=x")
    assert redirect_location(r, Redirect("http://b3:8080", True)) == (
        "http://b3:8080/lookup/v2/topic/persistent/t/ns/my+topic%3A1?listenerName=x&authoritative=true"
    )
    u = request("/admin/v2/namespaces/t/ns/0x00000000_0x40000000/unload", "destinationBroker=b2:8080", "PUT")
    assert redirect_location(u, Redirect("http://b1:8080", False, drop=("destinationBroker",))) == (
        "http://b1:8080/admin/v2/namespaces/t/ns/0x00000000_0x40000000/unload?authoritative=false"
    )


def test_error_pages_follow_accept_and_the_method() -> None:
    j = error_page(request("/lookup/x", headers={"Accept": "application/json"}), 401, "Authentication required")
    assert j.status_code == 401 and j.headers["content-type"] == "application/json"
    assert json.loads(bytes(j.body)) == {"url": "/lookup/x", "status": "401", "message": "Authentication required"}
    h = error_page(request("/lookup/x"), 401, "Authentication required")
    assert b"<h2>HTTP ERROR 401 Authentication required</h2>" in bytes(h.body)
    assert error_page(request("/a", method="PUT"), 401, "m").body == b""
    assert error_page(request("/a", headers={"Accept": "application/xml"}), 401, "m").body == b""
    assert bytes(server_error("boom").body) == (
        b"\n --- An unexpected error occurred in the server ---\n\nMessage: boom\n\nStacktrace:\n\n"
    )


def test_traffic_follows_the_served_bundles() -> None:
    import pyarrow as pa

    topics = [f"persistent://t/ns/x{i}" for i in range(6)]
    table = pa.table(
        {
            "timestamp": [0] * 6 + [60_000] * 6,
            "topic": topics * 2,
            "msgRateIn": [10.0] * 6 + [20.0] * 6,
            "msgRateOut": [5.0] * 12,
            "msgThroughputIn": [1000.0] * 12,
            "msgThroughputOut": [2000.0] * 12,
            "producerCount": [1] * 12,
            "consumerCount": [2] * 12,
        }
    )
    clock = PulsarClock.starting_now(1.0)
    traffic = EmulatedTraffic(BrokerSpec("b", cpu_cores=4, nic_mbps=100), clock, TraceWorkload(table, "t"))
    halves = NamespaceBundles.initial("t/ns", 2).bundles
    stats = traffic.bundle_stats([b.name for b in halves])
    inside = [sum(1 for t in topics if b.includes_hash(crc32_hash(t))) for b in halves]
    assert [s.topics for s in stats.values()] == inside and sum(inside) == 6
    first = stats[halves[0].name]
    assert first == NamespaceBundleStats(
        10.0 * inside[0], 1000.0 * inside[0], 5.0 * inside[0], 2000.0 * inside[0], 2 * inside[0], inside[0], inside[0]
    )
    res = traffic.resources(stats)
    assert res.bandwidth_in.usage == 6 * 1000.0 * 8 / 1000 and res.bandwidth_in.limit == 100_000.0
    assert res.cpu.limit == 400.0
    # one minute later (Pulsar time) the second sample group holds
    late = EmulatedTraffic(traffic.spec, PulsarClock(clock.origin_ms - 61_000, 1.0), traffic.workload)
    assert late.bundle_stats([halves[0].name])[halves[0].name].msgRateIn == 20.0 * inside[0]
    idle = EmulatedTraffic(traffic.spec, clock)
    assert idle.bundle_stats([halves[0].name]) == {halves[0].name: NamespaceBundleStats()}


def test_pulsar_clock_runs_k_times_faster_from_the_origin() -> None:
    now = int(time.time() * 1000)
    clock = PulsarClock(now - 1000, 60.0)
    assert 59_000 <= clock.elapsed_ms() <= 61_000 + 60 * 50
    assert clock.real_seconds(60_000) == 1.0


def test_a_held_pulsar_clock_stands_at_the_origin_until_its_start_file_is_written(tmp_path: Path) -> None:
    origin = int(time.time() * 1000) - 5000  # launched five seconds ago: five Pulsar minutes at 60x, if not held
    start_file = tmp_path / "time-start"
    clock = PulsarClock.starting_now(60.0, origin, start_file)
    assert clock.elapsed_ms() == 0 and clock.now_ms() == origin and clock.start_ms is None
    start_file.write_text("not yet a number")
    assert clock.elapsed_ms() == 0 and clock.start_ms is None
    start = int(time.time() * 1000) - 1000  # released a second ago: one Pulsar minute
    start_file.write_text(str(start))
    assert 60_000 <= clock.elapsed_ms() <= 60_000 + 60 * 500
    start_file.unlink()  # read once: a broker keeps the instant it read
    assert clock.start_ms == start and clock.elapsed_ms() >= 60_000
    written_later = PulsarClock(origin, 60.0, start_file=tmp_path / "never")
    assert written_later.now_ms() == origin  # until the harness writes it, time stands


def test_top_k_bundles_of_the_leaders_bundle_data_writes() -> None:
    def data(tput_in: float, rate: float) -> BundleData:
        d = BundleData.default()
        d.update(NamespaceBundleStats(msgRateIn=rate, msgThroughputIn=tput_in))
        return d

    bundles = {
        "a/b/0x00000000_0x40000000": data(1e6, 10),
        "a/b/0x40000000_0x80000000": data(5e6, 10),
        "x/y/0x00000000_0xffffffff": data(9e6, 10),
        "a/b/0x80000000_0xc0000000": data(1.05e6, 900),
    }
    config = Config().with_values({"loadBalancerMaxNumberOfBundlesInBundleLoadReport": 1})
    assert top_k_bundles(bundles, 2, config) == ["x/y/0x00000000_0xffffffff", "a/b/0x40000000_0x80000000"]
    # same throughput at 1e5 B/s resolution: the message rate decides
    assert top_k_bundles(bundles, 4, config)[2:] == ["a/b/0x80000000_0xc0000000", "a/b/0x00000000_0x40000000"]
    excluded = config.with_values({"loadBalancerSheddingExcludedNamespaces": "x/y"})
    assert "x/y/0x00000000_0xffffffff" not in top_k_bundles(bundles, 4, excluded)
    everything = config.with_values({"loadBalancerMaxNumberOfBundlesInBundleLoadReport": 0})
    assert top_k_bundles(bundles, 1, everything) == list(bundles)
    assert np.isclose(bundles["a/b/0x00000000_0x40000000"].shortTermData.msgThroughputIn, 1e6)


def test_usage_gauges_are_percentages_of_each_limit() -> None:
    """``LocalBrokerData#toMetrics`` / ``BrokerLoadData#toMetrics``: one gauge per resource, usage / limit x 100."""
    r = SystemResources(
        cpu=ResourceUsage(170.0, 400.0),
        memory=ResourceUsage(512.0, 2048.0),
        direct_memory=ResourceUsage(0.0, 0.0),  # no limit: 0
        bandwidth_in=ResourceUsage(300.0, 1000.0),
        bandwidth_out=ResourceUsage(1000.0, 1000.0),
    )
    labels = (("broker", "b1"), ("metric", "loadBalancing"))
    assert usage_gauges("b1", r) == [
        Sample("pulsar_lb_cpu_usage", labels, 42.5),
        Sample("pulsar_lb_memory_usage", labels, 25.0),
        Sample("pulsar_lb_directMemory_usage", labels, 0.0),
        Sample("pulsar_lb_bandwidth_in_usage", labels, 30.000001907348633),  # Java float: 0.3f * 100f
        Sample("pulsar_lb_bandwidth_out_usage", labels, 100.0),
    ]
