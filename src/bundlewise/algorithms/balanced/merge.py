"""Merging cold bundles so a hot one can split: bundlewise's own answer to a namespace at its bundle cap.

Pulsar only splits.  Its split detector (``BundleSplitterTask#findBundlesToSplit``) skips every hot bundle of a
namespace that already has ``loadBalancerNamespaceMaximumBundles`` bundles, so at the cap a hot bundle stays
whole for good, however many of the namespace's other bundles are idle.  ``plan_merges`` frees room: per
namespace at the cap with hot bundles waiting (``split_candidates``, the detector's scan without the cap), it
merges as many adjacent pairs as the waiting splits need, coldest pair first (docs/balanced.md, Merge).

* **What a bundle carries**: topics and sessions of its latest report (``lastStats``), and the highest of that
  sample's msg rate and throughput and the leader's short- and long-term averages (``BundleData``), so a
  bundle is cold only when every view of it is.  A current bundle that no report lists, no broker has
  preallocated and the leader has no data for is owned by nobody: no client has looked it up
  (``NamespaceService#findBrokerServiceUrl`` would have made it owned), so it carries nothing.
* **Which bundles may merge**: current bundles of the namespace (``NamespaceBundles``), not waiting to split,
  not listed by two reports (moving) and not only known from a preallocation or inherited data (owned, not
  reported yet).
* **Cold enough**: a pair's combined topics, sessions (when ``loadBalancerNamespaceBundleMaxSessions`` > 0),
  msg rate and throughput must each stay under ``bundlewiseBalancedMergeFraction`` of their split threshold, so
  the merged bundle is far from splitting again.  Its *heat* is the largest of those four ratios.
* **Order**: pairs whose parts have one owner (or none) before pairs whose parts have two owners (a part then
  moves); then the coldest; then hash order.  Pairs are disjoint.  Each namespace needs
  ``bundles + hot bundles - cap`` merges for all its hot bundles to split in the same step; when too few pairs
  are cold enough for even the first hot bundle to split, it merges nothing.
* **Merges that pay**: a merge is made only for a hot bundle whose split can divide its load (``dividing``):
  one its report shows with a single topic cannot be divided by any split point; and when the owner's
  per-topic stats are at hand (``preview``: the children the configured split algorithm would cut now, each
  with its topics' load), the split must leave no child more than ``bundlewiseBalancedMergeMaxChildShare``
  (80 %) of the bundle's binding load -- its msg rate or its throughput, whichever is nearer its split
  threshold (its topic count when it carries neither).  A hot bundle whose load sits in one heavy topic splits
  into a child that is as hot as it was: merging for it only feeds splits that gain nothing.  Since the
  split detector hands the freed slots to the hot bundles in order, the hot bundles from the first one that
  cannot be divided on get no merge.  Each merge's detail states its benefit (the bundle it lets split, with
  its load, and the shares its children would carry) and its cost (the topics that change owner).
* **Owner**: the parts' owner; a part with no owner adds nothing; with two owners the merged bundle goes to the
  owner of the hotter part (the lower part on a tie), and the other part's topics move to it, unavailable for a
  moment as in an unload.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from bundlewise.config import Config
from bundlewise.config.views import MergeSettings, SplitSettings
from bundlewise.model.bundles import Bundle, NamespaceBundles
from bundlewise.model.decisions import MergeDecision, SplitDecision
from bundlewise.model.load import LoadData, NamespaceBundleStats
from bundlewise.model.names import bundle_namespace
from bundlewise.model.resources import MIB


@dataclass(frozen=True, slots=True)
class Carried:
    """What one bundle carries, and who owns it (None: nobody)."""

    owner: str | None
    topics: int = 0
    sessions: int = 0
    msg_rate: float = 0.0
    throughput: float = 0.0

    def plus(self, other: Carried) -> Carried:
        return Carried(
            self.owner,
            self.topics + other.topics,
            self.sessions + other.sessions,
            self.msg_rate + other.msg_rate,
            self.throughput + other.throughput,
        )

    def heat(self, limits: SplitSettings) -> float:
        """The largest ratio of a figure to its split threshold (a threshold of 0 makes any load infinite)."""

        def ratio(value: float, limit: float) -> float:
            if limit > 0:
                return value / limit
            return float("inf") if value > 0 else 0.0

        ratios = [
            ratio(self.topics, limits.max_topics),
            ratio(self.msg_rate, limits.max_msg_rate),
            ratio(self.throughput, limits.max_bandwidth_bytes),
        ]
        if limits.max_sessions > 0:
            ratios.append(ratio(self.sessions, limits.max_sessions))
        return max(ratios)


def carried_by(load: LoadData, namespaces: Collection[str]) -> tuple[dict[str, Carried], set[str]]:
    """Every bundle of ``namespaces`` a single report lists, with what it carries; and the bundles the leader
    knows of but may not merge (listed by two reports, or preallocated and not reported yet)."""
    listed: Counter[str] = Counter()
    found: dict[str, Carried] = {}
    for broker, data in load.brokers.items():
        for name, stats in data.localData.lastStats.items():
            if bundle_namespace(name) not in namespaces:
                continue
            listed[name] += 1
            bd = load.bundleData.get(name)
            rates = [stats.msgRateIn + stats.msgRateOut]
            tputs = [stats.msgThroughputIn + stats.msgThroughputOut]
            if bd is not None:
                rates += [bd.shortTermData.total_msg_rate, bd.longTermData.total_msg_rate]
                tputs += [bd.shortTermData.total_msg_throughput, bd.longTermData.total_msg_throughput]
            sessions = stats.producerCount + stats.consumerCount
            found[name] = Carried(broker, stats.topics, sessions, max(rates), max(tputs))
    held = {n for n, k in listed.items() if k > 1}
    for data in load.brokers.values():
        held.update(n for n in data.preallocatedBundleData if n not in found)
    return {n: c for n, c in found.items() if n not in held}, held


@dataclass(frozen=True, slots=True)
class _Pair:
    lower: Bundle
    upper: Bundle
    parts: tuple[Carried, Carried]
    heat: float

    @property
    def two_owners(self) -> bool:
        a, b = self.parts[0].owner, self.parts[1].owner
        return a is not None and b is not None and a != b


def _pairs(
    nb: NamespaceBundles, load: LoadData, known: Mapping[str, Carried], held: set[str], limits: SplitSettings
) -> list[_Pair]:
    """The namespace's adjacent pairs that may merge, with their combined heat."""
    info: list[Carried | None] = []
    for b in nb.bundles:
        name = b.name
        if name in held:
            info.append(None)  # hot, moving, or owned and not reported yet: not a part
        elif name in known:
            info.append(known[name])
        elif name in load.bundleData:
            info.append(None)  # data inherited from a merge, not reported yet: its owner is not known here
        else:
            info.append(Carried(None))  # nobody owns it: no client uses it
    out = []
    bundles = nb.bundles
    for i in range(len(bundles) - 1):
        lo, hi = info[i], info[i + 1]
        if lo is None or hi is None:
            continue
        out.append(_Pair(bundles[i], bundles[i + 1], (lo, hi), lo.plus(hi).heat(limits)))
    return out


