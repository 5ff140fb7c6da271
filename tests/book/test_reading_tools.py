"""The pieces behind `make lab` and `make html` that need no browser (tests/book/test_browser.py drives the real
thing)."""

import json
import re
import socket
from pathlib import Path

import pytest

from albert_mini.book import html_book, lab
from albert_mini.commands import html_book as html_command
from albert_mini.safe_files import OutputRecord

ROOT = Path(__file__).resolve().parents[2]


def test_settings_merge_into_existing_overrides_and_are_idempotent(tmp_path):
    path = lab.settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    mine = {"@jupyterlab/docmanager-extension:plugin": {"autosave": False, "defaultViewers": {"markdown": "Editor"}},
            "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}
    path.write_text(json.dumps(mine))
    assert lab.install_settings(tmp_path) == path
    merged = json.loads(path.read_text())
    docmanager = merged["@jupyterlab/docmanager-extension:plugin"]
    assert docmanager == {"autosave": False, "defaultViewers": {"markdown": "Editor", "python": "Jupytext Notebook"}}
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    written = path.stat().st_mtime_ns
    lab.install_settings(tmp_path)
    assert path.stat().st_mtime_ns == written  # nothing to change: not rewritten


def test_the_kernel_spec_runs_the_given_python_and_a_second_install_writes_nothing(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    python = tmp_path / "env" / "bin" / "python"
    folder = lab.install_kernel(tmp_path / "env", python)
    assert folder == tmp_path / "env" / "share" / "jupyter" / "kernels" / "albert-mini"
    spec = json.loads((folder / "kernel.json").read_text())
    assert spec["argv"][:3] == [str(python), "-m", "ipykernel_launcher"] and spec["language"] == "python"
    assert spec["display_name"] == lab.KERNEL_DISPLAY_NAME == "Python (albert-mini)"
    assert {p.name for p in folder.iterdir()} >= {"kernel.json", "logo-64x64.png"}
    written = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    lab.install_kernel(tmp_path / "env", python)
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == written  # unchanged: not rewritten
    lab.install_kernel(tmp_path / "env", tmp_path / "other" / "python")
    assert json.loads((folder / "kernel.json").read_text())["argv"][0] == str(tmp_path / "other" / "python")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "env" / "share" / "jupyter"))  # how another Jupyter finds it
    assert Path(KernelSpecManager().get_kernel_spec("albert-mini").resource_dir) == folder


def test_a_missing_kernel_is_one_line_naming_the_install(monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from albert_mini.errors import UserError

    def missing(self, name):
        raise NoSuchKernel(name)

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", missing)
    with pytest.raises(UserError, match=r"kernel 'albert-mini' .* not installed .*make venv") as error:
        lab.require_kernel()
    assert "\n" not in str(error.value)


def test_settings_go_under_the_environment_prefix(tmp_path):
    assert lab.settings_file(tmp_path) == tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def test_lab_command_is_loopback_on_the_given_port_with_the_checkout_as_root():
    command = lab.lab_command(ROOT, 12345, open_browser=False)
    assert f"--ServerApp.root_dir={ROOT}" in command
    assert "--ServerApp.ip=127.0.0.1" in command and "--ServerApp.port=12345" in command
    assert "--ServerApp.port_retries=0" in command and "--ServerApp.open_browser=False" in command
    assert not any("token" in part.lower() for part in command)  # the token travels in the environment
    assert lab.lab_url(12345, "abc") == "http://127.0.0.1:12345/lab/tree/chapters?token=abc"


def test_free_port_is_free():
    port = lab.free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", port))


def test_contents_page_lists_every_chapter_with_title_and_topic():
    notebooks = html_book.chapters(ROOT)
    page = html_book.index_page(ROOT, notebooks)
    topics = html_book.readme_topics(ROOT)
    for notebook in notebooks:
        title = html_book.chapter_title(notebook)
        assert title != notebook.stem, f"{notebook.name} has no '# ' heading"
        row = f"| {notebook.name[:2]} | [{title}](chapters/{notebook.stem}) |"
        assert row in page
        assert notebook.name[:2] in topics, f"README's chapter table has no row for {notebook.name[:2]}"
        assert f"chapters/{notebook.stem}\n" in page  # in the navigation tree too
    assert "chapters/TEACHER_GUIDE" in page


def test_the_book_stages_the_reference_notes_that_chapters_link(tmp_path):
    """Six chapters link [REFERENCE_NOTES.md](REFERENCE_NOTES.md): the HTML book makes it a page beside them."""
    html_book.stage(ROOT, tmp_path / "src")
    staged = tmp_path / "src" / "chapters" / html_book.NOTES
    assert staged.read_bytes() == (ROOT / "chapters" / html_book.NOTES).read_bytes()
    page = (tmp_path / "src" / "index.md").read_text()
    assert ":caption: Reference\n\nchapters/REFERENCE_NOTES\n" in page  # in a toctree: Sphinx -W accepts the page
    assert "(chapters/REFERENCE_NOTES)" in page


def test_the_book_footer_names_the_licence_holder(tmp_path):
    """The theme's footer says "By" the conf's author: the holder LICENSE names, never "Author name not set"."""
    html_book.stage(ROOT, tmp_path / "src")
    conf: dict = {}
    exec((tmp_path / "src" / "conf.py").read_text(), conf)  # our generated conf.py: plain assignments
    holder = re.search(r"^Copyright \(c\) \d{4} (.+)$", (ROOT / "LICENSE").read_text(), re.MULTILINE).group(1)
    assert conf["author"] == holder == "the albert-mini authors"
    assert conf["copyright"].endswith(holder)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "LICENSE").write_text("MIT License\n")
    with pytest.raises(html_book.BookBuildError, match=r"LICENSE has no 'Copyright \(c\) YEAR HOLDER' line"):
        html_book.copyright_line(tmp_path / "repo")


