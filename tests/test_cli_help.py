"""Every ``--help`` is written for users (issue 28 item 5): no module docstring (reStructuredText ``double
backquotes``), no internal module or file references, and each command shows examples -- and the URL forms
where it takes a store URL or a Spark path/master."""

from __future__ import annotations

import argparse
import re

import pytest

from bundlewise.cli.main import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    key = f"{prefix} {name}".strip()
                    out[key] = child
                    walk(key, child)

    walk("", build_parser())
    return out


COMMANDS = _commands()
INTERNAL = re.compile(r"``|\b(cli|sim|live|pipeline|files|algorithms|report)\.(?!html\b)[a-z_]+\b|\.py\b|docs/")


def test_every_command_is_covered() -> None:
    assert set(COMMANDS) >= {
        "bundle", "split", "split-check", "shed", "place", "pipeline", "throttle", "simulate", "sweep",
        "store", "store start", "broker", "live", "live up", "live status", "live advise",
    }  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_is_for_users_with_an_example(command: str) -> None:
    text = COMMANDS[command].format_help()
    assert INTERNAL.search(text) is None, INTERNAL.search(text)
    examples = text.split("examples:\n", 1)[1].splitlines()
    assert examples[0].startswith(f"  bundlewise {command.split()[0]} ")
    if command in ("broker", "live", "live up", "live status", "live advise"):
        assert "zk://HOST:PORT" in text and "etcd://" in text
    if command in ("pipeline", "sweep", "simulate"):
        assert "s3a://" in text and "local[*]" in text
