"""bundlewise's own strategies against Pulsar's on real brokers: does the live ordering follow the simulator's?

``python -m bench own_live [--stores etcd,zookeeper] [--scenarios a,b,c] [--duration 90m] [--time-scale 60]``
writes ``bench/results/own_live.json`` and ``.md``.  For each suite scenario (cut to ``--duration`` of Pulsar
time, the same cut for both) and each store, ``bundlewise live up`` plays it on real broker processes under:

* the modular load manager: BalancedPlanShedder, ThresholdShedder, AvgShedder (Pulsar's defaults);
* the extensible load manager: BalancedTransferShedder (the same strategy's extensible counterpart) and
  TransferShedder;

and ``bundlewise simulate`` plays the same cut scenario with the same five strategies.  Per scenario and store:
each run's ``load_std_mean``, ``max_load_p99``, unloads and the double-owner observations of ``live up``'s
observer; then, for each pair (own strategy, Pulsar strategy of the same manager), whether the own strategy is
better, equal or worse on ``load_std_mean`` live and in the simulator -- "same" when both say the same.

Each ``live up`` run takes about ``duration / time-scale`` plus ~30 s of start and stop; the default grid
(3 scenarios x 2 stores x 4 runs, one of them under both managers) takes about 40 minutes here.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import write_result

RESULT = "own_live"
TITLE = "bundlewise's own strategies vs Pulsar's on real brokers, side by side with the simulator"
SUITE = Path(__file__).resolve().parent.parent / "src" / "bundlewise" / "scenarios" / "suite"
SCENARIOS = ("restart-empty", "hot-partitioned-topic", "mixed-generation")
RUNS = (  # (strategy, managers): the own strategy runs under both managers as its counterparts
    ("BalancedPlanShedder", "modular,extensible"),
    ("ThresholdShedder", "modular"),
    ("AvgShedder", "modular"),
    ("TransferShedder", "extensible"),
)
PAIRS = (  # own (manager/strategy), Pulsar's of the same manager
    ("modular/BalancedPlanShedder", "modular/ThresholdShedder"),
    ("modular/BalancedPlanShedder", "modular/AvgShedder"),
    ("extensible/BalancedTransferShedder", "extensible/TransferShedder"),
)
SIM_NAMES = {
    "modular/BalancedPlanShedder": "BalancedPlanShedder",
    "modular/ThresholdShedder": "ThresholdShedder",
    "modular/AvgShedder": "AvgShedder",
    "extensible/BalancedTransferShedder": "BalancedTransferShedder",
    "extensible/TransferShedder": "TransferShedder",
}
SHOWN = ("load_std_mean", "max_load_p99", "unloads", "overloaded_broker_minutes")
TIE = 0.002  # load_std_mean closer than this is "equal"


def cut(name: str, duration: str, into: Path) -> Path:
    """The suite scenario ``name`` with its duration set to ``duration`` (events after it do not happen)."""
    text = (SUITE / f"{name}.toml").read_text()
    text, n = re.subn(r'(?m)^duration = "[^"]*"', f'duration = "{duration}"', text, count=1)
    if n != 1:
        raise SystemExit(f"error: {name}: no duration line to cut")
    path = into / f"{name}.toml"
    path.write_text(text)
    return path


def live(scenario: Path, store: str, strategy: str, managers: str, time_scale: int, out: Path) -> dict[str, Any]:
    """The runs' figures by ``manager/strategy``; a run that failed is ``{"failed": its last line of stderr}``."""
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "live", "up", "--cluster", str(scenario)]
    cmd += ["--strategy", strategy, "--managers", managers, "--time-scale", str(time_scale), "--no-progress"]
    cmd += ["--out", str(out)] + (["--zookeeper"] if store == "zookeeper" else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        print(f"  failed: {last}", file=sys.stderr, flush=True)
        return {f"{m}/{strategy}": {"failed": last} for m in managers.split(",")}
    doc: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return doc["strategies"]  # type: ignore[no-any-return]


def simulated(scenario: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bundlewise.cli.main", "simulate", "--cluster", str(scenario), "--no-progress"]
    cmd += ["--strategy", *SIM_NAMES.values()]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc["strategies"]  # type: ignore[no-any-return]


def order(own: float, pulsar: float) -> str:
    if abs(own - pulsar) < TIE:
        return "equal"
    return "better" if own < pulsar else "worse"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench own_live", description=__doc__.split("\n\n")[0])
    p.add_argument("--stores", default="etcd,zookeeper")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--duration", default="90m")
    p.add_argument("--time-scale", type=int, default=60)
    args = p.parse_args(argv or [])
    stores = [s for s in args.stores.split(",") if s]
    payload: dict[str, Any] = {"duration": args.duration, "time_scale": args.time_scale, "scenarios": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in [s for s in args.scenarios.split(",") if s]:
            scenario = cut(name, args.duration, Path(tmp))
            sim = simulated(scenario)
            entry: dict[str, Any] = {"simulate": {k: {m: sim[v][m] for m in SHOWN} for k, v in SIM_NAMES.items()}}
            for store in stores:
                t0 = time.monotonic()
                rows: dict[str, Any] = {}
                for strategy, managers in RUNS:
                    out = Path(tmp) / f"{name}-{store}-{strategy}"
                    for key, m in live(scenario, store, strategy, managers, args.time_scale, out).items():
                        rows[key] = m if "failed" in m else {k: m[k] for k in (*SHOWN, "double_owner_observations")}
                    print(
                        f"{name} {store} {strategy}: done ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True
                    )
                pairs = []
                for own, pulsar in PAIRS:
                    if own not in rows or pulsar not in rows or "failed" in rows[own] or "failed" in rows[pulsar]:
                        continue
                    live_order = order(rows[own]["load_std_mean"], rows[pulsar]["load_std_mean"])
                    sim_order = order(sim[SIM_NAMES[own]]["load_std_mean"], sim[SIM_NAMES[pulsar]]["load_std_mean"])
                    pairs.append(
                        {"own": own, "pulsar": pulsar, "live": live_order, "simulate": sim_order,
                         "same": live_order == sim_order}
                    )  # fmt: skip
                entry[store] = {"runs": rows, "pairs": pairs, "wall_seconds": round(time.monotonic() - t0)}
                payload["scenarios"][name] = entry
                write_result(RESULT, payload, TITLE, markdown)  # after every cell: a stopped run keeps what it measured


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        f"Each suite scenario cut to {payload['duration']} of Pulsar time, `live up --time-scale "
        f"{payload['time_scale']}` on real broker processes, side by side with `simulate` of the same cut. "
        f"Ordering on `load_std_mean` (equal within {TIE}).",
        "",
    ]
    for name, entry in payload["scenarios"].items():
        lines += [f"## {name}", ""]
        stores = [s for s in entry if s != "simulate"]
        head = "| run | " + " | ".join(f"{m} ({s})" for s in ("simulate", *stores) for m in ("std", "p99", "unloads"))
        lines += [head + " | double owners |", "|---" * (1 + 3 * (1 + len(stores)) + 1) + "|"]
        for key, sim in entry["simulate"].items():
            cells = [f"{sim['load_std_mean']:.4f}", f"{sim['max_load_p99']:.4f}", str(sim["unloads"])]
            doubles = []
            for s in stores:
                r = entry[s]["runs"].get(key, {"failed": "not run"})
                if "failed" in r:
                    cells += ["failed", "-", "-"]
                    doubles.append("-")
                    continue
                cells += [f"{r['load_std_mean']:.4f}", f"{r['max_load_p99']:.4f}", str(r["unloads"])]
                doubles.append(str(r["double_owner_observations"]))
            lines.append(f"| {key} | " + " | ".join(cells) + f" | {', '.join(doubles)} |")
        lines += ["", "| store | own | against | live | simulate | same ordering |", "|---|---|---|---|---|---|"]
        for s in stores:
            for pr in entry[s]["pairs"]:
                same = "yes" if pr["same"] else "NO"
                lines.append(f"| {s} | {pr['own']} | {pr['pulsar']} | {pr['live']} | {pr['simulate']} | {same} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
