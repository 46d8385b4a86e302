"""Reading the JSON inputs of ``shed``, ``place`` and ``split-check``: snapshots, steps and load reports.

An INPUT is a file (``-``: stdin) or a directory (its ``.json``/``.jsonl`` files, by name); several may be
given.  Each file holds one of:

* a snapshot (one JSON object), ``{"steps": [snapshot, …]}`` or JSON Lines of snapshots — the files' steps
  follow each other in the order given;
* load reports as ``pulsar-admin broker-stats load-report`` prints them (``LocalBrokerData``): one per file,
  a JSON array of them, JSON Lines of them, or ``{"broker", "timestamp", "report"}`` wrappers.  All reports
  of all files become snapshots (``model.reports.group_reports``: in time order, a broker seen again starts
  the next step), each report checked on its own first so an error names its file.

Files of both kinds together are refused.  Also the step clock: a step without ``timestamp`` is at the
previous one plus ``loadBalancerSheddingIntervalMinutes``, the first at 0; per-step ``config`` overrides
accumulate.  A load report without ``cpu`` is taken as 0 % CPU, as Pulsar reads a missing resource, with a
warning (a real report always has one).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bundlewise.config import Config
from bundlewise.config.views import LeaderSettings
from bundlewise.model.errors import InputError
from bundlewise.model.load import LocalBrokerData
from bundlewise.model.policies import NO_POLICIES, PlacementPolicies
from bundlewise.model.reports import Report, group_reports, is_load_report, read_report
from bundlewise.model.snapshot import parse_timestamp, shared_warning
from bundlewise.model.textfiles import parse_json, read_json, read_text, reject_constant, source_name

INPUT_SUFFIXES = (".json", ".jsonl")


def policies_from_args(args: Any) -> PlacementPolicies:
    """``--policies FILE`` (absent: no constraints)."""
    path = getattr(args, "policies", None)
    if path is None:
        return NO_POLICIES
    try:
        return PlacementPolicies.from_json(read_json(path))
    except InputError as e:
        raise e.within("<stdin>" if path == "-" else path) from None


def read_documents(path: str) -> list[Any]:
    """The documents of one file: a JSON document (``steps`` unwrapped, an array's elements) or JSON Lines."""
    source = source_name(path)
    text = read_text(path)
    stripped = text.strip()
    if not stripped:
        raise InputError(
            'empty input: expected a JSON snapshot, {"steps": [...]}, load reports or JSON Lines', source=source
        )
    try:
        doc = json.loads(stripped, parse_constant=reject_constant)
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply (more than about 1,000 levels)", source=source) from None
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
    if isinstance(doc, list):
        if not doc or not all(is_load_report(d) for d in doc):
            raise InputError(
                'expected a snapshot, {"steps": [...]} or an array of load reports (LocalBrokerData)', source=source
            )
        return doc
    return [doc]


def input_files(paths: Sequence[str]) -> list[str]:
    """Each path as given; a directory's ``.json``/``.jsonl`` files by name (hidden ones skipped)."""
    files: list[str] = []
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            files.append(path)
            continue
        found = sorted(
            os.path.join(path, e)
            for e in os.listdir(path)
            if e.endswith(INPUT_SUFFIXES) and not e.startswith(".") and os.path.isfile(os.path.join(path, e))
        )
        if not found:
            raise InputError("holds no .json or .jsonl files", source=path)
        files += found
    return files


@dataclass(frozen=True, slots=True)
class Document:
    """One step's JSON, the file(s) it came from and how errors name it there."""

    doc: Any
    source: str
    where: str
    from_reports: bool = False


def read_inputs(paths: Sequence[str]) -> list[Document]:
    """Every step of the INPUTs (see the module's docstring), with warnings on stderr."""
    per_file = [(f, "<stdin>" if f == "-" else f, read_documents(f)) for f in input_files(paths)]
    kinds = {src: all(is_load_report(d) for d in docs) for _, src, docs in per_file}
    if all(kinds.values()):
        reports: list[Report] = []
        for _, src, docs in per_file:
            for k, d in enumerate(docs):
                reports.append(_checked_report(d, src, f"[{k}]" if len(docs) > 1 else ""))
        label = paths[0] if len(paths) == 1 else ", ".join(paths)
        steps = group_reports(reports)
        out = [Document(s, label, f"steps[{i}]" if len(steps) > 1 else "snapshot", True) for i, s in enumerate(steps)]
    elif any(kinds.values()):
        reports_in = next(src for src, is_report in kinds.items() if is_report)
        others = next(src for src, is_report in kinds.items() if not is_report)
        raise InputError(f"holds load reports while {others} holds snapshots; give one kind", source=reports_in)
    else:
        out = [
            Document(d, src, f"steps[{k}]" if len(docs) > 1 else "snapshot")
            for _, src, docs in per_file
            for k, d in enumerate(docs)
        ]
    _warn_missing_cpu(out)
    return out


def _checked_report(doc: Any, source: str, index: str) -> Report:
    try:
        report = read_report(doc, source)
        LocalBrokerData.from_json(report.data, f"{index}report" if not index else f"{index}")
    except InputError as e:
        raise e.within(source) from None
    return report


def _warn_missing_cpu(documents: Sequence[Document]) -> None:
    """A load report without ``cpu`` (read as a report, or pasted into a snapshot: it has its URLs) is taken as
    0 % CPU with a warning; snapshots written by hand (Pulsar's unit tests) omit resources on purpose."""
    missing: dict[str, list[str]] = {}
    for d in documents:
        brokers = d.doc.get("brokers") if isinstance(d.doc, dict) else None
        if not isinstance(brokers, dict):
            continue
        for name, data in brokers.items():
            real = d.from_reports or (
                isinstance(data, dict) and ("webServiceUrl" in data or "pulsarServiceUrl" in data)
            )
            if real and isinstance(data, dict) and data.get("cpu") is None:
                names = missing.setdefault(d.source, [])
                if name not in names:
                    names.append(name)
    for source, names in missing.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        sys.stderr.write(
            f"warning: {source}: {shown} report{'s' if len(names) == 1 else ''} no cpu: "
            "taken as 0 % CPU (a broker's load report always has one)\n"
        )


@dataclass(frozen=True, slots=True)
class Step:
    index: int
    timestamp: int | None  # as given in the input, for echoing
    now: int  # the clock of this step, ms
    config: Config
    doc: Any
    where: str = "snapshot"  # how errors name the step in its file
    source: str = "<stdin>"


def iterate_steps(documents: Sequence[Document], base: Config) -> Iterator[Step]:
    """Each step with its clock and the config in force (base + cumulative per-step overrides)."""
    config = base
    now: int | None = None
    for i, d in enumerate(documents):
        doc, where = d.doc, d.where
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", source=d.source, field=where)
        try:
            if doc.get("config") is not None:
                if not isinstance(doc["config"], dict):
                    raise InputError("expected an object of configuration keys", field=f"{where}.config")
                config = config.with_values(doc["config"], f"{d.source}:{where}.config")
            ts = parse_timestamp(doc.get("timestamp"), f"{where}.timestamp")
        except InputError as e:
            raise e.within(d.source) from None
        interval_ms = config.view(LeaderSettings).shedding_interval_ms
        now = ts if ts is not None else (0 if now is None else now + interval_ms)
        yield Step(i, ts, now, config, doc, where, d.source)


def emit(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, separators=(", ", ": ")) + "\n")


class SharedBundles:
    """Bundles listed by more than one broker in the steps read: noted step by step, told once on stderr when
    the command has its output (``model.snapshot.shared_warning``)."""

    def __init__(self) -> None:
        self.first: tuple[str, str, dict[str, tuple[str, ...]]] | None = None
        self.count = 0

    def note(self, step: Step, shared: dict[str, tuple[str, ...]]) -> None:
        if shared and self.first is None:
            self.first = (step.source, step.where, dict([next(iter(shared.items()))]))
        self.count += len(shared)

    def tell(self) -> None:
        if self.first is not None:
            source, where, first = self.first
            sys.stderr.write(shared_warning(source, where, first, self.count - 1) + "\n")
