"""``report.html``: a self-contained page comparing the strategies of one simulation.

For each strategy: broker true load over time (one line per broker, the overload threshold dashed,
broker events as vertical lines with labels) and unloads per interval over time; then a side-by-side
table of every METRIC (best value per row in bold where lower is better) and a plot of the load
std-dev of all strategies together; with a ``[dispatch]`` section, dispatched msg/s and the backlog.
Plots are matplotlib PNGs (Agg backend) embedded as base64, so the page needs no other file and no
network.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from bundlewise.config.views import PlacementSettings
from bundlewise.model.durations import format_duration
from bundlewise.sim.engine import RunResult
from bundlewise.sim.run import metric_keys
from bundlewise.sim.scenario import Scenario
from bundlewise.sim.suite import verdict

LOWER_IS_BETTER = {
    "load_std_mean",
    "load_std_p95",
    "load_spread_mean",
    "max_load_p99",
    "overloaded_broker_minutes",
    "unloads",
    "throughput_moved_bytes",
    "flaps",
    "settle_minutes",
    "topic_unavailable_seconds",
    "repeat_unloads",
    "saturated_broker_minutes",
    "undelivered_bytes",
    "backlog_age_max_minutes",
    "backlog_end_messages",
    "dispatch_throttled_reads",
    "dispatch_throttled_ticks",
}
EVENT_COLOURS = {"add": "tab:green", "return": "tab:green", "remove": "tab:red", "restart": "tab:orange"}


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _hours(times: np.ndarray) -> np.ndarray:
    return times / 3_600_000


def _strategy_figure(r: RunResult, overload: float) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    x = _hours(r.times)
    ever = np.flatnonzero(r.up.any(axis=0))
    for slot in ever:
        y = np.where(r.up[:, slot], r.true_load[:, slot], np.nan)
        ax.plot(x, y * 100, linewidth=0.9, label=r.brokers[slot] if len(ever) <= 12 else None)
    ax.axhline(overload * 100, color="black", linestyle="--", linewidth=0.8, label="overload threshold")
    grouped: dict[tuple[int, str], list[str]] = {}
    for e in r.events:
        grouped.setdefault((e["time_ms"], e["action"]), []).append(e["broker"])
    for (ms, action), names in grouped.items():
        t = ms / 3_600_000
        c = EVENT_COLOURS.get(action, "grey")
        ax.axvline(t, color=c, linestyle=":", linewidth=1.2)
        label = f"{action} {names[0]}" if len(names) == 1 else f"{action} {len(names)} brokers"
        ax.annotate(
            label,
            (t, 0.02),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=7,
            color=c,
            va="bottom",
            ha="right",
        )
    ax.set_ylabel("true load (%)")
    ax.set_title(f"{r.strategy}: broker load over time")
    ax.grid(alpha=0.3)
    if len(ever) <= 12:
        ax.legend(fontsize=7, ncol=4, loc="upper left")
    unload_t = np.array([d.time_ms for d in r.decisions if d.type == "unload"], dtype=float)
    split_t = np.array([d.time_ms for d in r.decisions if d.type == "split"], dtype=float)
    span = float(r.times[-1] + (r.times[1] - r.times[0] if len(r.times) > 1 else 60_000))
    bins = np.linspace(0, span, min(60, max(2, len(r.times))) + 1)
    width = (bins[1] - bins[0]) / 3_600_000
    u, _ = np.histogram(unload_t, bins)
    s, _ = np.histogram(split_t, bins)
    ax2.bar(_hours(bins[:-1]), u, width=width, align="edge", color="tab:blue", label="unloads")
    ax2.bar(_hours(bins[:-1]), s, width=width, align="edge", bottom=u, color="tab:purple", label="splits")
    ax2.set_ylabel(f"per {format_duration(int(bins[1] - bins[0]))}")
    ax2.set_xlabel("simulated time (h)")
    ax2.legend(fontsize=7, loc="upper right")
    ax2.grid(alpha=0.3)
    return _png(fig)


def _std_figure(results: Sequence[RunResult]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.2))
    for r in results:
        masked = np.where(r.up, r.true_load, np.nan)
        ok = r.up.any(axis=1)
        std = np.full(len(r.times), np.nan)
        std[ok] = np.nanstd(masked[ok], axis=1)
        ax.plot(_hours(r.times), std * 100, label=r.strategy, linewidth=1.1)
    ax.axhline(5, color="black", linestyle="--", linewidth=0.8, label="settled (5 %)")
    ax.set_ylabel("load std-dev (pp)")
    ax.set_xlabel("simulated time (h)")
    ax.set_title("Load std-dev across brokers, all strategies")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    return _png(fig)


LINE_STYLES = ("-", "--", ":", "-.")


def _dispatch_figure(results: Sequence[RunResult], step_ms: int) -> str:
    """Dispatched msg/s per broker (one line style per strategy) and the remaining backlog over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5.2), sharex=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for n, r in enumerate(results):
        if r.dispatch is None:
            continue
        x = _hours(r.times)
        style = LINE_STYLES[n % len(LINE_STYLES)]
        for slot in np.flatnonzero(r.dispatch.msgs.any(axis=0)):
            ax.step(
                x,
                r.dispatch.msgs[:, slot] / (step_ms / 1000),
                where="post",
                linewidth=1.1,
                linestyle=style,
                color=colours[int(slot) % len(colours)],
                label=f"{r.strategy}: {r.brokers[slot]}",
            )
        ax2.plot(x, r.dispatch.backlog.sum(axis=1), linewidth=1.1, linestyle=style, label=r.strategy)
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.set_ylabel("dispatched msg/s")
    ax.set_title("Dispatch through the rate limiters: delivered messages and backlog")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3, loc="lower left")
    ax2.legend(fontsize=7, loc="lower left")
    ax2.set_ylabel("backlog (messages)")
    ax2.set_xlabel("simulated time (h)")
    ax2.grid(alpha=0.3)
    return _png(fig)


