"""Pure checks of the fault campaign's observer: hash-range overlap between brokers, coverage of topics, and
lookup answers that named a broker not serving the topic.

* Range overlap between brokers is ``model.ranges.overlaps`` (the one implementation; claims map a broker id to
  the bundles it serves or the store says it owns).
* ``uncovered(claims, topics)``: the topics whose hash no claimed bundle of their namespace contains (nobody
  serves them).
* ``answer_conflicts(answers, seen)``: lookup answers (topic -> the broker named) that no observation close to
  the answer confirms, while another broker was seen serving the topic up to the answer -- a client told to go
  to a broker that was not, and did not become, the owner (stale answers: the same for a broker that was not
  live, e.g. killed: Pulsar names a crashed owner until its session expires, and its client retries; or for a
  recorded owner that served nothing, fenced, and that another broker replaced only after the answer).
* ``time_to_served(rounds, topics, since)``: from observation rounds after a fault, how long until the topics
  were served for good (the round after the last one that left a topic unserved), or the topics still unserved
  at the last round.
* ``burst_conflicts(answers)``: answers of one burst of first lookups, by bundle; a bundle answered with two
  different brokers is a double answer (no ownership change is expected within a burst).
* The brokers' serving journals (``live.broker.journal``: intervals, never shorter than the serving they
  record): ``handover_in_a_round`` tells a sampled overlap that is only a handover between the two answers of
  one round (disjoint intervals) from a candidate overlap; ``journal_overlaps`` lists candidates no round saw
  (intervals that intersect: a real overlap shorter than a round, or a paused broker whose journal stayed
  open past its fencing deadline -- only the sampler's claims decide); ``served_per_journal`` confirms an
  answer naming a broker whose ownership was shorter than a round.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName
from bundlewise.model.ranges import Overlap, parsed
from bundlewise.model.ranges import claimed as _claims
from bundlewise.model.ranges import overlaps as range_overlaps


@dataclass(frozen=True, slots=True)
class Answer:
    at: float  # time.monotonic() when the answer arrived
    topic: str
    broker: str  # broker id (host:port of the answer's httpUrl, or mapped from its brokerUrl)
    sent: float | None = None  # time.monotonic() when the lookup was sent (None: not known)


@functools.lru_cache(maxsize=1 << 14)
def _topic_key(topic: str) -> tuple[str, int]:
    t = TopicName.parse(topic)
    return str(t.namespace), crc32_hash(str(t))


def serving(claims: Mapping[str, Iterable[str]], topic: str) -> set[str]:
    """The brokers whose claimed bundles contain ``topic``."""
    ns, h = _topic_key(topic)
    return {broker for bundle, broker in _claims(claims) if bundle.namespace == ns and bundle.includes_hash(h)}


def uncovered(claims: Mapping[str, Iterable[str]], topics: Iterable[str]) -> list[str]:
    """The topics no claimed bundle contains, in the order given."""
    parsed = _claims(claims)
    out = []
    for topic in topics:
        ns, h = _topic_key(topic)
        if not any(b.namespace == ns and b.includes_hash(h) for b, _ in parsed):
            out.append(topic)
    return out


Seen = Sequence[tuple[float, Mapping[str, Iterable[str]]]]  # (time, claims) observer rounds


class Rounds:
    """Observer rounds (``seen``) sorted by time and indexed for the checks that read them per answer: the rounds
    of a time window found by bisection, and who served a topic in a round worked out once per (round, topic) --
    a run's thousands of answers read the same few hundred rounds."""

    def __init__(self, seen: Seen) -> None:
        self.seen = sorted(seen, key=lambda r: r[0])
        self.times = [at for at, _ in self.seen]
        self._serving: dict[tuple[int, str], frozenset[str]] = {}

    def between(self, lo: float, hi: float) -> range:
        """The indexes of the rounds at ``lo <= time <= hi``."""
        return range(bisect.bisect_left(self.times, lo), bisect.bisect_right(self.times, hi))

    def serving(self, i: int, topic: str) -> frozenset[str]:
        """The brokers round ``i`` saw serving ``topic``."""
        got = self._serving.get((i, topic))
        if got is None:
            got = self._serving[(i, topic)] = frozenset(serving(self.seen[i][1], topic))
        return got


def rounds_of(seen: Seen | Rounds) -> Rounds:
    return seen if isinstance(seen, Rounds) else Rounds(seen)


