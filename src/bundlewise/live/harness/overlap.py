"""Pure checks of the fault campaign's observer: hash-range overlap between brokers, coverage of topics, and
lookup answers that named a broker not serving the topic.

* Range overlap between brokers is ``model.ranges.overlaps`` (the one implementation; claims map a broker id to
  the bundles it serves or the store says it owns).
* ``uncovered(claims, topics)``: the topics whose hash no claimed bundle of their namespace contains (nobody
  serves them).
* ``answer_conflicts(answers, seen)``: lookup answers (topic -> the broker named) that no observation close to
  the answer confirms, while another broker was seen serving the topic -- a client told to go to a broker that
  was not, and did not become, the owner (stale answers: the same for a broker that was not live, e.g.
  killed: Pulsar names a crashed owner until its session expires, and its client retries).
* ``time_to_served(rounds, topics, since)``: from observation rounds after a fault, how long until the topics
  were served for good (the round after the last one that left a topic unserved), or the topics still unserved
  at the last round.
* ``burst_conflicts(answers)``: answers of one burst of first lookups, by bundle; a bundle answered with two
  different brokers is a double answer (no ownership change is expected within a burst).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName
from bundlewise.model.ranges import claimed as _claims


@dataclass(frozen=True, slots=True)
class Answer:
    at: float  # time.monotonic() when the answer arrived
    topic: str
    broker: str  # broker id (host:port of the answer's httpUrl, or mapped from its brokerUrl)


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


def answer_conflicts(
    answers: Iterable[Answer],
    seen: Sequence[tuple[float, Mapping[str, Iterable[str]]]],
    before: float = 1.0,
    after: float = 2.0,
    alive_before: float = 0.3,
) -> tuple[list[Answer], list[Answer]]:
    """(double answers, stale answers) among ``answers``.  A double answer names a live broker that no observation
    in ``[at - before, at + after]`` saw serving the topic while another broker was seen serving it there.
    ``seen``: (time, claims) rounds in time order, each with an entry (maybe empty) for every broker that
    answered the observer.  A broker that answered no round in ``[at - alive_before, at + after]`` is not live:
    an answer naming it is stale (Pulsar's lookups name a crashed owner until its session expires; the client's
    connection fails and it looks up again), not a double answer."""
    double: list[Answer] = []
    stale: list[Answer] = []
    for answer in answers:
        window = [(at, claims) for at, claims in seen if answer.at - before <= at <= answer.at + after]
        owners: set[str] = set().union(*(serving(claims, answer.topic) for _, claims in window))
        if owners and answer.broker not in owners:
            live = any(answer.broker in claims for at, claims in window if at >= answer.at - alive_before)
            (double if live else stale).append(answer)
    return double, stale


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
