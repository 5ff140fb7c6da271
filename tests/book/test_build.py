"""`make book` rewrites a notebook only where a result changed: stable cell ids, no execution timestamps, stdout in
one piece; and no committed notebook carries a path of the machine that built it."""

import json
import os
import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")

from albert_mini.book.build import build_chapter, keep_cell_ids, merge_adjacent_streams  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
# Absolute paths of a POSIX or Windows machine: a home, a temporary folder, a checkout under /work, a drive.
MACHINE_PATH = re.compile(r"(/work/|/home/|/tmp/|/root/|/Users/|/private/var/|[A-Za-z]:\\\\)")

CHAPTER = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python (albert-mini)
#     language: python
#     name: albert-mini
# ---

# %% [markdown]
# # A chapter

# %%
import sys

print("one", flush=True)
sys.stdout.flush()
print("two", flush=True)

# %%
print(6 * 7)
"""


def outputs_of(notebook: dict) -> list:
    return [cell.get("outputs") for cell in notebook["cells"]]


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_rebuild_keeps_ids_and_records_no_timestamps(tmp_path):
    source = tmp_path / "01_chapter.py"
    source.write_text(CHAPTER)
    build_chapter(source, timeout=120)
    first = source.with_suffix(".ipynb").read_text()
    build_chapter(source, timeout=120)
    second = source.with_suffix(".ipynb").read_text()
    assert first == second, "a rebuild with unchanged results changed the notebook"
    notebook = json.loads(second)
    assert all("execution" not in cell["metadata"] for cell in notebook["cells"])
    streams = [o for o in notebook["cells"][1]["outputs"] if o["output_type"] == "stream"]
    assert len(streams) == 1 and "".join(streams[0]["text"]) == "one\ntwo\n"

    # an edited cell keeps its id; a new cell gets one derived from its text, the same on every build
    ids = [cell["id"] for cell in notebook["cells"]]
    source.write_text(CHAPTER.replace("print(6 * 7)", "print(6 * 9)") + "\n# %%\nprint('new')\n")
    build_chapter(source, timeout=120)
    rebuilt = json.loads(source.with_suffix(".ipynb").read_text())
    assert [cell["id"] for cell in rebuilt["cells"]][:3] == ids
    assert len({cell["id"] for cell in rebuilt["cells"]}) == 4


def test_keep_cell_ids_matches_by_content_then_derives():
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    old = new_notebook(cells=[new_markdown_cell("# title", id="title"), new_code_cell("x = 1", id="first"),
                              new_code_cell("print(x)", id="second")])
    new = new_notebook(cells=[new_markdown_cell("# title"), new_code_cell("x = 0"), new_code_cell("x = 0"),
                              new_code_cell("print(x)")])
    keep_cell_ids(new, old)
    ids = [cell["id"] for cell in new.cells]
    assert ids[0] == "title" and ids[3] == "second" and len(set(ids)) == 4
    again = new_notebook(cells=[new_markdown_cell("# title"), new_code_cell("x = 0"), new_code_cell("x = 0"),
                                new_code_cell("print(x)")])
    keep_cell_ids(again, old)
    assert [cell["id"] for cell in again.cells] == ids, "derived ids must not depend on chance"


def test_merge_adjacent_streams_keeps_the_order_of_other_outputs():
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    cell = new_code_cell("", outputs=[new_output("stream", name="stdout", text="a\n"),
                                      new_output("stream", name="stdout", text="b\n"),
                                      new_output("display_data", data={"text/plain": "figure"}),
                                      new_output("stream", name="stdout", text="c\n")])
    notebook = new_notebook(cells=[cell])
    merge_adjacent_streams(notebook)
    assert [o.get("text") for o in notebook.cells[0].outputs] == ["a\nb\n", None, "c\n"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_timestamps_and_no_machine_paths(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    assert not [c["id"] for c in cells if "execution" in c.get("metadata", {})], "execution timestamps recorded"
    found = [match for cell in cells for output in cell.get("outputs", [])
             for match in MACHINE_PATH.findall(json.dumps(output))]
    assert not found, f"{notebook.name}: outputs show paths of the machine that built them: {sorted(set(found))}"


def test_book_without_the_chapters_kernel_stops_in_one_line_naming_the_install(tmp_path, monkeypatch, capsys):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from albert_mini.commands.book import main as book

    def missing(self, name):
        raise NoSuchKernel(name)

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", missing)
    for name in ("ALBERT_MINI_FAST", "ALBERT_MINI_STATIC"):  # the command sets them: restored after the test
        monkeypatch.setenv(name, os.environ.get(name, "0"))
    source = tmp_path / "01_chapter.py"
    source.write_text(CHAPTER)
    with pytest.raises(SystemExit) as stop:
        book([str(source)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert "kernel 'albert-mini'" in err and "make venv" in err
    assert not source.with_suffix(".ipynb").exists()