def answer_conflicts(
    answers: Iterable[Answer],
    seen: Seen | Rounds,
    before: float = 1.0,
    after: float = 2.0,
    alive_before: float = 0.3,
    round_slack: float = 0.1,
) -> tuple[list[Answer], list[Answer]]:
    """(double answers, stale answers) among ``answers``.  A double answer names a live broker that no observation
    in ``[at - before, at + after]`` saw serving the topic while another broker was seen serving it up to the
    answer (a round in ``[at - before, at + round_slack]``).  ``seen``: (time, claims) rounds, each with an entry
    (maybe empty) for every broker that answered the observer.  Stale answers name a broker that never served in
    that window either, but one that was not live (it answered no round in ``[at - alive_before, at + after]``:
    Pulsar's lookups name a crashed owner until its session expires; the client's connection fails and it looks
    up again) or one nobody else served beside up to the answer, and that another broker replaced only after it
    (a recorded owner that was fenced and gave way: one owner at a time)."""
    rounds = rounds_of(seen)
    double: list[Answer] = []
    stale: list[Answer] = []
    for answer in answers:
        window = rounds.between(answer.at - before, answer.at + after)
        owners: set[str] = set().union(*(rounds.serving(i, answer.topic) for i in window))
        if not owners or answer.broker in owners:
            continue
        live = any(
            answer.broker in rounds.seen[i][1] for i in rounds.between(answer.at - alive_before, answer.at + after)
        )
        beside = served_up_to(answer, rounds, before, round_slack)
        (double if live and beside else stale).append(answer)
    return double, stale


def served_up_to(answer: Answer, seen: Seen | Rounds, before: float = 1.0, round_slack: float = 0.1) -> set[str]:
    """The brokers seen serving ``answer``'s topic up to the answer: in a round of ``[at - before, at +
    round_slack]``."""
    rounds = rounds_of(seen)
    window = rounds.between(answer.at - before, answer.at + round_slack)
    return set().union(*(rounds.serving(i, answer.topic) for i in window))


def describe_answer(answer: Answer, seen: Seen | Rounds, since: float, journals: Mapping[str, Intervals]) -> str:
    """One line on a double answer, times in seconds from ``since``: when it was asked and answered, who was seen
    serving the topic up to it, when the named broker was first seen serving it afterwards, and the named
    broker's journal intervals of the topic (or that it has none)."""

    def rel(t: float) -> str:
        return f"{t - since:+.2f}"

    rounds = rounds_of(seen)
    beside = sorted(served_up_to(answer, rounds))
    later = rounds.between(answer.at, rounds.times[-1] if rounds.times else answer.at)
    first = next((rounds.times[i] for i in later if answer.broker in rounds.serving(i, answer.topic)), None)
    ns, h = _topic_key(answer.topic)
    spans = [
        f"{rel(s)}..{rel(u)}"
        for bundle, intervals in journals.get(answer.broker, {}).items()
        if (b := parsed(bundle)) is not None and b.namespace == ns and b.includes_hash(h)
        for s, u in intervals
        if u >= answer.at - 5
    ]
    journal = "no journal" if answer.broker not in journals else f"journal {' '.join(spans) or 'empty'}"
    asked = "?" if answer.sent is None else rel(answer.sent)
    return (
        f"answer {answer.topic} -> {answer.broker} (asked {asked}, answered {rel(answer.at)}; seen serving up to it: "
        f"{', '.join(beside) or 'none'}; {answer.broker} first seen serving it "
        f"{'never' if first is None else rel(first)}; {journal})"
    )


def burst_conflicts(answers: Iterable[Answer], bundle_of: Mapping[str, str]) -> dict[str, set[str]]:
    """Bundles answered with more than one broker in one burst: bundle -> the brokers named.  ``bundle_of``
    maps each topic to its bundle."""
    named: dict[str, set[str]] = {}
    for answer in answers:
        named.setdefault(bundle_of[answer.topic], set()).add(answer.broker)
    return {bundle: brokers for bundle, brokers in named.items() if len(brokers) > 1}


def _merged(rounds: Sequence[tuple[float, Mapping[str, Iterable[str]]]]) -> dict[str, list[str]]:
    merged: dict[str, list[str]] = {}
    for _, claims in rounds:
        for broker, served in claims.items():
            merged.setdefault(broker, []).extend(served)
    return merged


def time_to_served(
    rounds: Sequence[tuple[float, Mapping[str, Iterable[str]]]], topics: Sequence[str], since: float, smooth: int = 3
) -> tuple[float | None, list[str]]:
    """(seconds from ``since`` to the first round after the last gap, []) -- 0.0 when no round left a topic
    unserved -- or (None, the unserved topics) when the last round still has a gap.  A round's claims are merged
    with the ``smooth - 1`` rounds before it, so a broker that missed one round (slow to answer) is no gap."""
    last_gap, left = -1, []
    for i in range(len(rounds)):
        gap = uncovered(_merged(rounds[max(0, i - smooth + 1) : i + 1]), topics)
        if gap:
            last_gap, left = i, gap
    if last_gap < 0:
        return 0.0, []
    if last_gap == len(rounds) - 1:
        return None, left
    return rounds[last_gap + 1][0] - since, []


