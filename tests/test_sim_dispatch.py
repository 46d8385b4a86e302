"""The simulator's ``[dispatch]`` section: consumers draining backlogs through the dispatch limiters.

Timing model (``sim.dispatch.dispatcher``): a read is checked 0.1 ms after its trigger, takes
1 ms (``read_latency``) and is charged at delivery; a throttled read is retried 1000 ms + 0.1 ms later.
So one topic throttled at R msg/s (1 message per entry, R <= dispatcherMaxReadBatchSize) reads R
entries at 0.1 ms and then once per 1001.2 ms: read ``k`` is delivered at ``1.1 + 1001.2·k`` ms.
The bucket refills at most once per period and is capped at R, so the 1.2 ms of slack per cycle is
never turned into extra tokens; minute ``m`` therefore holds ``R × (reads delivered before 60·m s)``
minus the previous minutes — 60 reads a minute until the 1.2 ms drift has eaten a whole period.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bundlewise.cli.main import main
from bundlewise.results.catalogue import EVENTS_KEY, METRIC_KEYS
from bundlewise.results.record import RunResult
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.scenario import bundled_scenario, parse_scenario

TWO_BROKERS = """
duration = "{duration}"
step = "1m"
seed = 3
[[brokers]]
name = "a"
[[brokers]]
name = "b"
[[namespaces]]
name = "t/x"
bundles = 1
topics = 1
owner = "a"
[[namespaces]]
name = "t/y"
bundles = 1
topics = {y_topics}
owner = "{y_owner}"
"""


def _run(text: str, strategy: str = "OverloadShedder") -> RunResult:
    sc = parse_scenario(tomllib.loads(text), "t.toml")
    return Engine(sc, make_workload(sc, None), strategy).run()


def _cluster(duration: str = "10m", y_topics: int = 1, y_owner: str = "b") -> str:
    return TWO_BROKERS.format(duration=duration, y_topics=y_topics, y_owner=y_owner)


def _reads_delivered_before(end_ms: float, first_ms: float, cycle_ms: float) -> int:
    """Reads delivered at ``first + k·cycle`` (k >= 0) strictly before ``end``."""
    return 0 if end_ms <= first_ms else int(np.floor((end_ms - first_ms) / cycle_ms - 1e-12)) + 1


def _slow_reads_of_topic_0(extra: str = "", backlog_entries: int = 1_000_000) -> str:
    """A [dispatch] section: 100 ms reads, topic-0 with 10 permits and a backlog of 1,000,000 messages."""
    return f"""
