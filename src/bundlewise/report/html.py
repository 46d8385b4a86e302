"""``report.html``: one self-contained page that answers "which strategy fits this workload, and why?".

Top to bottom:

1. **Verdict** — two or three sentences built from the metrics (``report.verdict``).
2. **Summary** — every metric of ``summary.json`` as a row (label, unit, one column per strategy), numbers
   written as the terminal table writes them; no cell is singled out, the verdict does the judging.
3. **Definitions** — one line and the unit of each metric shown, from the same table as the summary and the
   plots' axes (``results.catalogue``), so a metric added to the simulator appears with whatever it has.
4. **Scenario events** — broker restarts, joins, removals and workload bursts, with their times; the same
   events are marked on every time plot (broker events as labelled vertical lines, bursts as shaded spans).
5. **Load std-dev of every strategy** over time, then per strategy its brokers' true load (overload
   threshold dashed) and its unloads, splits (and merges) per interval; with a ``[dispatch]`` section, dispatch.
6. **Decisions** — every unload and split of every strategy with its reason, in a table sorted by any
   column with a click (a few lines of inline script) and scrolled in its own box.

Plots are matplotlib PNGs (Agg backend) embedded as base64: the page needs no other file and no network.
A simulated and a live run are rendered alike, from the run-results contract alone (``bundlewise.results``:
the ``RunResult`` of each run, the ``RunInfo`` of the scenario, the ``summary.json`` document).
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from bundlewise.model.durations import format_duration
from bundlewise.report.verdict import METHOD, verdict
from bundlewise.results.catalogue import format_value, metric_def, metric_keys
from bundlewise.results.decisions import decision_row
from bundlewise.results.record import RunInfo, RunResult

EVENT_COLOURS = {"add": "tab:green", "return": "tab:green", "remove": "tab:red", "restart": "tab:orange"}
EVENT_WORDS = {"add": "joins", "return": "is back", "remove": "is removed", "restart": "restarts"}
BURST_COLOUR = "tab:purple"
LOAD_UNIT = metric_def("max_load_p99").unit  # the unit of a broker's load on the page: %
STD_UNIT = metric_def("load_std_mean").unit  # of the load std-dev: percentage points
SETTLED_PP = 5.0  # settle_minutes' threshold, in STD_UNIT


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _hours(times: np.ndarray) -> np.ndarray:
    return times / 3_600_000


def _mark_events(ax: Any, scenario: RunInfo, events: Sequence[dict[str, Any]], labels: bool = True) -> None:
    """Broker events as vertical dotted lines, workload bursts as shaded spans (labelled at the bottom)."""
    for b in scenario.bursts:
        start, end = b.at / 3_600_000, (b.at + b.duration) / 3_600_000
        ax.axvspan(start, end, color=BURST_COLOUR, alpha=0.08, linewidth=0)
        if labels:
            ax.annotate(
                f"burst {b.namespace} x{b.factor:g}",
                (start, 0.98),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                color=BURST_COLOUR,
                va="top",
                ha="left",
            )
    grouped: dict[tuple[int, str], list[str]] = {}
    for e in events:
        grouped.setdefault((e["time_ms"], e["action"]), []).append(e["broker"])
    span = max(scenario.duration, 1)
    last_label = None
    for (ms, action), names in grouped.items():
        t = ms / 3_600_000
        c = EVENT_COLOURS.get(action, "grey")
        ax.axvline(t, color=c, linestyle=":", linewidth=1.2)
        crowded = last_label is not None and ms - last_label < span / 40  # a label would overprint the last
        if labels and not crowded:
            last_label = ms
            label = f"{names[0]} {EVENT_WORDS.get(action, action)}" if len(names) == 1 else f"{action} x{len(names)}"
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


def _strategy_figure(r: RunResult, scenario: RunInfo, overload: float) -> str:
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    x = _hours(r.times)
    ever = np.flatnonzero(r.up.any(axis=0))
    for slot in ever:
        y = np.where(r.up[:, slot], r.true_load[:, slot], np.nan)
        ax.plot(x, y * 100, linewidth=0.9, label=r.brokers[slot] if len(ever) <= 12 else None)
    ax.axhline(overload * 100, color="black", linestyle="--", linewidth=0.8, label="overload threshold")
    _mark_events(ax, scenario, r.events)
    ax.set_ylabel(f"broker true load ({LOAD_UNIT})")
    ax.set_title(f"{r.strategy}: broker load over time")
    ax.grid(alpha=0.3)
    if len(ever) <= 12:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    unload_t = np.array([d.time_ms for d in r.decisions if d.type == "unload"], dtype=float)
    split_t = np.array([d.time_ms for d in r.decisions if d.type == "split"], dtype=float)
    merge_t = np.array([d.time_ms for d in r.decisions if d.type == "merge"], dtype=float)
    span = float(r.times[-1] + (r.times[1] - r.times[0] if len(r.times) > 1 else 60_000))
    bins = np.linspace(0, span, min(60, max(2, len(r.times))) + 1)
    width = (bins[1] - bins[0]) / 3_600_000
    u, _ = np.histogram(unload_t, bins)
    s, _ = np.histogram(split_t, bins)
    ax2.bar(_hours(bins[:-1]), u, width=width, align="edge", color="tab:blue", label="unloads")
    ax2.bar(_hours(bins[:-1]), s, width=width, align="edge", bottom=u, color="tab:purple", label="splits")
    if len(merge_t):
        g, _ = np.histogram(merge_t, bins)
        ax2.bar(_hours(bins[:-1]), g, width=width, align="edge", bottom=u + s, color="tab:green", label="merges")
    _mark_events(ax2, scenario, r.events, labels=False)
    ax2.set_ylabel(f"bundles per {format_duration(int(bins[1] - bins[0]))}")
    ax2.set_xlabel("simulated time (h)")
    ax2.legend(fontsize=7, loc="upper right")
    ax2.grid(alpha=0.3)
    return _png(fig)


def _std_figure(results: Sequence[RunResult], scenario: RunInfo) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 3.4))
    for r in results:
        masked = np.where(r.up, r.true_load, np.nan)
        ok = r.up.any(axis=1)
        std = np.full(len(r.times), np.nan)
        std[ok] = np.nanstd(masked[ok], axis=1)
        ax.plot(_hours(r.times), std * 100, label=r.strategy, linewidth=1.1)
    ax.axhline(SETTLED_PP, color="black", linestyle="--", linewidth=0.8, label=f"settled ({SETTLED_PP:g} {STD_UNIT})")
    _mark_events(ax, scenario, results[0].events if results else [])
    ax.set_ylabel(f"load std-dev ({STD_UNIT})")
    ax.set_xlabel("simulated time (h)")
    ax.set_title("Load std-dev across brokers, every strategy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


LINE_STYLES = ("-", "--", ":", "-.")


def _dispatch_figure(results: Sequence[RunResult], scenario: RunInfo) -> str:
    """Dispatched msg/s per broker (one line style per strategy) and the remaining backlog over time."""
    plt = _plt()
    step_ms = scenario.step
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
    _mark_events(ax, scenario, results[0].events if results else [])
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.set_ylabel("dispatched msg/s")
    ax.set_title("Dispatch through the rate limiters: delivered messages and backlog")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3, loc="lower left")
    ax2.legend(fontsize=7, loc="lower left")
    ax2.set_ylabel(f"backlog ({metric_def('backlog_end_messages').unit})")
    ax2.set_xlabel("simulated time (h)")
    ax2.grid(alpha=0.3)
    return _png(fig)


def _e(text: Any) -> str:
    return html.escape(str(text))


def _name(strategy: str) -> str:
    """A strategy's name for a column head: breakable between its words (``Balanced<wbr>Plan<wbr>Shedder``), so
    that six strategies' columns fit a 1,280 px window."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "<wbr>", _e(strategy))