def _fmt(v: Any) -> str:
    if v is None:
        return "never"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else html.escape(str(v))


def _table(doc: dict[str, Any]) -> str:
    strategies = list(doc["strategies"])
    head = "".join(f"<th>{html.escape(s)}</th>" for s in strategies)
    rows = []
    for key in metric_keys(doc):
        vals = [doc["strategies"][s].get(key) for s in strategies]
        nums = [v for v in vals if isinstance(v, int | float)]
        best = min(nums) if nums and key in LOWER_IS_BETTER else None
        cells = "".join(
            f"<td><b>{_fmt(v)}</b></td>"
            if best is not None and v == best and len(strategies) > 1
            else f"<td>{_fmt(v)}</td>"
            for v in vals
        )
        rows.append(f"<tr><th class='k'>{key}</th>{cells}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def _events_table(doc: dict[str, Any]) -> str:
    """Per event (the start first): minutes to settle, and for a broker that starts the minutes until it carries
    50 % / 80 % of the fleet-average load, one column group per strategy."""
    strategies = list(doc["strategies"])
    runs = [doc["strategies"][s].get("events") or [] for s in strategies]
    if not runs or not runs[0]:
        return ""
    head = "".join(f"<th colspan='3'>{html.escape(s)}</th>" for s in strategies)
    sub = "<th>settle</th><th>50 %</th><th>80 %</th>" * len(strategies)
    rows = []
    for i, e in enumerate(runs[0]):
        what = e["action"] if e["broker"] is None else f"{e['action']} {e['broker']}"
        cells = []
        for run in runs:
            ev = run[i] if i < len(run) else {}
            for key in ("settle_minutes", "reach_50_minutes", "reach_80_minutes"):
                value = ev.get(key)
                cells.append("<td>–</td>" if value is None and key != "settle_minutes" else f"<td>{_fmt(value)}</td>")
        label = f"{format_duration(int(e['time_ms']))} {html.escape(what)}"
        rows.append(f"<tr><th class='k'>{label}</th>{''.join(cells)}</tr>")
    return (
        "<h2>Events</h2><p class='note'>Minutes after each event until the load std-dev stays at or below 5 % for "
        "10 minutes (settle), and for a broker that starts, until it carries 50 % and 80 % of the fleet-average "
        "load.</p>"
        f"<table><tr><th>event</th>{head}</tr><tr><th></th>{sub}</tr>{''.join(rows)}</table>"
    )


CSS = """body{font-family:system-ui,sans-serif;margin:24px;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}
th.k{text-align:left;font-weight:normal;font-family:monospace}img{max-width:100%}
.note{color:#555;font-size:90%}"""


def _verdict(doc: dict[str, Any]) -> str:
    """The best balance among the strategies run (``sim.suite.verdict``); nothing for a single strategy."""
    best = verdict(doc) if len(doc["strategies"]) > 1 else None
    if best is None:
        return ""
    m = doc["strategies"][best]
    return (
        f"<p class='verdict'>Verdict: the best balance here is {html.escape(best)}'s (load_std_mean "
        f"{_fmt(m['load_std_mean'])}, max_load_p99 {_fmt(m['max_load_p99'])}, {m['unloads']} unloads).</p>"
    )


def render_report(scenario: Scenario, results: Sequence[RunResult], doc: dict[str, Any]) -> str:
    """The whole page as a string."""
    overload = scenario.config.view(PlacementSettings).overload_threshold
    brokers = len(scenario.brokers)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>bundlewise simulation: {html.escape(scenario.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Scenario {html.escape(scenario.name)}</h1>",
        f"<p>{html.escape(scenario.description)}</p>",
        f"<p class='note'>{brokers} brokers, {len(scenario.namespaces)} namespaces, "
        f"{format_duration(scenario.duration)} simulated at a {format_duration(scenario.step)} tick, seed "
        f"{scenario.seed}. True load = weighted max of CPU and NIC in/out usage the workload demands (above 100 % "
        "when a broker is over-committed; what it delivers and reports is capped). Lower is better for every "
        "metric except assignments and splits; the best value per row is in bold.</p>",
        "<h2>Summary</h2>",
        _table(doc),
        _verdict(doc),
        f"<img alt='load std-dev, all strategies' src='data:image/png;base64,{_std_figure(results)}'>",
        _events_table(doc),
    ]
    if scenario.dispatch is not None and any(r.dispatch is not None for r in results):
        parts += [
            "<h2>Dispatch</h2>",
            "<p class='note'>Consumers draining backlogs through the dispatch rate limiters of the broker "
            "that owns each topic; dispatched msg/s are the topics' msgRateOut.</p>",
            f"<img alt='dispatch' src='data:image/png;base64,{_dispatch_figure(results, scenario.step)}'>",
        ]
    for r in results:
        counts = {k: sum(1 for d in r.decisions if d.type == k) for k in ("assignment", "unload", "split")}
        parts += [
            f"<h2>{html.escape(r.strategy)}</h2>",
            f"<p class='note'>{counts['unload']} unloads, {counts['split']} splits, "
            f"{counts['assignment']} assignments.</p>",
            f"<img alt='{html.escape(r.strategy)} broker load and unloads' "
            f"src='data:image/png;base64,{_strategy_figure(r, overload)}'>",
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)
