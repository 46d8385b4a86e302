"""The real clients' loss check (``live.harness.clients``): payloads carry their send's id, and the records
count what was acknowledged but neither received nor left in the backlog, and what was delivered again."""

from __future__ import annotations

from bundlewise.live.harness.clients import ClientRecords, Send, key_of, payload


def test_a_payload_carries_its_send_id_and_its_size() -> None:
    data = payload("3:1207", 512)
    assert len(data) == 512 and data.startswith(b"3:1207|")
    assert key_of(data) == "3:1207"
    assert key_of(payload("0:0", 1)) == "0:0"  # an id longer than the size: the id whole
    assert key_of(b"x" * 100) is None  # a message from elsewhere


def records(acked: int, received: dict[str, int], backlog: set[str] | None = None) -> ClientRecords:
    r = ClientRecords()
    r.sends = [Send(0, float(i), float(i) + 0.01, ok=True, key=f"0:{i}") for i in range(acked)]
    r.sends.append(Send(0, 99.0, None, ok=False, key="0:99"))  # never acknowledged: nobody was promised it
    r.received.update(received)
    r.in_backlog = backlog or set()
    return r


def test_every_acknowledged_message_received_once_loses_and_duplicates_nothing() -> None:
    r = records(3, {"0:0": 1, "0:1": 1, "0:2": 1})
    assert (r.lost, r.duplicated, r.unreceived()) == (0, 0, set())


def test_an_acknowledged_message_neither_received_nor_in_the_backlog_is_lost() -> None:
    r = records(4, {"0:0": 1, "0:2": 3}, backlog={"0:3"})
    assert r.unreceived() == {"0:1", "0:3"}
    assert r.lost == 1  # 0:1; 0:3 is still in its topic's backlog
    assert r.duplicated == 2  # 0:2 delivered three times


def test_an_unacknowledged_send_received_anyway_is_neither_lost_nor_counted_against() -> None:
    r = records(1, {"0:0": 1, "0:99": 1})
    assert (r.lost, r.duplicated) == (0, 0)
