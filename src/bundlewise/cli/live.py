"""``bundlewise live up | status | advise``: the live load manager run, inspected and advised (docs/live/).

* ``live up [--store URL] [--brokers N | --cluster CLUSTER.toml] [--brokers-per-process K] [--workload TRACE]
  [--strategy NAME] [--time-scale K] [--duration D] [--managers modular,extensible] [--out DIR [--overwrite]]
  [--zookeeper] [--no-auth] [--producers N] [--consumers N] [--topics N] [--publish-rate R] [--message-size B]
  [--subscription-type T] [--[no-]batching] [--config F] [--set K=V]``: a scenario played on a real store and real
  broker processes (``live.harness.up``); stdout gets ``summary.json``'s document, stderr a progress line, the admin
  token, then the comparison table. ``loadManagerClassName`` picks the load manager; ``--managers`` plays the
  scenario once per listed manager, one after the other, with the same workload and seed, each run named
  ``MANAGER/STRATEGY`` in one set of outputs (the report shows them side by side). Under the extensible manager a
  strategy outside its family falls back to TransferShedder, as Pulsar's does; the modular one refuses an extensible
  strategy. Without ``--cluster`` the bundled default scenario's namespaces and workload run on ``--brokers``
  brokers (3) without its events; with ``--cluster``, ``--brokers N`` starts the scenario's first N starting brokers
  (more take ``[broker_defaults]``). ``--out`` follows the one atomic-output policy (``files.atomic``): an existing
  non-empty DIR is refused before anything starts unless ``--overwrite``; Ctrl-C leaves it as it was. Real clients
  (the scenario's ``[clients]``, the flags over it): the official client's producers and consumers run through the
  whole scenario (``live.harness.clients``) and ``summary.json`` gets what they saw (``CLIENT_METRIC_KEYS``,
  the loss check among them); their brokers keep persistent topics in file storage
  (``bundlewiseManagedLedgerStorage=file`` unless ``--set`` says otherwise), so a killed owner loses nothing.
  ``--brokers-per-process K`` starts the brokers up at time 0 K to a process (``LocalCluster(brokers_per_process=K)``);
  a scenario with ``restart`` or ``remove`` events is refused with K > 1 (the signal would reach the whole process).
* ``live status --store URL [--format json|table]``: brokers, leader, load and bundles, read from the store
  alone (``live.inspect.status``).
* ``live advise --store URL [--strategy NAME] [--format table|json|admin]``: what the strategy would unload on
  the load data in the store, printed as ``bundlewise shed`` prints it (``live.inspect.advise`` + ``cli.shed``);
  on an extensible cluster TransferShedder by default, then the split check (``cli.split.split_documents``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bundlewise.algorithms.registry import SheddingEntry, extensible_entry, modular_entry, shedding_entry
from bundlewise.cli.common import (
    SEED,
    TIME_SCALE,
    add_config_options,
    add_out_options,
    check_range,
    config_over,
    needs_extra,
)
from bundlewise.config.config import short_class_name
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.config.keys_modular import IMPL
from bundlewise.files import atomic
from bundlewise.live.inspect.reader import DEFAULT_TIMEOUT
from bundlewise.model.durations import parse_duration
from bundlewise.model.errors import InputError
from bundlewise.results.catalogue import comparison_table
from bundlewise.results.record import RunResult
from bundlewise.results.write import summary, summary_json, write_run
from bundlewise.sim.run import run_info
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.clients import MAX_CLIENTS, MAX_MESSAGE_SIZE, SUBSCRIPTION_TYPES, ClientsSpec
from bundlewise.traffic.trace import TraceWorkload
from bundlewise.traffic.workload import GeneratedWorkload


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "live",
        help="run a scenario on real brokers (up), read a store (status), advise on it (advise)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmds = p.add_subparsers(dest="live_command", metavar="{up,status,advise}", parser_class=type(p))
    cmds.required = True
    up = cmds.add_parser("up", help="start a store, brokers and lookup clients and play a scenario for real")
    up.add_argument("--store", metavar="URL", help="use this store (zk://… or etcd://…) instead of starting one")
    up.add_argument("--zookeeper", action="store_true", help="start Debian's ZooKeeper instead of etcd")
    up.add_argument(
        "--brokers",
        type=int,
        metavar="N",
        help="brokers at the start (default: the scenario's; 3)",
    )
    up.add_argument(
        "--brokers-per-process",
        type=int,
        default=1,
        metavar="K",
        help="run the starting brokers K to a process (bundlewise broker with --web repeated; 1). A scenario that "
        "kills or stops a broker (restart, remove) needs 1: a signal reaches every broker of its process",
    )
    up.add_argument("--cluster", metavar="CLUSTER.toml", help="scenario file or bundled name (default: default)")
    up.add_argument("--workload", metavar="TRACE", help="topic-samples trace: Parquet, CSV or JSON Lines")
    up.add_argument("--strategy", metavar="NAME", help="loadBalancerLoadSheddingStrategy for every broker")
    up.add_argument("--time-scale", type=float, default=60.0, metavar="K", help="Pulsar time K× faster (60)")
    up.add_argument("--duration", metavar="D", help="Pulsar time to run, e.g. 30m (default: the scenario's)")
    up.add_argument(
        "--managers",
        metavar="LIST",
        help="play the scenario once per load manager (modular, extensible; comma-separated) and compare them",
    )
    real = up.add_argument_group(
        "real clients",
        "producers and consumers of Apache Pulsar's official client (pip install 'bundlewise[clients]'), as "
        "pulsar-perf runs them; each flag overrides the scenario's [clients] section. With real clients the brokers "
        "keep persistent topics in file storage (bundlewiseManagedLedgerStorage=file unless --set), and "
        "summary.json counts messages_lost and messages_duplicated",
    )
    real.add_argument("--producers", type=int, metavar="N", help="producers, one topic each unless --topics")
    real.add_argument("--consumers", type=int, metavar="N", help="consumers of the subscription 'bundlewise'")
    real.add_argument("--topics", type=int, metavar="N", help="topics the clients use (default: one per producer)")
    real.add_argument("--publish-rate", type=float, metavar="R", help="messages per second per producer (100)")
    real.add_argument("--message-size", type=int, metavar="BYTES", help="message size in bytes (1024)")
    real.add_argument("--subscription-type", choices=SUBSCRIPTION_TYPES, help="the subscription's type (Shared)")
    real.add_argument("--batching", action=argparse.BooleanOptionalAction, default=None, help="producer batching (on)")
    add_out_options(up, "summary.json, timeline.parquet, decisions.jsonl, lookups.parquet and report.html")
    up.add_argument(
        "--keep-logs",
        metavar="DIR",
        help="copy every broker's and the store's log and the leaders' decision and load-data files (JSON Lines) "
        "into DIR when the run ends, also when it failed or was interrupted (a new or empty folder)",
    )
    up.add_argument("--no-auth", action="store_true", help="authenticationEnabled=false (default: tokens)")
    up.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    add_config_options(up)
    up.set_defaults(func=run_up)
    status = cmds.add_parser("status", help="brokers, leader, load and bundles read from a store (read-only)")
    status.add_argument("--store", required=True, metavar="URL")
    status.add_argument("--format", choices=("json", "table"), default="table")
    _add_timeout(status)
    status.set_defaults(func=run_status)
    advise = cmds.add_parser("advise", help="what a shedding strategy would unload, on a store's load data")
    advise.add_argument("--store", required=True, metavar="URL")
    advise.add_argument("--strategy", metavar="NAME", help="default: the configured loadBalancerLoadSheddingStrategy")
    advise.add_argument(
        "--format",
        choices=("json", "table", "admin"),
        default="table",
        help="as shed prints it: a table (default), JSON Lines, or the pulsar-admin commands to run",
    )
    advise.add_argument("--seed", type=int, default=0, help="seed of the destinations' random tie-breaks (0)")
    _add_timeout(advise)
    add_config_options(advise)
    advise.set_defaults(func=run_advise, plan_only=False)


def _add_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on a store that does not answer within this long (default {DEFAULT_TIMEOUT:g})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 3600], got {text!r}")
    return value


# -- live up ----------------------------------------------------------------------------------------


def _with_brokers(scenario: Scenario, n: int, keep_events: bool) -> Scenario:
    """The scenario with ``n`` brokers up at the start (its first starting ones, then defaults)."""
    if n < 1:
        raise InputError(f"expected a whole number >= 1, got {n}", field="--brokers")
    initial = list(scenario.initial[:n])
    brokers = list(scenario.brokers)
    k = 1
    while len(initial) < n:
        name = f"broker-{k}"
        k += 1
        if name in initial:
            continue
        if all(b.name != name for b in brokers):
            brokers.append(dataclasses.replace(scenario.broker_defaults, name=name))
        initial.append(name)
    events = scenario.events if keep_events else ()
    used = set(initial) | {e.broker for e in events}
    brokers = [b for b in brokers if b.name in used]
    return dataclasses.replace(scenario, brokers=tuple(brokers), initial=tuple(initial), events=events)


def _plan_scenario(args: argparse.Namespace) -> Scenario:
    from bundlewise.cli.simulate import resolve_scenario

    scenario = resolve_scenario(args.cluster)
    for w in scenario.warnings:
        sys.stderr.write(w + "\n")
    if args.cluster is None:
        return _with_brokers(scenario, args.brokers or 3, keep_events=False)
    if args.brokers is not None:
        return _with_brokers(scenario, args.brokers, keep_events=True)
    return scenario


MAX_PER_PROCESS = 100
SIGNALLED = ("restart", "remove")  # events that SIGKILL or SIGTERM a broker's process


def _check_per_process(k: int, scenario: Scenario) -> None:
    """Refuse ``--brokers-per-process`` > 1 with a scenario whose events signal a broker's process: the signal
    would take down every broker of that process, not the one the scenario names."""
    signalled = [e for e in scenario.events if e.action in SIGNALLED]
    if k > 1 and signalled:
        raise InputError(
            f"expected 1 with a scenario that kills or stops brokers ({len(signalled)} restart/remove events: "
            f"the signal would reach all {k} brokers of the process), got {k}",
            field="--brokers-per-process",
        )


STORAGE_KEY = "bundlewiseManagedLedgerStorage"
MANAGERS = {"modular": IMPL + "ModularLoadManagerImpl", "extensible": EXTENSIBLE_LOAD_MANAGER}


def _managers(args: argparse.Namespace) -> list[str]:
    """The load managers ``--managers`` names, in its order (none: one run with the configured one)."""
    if args.managers is None:
        return []
    names = [m.strip() for m in args.managers.split(",")]
    if not names or any(m not in MANAGERS for m in names) or len(set(names)) != len(names):
        raise InputError(
            f"expected distinct names among {', '.join(MANAGERS)}, comma-separated, got {args.managers!r}",
            field="--managers",
        )
    return names


def _manager_entry(manager_class: str, strategy: str) -> SheddingEntry:
    """The shedding strategy ``manager_class`` runs for the configured ``strategy``: the extensible manager
    keeps an extensible strategy and otherwise falls back to TransferShedder
    (``UnloadScheduler#createNamespaceUnloadStrategy``); the modular broker refuses an extensible one
    (``live.broker.modular.manager``), so it is refused here, before anything starts.  bundlewise's own
    strategies run as their counterpart under the other manager (``registry.COUNTERPARTS``)."""
    entry = shedding_entry(strategy)
    if short_class_name(manager_class) == short_class_name(EXTENSIBLE_LOAD_MANAGER):
        return extensible_entry(entry.name)
    return modular_entry(entry.name, field="--strategy")


def _clients(args: argparse.Namespace, scenario: Scenario) -> ClientsSpec | None:
    """The scenario's ``[clients]`` with the flags over it; None when neither asks for any."""
    base = scenario.clients or ClientsSpec()
    flags = {
        "producers": args.producers,
        "consumers": args.consumers,
        "topics": args.topics,
        "rate": args.publish_rate,
        "message_size": args.message_size,
        "subscription": args.subscription_type,
        "batching": args.batching,
    }
    check_range(args.producers, "--producers", 0, MAX_CLIENTS)
    check_range(args.consumers, "--consumers", 0, MAX_CLIENTS)
    check_range(args.topics, "--topics", 0, MAX_CLIENTS)
    check_range(args.message_size, "--message-size", 1, MAX_MESSAGE_SIZE)
    check_range(args.publish_rate, "--publish-rate", 0.001, 1_000_000)
    spec = dataclasses.replace(base, **{k: v for k, v in flags.items() if v is not None})
    return spec if spec.any else None


def run_up(args: argparse.Namespace) -> int:
    check_range(args.time_scale, "--time-scale", *TIME_SCALE)
    check_range(args.brokers, "--brokers", 1, 1000)
    check_range(args.brokers_per_process, "--brokers-per-process", 1, MAX_PER_PROCESS)
    managers = _managers(args)
    scenario = _plan_scenario(args)
    _check_per_process(args.brokers_per_process, scenario)
    config = config_over(scenario.config, args)
    strategy = args.strategy or str(config["loadBalancerLoadSheddingStrategy"])
    shedding_entry(strategy)  # an unknown name is refused before anything starts
    runs: list[tuple[str | None, str, SheddingEntry]] = []  # (key, loadManagerClassName, strategy)
    for m in managers:  # each manager's run; without --managers, one run under the configured manager
        entry = _manager_entry(MANAGERS[m], strategy)
        runs.append((f"{m}/{entry.name}", MANAGERS[m], entry))
    if not managers:
        manager_class = str(config["loadManagerClassName"])
        runs.append((None, manager_class, _manager_entry(manager_class, strategy)))
    clients = _clients(args, scenario)
    duration = parse_duration(args.duration, "--duration", "<args>") if args.duration else scenario.duration
    if duration <= 0:
        raise InputError("expected a positive duration", field="--duration")
    staging = atomic.stage(args.out, args.overwrite) if args.out is not None else None  # refused before any work
    if args.keep_logs is not None:
        atomic.check(args.keep_logs, False, flag="--keep-logs")  # refused before any work
    if clients is not None:
        with needs_extra("clients", "bundlewise live up --producers/--consumers"):
            from bundlewise.live.harness.clients import require_client

            require_client()  # refused before anything starts when the extra is missing
    with needs_extra("live", "bundlewise live up"), staging if staging is not None else contextlib.nullcontext():
        from bundlewise.cli.broker import read_trace
        from bundlewise.live.harness.events import LiveEvent
        from bundlewise.live.harness.outputs import build_result
        from bundlewise.live.harness.up import LivePlan, run_live
        from bundlewise.live.harness.workload import trace_table
        from bundlewise.live.store import layout

        logs = atomic.stage(args.keep_logs, False, flag="--keep-logs") if args.keep_logs is not None else None
        work = Path(tempfile.mkdtemp(prefix="bw-live-"))
        try:
            if args.workload:
                workload: Any = read_trace(args.workload)
            else:
                generated = GeneratedWorkload(scenario.namespaces, scenario.workload, scenario.seed)
                workload = TraceWorkload(trace_table(generated, duration, scenario.step), scenario.name)
            digest = work / "workload.npz"  # what the brokers load: the trace as read, without Arrow
            workload.save(digest)

            def ready(cluster: Any, token: str | None) -> None:
                sys.stderr.write(f"store: {cluster.store_url}\n")
                if token:
                    sys.stderr.write(f"admin token (role admin, a super-user): {token}\n")
                sys.stderr.flush()

            results: list[RunResult] = []
            for i, (key, manager, entry) in enumerate(runs):  # one after the other: the same workload and seed
                chosen = {"loadBalancerLoadSheddingStrategy": entry.name}
                if clients is not None and STORAGE_KEY not in config.explicit:
                    chosen[STORAGE_KEY] = "file"  # real clients' messages outlive a killed owner, as in Pulsar
                if key is not None:  # --managers: this run's manager
                    chosen["loadManagerClassName"] = manager
                extensible = short_class_name(manager) == short_class_name(EXTENSIBLE_LOAD_MANAGER)
                plan = LivePlan(
                    name=scenario.name if key is None else f"{scenario.name} [{key}]",
                    brokers=scenario.brokers,
                    initial=scenario.initial,
                    events=tuple(LiveEvent(e.at, e.action, e.broker, e.down_for) for e in scenario.events),
                    namespaces=tuple((n.name, n.bundles) for n in scenario.namespaces),
                    workload=workload,
                    workload_path=str(digest),
                    config=config.with_values(chosen),
                    strategy=entry.name,
                    time_scale=args.time_scale,
                    duration=duration,
                    step=scenario.step,
                    settings={**config.explicit, **chosen},
                    backend="zk" if args.zookeeper else "etcd",
                    store_url=args.store,
                    authentication=not args.no_auth,
                    work_dir=work / f"cluster-{i}",
                    leader_path=layout.EXTENSION_LEADER if extensible else layout.LEADER,
                    policies=scenario.policies,
                    clients=clients,
                    brokers_per_process=args.brokers_per_process,
                )
                run, _ = run_live(plan, progress=not args.no_progress, on_ready=ready)
                results.append(build_result(run, key))
            doc = summary(scenario.name, results)
            if staging is not None:
                from bundlewise.report.html import render_report

                write_run(staging.path, doc, results, render_report(run_info(scenario), results, doc))
        finally:
            if logs is not None:
                _keep_logs(work, logs)
            shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(summary_json(doc))
    sys.stderr.write(comparison_table(doc))
    return 0


def _keep_logs(work: Path, logs: atomic.Staging) -> None:
    """``--keep-logs``: every cluster's logs and leaders' files (``copy_logs``), published whatever became of the
    run."""
    from bundlewise.live.harness.cluster import copy_logs

    copy_logs(work, Path(logs.path))
    logs.publish()
    sys.stderr.write(f"logs kept in {logs.target}\n")


# -- live status / advise ---------------------------------------------------------------------------


def run_status(args: argparse.Namespace) -> int:
    with needs_extra("live", "bundlewise live status"):
        from bundlewise.live.inspect.status import read_status, status_table

        status = read_status(args.store, args.timeout)
    if args.format == "table":
        sys.stdout.write(status_table(status))
    else:
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
    return 0


def run_advise(args: argparse.Namespace) -> int:
    from bundlewise.algorithms.registry import EXTENSIBLE_FALLBACK
    from bundlewise.cli.common import config_from_args
    from bundlewise.cli.inputs import Document
    from bundlewise.cli.shed import shed_documents
    from bundlewise.cli.split import split_documents

    check_range(args.seed, "--seed", *SEED)
    config = config_from_args(args)
    with needs_extra("live", "bundlewise live advise"):
        from bundlewise.live.inspect.advise import is_extensible, read_snapshot

        snapshot = read_snapshot(args.store, args.timeout)
    documents = [Document(snapshot, args.store, "snapshot")]
    if not is_extensible(snapshot):
        args.strategy = args.strategy or str(config["loadBalancerLoadSheddingStrategy"])
        return shed_documents(args, config, documents)
    # an extensible cluster: TransferShedder unless told otherwise, then the owners' split check
    args.strategy = args.strategy or EXTENSIBLE_FALLBACK
    code = shed_documents(args, config, documents)
    args.extensible = True
    return code or split_documents(args, config, documents)
