"""The report's verdict: which strategy fits the simulated workload and why, in two or three sentences.

Built from the metrics of ``summary.json`` and their concerns (``results.catalogue``), not from counting the
lowest number per row — a strategy that never acts wins every churn row and can still leave the cluster
uneven and overloaded:

1. For each judged concern — **overload** and **balance** (weight 2 each: what shedding is for), **churn**
   and **client impact** (weight 1 each: what it costs) — every metric of that concern where lower is better
   is scaled between the best (0) and the worst (1) strategy; a concern's score is the mean of its
   metrics.  A metric that is undefined for a strategy (``settle_minutes`` never reached) counts as the
   worst; a metric equal for all strategies, or undefined for all, says nothing and is left out.
2. The strategy with the lowest weighted sum fits best (ties: the first in the run's order).
3. The sentences state its balance, overload and cost with the figures, then the runner-up's trade-off,
   then the strategy that acts least (when it is not the best) or the one that churns most, and last every
   strategy's balance beside its churn -- the traffic its unloads moved (``throughput_moved_bytes``) -- so a
   strategy that balances well by moving a lot is seen at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bundlewise.results.catalogue import DEFS, format_value

WEIGHTS = {"overload": 2.0, "balance": 2.0, "churn": 1.0, "impact": 1.0}
METHOD = (
    "The verdict ranks the strategies by overload and balance (weight 2 each) and by churn and client impact "
    "(weight 1 each), every metric scaled between the best (0) and the worst (1) strategy."
)


def _f(key: str, value: Any) -> str:
    return format_value(key, value)


def _s(count: Any) -> str:
    """The plural ending for a count (1 flap, 2 flaps)."""
    return "" if count == 1 else "s"


def concern_scores(strategies: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per strategy, each judged concern's score in [0, 1] (0: the best of the strategies)."""
    names = list(strategies)
    out: dict[str, dict[str, float]] = {s: {} for s in names}
    for concern in WEIGHTS:
        parts: dict[str, list[float]] = {s: [] for s in names}
        for d in DEFS:
            if d.concern != concern or d.lower_is_better is not True:
                continue
            values = [strategies[s].get(d.key) for s in names]
            known = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if not known:
                continue
            lo, hi = min(known), max(known)
            if lo == hi and len(known) == len(values):
                continue
            for s, v in zip(names, values, strict=True):
                if not isinstance(v, int | float) or isinstance(v, bool):
                    parts[s].append(1.0)  # undefined (never settled): the worst
                else:
                    parts[s].append((float(v) - lo) / (hi - lo) if hi > lo else 0.0)
        for s in names:
            if parts[s]:
                out[s][concern] = sum(parts[s]) / len(parts[s])
    return out


def ranking(strategies: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, float]]:
    """Strategies with their weighted score, best first (ties keep the run's order)."""
    scores = concern_scores(strategies)
    total = {s: sum(WEIGHTS[c] * v for c, v in scores[s].items()) for s in strategies}
    return sorted(total.items(), key=lambda kv: kv[1])


def _overload(m: Mapping[str, Any]) -> str:
    minutes = m.get("overloaded_broker_minutes")
    busiest = f"the busiest broker at {_f('max_load_p99', m.get('max_load_p99'))} % at p99"
    if not minutes:
        return f"no broker overloaded and {busiest}"
    return f"{_f('overloaded_broker_minutes', minutes)} overloaded broker-minutes and {busiest}"


def _cost(m: Mapping[str, Any]) -> str:
    return (
        f"{_f('unloads', m.get('unloads'))} unload{_s(m.get('unloads'))} ({_f('flaps', m.get('flaps'))} "
        f"flap{_s(m.get('flaps'))}) and "
        f"{_f('topic_unavailable_seconds', m.get('topic_unavailable_seconds'))} topic-seconds of unavailability"
    )


def verdict(doc: Mapping[str, Any]) -> list[str]:
    """Two or three sentences (one when a single strategy ran)."""
    strategies: Mapping[str, Mapping[str, Any]] = doc["strategies"]
    if not strategies:
        return ["No strategy was simulated."]
    std = {s: m.get("load_std_mean") for s, m in strategies.items()}
    if len(strategies) == 1:
        ((name, m),) = strategies.items()
        return [
            f"Only {name} was simulated: load std-dev {_f('load_std_mean', m.get('load_std_mean'))} pp on average, "
            f"{_overload(m)}, for {_cost(m)}."
        ]
    order = ranking(strategies)
    best = order[0][0]
    m = strategies[best]
    known = {s: v for s, v in std.items() if isinstance(v, int | float)}
    lowest = min(known, key=lambda s: known[s]) if known else best
    if lowest == best:
        balance = f"the most even load, a std-dev of {_f('load_std_mean', m.get('load_std_mean'))} pp on average"
    else:
        balance = (
            f"a load std-dev of {_f('load_std_mean', m.get('load_std_mean'))} pp on average "
            f"({lowest} reaches {_f('load_std_mean', known[lowest])} pp)"
        )
    sentences = [f"{best} fits this workload best: {balance}, {_overload(m)}, for {_cost(m)}."]
    alt = order[1][0]
    a = strategies[alt]
    a_std, b_std = a.get("load_std_mean"), m.get("load_std_mean")
    tighter = isinstance(a_std, int | float) and isinstance(b_std, int | float) and a_std < b_std
    more_churn = (a.get("unloads") or 0) > (m.get("unloads") or 0)
    if tighter:
        but = f"but needs {_cost(a)}" if more_churn else _overload(a)
        sentences.append(f"{alt} balances tighter ({_f('load_std_mean', a_std)} pp) {but}.")
    else:
        sentences.append(f"{alt} comes next: {_f('load_std_mean', a_std)} pp, {_overload(a)}, for {_cost(a)}.")
    unloads = {s: v.get("unloads") or 0 for s, v in strategies.items()}
    least = min(unloads, key=lambda s: unloads[s])
    most = max(unloads, key=lambda s: unloads[s])
    if least not in (best, alt):
        q = strategies[least]
        acts = "never unloads, so it costs no churn" if unloads[least] == 0 else f"unloads least ({unloads[least]})"
        sentences.append(
            f"{least} {acts}, but leaves the load uneven "
            f"({_f('load_std_mean', q.get('load_std_mean'))} pp, "
            f"spread {_f('load_spread_mean', q.get('load_spread_mean'))} pp)."
        )
    elif most not in (best, alt):
        q = strategies[most]
        sentences.append(f"{most} churns the most: {_cost(q)}.")
    sentences.append(balance_and_churn(strategies))
    return sentences


def balance_and_churn(strategies: Mapping[str, Mapping[str, Any]]) -> str:
    """Every strategy's load std-dev beside the traffic its unloads moved, in the run's order."""
    each = [
        f"{name} {_f('load_std_mean', m.get('load_std_mean'))} pp with "
        f"{_f('throughput_moved_bytes', m.get('throughput_moved_bytes'))} MB/s moved"
        for name, m in strategies.items()
    ]
    return f"Balance and churn (traffic moved by unloads) of each: {'; '.join(each)}."