def _box(table: str) -> str:
    """A table inside its own horizontally scrolling box: a table wider than the page (a column per strategy,
    ``--strategy all``) scrolls inside the box instead of running off the page and being clipped."""
    return f"<div class='box'>{table}</div>"


def _summary_table(doc: dict[str, Any]) -> str:
    strategies = list(doc["strategies"])
    head = "".join(f"<th>{_name(s)}</th>" for s in strategies)
    rows = []
    for key in metric_keys(doc):
        d = metric_def(key)
        cells = "".join(f"<td>{_e(format_value(key, doc['strategies'][s].get(key)))}</td>" for s in strategies)
        rows.append(
            f"<tr><th class='k' title='{_e(key)}'>{_e(d.label)}</th><td class='u'>{_e(d.unit)}</td>{cells}</tr>"
        )
    return _box(f"<table class='summary'><tr><th>metric</th><th>unit</th>{head}</tr>{''.join(rows)}</table>")


def _definitions(doc: dict[str, Any]) -> str:
    rows = []
    for key in metric_keys(doc):
        d = metric_def(key)
        better = {True: "lower", False: "higher", None: "-"}[d.lower_is_better]
        rows.append(
            f"<tr><th class='k'>{_e(d.label)}</th><td class='m'>{_e(key)}</td><td class='u'>{_e(d.unit)}</td>"
            f"<td class='t'>{_e(d.definition)}</td><td>{better}</td></tr>"
        )
    return _box(
        "<table class='defs'><tr><th>metric</th><th>summary.json key</th><th>unit</th><th>definition</th>"
        f"<th>better</th></tr>{''.join(rows)}</table>"
    )