[dispatch]
read_latency = "100ms"
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
{extra}[[dispatch.topics.subscriptions]]
name = "sub"
consumers = [{{ receiverQueueSize = 10 }}]
backlogEntries = {backlog_entries}
"""


def _per_minute(minutes: int, per_read: int, first_ms: float, cycle_ms: float) -> list[int]:
    cum = [_reads_delivered_before(60_000 * m, first_ms, cycle_ms) for m in range(minutes + 1)]
    return [per_read * (cum[m + 1] - cum[m]) for m in range(minutes)]


def test_topic_limit_caps_dispatch_at_r_messages_a_second() -> None:
    r = _run(
        _cluster("20m")
        + """
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 50 } }
subscriptions = [{ name = "sub", backlogEntries = 1000000 }]
"""
    )
    assert r.dispatch is not None
    expected = _per_minute(20, 50, 1.1, 1001.2)
    assert expected[:13] == [3000] * 13 and expected[13] == 2950  # R × 60, then the drift costs one period
    assert r.dispatch.msgs[:, 0].tolist() == expected
    assert r.dispatch.msgs[:, 1].tolist() == [0] * 20
    # the backlog shrinks by exactly what was dispatched
    assert r.dispatch.backlog[:, 0].tolist() == (1_000_000 - np.cumsum(expected)).tolist()
    assert r.dispatch.throttled[:, 0].tolist()[:13] == [60] * 13  # one throttled retry per period
    m = r.metrics
    assert m["dispatched_messages"] == sum(expected) and m["dispatched_bytes"] == 1024 * sum(expected)
    assert m["backlog_end_messages"] == 1_000_000 - sum(expected)
    assert m["dispatch_throttled_ticks"] == 20


def test_dispatched_rate_is_the_topics_msg_rate_out() -> None:
    sc = parse_scenario(
        tomllib.loads(
            _cluster("3m")
            + """
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
entryBytes = 2000
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 50 } }
subscriptions = [{ name = "sub", backlogEntries = 1000000 }]
"""
        ),
        "t.toml",
    )
    engine = Engine(sc, make_workload(sc, None), "OverloadShedder")
    engine.run()
    x = engine.cluster.topic_names.index("persistent://t/x/topic-0")
    assert engine._rates[1][x] == 50.0 and engine._rates[3][x] == 100_000.0  # 3000 msgs, 6 MB per minute
    report = engine.leader.load.brokers["a"].localData
    assert report.msgRateOut == 50.0 and report.msgThroughputOut == 100_000.0


def test_without_limits_the_backlog_drains_at_the_consumers_permits() -> None:
    # no limit: every read takes min(permits, dispatcherMaxReadBatchSize) = 10 entries; with a 100 ms read
    # the dispatcher reads again 0.1 ms after each delivery: deliveries at 100.1 + 100.1·k ms
    r = _run(_cluster("3m") + _slow_reads_of_topic_0())
    assert r.dispatch is not None
    expected = _per_minute(3, 10, 100.1, 100.1)
    assert expected == [5990, 5990, 6000]
    assert r.dispatch.msgs[:, 0].tolist() == expected
    assert r.metrics["dispatch_throttled_reads"] == 0 and r.metrics["dispatch_throttled_ticks"] == 0


def test_batched_entries_count_messages_against_permits_and_limits() -> None:
    # 5 messages per entry, 10 permits, no precise flow control: 10 entries = 50 messages per read
    r = _run(_cluster("1m") + _slow_reads_of_topic_0("messagesPerEntry = 5\n", backlog_entries=200_000))
    assert r.dispatch is not None and r.dispatch.msgs[0, 0] == 5 * 5990


def test_two_topics_on_one_broker_share_its_broker_limit() -> None:
    # classic limiter, 100 msg/s broker-wide: both topics read 100 entries at 0.1 ms (each sees the same
    # quota), the 200-message debt takes two renewals, so 200 messages every 2001.3 ms
    classic = '[balancer]\ndispatchThrottlingRateInMsg = 100\ndispatchRateLimiterFactoryClassName = "Classic"\n'
    shared = (
        _cluster("20m", y_topics=2, y_owner="a")
        + """
[[dispatch.topics]]
namespace = "t/y"
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
"""
    )
    r = _run(shared + classic)
    assert r.dispatch is not None
    assert r.dispatch.msgs[:, 0].tolist() == _per_minute(20, 200, 1.1, 2001.3) == [6000] * 20
    # PIP-322 bucket: the refill remainder shifts the pattern, but the debt is always repaid: the total
    # never runs more than two periods' quota ahead of 100 msg/s
    r = _run(shared + "[balancer]\ndispatchThrottlingRateInMsg = 100\n")
    assert r.dispatch is not None
    ahead = np.cumsum(r.dispatch.msgs[:, 0]) - 6000 * np.arange(1, 21)
    assert ahead.tolist()[:3] == [6, 14, 18] and (np.abs(ahead) <= 200).all()
    # the same two topics on two brokers: each broker has its own 100 msg/s
    apart = _run(
        _cluster("5m", y_topics=1, y_owner="b")
        + """
[[dispatch.topics]]
namespace = "t/x"
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
[[dispatch.topics]]
namespace = "t/y"
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
"""
        + classic
    )
    assert apart.dispatch is not None
    assert apart.dispatch.msgs.tolist() == [[6000, 6000]] * 5


def test_a_topic_moved_to_another_broker_gets_new_limiters_and_that_brokers_quota() -> None:
    # x (topic policy 50 msg/s) on a; y drains on b under b's broker-wide 100 msg/s (classic limiter).
    # At 5m broker a is removed: x is looked up on b and loaded after the 1 s unload blip with a new,
    # full topic bucket; from then on x and y share b's broker quota.
    r = _run(
        _cluster("8m")
        + """
