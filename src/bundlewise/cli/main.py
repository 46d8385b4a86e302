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
from types import ModuleType

from bundlewise import __version__
from bundlewise.cli import guide
from bundlewise.cli.common import MissingExtra
from bundlewise.cli.logs import route_logs
from bundlewise.files.atomic import Interrupted, discard_open
from bundlewise.model.errors import InputError

# Each command and the module (``bundlewise.cli.<module>``) that registers it, in ``--help`` order.  A run of
# one command imports only its own module: a broker process does not load what ``live up`` or ``simulate``
# need (Arrow, the simulator), and every command starts faster.
COMMANDS: dict[str, str] = {
    "bundle": "bundle",
    "split": "split",
    "split-check": "split",
    "place": "place",
    "shed": "shed",
    "pipeline": "pipeline",
    "throttle": "throttle",
    "simulate": "simulate",
    "sweep": "sweep",
    "store": "store",
    "broker": "broker",
    "live": "live",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message}\n")
        raise SystemExit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command`` (one of ``COMMANDS``) and the commands its module
    registers beside it."""
    parser = _Parser(
        prog="bundlewise",
        description="Apache Pulsar's broker load balancing, runnable on recorded load data. "
        "JSON in, JSON out; --format table for people.",
    )
    parser.add_argument("--version", action="version", version=f"bundlewise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    modules = dict.fromkeys(COMMANDS.values()) if command is None else (COMMANDS[command],)
    for module in modules:
        _load(module).register(sub)
    for name, registered in sub.choices.items():
        _add_verbose(registered)
        _guide(name, registered)
    return parser


def _load(module: str) -> ModuleType:
    """One command module, imported when its command runs (each import written out, so the layering check
    sees it)."""
    match module:
        case "bundle":
            from bundlewise.cli import bundle

            return bundle
        case "split":
            from bundlewise.cli import split

            return split
        case "place":
            from bundlewise.cli import place

            return place
        case "shed":
            from bundlewise.cli import shed

            return shed
        case "pipeline":
            from bundlewise.cli import pipeline

            return pipeline
        case "throttle":
            from bundlewise.cli import throttle

            return throttle
        case "simulate":
            from bundlewise.cli import simulate

            return simulate
        case "sweep":
            from bundlewise.cli import sweep

            return sweep
        case "store":
            from bundlewise.cli import store

            return store
        case "broker":
            from bundlewise.cli import broker

            return broker
        case "live":
            from bundlewise.cli import live

            return live
        case _:
            raise ValueError(f"no command module {module!r}")


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


def main(argv: Sequence[str] | None = None, process: bool = False) -> int:
    """Run one command line; ``process``: this process exists to run it (the console script, ``python -m``), so
    the command's module may prepare the process first (its ``start_process()``, e.g. the broker's)."""
    given = list(sys.argv[1:] if argv is None else argv)
    command = given[0] if given and given[0] in COMMANDS else None
    if process and command is not None:
        getattr(_load(COMMANDS[command]), "start_process", lambda: None)()
    parser = build_parser(command)
    try:
        args = parser.parse_args(given)
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
    raise SystemExit(main(process=True))


if __name__ == "__main__":
    run()
