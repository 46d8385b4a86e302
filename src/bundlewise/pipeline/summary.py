"""The run's summary: the JSON document on stdout, the one-screen human form on stderr."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Summary:
    rows_in: int
    rows_rejected: int
    bundles: int
    brokers: int
    time_span: tuple[int | None, int | None]
    hottest: list[dict[str, Any]]
    split_candidates: int
    reject_reasons: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    time_fallback: str | None = None  # dumps: where the time of a file that carries none came from
    route: str = ""  # the route the run took and why (``routes.Route.describe``; stderr only)

    def to_json(self) -> dict[str, Any]:
        return {
            "rowsIn": self.rows_in,
            "rowsRejected": self.rows_rejected,
            "rejectReasons": self.reject_reasons,
            "bundles": self.bundles,
            "brokers": self.brokers,
            "timeSpan": {"from": self.time_span[0], "to": self.time_span[1]},
            "splitCandidates": self.split_candidates,
            "hottestBundles": self.hottest,
            "outputs": self.outputs,
            "seconds": round(self.seconds, 3),
            "timeFallback": self.time_fallback,
        }


def summarise(overview: list[dict[str, Any]], reasons: dict[str, int]) -> Summary:
    """The summary from the per-bundle overview rows and the count of rejects per reason."""
    rejected = sum(reasons.values())
    hottest = sorted(overview, key=lambda r: (-r["peakThroughput"], r["bundle"]))[:5]
    return Summary(
        rows_in=sum(int(r["rows"]) for r in overview) + rejected,
        rows_rejected=rejected,
        bundles=len(overview),
        brokers=len({b for r in overview for b in r["brokers"] if b is not None}),
        time_span=(min((r["t0"] for r in overview), default=None), max((r["t1"] for r in overview), default=None)),
        hottest=[
            {"bundle": r["bundle"], "peakThroughput": r["peakThroughput"], "peakMsgRate": r["peakMsgRate"]}
            for r in hottest
        ],
        split_candidates=sum(int(r["candidates"]) for r in overview),
        reject_reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
    )


def no_valid_record(s: Summary) -> str:
    """Why a run found nothing to work with (the run stops with exit status 2)."""
    if s.rows_in == 0:
        return "no valid record: the input holds no rows"
    top = "; ".join(f"{reason} ({n:,})" for reason, n in list(s.reject_reasons.items())[:3])
    return f"no valid record: all {s.rows_in:,} rows rejected; most frequent reasons: {top}"


def format_summary(s: Summary) -> str:
    """The one-screen human summary (stderr)."""
    lines = [
        f"rows in        {s.rows_in:,}",
        f"rows rejected  {s.rows_rejected:,}",
    ]
    lines += [f"  {n:>10,}  {reason}" for reason, n in s.reject_reasons.items()]
    lines += [
        f"bundles        {s.bundles:,}",
        f"brokers        {s.brokers:,}",
        f"time span      {s.time_span[0]} .. {s.time_span[1]} ms",
        *([f"  a dump file without a time of its own is at {s.time_fallback}"] if s.time_fallback else []),
        f"split candidates {s.split_candidates:,}",
        "hottest bundles (peak throughput in+out, B/s; peak msg/s):",
    ]
    lines += [f"  {h['bundle']}  {h['peakThroughput']:,.0f}  {h['peakMsgRate']:,.1f}" for h in s.hottest]
    lines += [f"route          {s.route}"] if s.route else []
    lines.append(f"took {s.seconds:.1f}s")
    return "\n".join(lines)