[[events]]
at = "5m"
action = "remove"
broker = "a"
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 50 } }
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
[[dispatch.topics]]
name = "persistent://t/y/topic-0"
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
[balancer]
dispatchThrottlingRateInMsg = 100
dispatchRateLimiterFactoryClassName = "Classic"
"""
    )
    assert r.dispatch is not None
    msgs, backlog = r.dispatch.msgs, r.dispatch.backlog
    assert msgs[:5].tolist() == [[3000, 6000]] * 5
    assert msgs[5:, 0].tolist() == [0, 0, 0]  # a is gone
    assert msgs[5:, 1].tolist() == [6000, 6000, 6000]  # b's 100 msg/s, now shared by x and y
    # x's backlog moved with it: nothing lost or delivered twice
    assert backlog[4].tolist() == [10_000_000 - 15_000, 10_000_000 - 30_000]
    assert backlog[5].tolist() == [0, 20_000_000 - 45_000 - 6000]
    assert r.metrics["backlog_end_messages"] == 20_000_000 - r.metrics["dispatched_messages"]
    assert r.metrics["assignments"] == 1


def test_a_moved_topic_starts_with_a_full_bucket_after_the_blip() -> None:
    # x alone, topic policy 50 msg/s, moved at 5m: its first read on b is at 5m + 1 s + 0.1 ms with 50
    # fresh tokens, then every 1001.2 ms (so minute 6 holds 59 reads, not 60)
    r = _run(
        _cluster("7m", y_topics=0)
        + """
[[events]]
at = "5m"
action = "remove"
broker = "a"
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 50 } }
subscriptions = [{ name = "sub", backlogEntries = 10000000 }]
"""
    )
    assert r.dispatch is not None
    first = 300_000 + 1000 + 1.1
    expected = [
        50 * (_reads_delivered_before(e, first, 1001.2) - _reads_delivered_before(s, first, 1001.2))
        for s, e in ((300_000, 360_000), (360_000, 420_000))
    ]
    assert expected == [2950, 3000]
    assert r.dispatch.msgs[5:, 1].tolist() == expected


def test_published_messages_join_the_backlog() -> None:
    # 30 msg/s published into a topic limited to 20 msg/s: the backlog grows by 600 messages a minute
    text = (
        _cluster("5m").replace('topics = 1\nowner = "a"', 'topics = 1\nmsg_rate = 30\nowner = "a"')
        + """
