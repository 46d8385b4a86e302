"""``bundlewise`` entry point: one sub-command per module, errors mapped to exit codes.

Each command module exposes ``register(subparsers)`` that adds its parser and sets
``func=run`` where ``run(args) -> int``.  Exit codes (docs/commands.md): 0 success, 2 bad input or
usage (one line ``error: ...`` on stderr), 1 internal error.  Commands needing an optional extra
(Spark, Arrow, matplotlib) import it only when they run, and say which extra to install when it is
missing (``cli.common.MissingExtra``).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence

from bundlewise import __version__
from bundlewise.cli import broker, bundle, guide, live, pipeline, place, shed, simulate, split, store, sweep, throttle
from bundlewise.cli.common import MissingExtra
from bundlewise.cli.logs import route_logs
from bundlewise.files.atomic import Interrupted, discard_open
from bundlewise.model.errors import InputError

COMMAND_MODULES = (bundle, split, place, shed, pipeline, throttle, simulate, sweep, store, broker, live)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bundlewise",
        description="Apache Pulsar's broker load balancing, runnable on recorded load data. "
        "JSON in, JSON out; --format table for people.",
    )
    parser.add_argument("--version", action="version", version=f"bundlewise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in COMMAND_MODULES:
        module.register(sub)
    for name, command in sub.choices.items():
        _add_verbose(command)
        _guide(name, command)
    return parser


def _guide(name: str, p: argparse.ArgumentParser) -> None:
    """The user's description (where the command has none of its own), URL forms and examples (``cli.guide``)."""
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    if name in guide.DESCRIPTIONS:
        text = guide.DESCRIPTIONS[name]
        p.description = text if "\n" in text else textwrap.fill(text, 110)
    p.epilog = guide.epilog(name)
    sub = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    for child_name, child in sub[0].choices.items() if sub else ():
        _guide(f"{name} {child_name}", child)


def _add_verbose(p: argparse.ArgumentParser) -> None:
    """``--verbose`` on every command (and sub-command): client libraries' logs on stderr (``cli.logs``)."""
    sub = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if sub:
        for child in sub[0].choices.values():
            _add_verbose(child)
        return
    if "--verbose" not in p._option_string_actions:
        p.add_argument(
            "--verbose",
            action="store_true",
            help="print the logs of the libraries underneath (Spark, ZooKeeper and etcd clients) on stderr "
            "instead of a log file",
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage errors (2) and --help / --version (0)
        return int(e.code or 0)
    route_logs(bool(getattr(args, "verbose", False)))
    try:
        return int(args.func(args))
    except (InputError, MissingExtra) as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as e:  # files.atomic.Interrupted says what became of --out
        discard_open()
        out = getattr(args, "out", None)
        sys.stderr.write(f"error: {e if isinstance(e, Interrupted) else Interrupted(out)}\n")
        return 130
    except Exception as e:
        sys.stderr.write(f"internal error: {type(e).__name__}: {e}\n")
        if "--debug" in sys.argv:
            raise
        return 1


def run() -> None:
    raise SystemExit(main())


if __name__ == "__main__":
    run()
