"""Options shared by several commands."""

from __future__ import annotations

import argparse
import sys

from bundlewise.config import Config, load_config

CONFIG_HELP = (
    "Pulsar broker.conf (key=value), JSON or TOML with ServiceConfiguration keys; "
    "unrelated keys are ignored, absent keys take Pulsar's defaults"
)


def add_config_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    p.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override one configuration key (repeatable), e.g. --set loadBalancerBrokerThresholdShedderPercentage=5",
    )


def config_from_args(args: argparse.Namespace) -> Config:
    warnings: list[str] = []
    config = load_config(args.config, args.set, warnings)
    for w in warnings:
        sys.stderr.write(w + "\n")
    return config
