"""``bundlewise bundle``: which bundle serves each topic (docs/commands.md).

The namespace's bundles are ``--bundles N`` equal ones (``PoliciesUtil#getBundles``; default
``defaultNumberOfNamespaceBundles``, at most ``loadBalancerNamespaceMaximumBundles``), explicit
``--boundaries``, or ``--bundles-file``: what ``pulsar-admin namespaces bundles TENANT/NS`` prints,
``{"boundaries": [...], "numBundles": n}`` (Pulsar's ``BundlesData``).  Boundaries must cover the whole hash
range, as Pulsar requires of a namespace's bundles.  Output: one JSON line per topic, or a table.
"""

from __future__ import annotations

import argparse
import sys

from bundlewise.cli.common import add_config_options, check_bundle_count, config_from_args
from bundlewise.cli.explain import columns
from bundlewise.cli.inputs import emit
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import NamespaceBundles, initial_boundaries, parse_boundaries_data, parse_position
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.names import TopicName
from bundlewise.model.textfiles import read_json


def parse_boundaries(text: str, where: str = "--boundaries") -> list[int]:
    out = []
    for part in text.split(","):
        try:
            out.append(parse_position(part))
        except ValueError:
            raise InputError(f"expected 0x-hex or decimal boundaries, got {part.strip()!r}", field=where) from None
    return out


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bundle",
        help="map topics to bundles (CRC-32 of the full topic name)",
        description="Map each topic to the namespace bundle that serves it, as Pulsar's "
        "ConsistentHashingTopicBundleAssigner does: CRC-32 of the UTF-8 full topic name "
        "(persistent://tenant/ns/name), looked up in the namespace's bundle boundaries. "
        "Output: one JSON line per topic {topic, hash, bundle}, or a table.",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--bundles",
        type=int,
        metavar="N",
        help="the namespace has N equal bundles (default: defaultNumberOfNamespaceBundles, 4)",
    )
    g.add_argument(
        "--boundaries",
        metavar="B0,B1,...",
        help="explicit boundaries, e.g. 0x00000000,0x40000000,0x80000000,0xffffffff",
    )
    g.add_argument(
        "--bundles-file",
        metavar="FILE",
        help='what `pulsar-admin namespaces bundles TENANT/NS` prints: {"boundaries": [...], "numBundles": n}',
    )
    p.add_argument("--format", choices=("json", "table"), default="json", help="JSON Lines (default) or a table")
    add_config_options(p)
    p.add_argument(
        "topics",
        nargs="*",
        metavar="TOPIC",
        help="topic names (a short name t means persistent://public/default/t); stdin if none",
    )
    p.set_defaults(func=run)


def _boundaries(args: argparse.Namespace) -> list[int]:
    config = config_from_args(args)
    if args.boundaries:
        return list(parse_boundaries_data(parse_boundaries(args.boundaries), "--boundaries"))
    if args.bundles_file:
        try:
            return list(parse_boundaries_data(read_json(args.bundles_file), "bundles"))
        except InputError as e:
            raise e.within(args.bundles_file) from None
    n = args.bundles if args.bundles is not None else config.view(SplitSettings).default_bundles
    check_bundle_count(n, config)
    return initial_boundaries(n)


def run(args: argparse.Namespace) -> int:
    boundaries = _boundaries(args)
    topics = args.topics or [line.strip() for line in sys.stdin if line.strip()]
    if not topics:
        raise InputError("no topic given (arguments or one per line on stdin)", field="TOPIC")
    cache: dict[str, NamespaceBundles] = {}
    rows = []
    for raw in topics:
        try:
            topic = TopicName.parse(raw)
        except InputError as e:
            raise InputError(str(e), field="TOPIC") from None
        ns = str(topic.namespace)
        bundles = cache.get(ns)
        if bundles is None:
            bundles = cache[ns] = NamespaceBundles.of(ns, boundaries)
        name = str(topic)
        rows.append({"topic": name, "hash": crc32_hash(name), "bundle": bundles.find_bundle(topic).name})
    if args.format == "table":
        table = [("topic", "hash", "bundle")] + [
            (str(r["topic"]), f"0x{r['hash']:08x}", str(r["bundle"])) for r in rows
        ]
        for line in columns(table, prefix=""):
            sys.stdout.write(line + "\n")
    else:
        for r in rows:
            emit(r)
    return 0