def _events(scenario: RunInfo) -> str:
    rows: list[tuple[int, str]] = []
    for e in scenario.events:
        what = f"{e.broker} {EVENT_WORDS.get(e.action, e.action)}"
        if e.action == "restart":
            what += f" (down {format_duration(e.down_for)}, back empty)"
        rows.append((e.at, what))
    for b in scenario.bursts:
        rows.append((b.at, f"burst: {b.namespace} traffic x{b.factor:g} for {format_duration(b.duration)}"))
    if not rows:
        return "<p class='note'>No broker event and no burst: the workload alone moves the load.</p>"
    body = "".join(f"<tr><td>{_e(format_duration(t))}</td><td class='t'>{_e(w)}</td></tr>" for t, w in sorted(rows))
    return _box(f"<table class='events'><tr><th>at</th><th>event</th></tr>{body}</table>")


def _decisions(results: Sequence[RunResult]) -> str:
    rows = []
    counts = []
    for r in results:
        n = {k: 0 for k in ("assignment", "unload", "split", "merge")}
        for d in r.decisions:
            n[d.type] += 1
            if d.type == "assignment":
                continue
            row = decision_row(d)
            children = [c.rsplit("/", 1)[-1] for c in row.get("children") or row.get("parts") or []]
            to = row.get("destination") or ", ".join(children) or "-"
            moved = row.get("throughput")
            mb = "" if moved is None else format_value("throughput_moved_bytes", moved)
            flap = "yes" if row.get("flap") else ""
            rows.append(
                f"<tr><td data-v='{d.time_ms}'>{_e(row['time'])}</td><td>{_e(r.strategy)}</td><td>{_e(d.type)}</td>"
                f"<td class='m'>{_e(row['bundle'])}</td><td>{_e(row['broker'])}</td><td class='w'>{_e(to)}</td>"
                f"<td data-v='{moved or 0}'>{mb}</td><td>{flap}</td><td class='t'>{_e(row['reason'])}</td></tr>"
            )
        merges = f", {n['merge']} merges" if "merges" in r.metrics else ""
        counts.append(
            f"{_e(r.strategy)}: {n['unload']} unloads, {n['split']} splits{merges}, {n['assignment']} assignments"
        )
    header = "".join(
        f"<th onclick='sortBy(this)'>{h}</th>"
        for h in ("at", "strategy", "decision", "bundle", "from", "to", "moved (MB/s)", "flap", "reason")
    )
    table = (
        f"<div class='scroll'><table id='decisions' class='decisions'><tr>{header}</tr>{''.join(rows)}</table></div>"
        if rows
        else "<p class='note'>No strategy unloaded or split a bundle.</p>"
    )
    return f"<p class='note'>{'; '.join(counts)}. Click a column to sort.</p>{table}"


def _events_table(doc: dict[str, Any]) -> str:
    """Per event (the start first): minutes to settle, and for a broker that starts the minutes until it carries
    50 % / 80 % of the fleet-average load, one column group per strategy (``summary.json``'s ``events``)."""
    strategies = list(doc["strategies"])
    runs = [doc["strategies"][s].get("events") or [] for s in strategies]
    if not runs or not runs[0]:
        return ""
    head = "".join(f"<th colspan='3'>{_name(s)}</th>" for s in strategies)
    sub = "<th>settle</th><th>50 %</th><th>80 %</th>" * len(strategies)
    rows = []
    for i, e in enumerate(runs[0]):
        what = e["action"] if e["broker"] is None else f"{e['action']} {e['broker']}"
        cells = []
        for run in runs:
            ev = run[i] if i < len(run) else {}
            for key in ("settle_minutes", "reach_50_minutes", "reach_80_minutes"):
                value = ev.get(key)
                shown = format_value("settle_minutes", value) if value is not None or key == "settle_minutes" else "-"
                cells.append(f"<td>{_e(shown)}</td>")
        label = f"{format_duration(int(e['time_ms']))} {what}"
        rows.append(f"<tr><th class='k'>{_e(label)}</th>{''.join(cells)}</tr>")
    return (
        "<p class='note'>Minutes after each event until the load std-dev stays at or below 5 pp for 10 minutes "
        "(settle), and for a broker that starts, until it carries 50 % and 80 % of the fleet-average load.</p>"
        + _box(f"<table class='events'><tr><th>event</th>{head}</tr><tr><th></th>{sub}</tr>{''.join(rows)}</table>")
    )


