"""Start-up retries and error answers during a store outage, on the in-memory store: the backoff
schedule of ``live.store.retry``, which errors it retries and when it gives up, what a broker's
HTTP surface answers while its store is unreachable (Pulsar's ``{"reason": …}`` bodies, never a bare
500), and when the orphan cleanup's fast path holds the store stable again."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from inproc import cluster
from live_support import run

from bundlewise.algorithms.extensible.channel.cleanup import SessionEvent, SessionHistory
from bundlewise.config import Config
from bundlewise.live.broker.extensible.cleanup import stable_again
from bundlewise.live.broker.http.app import request_bound, store_error
from bundlewise.live.store import layout
from bundlewise.live.store.backends.etcd_gateway import EtcdGateway
from bundlewise.live.store.backends.memory import MemoryStore
from bundlewise.live.store.errors import (
    AlreadyClosedError,
    BadVersionError,
    ConnectionLossError,
    MetadataStoreError,
    SessionExpiredError,
)
from bundlewise.live.store.retry import delays, retry_transient


def test_the_backoff_doubles_from_100_ms_up_to_2_s() -> None:
    assert list(itertools.islice(delays(), 7)) == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert list(itertools.islice(delays(0.5, 1.0), 3)) == [0.5, 1.0, 1.0]


def test_transient_errors_are_retried_until_the_step_succeeds() -> None:
    calls: list[int] = []

    async def step() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionLossError("no answer")
        if len(calls) == 2:
            raise SessionExpiredError("etcd: etcdserver: requested lease not found")
        return "done"

    assert run(retry_transient(step, "a step", initial=0.001, maximum=0.002)) == "done"
    assert len(calls) == 3


def test_other_errors_are_raised_at_once() -> None:
    calls: list[int] = []

    async def step() -> None:
        calls.append(1)
        raise BadVersionError("taken")

    with pytest.raises(BadVersionError):
        run(retry_transient(step, "a step", initial=0.001))
    assert calls == [1]


def test_past_the_deadline_the_last_transient_error_is_raised() -> None:
    now = [0.0]
    calls: list[int] = []

    async def step() -> None:
        calls.append(1)
        now[0] += 1.0  # each attempt takes 1 s of the fake clock
        raise ConnectionLossError(f"attempt {len(calls)}")

    with pytest.raises(ConnectionLossError, match="attempt 3"):
        run(retry_transient(step, "a step", deadline=2.5, initial=0.001, maximum=0.001, clock=lambda: now[0]))
    assert len(calls) == 3


def test_etcd_lease_not_found_is_a_session_expiry() -> None:
    e = EtcdGateway.error({"error": "etcdserver: requested lease not found", "code": 5}, 404)
    assert isinstance(e, SessionExpiredError)
    other = EtcdGateway.error({"error": "etcdserver: key not found", "code": 5}, 404)
    assert type(other) is MetadataStoreError


def test_store_errors_answer_503_while_unreachable_and_500_otherwise() -> None:
    assert store_error(ConnectionLossError("x")) == (503, "Metadata store unavailable: x")
    assert store_error(SessionExpiredError("y")) == (503, "Metadata store unavailable: y")
    assert store_error(AlreadyClosedError("z")) == (503, "Metadata store unavailable: z")
    assert store_error(MetadataStoreError("w")) == (500, "Metadata store error: w")


def test_every_request_is_bounded_by_the_longest_wait_it_may_carry_plus_2_s() -> None:
    assert request_bound(Config()) == 62.0  # namespaceBundleUnloadingTimeoutMs = 60000
    cfg = Config().with_values({"namespaceBundleUnloadingTimeoutMs": 5000, "metadataStoreOperationTimeoutSeconds": 8})
    assert request_bound(cfg) == 10.0


def test_a_lookup_while_the_store_is_unreachable_answers_503_with_a_reason(tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(tmp_path) as c:
            b = await c.start(18080)
            store = b.store
            assert isinstance(store, MemoryStore)
            store.disconnect()
            try:
                r = await c.http.get(f"{b.identity.web_url}/lookup/v2/topic/persistent/outage/ns/t-0")
                assert r.status_code == 503, r.text
                assert r.json()["reason"].startswith("Metadata store unavailable: ")
                r = await c.http.get(f"{b.identity.web_url}/admin/v2/brokers/{b.identity.cluster}")
                assert r.status_code == 503 and r.json() == {
                    "reason": "Metadata store unavailable: the memory store is disconnected"
                }
            finally:
                store.reconnect()
            assert await store.exists(layout.broker(b.identity.broker_id))

    run(body())


def test_the_store_is_stable_again_one_session_timeout_after_the_session_came_back() -> None:
    back = SessionHistory(SessionEvent.SessionReestablished, 100_000)
    assert not stable_again(back, 103_999, True, 4.0)  # 3.999 s after: live brokers may still be re-registering
    assert stable_again(back, 104_000, True, 4.0)
    assert not stable_again(back, 200_000, False, 4.0)  # disconnected now: nothing is proven
    assert not stable_again(SessionHistory(SessionEvent.SessionLost, 100_000), 200_000, True, 4.0)
    assert stable_again(SessionHistory(), 1_700_000_000_000, True, 30.0)  # never lost (at = 0, wall-clock now)
