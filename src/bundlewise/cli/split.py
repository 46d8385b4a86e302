"""``bundlewise split`` (WHERE: the four algorithms) and ``bundlewise split-check`` (WHEN), contract §3."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.algorithms.splitting.algorithms import ALGORITHMS, SplitRequest, TopicLoad, split_bundle
from bundlewise.algorithms.splitting.detector import find_bundles_to_split
from bundlewise.cli.bundle import parse_boundaries
from bundlewise.cli.common import add_config_options, config_from_args
from bundlewise.cli.inputs import emit, iterate_steps, read_documents, read_json
from bundlewise.model import fields
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.names import TopicName
from bundlewise.model.snapshot import parse_modular_snapshot

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
INPUT: a snapshot (contract §5), {"steps": [...]} or JSON Lines; one line per step:
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
        help="the extensible load manager's split strategy on §6 snapshots (counts consecutive hits)",
    )
    c.add_argument(
        "--bundle-counts",
        metavar="NS=N,...",
        help="current bundle count per namespace (default: distinct bundles in the snapshot)",
    )
    add_config_options(c)
    c.add_argument("input", metavar="INPUT", help="snapshot file, or - for stdin")
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
    if result is None:
        emit({"boundaries": None, "children": None})
    else:
        boundaries, children = result
        emit({"boundaries": boundaries, "children": [c.name for c in children]})
    return 0


def parse_bundle_counts(text: str | None) -> dict[str, int] | None:
    if not text:
        return None
    out: dict[str, int] = {}
    for item in text.split(","):
        ns, sep, n = item.strip().rpartition("=")
        if not sep or not ns or not n.strip().isdigit():
            raise InputError(f"expected NS=N, got {item!r}", field="--bundle-counts")
        out[ns] = int(n)
    return out


def run_split_check(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    counts = parse_bundle_counts(args.bundle_counts)
    args.bundle_counts = counts
    source = "<stdin>" if args.input == "-" else args.input
    docs = read_documents(args.input)
    if args.extensible:
        module: Any = importlib.import_module("bundlewise.cli.split_check_extensible")
        return int(module.run_extensible(args, config, docs, source))
    leader = LeaderBundleData()
    for step in iterate_steps(docs, config, source):
        try:
            snap = parse_modular_snapshot(step.doc, f"steps[{step.index}]" if len(docs) > 1 else "snapshot")
        except InputError as e:
            raise e.within(source) from None
        load = leader.apply(snap)
        decisions = find_bundles_to_split(load, step.config, counts)
        emit({"step": step.index, "split": [d.to_json() for d in decisions]})
    return 0
