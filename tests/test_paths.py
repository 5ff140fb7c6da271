"""One repository-root rule with an environment override; one sha256 and one manifest check."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from albert_mini import paths, safe_files


def test_the_root_is_the_checkout_that_holds_the_package():
    assert (paths.REPO_ROOT / "albert_mini" / "paths.py").resolve() == Path(paths.__file__).resolve()
    assert paths.DATA_ROOT == paths.REPO_ROOT / "data" and (paths.DATA_ROOT / "austen" / paths.MANIFEST).is_file()


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_albert_mini_root_overrides_the_root_for_every_default_path(tmp_path):
    code = ("from albert_mini import paths\n"
            "from albert_mini.text import corpus, tokenizer\n"
            "from albert_mini.tasks import austen_tasks, polarity\n"
            "print(paths.REPO_ROOT, corpus.DATA_ROOT, tokenizer.DEFAULT_DIR, austen_tasks.TASKS_DIR,\n"
            "      polarity.CACHE_DIR)")
    env = {**os.environ, paths.ROOT_ENV: str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = tmp_path.resolve()
    assert result.stdout.split() == [str(root), str(root / "data"), str(root / "data" / "austen"),
                                     str(root / "data" / "tasks"), str(root / "cache" / "polarity")]


def test_sha256_of_a_file_and_of_bytes_agree(tmp_path):
    data = bytes(range(256)) * 5000  # more than one 1 MiB read chunk
    (tmp_path / "blob").write_bytes(data)
    assert paths.sha256_file(tmp_path / "blob") == paths.sha256_bytes(data)
    assert paths.sha256_bytes(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_manifest_round_trip_and_the_three_ways_a_file_fails(tmp_path):
    (tmp_path / "a.txt").write_text("first")
    (tmp_path / "b.txt").write_text("second")
    with pytest.raises(RuntimeError, match="manifest .* is missing; rebuild it with `make it`"):
        paths.verified_path(tmp_path, "a.txt", "make it", RuntimeError)
    safe_files.update_manifest(tmp_path, ["b.txt", "a.txt"])
    lines = (tmp_path / paths.MANIFEST).read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == ["a.txt", "b.txt"]  # sorted, in sha256sum's format
    assert paths.read_manifest(tmp_path) == {"a.txt": paths.sha256_file(tmp_path / "a.txt"),
                                             "b.txt": paths.sha256_file(tmp_path / "b.txt")}
    assert paths.verified_path(tmp_path, "a.txt", "make it") == tmp_path / "a.txt"
    (tmp_path / "a.txt").write_text("edited")
    with pytest.raises(ValueError, match="a.txt is corrupt or was edited.*git checkout"):
        paths.verified_path(tmp_path, "a.txt", "make it")
    (tmp_path / "c.txt").write_text("new")
    with pytest.raises(ValueError, match="c.txt is not listed in"):
        paths.verified_path(tmp_path, "c.txt", "make it")
    with pytest.raises(ValueError, match="d.txt is missing; rebuild it with `make it`"):
        paths.verified_path(tmp_path, "d.txt", "make it")


def test_figures_go_to_figures_in_full_mode_and_to_the_cache_in_fast_mode(monkeypatch):
    monkeypatch.delenv(paths.NBGRADER_ENV, raising=False)
    monkeypatch.setenv("ALBERT_MINI_FAST", "0")
    assert paths.figure_path("x.png") == paths.FIGURES_ROOT / "x.png"
    monkeypatch.setenv("ALBERT_MINI_FAST", "1")
    assert paths.figure_path("x.png") == paths.CACHE_ROOT / "figures-fast" / "x.png"


@pytest.mark.parametrize("fast", ["0", "1"])
def test_under_nbgrader_figures_go_to_a_temporary_folder_outside_the_checkout(monkeypatch, fast):
    monkeypatch.setenv("ALBERT_MINI_FAST", fast)
    monkeypatch.setenv(paths.NBGRADER_ENV, "autograde")
    folder = paths.figure_path("x.png").parent
    assert folder == paths.scratch_figures() and folder.is_dir()
    assert not folder.resolve().is_relative_to(paths.REPO_ROOT.resolve())


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_kernel_outside_chapters_writes_no_figure_into_the_checkout(tmp_path):
    """A chapter run by Jupyter from the checkout's chapters/ (make book, make lab) saves into figures/; run from
    any other folder (a hand-out, an nbgrader course, a grading copy) it saves into a temporary folder."""
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    from albert_mini.book.lab import require_kernel

    code = "from albert_mini.paths import figure_path\nprint(figure_path('x.png').parent)"
    scratch = "figure_path('x.png').write_bytes(b'png')"  # a figure saved outside the book
    found = {}
    for where in (paths.REPO_ROOT / "chapters", tmp_path):
        cells = [nbformat.v4.new_code_cell(code)] + ([nbformat.v4.new_code_cell(scratch)] if where == tmp_path else [])
        notebook = nbformat.v4.new_notebook(cells=cells)
        env = {k: v for k, v in os.environ.items() if k != paths.NBGRADER_ENV}
        # A kernel asked to end has a minute to do so (not 5 s) before it is killed, which would skip its clean-up.
        client = NotebookClient(notebook, kernel_name=require_kernel(), timeout=120,
                                resources={"metadata": {"path": str(where)}},
                                config=Config({"KernelManager": {"shutdown_wait_time": 60.0}}))
        client.execute(env={**env, "ALBERT_MINI_FAST": "0"})
        found[where] = Path(notebook.cells[0].outputs[0]["text"].strip())
    assert found[paths.REPO_ROOT / "chapters"] == paths.FIGURES_ROOT
    assert not found[tmp_path].resolve().is_relative_to(paths.REPO_ROOT.resolve())
    assert found[tmp_path].name.startswith("albert-mini-figures-")
    assert not found[tmp_path].exists()  # deleted with its figure when the kernel ended: nothing left in /tmp
