"""``bundlewise split`` (WHERE: the four algorithms) and ``bundlewise split-check`` (WHEN), docs/commands.md.

``split-check`` applies the split conditions to recorded snapshots, one step at a time:

* modular snapshots: the leader's split detector (``BundleSplitterTask``) over its ``LoadData`` (the
  leader's bookkeeping fills in bundle data the snapshot does not give);
* ``--extensible``: every broker splits only its own bundles with its own split strategy
  (``DefaultNamespaceBundleSplitStrategyImpl``; Pulsar runs one ``SplitScheduler`` per broker), kept
  across steps so consecutive hits count.  A broker's bundle stats are its ``topBundles`` entry
  (``lastStats``-shaped map, or a ``topBundlesLoadData`` list); ``splittingBundles`` (optional) lists
  bundles already splitting; the scheduler's gate (``loadBalancerEnabled`` and
  ``loadBalancerAutoBundleSplitEnabled``) applies.

A namespace's bundle count is ``--bundle-counts`` when given for it, else the number of distinct bundles
of the namespace in the snapshot.  Output, JSON Lines, printed once every step is known good:
``{"step": i, "split": [{"bundle", "broker", "reasons"}]}``.
"""

from __future__ import annotations

import argparse
import sys

from bundlewise.algorithms.extensible.split_strategy import ExtensibleSplitStrategy
from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.splitting.algorithms import ALGORITHMS, SplitRequest, TopicLoad, split_bundle
from bundlewise.algorithms.splitting.detector import find_bundles_to_split
from bundlewise.cli.bundle import parse_boundaries
from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.cli.explain import columns, when
from bundlewise.cli.inputs import Document, SharedBundles, Step, emit, iterate_steps, read_inputs
from bundlewise.config import Config
from bundlewise.config.keys import JAVA_INT_MAX
from bundlewise.config.views import LeaderSettings
from bundlewise.model import fields
from bundlewise.model.admin import split_command
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import SplitDecision
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import parse_extensible_snapshot
from bundlewise.model.names import NamespaceName, TopicName
from bundlewise.model.names import bundle_namespace as namespace_of
from bundlewise.model.snapshot import parse_modular_snapshot
from bundlewise.model.textfiles import read_json

SPLIT_DESCRIPTION = """\
Compute where Pulsar would split a bundle, with one of its four NamespaceBundleSplitAlgorithms:
  range_equally_divide        halve the hash range (topics ignored)
  topic_count_equally_divide  halve the topics (needs --topics, at least 2)
  specified_positions_divide  at --positions strictly inside the bundle (needs --topics, at least 2)
  flow_or_qps_equally_divide  cut whenever the accumulated msg rate or throughput of the topics, in hash
                              order, would exceed loadBalancerNamespaceBundleMaxMsgRate /
                              ...MaxBandwidthMbytes (may give several boundaries)
Output: {"boundaries": [...], "children": [...]}, both null when the algorithm declines to split.
Positions outside the bundle are dropped as Pulsar drops them; if none is inside, that is an error."""