SORT_SCRIPT = """<script>
function sortBy(th){const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th);
const rows=[...t.rows].slice(1),up=th.dataset.dir!=='up';th.dataset.dir=up?'up':'down';
const key=r=>{const c=r.cells[i];return c.dataset.v!==undefined?parseFloat(c.dataset.v):c.textContent};
rows.sort((a,b)=>{const x=key(a),y=key(b);return (x<y?-1:x>y?1:0)*(up?1:-1)});
rows.forEach(r=>t.tBodies[0].appendChild(r));}
</script>"""

CSS = """body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
table{border-collapse:collapse;margin:12px 0}.box{overflow-x:auto;max-width:100%}.box>table{margin:6px 0}
td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}
th.k{text-align:left;font-weight:normal}td.u,td.m{text-align:left;color:#555;font-family:monospace}
td.t{text-align:left}img{max-width:100%}.note{color:#555;font-size:90%}
.verdict{background:#f3f7ee;border-left:4px solid #5a8f29;padding:10px 16px;font-size:110%;line-height:1.45}
.scroll{max-height:520px;overflow:auto;border:1px solid #ccc}
table.decisions{margin:0;font-size:80%;width:100%}
table.decisions th{position:sticky;top:0;background:#f4f4f4;cursor:pointer;text-align:left}
table.decisions td{text-align:left;vertical-align:top;white-space:nowrap}
table.decisions td.t,table.decisions td.w{white-space:normal}table.decisions td.t{min-width:240px}
td.u{white-space:nowrap}table.summary th,table.defs th,table.events th{text-align:left}"""


def render_report(scenario: RunInfo, results: Sequence[RunResult], doc: dict[str, Any]) -> str:
    """The whole page as a string."""
    overload = scenario.overload
    brokers = scenario.brokers
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>bundlewise simulation: {_e(scenario.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Scenario {_e(scenario.name)}</h1>",
        f"<p>{_e(scenario.description)}</p>",
        f"<p class='note'>{brokers} brokers, {scenario.namespaces} namespaces, "
        f"{format_duration(scenario.duration)} simulated at a {format_duration(scenario.step)} tick, seed "
        f"{scenario.seed}, the same traffic for every strategy.</p>",
        "<h2>Verdict</h2>",
        f"<div class='verdict'>{' '.join(_e(s) for s in verdict(doc))}</div>",
        f"<p class='note'>{_e(METHOD)}</p>",
        "<h2>Summary</h2>",
        _summary_table(doc),
        "<h2>What the metrics mean</h2>",
        "<p class='note'>True load = a broker's weighted max of CPU and NIC in/out usage, in % of its capacity; "
        "pp = percentage points of that load.</p>",
        _definitions(doc),
        "<h2>Scenario events</h2>",
        _events(scenario),
        "<h2>Settling and refill after each event</h2>",
        _events_table(doc),
        "<h2>Load balance over time</h2>",
        f"<img alt='load std-dev, every strategy' src='data:image/png;base64,{_std_figure(results, scenario)}'>",
    ]
    for r in results:
        parts += [
            f"<h3>{_e(r.strategy)}</h3>",
            f"<img alt='{_e(r.strategy)} broker load and unloads' "
            f"src='data:image/png;base64,{_strategy_figure(r, scenario, overload)}'>",
        ]
    if scenario.dispatch and any(r.dispatch is not None for r in results):
        parts += [
            "<h2>Dispatch</h2>",
            "<p class='note'>Consumers draining backlogs through the dispatch rate limiters of the broker "
            "that owns each topic; dispatched msg/s are the topics' msgRateOut.</p>",
            f"<img alt='dispatch' src='data:image/png;base64,{_dispatch_figure(results, scenario)}'>",
        ]
    parts += ["<h2>Decisions</h2>", _decisions(results), SORT_SCRIPT, "</body></html>\n"]
    return "\n".join(parts)
