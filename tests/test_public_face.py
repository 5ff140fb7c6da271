"""The chapters use a deliberate API: what they import is exported, and what is exported is used."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import albert_mini

ROOT = Path(albert_mini.__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.py")) + sorted((ROOT / "chapters" / "solutions").glob("*.py"))
USERS = CHAPTERS + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "albert_mini" / "commands").glob("*.py"))


def is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def chapter_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every albert_mini name a file uses: `from M import N`, and `alias.N` on an imported module."""
    tree = ast.parse(path.read_text())
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "albert_mini":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if is_module(submodule):
                    modules[alias.asname or alias.name] = submodule
                else:
                    found.append((node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "albert_mini":
                    modules[alias.asname or "albert_mini"] = alias.name if alias.asname else "albert_mini"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            found.append((modules[node.value.id], node.attr))
    return found


def library_modules_with_all() -> set[str]:
    names = set()
    for info in pkgutil.walk_packages(albert_mini.__path__, "albert_mini."):
        if info.name.endswith("__main__") or info.name.split(".")[1] in ("harness", "commands"):
            continue
        if hasattr(importlib.import_module(info.name), "__all__"):
            names.add(info.name)
    return names


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_name_a_chapter_imports_is_in_its_modules_all(chapter):
    outside = [f"{module}.{name}" for module, name in chapter_imports(chapter)
               if name not in getattr(importlib.import_module(module), "__all__", ())]
    assert outside == [], f"{chapter.name} imports names no __all__ exports: add them to the module's __all__"


def test_every_exported_name_is_used_by_a_chapter_a_command_or_a_test():
    used = set()
    for path in USERS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name.split(".")[-1])
    unused = [f"{module}.{name}" for module in sorted(library_modules_with_all() | {"albert_mini"})
              for name in importlib.import_module(module).__all__ if name != "__version__" and name not in used]
    assert unused == []


def test_the_public_modules_are_named_in_one_place():
    """albert_mini/README.md lists the library modules with an __all__: no more, no fewer."""
    text = (ROOT / "albert_mini" / "README.md").read_text()
    section = text[text.index("## The public face"):text.index("## Words that mean one thing")]
    listed = set(re.findall(r"`(albert_mini(?:\.\w+)+)`", section)) - {"albert_mini.__all__"}
    assert listed == library_modules_with_all()


def test_the_check_sees_attribute_use_and_module_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from albert_mini.study import results\nfrom albert_mini.paths import save_figure\n"
                     "import albert_mini\nresults.variant_table\nalbert_mini.AlbertConfig\n")
    assert sorted(chapter_imports(probe)) == [("albert_mini", "AlbertConfig"), ("albert_mini.paths", "save_figure"),
                                              ("albert_mini.study.results", "variant_table")]
