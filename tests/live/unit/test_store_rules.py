"""Pure parts of the store layer: the session watcher's rules, the fencing clock, URLs, the layout."""

from __future__ import annotations

import pytest

from bundlewise.live.store import SessionEvent, StoreUrl, layout
from bundlewise.live.store.base import ancestors, check_path, parent_of
from bundlewise.live.store.errors import InvalidPathError
from bundlewise.live.store.session import FencingClock, ProbeStatus, SessionStateMachine
from bundlewise.model.errors import InputError

C, D, E = ProbeStatus.CONNECTED, ProbeStatus.DISCONNECTED, ProbeStatus.EXPIRED


def test_watcher_reports_connection_lost_then_session_lost_after_five_sixths_of_the_timeout() -> None:
    m = SessionStateMachine(30.0)  # Pulsar's default: ticks of 2 s, SessionLost after 25 s
    assert m.observe(C, 0.0) == []
    assert m.observe(D, 2.0) == [SessionEvent.ConnectionLost]
    assert m.observe(D, 4.0) == []
    assert m.observe(D, 26.9) == []
    assert m.observe(D, 27.0) == [SessionEvent.SessionLost]  # 25 s after the first failed probe
    assert m.observe(D, 29.0) == []
    assert m.observe(C, 31.0) == [SessionEvent.Reconnected, SessionEvent.SessionReestablished]
    assert m.observe(C, 33.0) == []


def test_watcher_reconnects_without_reestablishing_when_the_session_survived() -> None:
    m = SessionStateMachine(30.0)
    assert m.observe(D, 2.0) == [SessionEvent.ConnectionLost]
    assert m.observe(C, 10.0) == [SessionEvent.Reconnected]
    assert m.observe(D, 12.0) == [SessionEvent.ConnectionLost]  # the disconnection clock restarts
    assert m.observe(D, 36.9) == []
    assert m.observe(D, 37.0) == [SessionEvent.SessionLost]


def test_server_reported_expiry_is_session_lost_at_once() -> None:
    m = SessionStateMachine(30.0)
    assert m.observe(E, 1.0) == [SessionEvent.SessionLost]
    assert m.observe(E, 2.0) == []
    assert not m.is_connected
    assert m.observe(C, 3.0) == [SessionEvent.Reconnected, SessionEvent.SessionReestablished]
    assert m.is_connected


def test_fencing_deadline_is_send_time_plus_timeout_minus_margin_of_the_current_session() -> None:
    f = FencingClock(margin=3.0)
    f.confirm(7, sent_at=100.0, ttl=30.0)
    assert f.deadline == 127.0
    f.confirm(7, sent_at=99.0, ttl=30.0)  # an older probe answered late never shortens it
    assert f.deadline == 127.0
    f.confirm(7, sent_at=102.0, ttl=30.0)
    assert f.deadline == 129.0
    f.confirm(8, sent_at=90.0, ttl=30.0)  # a new session starts its own deadline
    assert (f.session_id, f.deadline) == (8, 117.0)
    f.invalidate()
    assert (f.session_id, f.deadline) == (0, 0.0)


def test_store_urls_parse_hosts_root_and_credentials() -> None:
    u = StoreUrl.parse("zk://alice:p%40ss@zk1:2181,zk2:2182/pulsar/cluster")
    assert (u.scheme, u.hosts, u.root, u.username, u.password) == (
        "zk",
        (("zk1", 2181), ("zk2", 2182)),
        "/pulsar/cluster",
        "alice",
        "p@ss",
    )
    assert str(u) == "zk://alice:p%40ss@zk1:2181,zk2:2182/pulsar/cluster"
    assert StoreUrl.parse("etcd://127.0.0.1:2379").root == ""
    assert StoreUrl.parse("etcd://127.0.0.1:2379/").root == ""
    for bad in ("http://x:1/a", "zk://nohost/a", "zk://h:0/a", "etcd://h:99999", "zk://h:1/a//b", "zk://:pw@h:1"):
        with pytest.raises(InputError, match="--store"):
            StoreUrl.parse(bad)


def test_paths_are_checked_and_split() -> None:
    assert check_path("/a/b") == "/a/b" and check_path("/") == "/"
    for bad in ("a", "/a/", "//a", "/a/./b", "/a/../b", ""):
        with pytest.raises(InvalidPathError):
            check_path(bad)
    assert parent_of("/a/b") == "/a" and parent_of("/a") == "/" and parent_of("/") is None
    assert ancestors("/a/b/c") == ["/a", "/a/b"] and ancestors("/a") == []


