"""The repository's shape: ``leaderboard/`` holds only what the bench writes, the package root holds
the commands and a handful of modules (every other module lives in its concept's package), and the
packages' imports form no circle and stay at module level (a few lazy ones, each saying why)."""

from __future__ import annotations

import ast
import fnmatch
import json
from pathlib import Path

import pytest

from perfzoo import bench
from perfzoo.cli import COMMANDS
from perfzoo.evaluation.leaderboard import OUTPUTS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("perfzoo", "harness")
MAX_LOCAL_IMPORTS = 5
MAX_ROOT_MODULES = 12  # perfzoo/*.py besides __init__.py: the commands and a handful of shared modules
# perfzoo's packages and root modules lowest first, as docs/architecture.md lists them: each imports only
# those before it, but for the workloads registry that analytic and spaces read (the map says why)
LAYERS = ("console", "frameworks", "records", "hardware", "analytic", "spaces", "workloads", "llmconfig", "datasets",
          "collect", "zoo", "pricing", "evaluation", "search", "loop", "plan", "bench", "predict", "tune", "datasets_cli",
          "testing", "cli")
UPWARD = {("analytic", "workloads"), ("spaces", "workloads")}


def _stray(folder: Path) -> list[str]:
    """The files under ``folder`` that no pattern of ``OUTPUTS`` names."""
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return [f for f in files if not any(fnmatch.fnmatchcase(f, pattern) for pattern in OUTPUTS)]


def test_the_committed_leaderboard_holds_only_what_the_bench_writes():
    folder = ROOT / "leaderboard"
    assert _stray(folder) == []
    best = json.loads((folder / "best.json").read_text())["datasets"]
    shipped = {entry["artifact"] for entry in best.values() if entry.get("artifact")}
    assert {f"artifacts/{p.name}" for p in (folder / "artifacts").iterdir()} == shipped


def test_every_file_a_bench_run_writes_is_in_the_writers_list(tmp_path):
    out = tmp_path / "lb"
    bench.run(bench.BenchConfig(datasets=["llm-h100"], predictors=["ridge"], splits=["random"], seeds=1,
                                out=str(out), no_cache=True, quiet=True, jobs=1))
    assert (out / "best.json").is_file() and (out / "figures").is_dir()
    assert _stray(out) == []


def test_a_file_the_bench_does_not_write_is_found(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a-scatter.png").write_bytes(b"")
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "records.jsonl").write_text("")
    assert _stray(tmp_path) == ["tune/records.jsonl"]


# -- imports -------------------------------------------------------------------------------

