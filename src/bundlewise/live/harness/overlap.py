"""Pure checks of the fault campaign's observer: hash-range overlap between brokers, coverage of topics, and
lookup answers that named a broker not serving the topic.

* ``range_overlaps(claims)``: ``claims`` maps a broker id to the bundles it serves (or the store says it owns),
  ``tenant/ns/0xLLLLLLLL_0xUUUUUUUU``.  Two claims overlap when their namespaces are equal and their hash ranges
  intersect (``Bundle.overlaps``: a bundle and its split children, or two claims of one name) and the brokers
  differ; one broker serving a parent and its children while it splits is not a violation.  Sorted by
  namespace and lower bound, a sweep compares each claim with the claims still open at its start, so the cost
  is the number of claims plus the number of overlaps, not the square of the claims.
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

from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName


@dataclass(frozen=True, slots=True, order=True)
class Overlap:
    """Two claims of intersecting ranges by different brokers (ordered: ``a`` <= ``b`` by (broker, bundle))."""

    a_broker: str
    a_bundle: str
    b_broker: str
    b_bundle: str


@dataclass(frozen=True, slots=True)
class Answer:
    at: float  # time.monotonic() when the answer arrived
    topic: str
    broker: str  # broker id (host:port of the answer's httpUrl, or mapped from its brokerUrl)


def _claims(claims: Mapping[str, Iterable[str]]) -> list[tuple[Bundle, str]]:
    out: list[tuple[Bundle, str]] = []
    for broker, bundles in claims.items():
        for name in bundles:
            try:
                out.append((Bundle.parse(name), broker))
            except InputError:
                continue  # not a bundle name (a broker's answer is read as it is; a stranger name claims nothing)
    return out


def range_overlaps(claims: Mapping[str, Iterable[str]]) -> list[Overlap]:
    """Every pair of claims by different brokers whose ranges intersect (module docstring), sorted."""
    items = sorted(_claims(claims), key=lambda c: (c[0].namespace, c[0].lower, c[0].upper, c[1]))
    found: set[Overlap] = set()
    open_: list[tuple[Bundle, str]] = []
    for bundle, broker in items:
        open_ = [(b, o) for b, o in open_ if b.namespace == bundle.namespace and b.upper > bundle.lower]
        for other, owner in open_:
            if owner != broker:
                first, second = sorted([(owner, other.name), (broker, bundle.name)])
                found.add(Overlap(first[0], first[1], second[0], second[1]))
        open_.append((bundle, broker))
    return sorted(found)


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
