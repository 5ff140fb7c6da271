"""The package's own import graph, read from the source (no module is imported): who imports whom, and everything
a module needs to run. A test helper: the architecture test checks the layers with it, the command-line tests list
the package's modules with it."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import albert_mini

PACKAGE = Path(albert_mini.__file__).resolve().parent
ROOT = PACKAGE.name  # "albert_mini"


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is named by its __init__)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _package_exports(path: Path) -> dict[str, str]:
    """Public name -> module for the names the top-level package takes from its modules."""
    return dict(_parsed_exports(path, path.stat().st_mtime_ns))


@cache
def _parsed_exports(path: Path, mtime_ns: int) -> tuple[tuple[str, str], ...]:
    """_package_exports parsed once per version of the file (the modification time is part of the key)."""
    return tuple(_read_exports(path).items())


def _read_exports(path: Path) -> dict[str, str]:
    """Parse `path`'s `from .module import name` statements."""
    exports = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            exports.update({alias.asname or alias.name: f"{ROOT}.{node.module}" for alias in node.names})
    return exports


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports anywhere in its file, function bodies included. A name taken from
    the top-level package (`from albert_mini import Lamb`) counts as an import of the module that defines it."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    exports = _package_exports(PACKAGE / "__init__.py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
            if module == ROOT:
                candidates += [exports[alias.name] for alias in node.names if alias.name in exports]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:  # `from x import name` names a module or an attribute
                candidate = candidate.rpartition(".")[0]
            if candidate.startswith(ROOT) and candidate != name:
                found.add(candidate)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_files()
    state = tuple(sorted((name, path, path.stat().st_mtime_ns) for name, path in modules.items()))
    return {name: set(targets) for name, targets in _graph_of(state).items()}  # copies: callers may change them


@cache
def _graph_of(state: tuple[tuple[str, Path, int], ...]) -> dict[str, frozenset[str]]:
    """import_graph parsed once per version of the package's files (names, paths and modification times)."""
    known = {name for name, _, _ in state}
    return {name: frozenset(imported_modules(name, path, known)) for name, path, _ in state}


def parents(module: str) -> list[str]:
    """The packages Python runs before `module` (their __init__): albert_mini.a.b -> [albert_mini, albert_mini.a]."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def closure(module: str, graph: dict[str, set[str]] | None = None) -> set[str]:
    """Every module of the package that running `module` may execute: its imports, theirs, and their packages."""
    graph = import_graph() if graph is None else graph
    if module not in graph:
        raise KeyError(f"{module!r} is not a module of {ROOT}")
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(graph.get(current, ()))
        todo.extend(parents(current))
    return seen