[[dispatch.topics]]
name = "persistent://t/x/topic-0"
topicPolicies = { dispatchRate = { dispatchThrottlingRateInMsg = 20 } }
subscriptions = [{ name = "sub", backlogEntries = 1000 }]
"""
    )
    r = _run(text)
    assert r.dispatch is not None
    assert r.dispatch.msgs[:, 0].tolist() == [1200] * 5
    assert r.dispatch.backlog[:, 0].tolist() == [1000 + 600 * k for k in range(1, 6)]


def test_same_seed_same_summary_and_no_dispatch_no_new_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for d in ("one", "two"):
        code = main(["simulate", "--no-progress", "--cluster", "throttled-dispatch", "--out", str(tmp_path / d)])
        out, err = capsys.readouterr()
        assert code == 0, err
        doc = json.loads(out)
        for m in doc["strategies"].values():
            m.pop("wall_seconds")
        outs.append(doc)
    assert outs[0] == outs[1]
    one = pq.read_table(tmp_path / "one" / "timeline.parquet")
    assert one.equals(pq.read_table(tmp_path / "two" / "timeline.parquet"))
    assert one.column_names[10:] == ["dispatched_msgs", "dispatched_bytes", "dispatch_throttled_reads", "backlog_msgs"]
    html = (tmp_path / "one" / "report.html").read_text()
    assert "<h2>Dispatch</h2>" in html and html.count("data:image/png;base64,") == 2 + len(outs[0]["strategies"])
    plain = _run(_cluster("3m"))
    assert tuple(plain.metrics) == (*METRIC_KEYS, EVENTS_KEY) and plain.dispatch is None


def test_bundled_throttled_dispatch_scenario() -> None:
    sc = bundled_scenario("throttled-dispatch")
    r = Engine(sc, make_workload(sc, None), "OverloadShedder").run()
    assert r.dispatch is not None
    slot = {n: i for i, n in enumerate(r.brokers)}
    # shop/audit: 100 msg/s topic policy -> 6000 a minute (its 500,000 backlog is alone on broker-2)
    audit = r.dispatch.msgs[:, slot["broker-2"]]
    assert audit[:13].tolist() == [6000] * 13
    assert r.dispatch.backlog[12, slot["broker-2"]] == 500_000 - 13 * 6000
    # shop/replay: two topics under broker-1's 300 msg/s, then moved when broker-1 restarts at 30m
    replay = r.dispatch.msgs[:, slot["broker-1"]]
    assert (np.abs(np.cumsum(replay[:30]) - 18_000 * np.arange(1, 31)) <= 600).all()
    assert replay[30:].tolist() == [0] * 30
    assert r.metrics["dispatch_throttled_ticks"] == 60


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("[dispatch]\nbogus = 1\n", "dispatch.bogus: unknown key"),
        (
            "[[dispatch.topics]]\nmessagesPerEntry = 5\n",
            "dispatch.topics[0]: expected exactly one of name or namespace",
        ),
        (
            "[[dispatch.topics]]\nnamespace = 't/x'\nsubscriptions = [{ name = 's', backlogEntries = -5 }]\n",
            "dispatch.topics[0].subscriptions[0].backlogEntries: expected a number >= 0",
        ),
        (
            "[[dispatch.topics]]\nnamespace = 't/x'\nsubscriptions = [{ name = 's', type = 'Fancy' }]\n",
            "dispatch.topics[0].subscriptions[0].type: expected one of",
        ),
        (
            "[[dispatch.topics]]\nnamespace = 't/x'\ntopicPolicies = { dispatchRate = { msgs = 5 } }\n",
            "dispatch.topics[0].topicPolicies.dispatchRate.msgs: unknown field",
        ),
        ("[[dispatch.topics]]\nname = 'persistent://t/x/nope'\n", "dispatch.topics[0].name: expected a topic of the"),
        ("[[dispatch.topics]]\nnamespace = 'q/z'\n", "dispatch.topics[0].namespace: expected a namespace with topics"),
        ("[[dispatch.topics]]\nnamespace = 't/x'\npartitions = 2\n", "dispatch.topics[0].partitions: not part of"),
        ("[[dispatch.topics]]\nnamespace = 't/x'\nentryBytes = [1, 2]\n", "dispatch.topics[0].entryBytes: expected a"),
    ],
)
def test_bad_dispatch_section_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, message: str
) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(_cluster("2m") + section)
    code = main(["simulate", "--no-progress", "--cluster", str(f), "--strategy", "OverloadShedder"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"error: {f}: {message}") and err.count("\n") == 1, err


def test_a_removed_topic_leaves_the_broker_dispatch() -> None:
    from bundlewise.config import Config
    from bundlewise.sim.dispatch.dispatcher import DispatchSimulation
    from bundlewise.sim.dispatch.topics import SubscriptionSpec, TopicSpec

    cfg = Config().with_values({"dispatchThrottlingRatePerTopicInMsg": 10})
    topics = [
        TopicSpec(f"persistent://t/ns/{n}", subscriptions=(SubscriptionSpec("s", backlog_entries=100),)) for n in "xy"
    ]
    sim = DispatchSimulation(cfg, topics)
    assert sim.step(1000).topics["persistent://t/ns/x"].msgs == 10
    left = sim.remove_topic("persistent://t/ns/x")
    assert left == {"s": 90}  # its backlog goes with it (to its next owner)
    assert [d.partition.name for d in sim.dispatchers] == ["persistent://t/ns/y"]
    later = sim.step(5000)
    assert set(later.topics) == {"persistent://t/ns/y"} and later.broker.msgs == 40
    assert set(sim.effective_limits()["topics"]) == {"persistent://t/ns/y"}