# -- the brokers' serving journals (``live.broker.journal``) --------------------------------------------------

Intervals = dict[str, list[tuple[float, float]]]  # bundle -> (since, until) on the machine's monotonic clock


def journal_intervals(snapshot: Mapping[str, Any]) -> Intervals:
    """A broker's ``GET /admin/v2/bundlewise/serving-journal`` answer as intervals; an open one ends at the
    snapshot's ``now``."""
    now = float(snapshot["now"])
    out: Intervals = {}
    for bundle, since, until in snapshot.get("closed", []):
        out.setdefault(str(bundle), []).append((float(since), float(until)))
    for bundle, since in dict(snapshot.get("open", {})).items():
        out.setdefault(str(bundle), []).append((float(since), now))
    return out


def _holding(intervals: Intervals, bundle: str, instant: float) -> tuple[float, float] | None:
    return next(((s, u) for s, u in intervals.get(bundle, ()) if s <= instant <= u), None)


def handover_in_a_round(
    pair: Overlap, instants: Sequence[tuple[float | None, float | None]], journals: Mapping[str, Intervals]
) -> bool:
    """Whether a served overlap seen by the sampler is a handover between the two answers of one round: both
    brokers have journals, every observation's two claim instants each lie in an interval of their broker's
    journal for that bundle (the journal agrees with the claims), and those two intervals never intersect.  A
    journal interval is never shorter than the serving it records, so disjoint intervals prove the brokers
    never served at once; anything else (no journal, a claim outside its journal, a claim instant unknown because
    the broker's clock is not the machine's) is not refuted."""
    ja, jb = journals.get(pair.a_broker), journals.get(pair.b_broker)
    if ja is None or jb is None or not instants:
        return False
    for ta, tb in instants:
        if ta is None or tb is None:
            return False
        ia, ib = _holding(ja, pair.a_bundle, ta), _holding(jb, pair.b_bundle, tb)
        if ia is None or ib is None or max(ia[0], ib[0]) < min(ia[1], ib[1]):
            return False
    return True


def journal_overlaps(journals: Mapping[str, Intervals], since: float) -> list[Overlap]:
    """Pairs of intersecting ranges that two brokers' journals show served at intersecting times, counting only
    time after ``since`` (the run's start): candidate overlaps, since a journal interval may outlast the serving
    (a broker paused past its fencing deadline stops serving while its interval stays open)."""
    entries = [
        (bundle, broker, s, u)
        for broker, intervals in journals.items()
        for bundle, spans in intervals.items()
        for s, u in spans
        if u > since
    ]
    found: set[Overlap] = set()
    for i, (bundle, broker, s, u) in enumerate(entries):
        for bundle2, broker2, s2, u2 in entries[i + 1 :]:
            if broker2 == broker or max(s, s2, since) >= min(u, u2):
                continue
            for pair in range_overlaps({broker: [bundle], broker2: [bundle2]}):
                found.add(pair)
    return sorted(found)


def released_before(
    journals: Mapping[str, Intervals],
    answer: Answer,
    seen: Seen | Rounds,
    before: float = 1.0,
    round_slack: float = 0.1,
) -> bool:
    """Whether every broker the sampler saw serving ``answer``'s topic up to the answer (the rounds
    ``answer_conflicts`` reads) has a journal, and none of them shows it serving the topic while the lookup ran
    (``answer.sent`` to ``answer.at``): the former owner had let go before the lookup was sent, so the answer
    named the next owner -- a handover between two rounds, not a second owner."""
    if answer.sent is None:
        return False
    beside = served_up_to(answer, seen, before, round_slack)
    return bool(beside) and all(
        b in journals and not served_per_journal(journals, b, answer.topic, answer.sent, answer.at) for b in beside
    )


def served_per_journal(journals: Mapping[str, Intervals], broker: str, topic: str, lo: float, hi: float) -> bool:
    """Whether ``broker``'s journal shows it serving a bundle that contains ``topic`` at some time in [lo, hi]."""
    ns, h = _topic_key(topic)
    for bundle, spans in journals.get(broker, {}).items():
        b = parsed(bundle)
        holds = b is not None and b.namespace == ns and b.includes_hash(h)
        if holds and any(s <= hi and u >= lo for s, u in spans):
            return True
    return False