def _owner(pair: _Pair, limits: SplitSettings) -> str | None:
    a, b = pair.parts
    if a.owner is None or b.owner is None:
        return a.owner or b.owner
    return b.owner if b.heat(limits) > a.heat(limits) else a.owner


Preview = Callable[[str], Sequence[NamespaceBundleStats] | None]


def plan_merges(
    load: LoadData,
    config: Config,
    namespaces: Mapping[str, NamespaceBundles],
    hot: Sequence[SplitDecision],
    preview: Preview | None = None,
) -> list[MergeDecision]:
    """The merges that let the ``hot`` bundles (the split candidates, cap aside) split (module docstring);
    ``preview``: how each hot bundle's owner would split it now (None: only the single-topic rule)."""
    settings = config.view(MergeSettings)
    fraction = settings.fraction
    limits = config.view(SplitSettings)
    if fraction <= 0 or not hot:
        return []
    waiting: dict[str, list[str]] = {}
    for d in hot:
        waiting.setdefault(bundle_namespace(d.bundle), []).append(d.bundle)
    known, held = carried_by(load, waiting)
    out: list[MergeDecision] = []
    for ns, hot_names in waiting.items():
        nb = namespaces.get(ns)
        if nb is None:
            continue
        shares = {n: child_shares(preview(n), limits) for n in hot_names} if preview is not None else {}
        names = dividing(hot_names, known, shares, settings.max_child_share)
        if not names:
            continue  # the first hot bundle to split holds one topic: its split would divide nothing
        needed = len(nb) + len(names) - limits.max_bundles
        if needed <= 0:
            continue
        pairs = [p for p in _pairs(nb, load, known, held | set(names), limits) if p.heat < fraction]
        pairs.sort(key=lambda p: (p.two_owners, p.heat, p.lower.lower))
        chosen: list[_Pair] = []
        used: set[Bundle] = set()
        for p in pairs:
            if len(chosen) == needed:
                break
            if p.lower not in used and p.upper not in used:
                used.update((p.lower, p.upper))
                chosen.append(p)
        first = len(nb) - limits.max_bundles + 1  # merges before the first waiting bundle may split
        if len(chosen) < first:
            continue  # not enough cold pairs to let any hot bundle split: merge nothing
        for j, p in enumerate(chosen, start=1):
            unblocks = names[min(max(j - first, 0), len(names) - 1)]  # the detector accepts hot bundles in order
            out.append(_decision(ns, nb, p, unblocks, known.get(unblocks), shares.get(unblocks), fraction, limits))
    return out


