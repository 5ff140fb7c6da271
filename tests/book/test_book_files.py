"""Cheap checks, without a browser, of what a reader meets first: every image a chapter's prose shows exists, and
a chapter opened in JupyterLab and saved comes back byte for byte (tests/book/test_browser.py does it for real)."""

import json
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))

# ![alt](path "title") and <img ... src="path">, the two ways markdown shows an image.
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+[\"'][^\"']*[\"'])?\s*\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


def image_targets(markdown: str) -> list[str]:
    return [bracketed or bare for bracketed, bare in MARKDOWN_IMAGE.findall(markdown)] + HTML_IMAGE.findall(markdown)


def markdown_cells(path: Path) -> list[dict]:
    """Markdown cells (source and attachments) of a chapter source (.py) or notebook (.ipynb)."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        return [{"source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
                 "attachments": c.get("attachments", {})} for c in cells if c["cell_type"] == "markdown"]
    return [{"source": c.source, "attachments": c.get("attachments", {})}
            for c in jupytext.read(path).cells if c.cell_type == "markdown"]


def unresolved_images(path: Path) -> list[str]:
    problems = []
    for cell in markdown_cells(path):
        for target in image_targets(cell["source"]):
            if target.startswith("attachment:"):
                if target.split(":", 1)[1] not in cell["attachments"]:
                    problems.append(f"{target}: no such attachment in the cell")
            elif re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("/"):
                problems.append(f"{target}: not a path relative to the chapter (the book is read offline)")
            elif not (path.parent / target.split("#")[0].split("?")[0]).is_file():
                problems.append(f"{target}: no such file (relative to {path.parent.name}/)")
    return problems


def test_image_syntax_is_recognised():
    text = ('![a figure](../figures/a.png) and ![titled](../figures/b.png "B") and ![](<../figures/c d.png>)\n'
            '<img alt="x" src="../figures/d.png" width=300> but not [a link](../figures/e.png)')
    assert image_targets(text) == ["../figures/a.png", "../figures/b.png", "../figures/c d.png", "../figures/d.png"]


def test_a_missing_image_is_reported(tmp_path):
    chapter = tmp_path / "chapters" / "01_x.ipynb"
    chapter.parent.mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "here.png").write_bytes(b"png")
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["![ok](../figures/here.png)\n",
                                                                    "![gone](../figures/gone.png)"]}]
    chapter.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert unresolved_images(chapter) == ["../figures/gone.png: no such file (relative to chapters/)"]


@pytest.mark.parametrize("path", SOURCES + NOTEBOOKS, ids=lambda p: p.name)
def test_every_markdown_image_resolves(path):
    assert unresolved_images(path) == []


MARKDOWN_PAGE_LINK = re.compile(r"\]\(\s*([^)\s#]+\.md)(?:#[^)\s]*)?\s*\)")  # [text](page.md) or (page.md#part)


@pytest.mark.parametrize("path", SOURCES + NOTEBOOKS, ids=lambda p: p.name)
def test_every_link_to_a_markdown_page_resolves(path):
    targets = [t for cell in markdown_cells(path) for t in MARKDOWN_PAGE_LINK.findall(cell["source"])]
    local = [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.IGNORECASE)]  # a web page: not ours
    assert [t for t in local if not (path.parent / t).is_file()] == []


def test_the_reference_notes_are_a_link_wherever_a_chapter_cites_them():
    citing = []
    for source in SOURCES:
        text = "\n".join(cell["source"] for cell in markdown_cells(source))
        assert "`REFERENCE_NOTES.md`" not in text and "`chapters/REFERENCE_NOTES.md`" not in text, source.name
        if "REFERENCE_NOTES" in text:
            assert "[REFERENCE_NOTES.md](REFERENCE_NOTES.md)" in text, source.name
            citing.append(source.name[:2])
    assert citing == ["05", "06", "07", "08", "10", "11"]


def test_there_are_chapters_to_check():
    assert SOURCES and NOTEBOOKS


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_source_is_what_jupytext_saves(source):
    """JupyterLab saves a chapter with jupytext and the project's configuration ([tool.jupytext] in
    pyproject.toml): the committed text must be that output already, or merely saving it makes a diff."""
    from jupytext.config import load_jupytext_config

    config = load_jupytext_config(str(source.parent))
    assert config is not None, "pyproject.toml's [tool.jupytext] is not found from chapters/"
    text = source.read_text()
    saved = jupytext.writes(jupytext.read(source, config=config), fmt="py:percent", config=config)
    assert saved == text, (f"{source.name}: saving it from JupyterLab would change it; "
                           "rewrite its header as jupytext does")


SOLUTIONS = sorted((CHAPTERS / "solutions").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("source", SOURCES + SOLUTIONS, ids=lambda p: p.relative_to(CHAPTERS).as_posix())
def test_chapter_names_the_installed_kernel(source):
    """Every chapter (and its solutions) names the environment's `albert-mini` kernel, spelled as its installed spec
    spells it: JupyterLab copies the running kernel's spec into the notebook; another display name marks it unsaved,
    and another kernel (nbgrader's python3) may lack torch."""
    from jupyter_client.kernelspec import KernelSpecManager

    from albert_mini.book.build import KERNELSPEC

    assert KERNELSPEC["name"] == "albert-mini"
    installed = KernelSpecManager().get_kernel_spec(KERNELSPEC["name"]).display_name
    assert KERNELSPEC["display_name"] == installed
    paired = [source.with_suffix(".ipynb")] if source.parent == CHAPTERS else []
    for path in (source, *paired):
        assert jupytext.read(path).metadata["kernelspec"] == KERNELSPEC, f"{path.name}: kernelspec"


def test_the_venv_step_installed_the_kernel_that_runs_this_python():
    """`make venv` (`albert-mini lab --install-settings`) leaves the albert-mini kernel's spec in this environment,
    and it runs this environment's python by its absolute path (not "python", which Jupyter replaces with its own
    interpreter: nbgrader's, say, without torch)."""
    import sys

    from jupyter_client.kernelspec import KernelSpecManager

    from albert_mini.book.lab import KERNEL_NAME, kernel_dir

    spec = kernel_dir(sys.prefix) / "kernel.json"
    assert spec.is_file(), f"{spec} is missing: run make venv (albert-mini lab --install-settings)"
    argv = json.loads(spec.read_text())["argv"]
    python = Path(argv[0])  # this venv's bin/python (or python3: the same interpreter), by its absolute path
    assert python.is_absolute() and python.parent == Path(sys.executable).parent
    assert python.resolve() == Path(sys.executable).resolve()
    assert argv[1:3] == ["-m", "ipykernel_launcher"] and "{connection_file}" in argv
    found = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    assert Path(found.resource_dir).resolve() == kernel_dir(sys.prefix).resolve()