CHECK_DESCRIPTION = """\
Apply Pulsar's automatic split conditions (BundleSplitterTask) to a recorded snapshot: a bundle with at
least 2 topics is split when its latest sample has more than loadBalancerNamespaceBundleMaxTopics topics
or ...MaxSessions producers+consumers, or its long-term msg rate / throughput exceeds ...MaxMsgRate /
...MaxBandwidthMbytes, while the namespace stays below loadBalancerNamespaceMaximumBundles.
INPUT: a modular snapshot (an extensible one with --extensible), {"steps": [...]} or JSON Lines; one line per step:
{"step": i, "split": [{"bundle", "broker", "reasons"}]}."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "split",
        help="where a split algorithm would cut a bundle",
        description=SPLIT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--algorithm", required=True, metavar="NAME", help=" | ".join(ALGORITHMS))
    p.add_argument("--bundle", required=True, help="tenant/namespace/0xLLLLLLLL_0xUUUUUUUU")
    p.add_argument(
        "--topics",
        metavar="FILE",
        help='JSON list of {"name", "msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut"}',
    )
    p.add_argument(
        "--positions",
        metavar="P1,P2,...",
        help="split positions, decimal or 0x-hex (write --positions=-1,... when the list starts with a minus)",
    )
    p.add_argument("--format", choices=("json", "table"), default="json", help="JSON (default) or a table")
    add_config_options(p)
    p.set_defaults(func=run_split)

    c = sub.add_parser(
        "split-check",
        help="which bundles Pulsar's leader would split",
        description=CHECK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument(
        "--extensible",
        action="store_true",
        help="the extensible load manager's split strategy on extensible snapshots (counts consecutive hits)",
    )
    c.add_argument(
        "--bundle-counts",
        metavar="NS=N,...",
        help="current bundle count per namespace (default: distinct bundles in the snapshot)",
    )
    c.add_argument(
        "--format",
        choices=("json", "table", "admin"),
        default="json",
        help="JSON Lines (default), a table with each condition's value and threshold, or the pulsar-admin commands",
    )
    add_config_options(c)
    c.add_argument(
        "input",
        nargs="+",
        metavar="INPUT",
        help="snapshot or load-report files (.json / .jsonl) or directories of them; - for stdin",
    )
    c.set_defaults(func=run_split_check)


def _topics(path: str) -> list[TopicLoad]:
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("expected a JSON list of topics", source=path)
    out = []
    for i, item in enumerate(data):
        where = f"[{i}]"
        try:
            d = fields.obj(item, where)
            name = fields.text(d, "name", where)
            if not name:
                raise InputError("expected a topic name", field=f"{where}.name")
            TopicName.parse(name)
            out.append(
                TopicLoad(
                    name,
                    msgRateIn=fields.num(d, "msgRateIn", where),
                    msgRateOut=fields.num(d, "msgRateOut", where),
                    msgThroughputIn=fields.num(d, "msgThroughputIn", where),
                    msgThroughputOut=fields.num(d, "msgThroughputOut", where),
                )
            )
        except InputError as e:
            raise e.within(path) from None
    return out


def run_split(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.algorithm not in ALGORITHMS:
        raise InputError(
            f"unknown algorithm {args.algorithm!r}; expected one of {', '.join(ALGORITHMS)}", field="--algorithm"
        )
    try:
        bundle = Bundle.parse(args.bundle)
    except InputError as e:
        raise InputError(str(e), field="--bundle") from None
    positions = parse_boundaries(args.positions, "--positions") if args.positions else None
    if args.algorithm == "specified_positions_divide":
        if not positions:
            raise InputError("specified_positions_divide needs --positions P1,P2,...", field="--positions")
        if not any(bundle.lower < p < bundle.upper for p in positions):
            raise InputError(f"no position lies strictly inside {bundle.name}", field="--positions")
    topics = _topics(args.topics) if args.topics else []
    result = split_bundle(args.algorithm, SplitRequest(bundle, topics, positions), config)
    if args.format == "table":
        if result is None:
            sys.stdout.write(f"{args.algorithm} does not split {bundle.name}\n")
            return 0
        rows = [("child", "lower", "upper", "hashes")] + [
            (c.name, f"0x{c.lower:08x}", f"0x{c.upper:08x}", f"{c.upper - c.lower + int(c.upper_closed):,}")
            for c in result[1]
        ]
        sys.stdout.write(f"{args.algorithm} splits {bundle.name} at {', '.join(f'0x{b:08x}' for b in result[0])}\n")
        for line in columns(rows, right=(3,)):
            sys.stdout.write(line + "\n")
    elif result is None:
        emit({"boundaries": None, "children": None})
    else:
        boundaries, children = result
        emit({"boundaries": boundaries, "children": [c.name for c in children]})
    return 0


def parse_bundle_counts(text: str | None) -> dict[str, int] | None:
    """``NS=N,…``: each namespace once, N a bundle count Pulsar can hold (1 to 2^31 - 1, an ``int``)."""
    if text is None:
        return None
    out: dict[str, int] = {}
    for item in text.split(","):
        ns, sep, n = item.strip().rpartition("=")
        if not sep or not ns or not n.strip().isdigit():
            raise InputError(f"expected NS=N, got {item!r}", field="--bundle-counts")
        try:
            NamespaceName.parse(ns)
        except InputError as e:
            raise InputError(str(e), field="--bundle-counts") from None
        count = int(n)
        if not 1 <= count <= JAVA_INT_MAX:
            raise InputError(
                f"expected a bundle count of 1 to {JAVA_INT_MAX:,} for {ns}, got {count:,}", field="--bundle-counts"
            )
        if ns in out:
            raise InputError(f"{ns} is given twice; expected each namespace once", field="--bundle-counts")
        out[ns] = count
    return out


def _extensible_step(
    step: Step, given: dict[str, int], strategies: dict[str, ExtensibleSplitStrategy], shared: SharedBundles
) -> list[SplitDecision]:
    snap = parse_extensible_snapshot(step.doc, step.where, step.config.weights(), step.now)
    shared.note(step, snap.shared)
    if not step.config.view(LeaderSettings).splitting_active:
        return []
    per_ns: dict[str, set[str]] = {}
    for top in snap.top_bundles.values():
        for b in top.topBundlesLoadData:
            per_ns.setdefault(namespace_of(b.bundleName), set()).add(b.bundleName)

    def count(ns: str) -> int:
        return given[ns] if ns in given else len(per_ns.get(ns, ()))

    decisions: list[SplitDecision] = []
    for broker in [*snap.top_bundles, *(b for b in strategies if b not in snap.top_bundles)]:
        top_data = snap.top_bundles.get(broker)
        stats = top_data.stats_by_bundle() if top_data is not None else {}
        strategy = strategies.setdefault(broker, ExtensibleSplitStrategy())
        decisions += strategy.find_bundles_to_split(broker, stats, count, snap.splitting_bundles, step.config)
    return decisions


def run_split_check(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    counts = parse_bundle_counts(args.bundle_counts)
    return split_documents(args, config, read_inputs(args.input), counts)


def split_documents(
    args: argparse.Namespace, config: Config, documents: list[Document], counts: dict[str, int] | None = None
) -> int:
    """``split-check`` on steps already read (also ``live advise`` on an extensible cluster); ``args`` gives
    ``extensible`` and ``format``."""
    if args.extensible and any(d.from_reports for d in documents):
        raise InputError(
            "load reports are the modular load manager's LocalBrokerData; --extensible reads extensible snapshots",
            source=documents[0].source,
        )
    leader = LeaderBundleData()
    strategies: dict[str, ExtensibleSplitStrategy] = {}  # each broker's own, kept across steps
    rows: list[tuple[Step, list[SplitDecision]]] = []
    shared = SharedBundles()
    for step in iterate_steps(documents, config):
        try:
            if args.extensible:
                decisions = _extensible_step(step, counts or {}, strategies, shared)
            else:
                snapshot = parse_modular_snapshot(step.doc, step.where)
                shared.note(step, snapshot.shared)
                load = leader.apply(snapshot)
                decisions = find_bundles_to_split(load, step.config, counts)
        except InputError as e:
            raise e.within(step.source) from None
        rows.append((step, decisions))
    shared.tell()
    for step, decisions in rows:
        if args.format == "table":
            _split_table(step, decisions)
        elif args.format == "admin":
            _split_admin(step, decisions)
        else:
            emit({"step": step.index, "split": [d.to_json() for d in decisions]})
    return 0


def _split_table(step: Step, decisions: list[SplitDecision]) -> None:
    sys.stdout.write(f"step {step.index}{when(step.timestamp)}\n")
    if not decisions:
        sys.stdout.write("  no bundle meets a split condition\n")
        return
    rows = [("bundle", "broker", "conditions (value > threshold)")] + [
        (d.bundle, d.broker, d.detail) for d in decisions
    ]
    for line in columns(rows):
        sys.stdout.write(line + "\n")


def _split_admin(step: Step, decisions: list[SplitDecision]) -> None:
    """``pulsar-admin namespaces split-bundle`` per decision; ``--unload`` as the leader's automatic split
    does with ``loadBalancerAutoUnloadSplitBundlesEnabled``."""
    unload = step.config.view(LeaderSettings).unload_split_children
    n = len(decisions)
    sys.stdout.write(
        f"# step {step.index}{when(step.timestamp)}: "
        + (f"{n} bundle{'s' * (n != 1)} to split\n" if n else "no bundle meets a split condition\n")
    )
    for d in decisions:
        sys.stdout.write(f"# {d.bundle} on {d.broker}: {d.detail}\n")
        command = split_command(d.bundle, unload)
        sys.stdout.write(
            (command if command is not None else f"# (no command: {d.bundle!r} is not a bundle name)") + "\n"
        )
