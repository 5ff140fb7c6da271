"""The package is a house of layers: every import points down or sideways, never up, and never in a circle."""

from __future__ import annotations

import ast
from importlib import import_module
from pathlib import Path

import pytest

import albert_mini
from cli_helpers import fresh_import
from import_graph import _package_exports, closure, import_graph, imported_modules

PACKAGE = Path(albert_mini.__file__).resolve().parent
# Bottom to top. "base" is the package's own top-level modules (specials, paths, settings). "commands" is the
# `albert-mini` command line, above everything: `python -m albert_mini` (__main__.py) runs it, nothing imports it.
LAYERS = ("base", "model", "text", "training", "tasks", "study", "book", "harness", "commands")


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "top"  # albert_mini/__init__: its exports reach every layer
    if parts[1] == "__main__":
        return "commands"  # `python -m albert_mini`: the command line's other door
    return parts[1] if parts[1] in LAYERS else "base"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_every_subpackage_is_a_declared_layer():
    subpackages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert subpackages == sorted(LAYERS[1:])


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_imports_point_down_or_sideways():
    upward = []
    for source, targets in import_graph().items():
        if layer_of(source) == "top":
            continue
        for target in targets:
            if layer_of(target) == "top" and layer_of(source) == "commands":
                continue  # the command line sits above the package's exports too (`albert-mini --version`)
            if layer_of(target) == "top" or LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(source)):
                upward.append(f"{source} -> {target}")
    assert upward == []


def test_the_check_sees_lazy_imports_and_package_imports(tmp_path):
    """The parser counts an import inside a function, and `from .. import x` as an import of the package too."""
    code = "def f():\n    from ..model import albert\n    from .. import specials\n"
    (tmp_path / "probe.py").write_text(code)
    known = {"albert_mini", "albert_mini.model", "albert_mini.model.albert", "albert_mini.specials"}
    found = imported_modules("albert_mini.text.probe", tmp_path / "probe.py", known)
    assert found == {"albert_mini", "albert_mini.model", "albert_mini.model.albert", "albert_mini.specials"}
    assert layer_of("albert_mini") == "top" and layer_of("albert_mini.specials") == "base"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_public_name_counts_as_an_import_of_its_module(tmp_path):
    """`from albert_mini import X` depends on the module that defines X."""
    (tmp_path / "probe.py").write_text("from albert_mini import Lamb, Tokenizer, __version__\n")
    known = {"albert_mini", "albert_mini.training", "albert_mini.training.optim", "albert_mini.text",
             "albert_mini.text.tokenizer"}
    assert imported_modules("albert_mini.study.probe", tmp_path / "probe.py", known) == {
        "albert_mini", "albert_mini.training.optim", "albert_mini.text.tokenizer"}


def test_the_graph_knows_the_module_of_every_public_name():
    exports = _package_exports(PACKAGE / "__init__.py")
    assert set(exports) == set(albert_mini.__all__) - {"__version__"}
    for name, module in exports.items():
        assert getattr(import_module(module), name) is getattr(albert_mini, name), name


def test_nothing_in_the_library_imports_the_command_line():
    """The commands call the library; the library, and the package's exports, never reach a command."""
    importers = sorted(source for source, targets in import_graph().items()
                       if layer_of(source) != "commands" and any(layer_of(t) == "commands" for t in targets))
    assert importers == []
    assert import_graph()["albert_mini.__main__"] == {"albert_mini.commands"}


def test_the_experiments_closure_holds_what_they_run_and_nothing_they_do_not():
    """What running the experiments executes: the trainer and the model, with the packages Python runs on the way."""
    # The registry imports each experiment by its name in harness/choices.py (import_module), which the graph read
    # from the source does not see: their closures are added here.
    from albert_mini.harness.choices import EXPERIMENT_NAMES

    needed = closure("albert_mini.commands.experiments").union(
        *(closure(f"albert_mini.harness.experiments.{name}") for name in EXPERIMENT_NAMES))
    assert {"albert_mini.training.trainer", "albert_mini.model.albert", "albert_mini.tasks.finetuning",
            "albert_mini.text.masking", "albert_mini.study.stats", "albert_mini", "albert_mini.study"} <= needed
    assert not {"albert_mini.harness.research.model_card", "albert_mini.harness.research.time_to_quality",
                "albert_mini.book.build"} & needed
    # A module's closure holds its packages (albert_mini's __init__ runs first) and what they import.
    assert closure("albert_mini.specials") == closure("albert_mini") | {"albert_mini.specials"}
    assert {"albert_mini.model.albert", "albert_mini.tasks.finetuning"} <= closure("albert_mini")
    assert not {"albert_mini.study", "albert_mini.book", "albert_mini.harness"} & closure("albert_mini")
    graph = {"albert_mini": set(), "albert_mini.specials": set(), "albert_mini.paths": set()}
    assert closure("albert_mini.specials", graph) == {"albert_mini", "albert_mini.specials"}
    with pytest.raises(KeyError, match="not a module"):
        closure("albert_mini.nowhere")


def test_every_package_says_what_it_holds_and_layers_say_it_in_one_line():
    for path in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and doc.splitlines()[0].endswith("."), f"{path}: a docstring whose first line is its purpose"
        if path.parent.parent == PACKAGE:
            assert "\n" not in doc.strip(), f"{path}: a layer says what it holds in one line"


def test_every_public_name_imports_from_the_package_and_is_not_shadowed():
    """After every module is imported (which sets subpackage attributes), each public name is still its object."""
    facts = fresh_import()  # cli_helpers.py: one fresh interpreter, every module imported last
    assert (facts["public"], facts["shadowed"]) == (len(albert_mini.__all__), [])


@pytest.mark.parametrize("name", albert_mini.__all__)
def test_public_name(name):
    value = getattr(import_module("albert_mini"), name)
    assert value is not None
    if name != "__version__":
        assert getattr(value, "__module__", "").startswith("albert_mini.") or isinstance(value, dict)



def test_no_chapter_imports_the_harness():
    """The chapters teach with the library alone: a committed result is read through its readers (study/), never
    through the harness that made it. Checked on every import of chapters/*.py and their solutions, lazy or not."""
    chapters = PACKAGE.parent / "chapters"
    paths = sorted(chapters.glob("*.py")) + sorted(chapters.glob("solutions/*.py"))
    assert any(p.name.startswith("11_") for p in paths)
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:  # also `from albert_mini import harness`
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            if any(name == "albert_mini.harness" or name.startswith("albert_mini.harness.") for name in names):
                found.append(f"{path.relative_to(chapters)}:{node.lineno}")
    assert found == []