def child_shares(children: Sequence[NamespaceBundleStats] | None, limits: SplitSettings) -> tuple[float, ...] | None:
    """Each child's share of its parent's binding load: the msg rate or the throughput, whichever of the
    parent's is the larger fraction of its split threshold (the topic count when it carries neither); None
    when there is no split to judge."""
    if not children:
        return None
    rates = [c.msgRateIn + c.msgRateOut for c in children]
    tputs = [c.msgThroughputIn + c.msgThroughputOut for c in children]
    rate, tput = sum(rates), sum(tputs)
    by_rate = rate / limits.max_msg_rate if limits.max_msg_rate > 0 else 0.0
    by_tput = tput / limits.max_bandwidth_bytes if limits.max_bandwidth_bytes > 0 else 0.0
    if rate <= 0 and tput <= 0:
        counts = [float(c.topics) for c in children]
        total = sum(counts)
        return tuple(x / total for x in counts) if total > 0 else None
    parts, total = (rates, rate) if by_rate >= by_tput and rate > 0 else (tputs, tput)
    return tuple(x / total for x in parts)


def dividing(
    hot: Sequence[str],
    known: Mapping[str, Carried],
    shares: Mapping[str, tuple[float, ...] | None] | None = None,
    max_child_share: float = 1.0,
) -> list[str]:
    """The leading hot bundles (in the detector's order, which takes the freed slots first come first served)
    whose split can divide their load (module docstring): not one its report shows with a single topic, nor one
    whose previewed split (``shares``: each child's share of its binding load) leaves a child above
    ``max_child_share``; the hot bundles from the first that cannot be divided on get no merge."""
    out = []
    for name in hot:
        c = known.get(name)
        if c is not None and c.topics == 1:
            break
        split = (shares or {}).get(name)
        if split is not None and max(split) > max_child_share:
            break
        out.append(name)
    return out


def _decision(
    ns: str,
    nb: NamespaceBundles,
    p: _Pair,
    unblocks: str,
    hot: Carried | None,
    shares: tuple[float, ...] | None,
    fraction: float,
    limits: SplitSettings,
) -> MergeDecision:
    _, merged = nb.merge([p.lower, p.upper])  # validated as the simulator will apply it
    owner = _owner(p, limits)
    both = p.parts[0].plus(p.parts[1])
    benefit = (
        f"benefit: {unblocks} ({hot.topics} topics, {hot.msg_rate:,.0f} msg/s, {hot.throughput / MIB:,.2f} MB/s) "
        "can split"
        if hot is not None
        else f"benefit: {unblocks} can split"
    )
    if shares is not None:
        benefit += " into children carrying " + " / ".join(f"{x:.0%}" for x in shares) + " of its load"
    moving = [c for c in p.parts if c.owner is not None and owner is not None and c.owner != owner]
    cost = f"{moving[0].topics} topics move to {owner}" if moving else "no topic changes owner"
    detail = (
        f"{ns} is at its cap of {limits.max_bundles} bundles and {unblocks} waits to split; "
        f"{p.lower.range_name} + {p.upper.range_name} carry {both.topics} topics, {both.msg_rate:,.0f} msg/s, "
        f"{both.throughput / MIB:,.2f} MB/s ({p.heat:.1%} of the split thresholds < {fraction * 100:g}%); "
        f"{benefit}; cost: {cost}"
    )
    owners = (p.parts[0].owner, p.parts[1].owner)
    return MergeDecision(merged.name, owner, (p.lower.name, p.upper.name), owners, unblocks, detail)