def test_layout_is_pulsars() -> None:
    b = "public/default/0x00000000_0x40000000"
    assert layout.broker("broker-1:8080") == "/loadbalance/brokers/broker-1:8080"
    assert layout.LEADER == "/loadbalance/leader"
    assert layout.EXTENSION_LEADER == "/loadbalance/extension/leader"
    assert layout.broker_time_average("b:1") == "/loadbalance/broker-time-average/b:1"
    assert layout.bundle_data(b) == "/loadbalance/bundle-data/public/default/0x00000000_0x40000000"
    assert layout.resource_quota(b) == "/loadbalance/resource-quota/public/default/0x00000000_0x40000000"
    assert layout.RESOURCE_QUOTA_DEFAULT == "/loadbalance/resource-quota/default"
    assert layout.ownership(b) == "/namespace/public/default/0x00000000_0x40000000"
    assert (
        layout.ownership("prop/cluster/ns/0x00000000_0xffffffff") == "/namespace/prop/cluster/ns/0x00000000_0xffffffff"
    )
    assert layout.local_policies("public/default") == "/admin/local-policies/public/default"
    assert layout.policies("public/default") == "/admin/policies/public/default"
    assert layout.service_unit_state(b) == "/service_unit_state/public/default/0x00000000_0x40000000"
    assert layout.SERVICE_UNIT_STATE_PATH.match(layout.service_unit_state(b))
    assert not layout.SERVICE_UNIT_STATE_PATH.match("/service_unit_state/public/default")
    assert layout.bundle_of(layout.ownership(b), layout.OWNERSHIP_ROOT) == b
    assert layout.bundle_of("/namespace/public/default", layout.OWNERSHIP_ROOT) is None
    with pytest.raises(InputError):
        layout.ownership("public/default/0x0_0x1")
    with pytest.raises(InputError):
        layout.broker("a/b")


def test_the_fencing_margin_covers_the_clock_rate_bound_and_the_scheduling_delay() -> None:
    f = FencingClock(margin=0.5, max_clock_rate_ppm=1000.0)
    f.confirm(7, sent_at=100.0, ttl=4.0)
    assert f.deadline == pytest.approx(100.0 + 4.0 - 0.5 - 0.004, abs=1e-12)
    for lateness in (0.02, 0.3, -0.01):  # the watcher woke late by up to 0.3 s
        f.observe_delay(lateness)
    assert f.scheduling_delay == 0.3
    f.confirm(7, sent_at=101.0, ttl=4.0)
    assert f.deadline == pytest.approx(101.0 + 4.0 - 0.5 - 0.004 - 0.3, abs=1e-12)
    for _ in range(15):  # the delay is the maximum over the last 15 wake-ups only
        f.observe_delay(0.0)
    assert f.scheduling_delay == 0.0


def test_a_clock_slower_than_the_store_beyond_the_bound_fences_for_good() -> None:
    f = FencingClock(margin=0.4, max_clock_rate_ppm=1000.0)
    f.confirm(7, sent_at=100.0, ttl=4.0)
    # 10 s on the store's clock, 9.99 s here: exactly the 1000 ppm bound, the assumption holds
    assert f.check_clock(local_elapsed=9.99, store_elapsed_at_least=10.0)
    assert f.suspect is None and f.deadline == pytest.approx(103.596)
    # a clock at half rate (faketime x0.5): 5 s here while the store counted at least 9 s
    assert not f.check_clock(local_elapsed=5.0, store_elapsed_at_least=9.0)
    assert f.deadline == 0.0
    assert f.suspect == (
        "the local clock saw 5.000 s pass while the store saw at least 9.000 s (more than 1000 ppm apart)"
    )
    f.confirm(7, sent_at=110.0, ttl=4.0)  # later probes never lift it
    f.confirm(8, sent_at=111.0, ttl=4.0)
    assert f.deadline == 0.0
    assert not f.check_clock(local_elapsed=20.0, store_elapsed_at_least=1.0)  # sticky until a restart


def test_a_watcher_silent_longer_than_the_watchdog_vouches_for_nothing_until_it_hears_again() -> None:
    f = FencingClock(margin=0.4, max_clock_rate_ppm=1000.0, watchdog=4.0 / 3)
    f.confirm(7, sent_at=100.0, ttl=4.0)  # heard at the probe's sending
    assert f.deadline_at(101.3) == pytest.approx(103.596)
    # stopped from 101.3 to 102.0 on this clock: a pause of 2.6 s at the store's rate on a clock at half rate
    assert f.deadline_at(102.0) == 0.0  # the requests queued meanwhile find nothing served
    assert f.deadline == pytest.approx(103.596)  # the deadline itself stands: only the watcher may drop it
    f.heard(102.05)  # the watcher's next probe outcome: a failed probe does not lift it ...
    assert f.tripped and f.deadline_at(102.06) == 0.0
    f.heard(102.3)
    assert f.deadline_at(102.31) == 0.0
    f.confirm(7, sent_at=102.3, ttl=4.0)  # ... a probe sent after the silence and answered does
    assert not f.tripped and f.deadline_at(102.4) == pytest.approx(105.896)
    assert FencingClock(margin=0.4).deadline_at(1e9) == 0.0  # never confirmed: nothing to vouch for
    g = FencingClock(margin=0.4)  # no watchdog: the deadline alone
    g.confirm(7, sent_at=100.0, ttl=4.0)
    assert g.deadline_at(103.5) == pytest.approx(103.6)