def _modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module of the packages: dotted name -> (file, is a package's __init__)."""
    out = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _imports(modules: dict[str, tuple[Path, bool]]):
    """``(importer, imported module, line, inside a function)`` for every import statement of a
    project module, wherever it stands (module level, ``if TYPE_CHECKING``, a function)."""
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        in_function: set[ast.AST] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function.update(n for n in ast.walk(node) if n is not node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] not in PACKAGES:
                    continue
                while target not in modules:
                    target = target.rpartition(".")[0]
                yield name, target, node.lineno, node in in_function


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Module -> the project modules importing it runs: each imported module and its packages'
    ``__init__`` (but not the importer's own packages, which Python has already started)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for importer, target, _, _ in _imports(modules):
        graph[importer] |= ({target} | _ancestors(target)) - {importer} - _ancestors(importer)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert circles(import_graph(_modules())) == []


def test_the_package_root_holds_the_commands_and_a_handful_of_modules():
    root = sorted(p.name for p in (ROOT / "perfzoo").glob("*.py") if p.name != "__init__.py")
    assert len(root) <= MAX_ROOT_MODULES, root


def test_each_package_imports_only_those_the_map_lists_before_it():
    modules = _modules()
    parts = {name.split(".")[1] for name in modules if name.startswith("perfzoo.")}
    assert parts == set(LAYERS), "docs/architecture.md and LAYERS list every package of perfzoo"
    upward = {(a[1], b[1]) for a, b in ((i.split("."), t.split(".")) for i, t, _, _ in _imports(modules))
              if a[0] == b[0] == "perfzoo" and len(a) > 1 and len(b) > 1 and LAYERS.index(b[1]) > LAYERS.index(a[1])}
    assert upward == UPWARD


# the modules of each command (one that parses argv and has main(), and the command's own library
# of its flags where it has one); a command imports the library, never another command
COMMAND_MODULES = {"perfzoo.cli": "perfzoo", "perfzoo.bench": "bench", "perfzoo.predict": "predict",
                   "perfzoo.tune": "tune", "perfzoo.collect.cli": "collect", "perfzoo.search.cli": "search",
                   "perfzoo.search.command": "search", "perfzoo.plan.cli": "plan", "perfzoo.plan.command": "plan",
                   "perfzoo.datasets_cli": "datasets"}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules importing ``start`` runs, directly or not."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_commands_import_the_library_never_each_other():
    assert {module for module, _ in COMMANDS.values()} <= set(COMMAND_MODULES)
    graph = import_graph(_modules())
    found = {(COMMAND_MODULES[a], COMMAND_MODULES[b]) for a in COMMAND_MODULES for b in _reach(graph, a)
             if b in COMMAND_MODULES and COMMAND_MODULES[a] != COMMAND_MODULES[b]}
    assert found == set()


def test_few_function_local_imports_of_project_modules_each_with_its_reason():
    modules = _modules()
    local = sorted({(importer, line) for importer, _, line, inside in _imports(modules) if inside})
    assert len(local) <= MAX_LOCAL_IMPORTS, "\n".join(f"{i} line {n}" for i, n in local)  # statements, once each
    for importer, line in local:
        text = modules[importer][0].read_text().splitlines()
        assert "#" in text[line - 1] or text[line - 2].strip().startswith("#"), \
            f"{importer} line {line}: a function-local import says why on its line or the line above"


def test_matplotlib_is_imported_in_one_place():
    """perfzoo.console.pyplot keeps matplotlib's caches out of ~/.cache; every figure goes through it."""
    importers = sorted(p.relative_to(ROOT).as_posix() for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                       if any(isinstance(node, (ast.Import, ast.ImportFrom)) and "matplotlib" in ast.dump(node)
                              for node in ast.walk(ast.parse(p.read_text()))))
    assert importers == ["perfzoo/console.py"]


def test_the_checks_see_a_circle_and_a_local_import(tmp_path):
    pkg = tmp_path / "perfzoo"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from perfzoo.sub.a import A\n")
    (pkg / "sub" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from perfzoo.b import B\nA = 1\n")
    (pkg / "b.py").write_text("def f():\n    from perfzoo.sub import A\n    return A\n")
    (tmp_path / "harness").mkdir()
    modules = _modules(tmp_path)
    assert circles(import_graph(modules)) == [["perfzoo.b", "perfzoo.sub", "perfzoo.sub.a"]]
    assert [(i, t, inside) for i, t, _, inside in _imports(modules) if inside] == [("perfzoo.b", "perfzoo.sub", True)]


@pytest.mark.parametrize("text, expected", [("from . import c\n", "perfzoo.sub.c"),
                                            ("from ..b import B\n", "perfzoo.b")])
def test_relative_imports_resolve(tmp_path, text, expected):
    pkg = tmp_path / "perfzoo"
    (pkg / "sub").mkdir(parents=True)
    for f in ("__init__.py", "b.py", "sub/__init__.py", "sub/c.py"):
        (pkg / f).write_text("")
    (pkg / "sub" / "a.py").write_text(text)
    (tmp_path / "harness").mkdir()
    assert [t for i, t, _, _ in _imports(_modules(tmp_path)) if i == "perfzoo.sub.a"] == [expected]