def test_mathjax_ships_in_the_environment():
    folder = html_book.mathjax_source()
    assert (folder / html_book.MATHJAX_SCRIPT).stat().st_size > 100_000
    assert all((folder / part).exists() for part in html_book.MATHJAX_PARTS)


def test_the_book_never_wipes_a_folder_it_did_not_build(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(html_book.BookBuildError, match=r"holds files that no book build wrote \(notes.txt\)"):
        html_book.build(mine, ROOT)
    assert (mine / "notes.txt").read_text() == "keep"
    a_file = tmp_path / "page.html"
    a_file.write_text("x")
    with pytest.raises(SystemExit) as stop:
        html_command.main(["--out", str(a_file)])
    assert stop.value.code == 2 and a_file.read_text() == "x"
    assert capsys.readouterr().err == f"error: --out {a_file} is a file, not a folder; give a folder path (it is " \
                                      "created if absent)\n"
    empty, earlier = tmp_path / "empty", tmp_path / "earlier"
    empty.mkdir()
    earlier.mkdir()
    (earlier / html_book.BUILD_MARK).write_text("# Sphinx build info\n")
    (earlier / "index.html").write_text("old")
    with pytest.raises(html_book.BookBuildError, match=r"holds files that no book build wrote \(.buildinfo, "):
        html_book.check_out_dir(earlier)  # a Sphinx build is not proof that the folder is a book this command built
    record = OutputRecord(earlier, "html")
    for page in earlier.iterdir():
        record.add(page)
    record.save()
    for folder in (empty, earlier, tmp_path / "absent"):
        html_book.check_out_dir(folder)  # what a build may replace: a book whose record lists every file unchanged


def test_a_failed_check_names_the_largest_difference_and_shows_no_traceback(monkeypatch, capsys):
    import torch

    from albert_mini.book.exercises.checking import Case, Exercise, ExerciseFailed

    expected = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    nudge = torch.tensor([[0, 0, 0], [0, 1e-3, 0]], dtype=torch.float64)
    exercise = Exercise("f", "00", lambda x: x, [Case((expected,))])
    assert exercise.check(lambda x: x + nudge) is False  # printed, and the chapter goes on
    printed = capsys.readouterr().out
    assert "largest difference 0.001 at index (1, 1): expected 4, got 4.001" in printed
    assert "Traceback" not in printed
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # nbgrader scores a cell by whether it raises
    with pytest.raises(ExerciseFailed) as failure:
        exercise.check(lambda x: x + nudge)
    message = str(failure.value)
    assert "largest difference 0.001 at index (1, 1)" in message
    # IPython prints what _render_traceback_ returns instead of the traceback through the checking module
    assert failure.value._render_traceback_() == [f"ExerciseFailed: {message}"]


def test_chapters_carry_on_without_the_polarity_sentences(tmp_path, capsys):
    """Offline after `make lab`: chapters 8 and 10 get None and a note naming `make polarity`, not an error."""
    from albert_mini.book.optional_data import polarity_or_none

    assert polarity_or_none(tmp_path) is None
    note = capsys.readouterr().out
    flat = " ".join(note.split())
    assert "`make polarity`" in flat and str(tmp_path / "sentences.csv") in flat
    assert max(len(line) for line in note.splitlines()) <= 88
