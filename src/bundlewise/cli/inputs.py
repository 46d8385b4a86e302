"""Reading the JSON inputs of the commands: one document, ``{"steps": [...]}`` or JSON Lines.

Also the step clock: a step without ``timestamp`` is at the previous one plus
``loadBalancerSheddingIntervalMinutes``, the first at 0; per-step ``config`` overrides accumulate.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.errors import InputError
from bundlewise.model.snapshot import parse_timestamp, shared_warning


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=path) from None


def _strict_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number in JSON")


def parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text, parse_constant=_strict_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}", source=source) from None
    except ValueError as e:
        raise InputError(f"malformed JSON: {e}", source=source) from None


def read_json(path: str) -> Any:
    return parse_json(read_text(path), "<stdin>" if path == "-" else path)


def read_documents(path: str) -> list[Any]:
    """The steps of an input: a JSON document (``steps`` unwrapped) or JSON Lines."""
    source = "<stdin>" if path == "-" else path
    text = read_text(path)
    stripped = text.strip()
    if not stripped:
        raise InputError('empty input: expected a JSON snapshot, {"steps": [...]} or JSON Lines', source=source)
    try:
        doc = json.loads(stripped, parse_constant=_strict_constant)
    except (json.JSONDecodeError, ValueError):
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                docs.append(parse_json(line, f"{source}:{n}"))
        return docs
    if isinstance(doc, dict) and "steps" in doc:
        steps = doc["steps"]
        if not isinstance(steps, list):
            raise InputError("expected a list of snapshots", source=source, field="steps")
        return steps
    return [doc]


@dataclass(frozen=True, slots=True)
class Step:
    index: int
    timestamp: int | None  # as given in the input, for echoing
    now: int  # the clock of this step, ms
    config: Config
    doc: Any


def iterate_steps(docs: list[Any], base: Config, source: str) -> Iterator[Step]:
    """Each step with its clock and the config in force (base + cumulative per-step overrides)."""
    config = base
    now: int | None = None
    for i, doc in enumerate(docs):
        where = f"steps[{i}]" if len(docs) > 1 else "snapshot"
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", source=source, field=where)
        try:
            if doc.get("config") is not None:
                if not isinstance(doc["config"], dict):
                    raise InputError("expected an object of configuration keys", field=f"{where}.config")
                config = config.with_values(doc["config"], f"{source}:{where}.config")
            ts = parse_timestamp(doc.get("timestamp"), f"{where}.timestamp")
        except InputError as e:
            raise e.within(source) from None
        interval_ms = config.view(LeaderSettings).shedding_interval_ms
        now = ts if ts is not None else (0 if now is None else now + interval_ms)
        yield Step(i, ts, now, config, doc)


def step_where(step: Step, docs: list[Any]) -> str:
    """How errors name a step: ``steps[i]`` in a multi-step input, else ``snapshot``."""
    return f"steps[{step.index}]" if len(docs) > 1 else "snapshot"


def emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, separators=(", ", ": ")) + "\n")


class SharedBundles:
    """Bundles listed by more than one broker in an input's steps: noted while the steps are read, told once
    on stderr when the command has its output (``model.snapshot.shared_warning``)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.first: tuple[str, dict[str, tuple[str, ...]]] | None = None
        self.count = 0

    def note(self, where: str, shared: dict[str, tuple[str, ...]]) -> None:
        if shared and self.first is None:
            self.first = (where, dict([next(iter(shared.items()))]))
        self.count += len(shared)

    def tell(self) -> None:
        if self.first is not None:
            where, first = self.first
            sys.stderr.write(shared_warning(self.source, where, first, self.count - 1) + "\n")
