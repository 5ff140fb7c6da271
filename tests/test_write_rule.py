"""The write rule (albert_mini/safe_files.py) for every command in albert-mini's command table.

Every command declares what it writes (`WRITES` in its module) and is run here against destinations it must refuse:
one of its inputs (named by a flag or taken by default), a shipped file it does not regenerate, a FIFO, a folder of
a user's files, a user's file without --overwrite. Each refusal is one line `error: ...`, exit status 2, before any
work, with nothing changed on disk. A command added to the table without a declaration and cases here fails
`test_every_command_declares_its_writes_and_has_cases_here`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from albert_mini import safe_files
from albert_mini.commands import COMMANDS, module_of
from albert_mini.commands import main as albert_mini
from albert_mini.paths import DATA_ROOT, FIGURES_ROOT, MANIFEST, PRETRAINED_MODEL, REPO_ROOT, sha256_file
from albert_mini.safe_files import OutputRecord, UnsafeWriteError, Writes, check_writes, update_manifest

AUSTEN = DATA_ROOT / "austen"
CHAPTER = REPO_ROOT / "chapters" / "01_why_albert.py"


# --------------------------------------------------------------------------- what is on disk, before and after
def snapshot(path: Path):
    """What a path holds, to compare before and after a refused command: a file's bytes, a folder's files, or the
    kind of a FIFO, device or socket."""
    if path.is_symlink():
        return ("link", os.readlink(path))
    kind = safe_files.special_kind(path)
    if kind == "a folder":
        return {p.relative_to(path).as_posix(): snapshot(p) for p in sorted(path.rglob("*")) if not p.is_dir()}
    if kind is not None:
        return kind
    return path.read_bytes() if path.exists() else None


class Files:
    """The destinations of the cases, made once per test in tmp_path."""

    def __init__(self, root: Path):
        self.root = root
        self.fifo = root / "fifo"
        os.mkfifo(self.fifo)
        self.mine = root / "mine"  # a folder of a user's files
        self.mine.mkdir()
        (self.mine / "notes.txt").write_text("my notes\n")
        self.user_file = root / "user.txt"
        self.user_file.write_text("my file\n")
        self.texts = root / "texts"
        self.texts.mkdir()
        self.text = self.texts / "a.txt"
        self.text.write_text("\n\n".join(f"Sentence number {i} of a small text. It has two sentences." for i in
                                         range(200)))
        self.init = root / "init"  # a model folder given as --init (its files are inputs)
        self.init.mkdir()
        (self.init / "model.safetensors").write_bytes(b"weights")
        (self.init / "config.json").write_text("{}")
        self.link = root / "link.safetensors"  # another name (a hard link) of --init's weights
        os.link(self.init / "model.safetensors", self.link)
        self.source = root / "src" / "r-cran-janeaustenr.deb"
        self.source.parent.mkdir()
        self.source.write_bytes(b"a package")
        self.corpus_dir = root / "corpus"  # a folder of the user's holding a train.txt
        self.corpus_dir.mkdir()
        (self.corpus_dir / "train.txt").write_text("my own train.txt\n")
        self.readme_only = root / "tasks"
        self.readme_only.mkdir()
        (self.readme_only / "README.md").write_text("# my tasks\n")
        self.polarity = root / "polarity"
        self.polarity.mkdir()
        (self.polarity / "sentences.csv").write_text('"1","my own sentences"\n')
        self.results = root / "results"
        self.results.mkdir()
        (self.results / "sharing.json").write_text('{"mine": true}\n')
        self.chapter = root / "book" / "ch.py"  # a chapter whose notebook path is a FIFO
        self.chapter.parent.mkdir()
        self.chapter.write_text("# %%\nprint(1)\n")
        os.mkfifo(self.chapter.with_suffix(".ipynb"))
        self.chapter_dir = root / "book2" / "ch.py"  # and one whose notebook path is a folder
        self.chapter_dir.parent.mkdir()
        self.chapter_dir.write_text("# %%\nprint(1)\n")
        self.chapter_dir.with_suffix(".ipynb").mkdir()
        self.env = root / "env"  # a Python environment whose JupyterLab settings file is a FIFO
        (self.env / "share" / "jupyter" / "lab" / "settings").mkdir(parents=True)
        os.mkfifo(self.env / "share" / "jupyter" / "lab" / "settings" / "overrides.json")
        self.kernel_env = root / "kernel-env"  # one whose albert-mini kernel spec is a FIFO
        (self.kernel_env / "share" / "jupyter" / "kernels" / "albert-mini").mkdir(parents=True)
        os.mkfifo(self.kernel_env / "share" / "jupyter" / "kernels" / "albert-mini" / "kernel.json")
        self.built_book = root / "html"  # a Sphinx build with a user's file beside it
        self.built_book.mkdir()
        (self.built_book / ".buildinfo").write_text("# Sphinx build info\n")
        (self.built_book / "index.html").write_text("<p>a book</p>")
        (self.built_book / "my-notes.txt").write_text("keep me\n")
        self.handout_fifo = root / "handout"
        (self.handout_fifo / "chapters").mkdir(parents=True)
        os.mkfifo(self.handout_fifo / "chapters" / "01_why_albert.ipynb")
        self.submissions = root / "submissions"
        (self.submissions / "alice").mkdir(parents=True)
        self.notebook = self.submissions / "alice" / "01_why_albert.ipynb"
        self.notebook.write_text("{}")
        self.records = root / "records"
        self.records.mkdir()
        (self.records / "base.json").write_text("{}")
        self.probes = root / "probes"
        self.probes.mkdir()
        (self.probes / "base.json").write_text('{"mine": true}\n')
        self.card = root / "card"  # a copy of a shipped run record whose README.md is the user's own
        shutil.copytree(DATA_ROOT / "results" / "classroom-model-v1", self.card)
        (self.card / "README.md").write_text("# my card\n")


@dataclass
class Case:
    label: str
    argv: object  # Files -> the arguments after the command's name
    protected: object  # Files -> the paths that must not change
    says: str  # in the error line
    setup: object = None  # (Files, monkeypatch) -> None, before the command runs


V1, V2 = DATA_ROOT / "results" / "classroom-model-v1", DATA_ROOT / "results" / "classroom-model-v2"
NANO = ["--preset", "albert-nano", "--corpus", "synthetic", "--steps", "1"]

CASES: dict[str, list[Case]] = {
    "pretrain": [
        Case("out-fifo", lambda f: [*NANO, "--out", f.fifo], lambda f: [f.fifo], "not a directory"),
        Case("out-users-folder", lambda f: [*NANO, "--out", f.mine, "--overwrite"], lambda f: [f.mine],
             "holds files that no run wrote"),
    ],
    "prepare": [
        Case("cache-fifo", lambda f: ["--corpus", f.text, "--tokenizer", f.user_file], lambda f: [f.fifo],
             "is a FIFO (named pipe), not a folder",
             lambda f, mp: mp.setenv("ALBERT_MINI_CACHE", str(f.fifo))),
        Case("cache-holds-input", lambda f: ["--corpus", f.text, "--tokenizer", f.user_file],
             lambda f: [f.texts], "one of this command's inputs",
             lambda f, mp: mp.setenv("ALBERT_MINI_CACHE", str(f.texts))),
    ],
    "finetune": [
        Case("save-default-init", lambda f: ["--task", "austen-mc", "--save", PRETRAINED_MODEL / "model.safetensors",
                                             "--overwrite"],
             lambda f: [PRETRAINED_MODEL], "is one of this command's input files"),
        Case("save-init", lambda f: ["--task", "austen-mc", "--init", f.init, "--save", f.init / "model.safetensors",
                                     "--overwrite"], lambda f: [f.init], "is one of this command's input files"),
        Case("save-hard-link-of-init", lambda f: ["--task", "austen-mc", "--init", f.init, "--save", f.link,
                                                  "--overwrite"],
             lambda f: [f.init, f.link], "under another name"),
        Case("save-default-tokenizer", lambda f: ["--task", "austen-mc", "--save", AUSTEN / "spiece.model",
                                                  "--overwrite"], lambda f: [AUSTEN], "input files"),
        Case("save-shipped", lambda f: ["--task", "austen-mc", "--save", DATA_ROOT / "results" / "finetune.json",
                                        "--overwrite"],
             lambda f: [DATA_ROOT / "results" / "finetune.json"], "does not regenerate"),
        Case("save-fifo", lambda f: ["--task", "austen-mc", "--save", f.fifo, "--overwrite"], lambda f: [f.fifo],
             "is a FIFO (named pipe), not a regular file"),
        Case("save-users-file", lambda f: ["--task", "austen-mc", "--save", f.user_file], lambda f: [f.user_file],
             "already exists"),
    ],
    "tokenizer": [
        Case("out-fifo", lambda f: ["train", "--text", f.text, "--out", f.fifo, "--overwrite"], lambda f: [f.fifo],
             "FIFO"),
        Case("out-input", lambda f: ["train", "--text", f.text, "--out", f.text, "--overwrite"], lambda f: [f.texts],
             "input files"),
        Case("out-default-input", lambda f: ["train", "--out", AUSTEN / "train.txt", "--overwrite"],
             lambda f: [AUSTEN], "input files"),
        Case("out-shipped", lambda f: ["train", "--text", f.text, "--out", AUSTEN / "stats.json", "--overwrite"],
             lambda f: [AUSTEN], "does not regenerate"),
        Case("out-users-file", lambda f: ["train", "--text", f.text, "--out", f.user_file],
             lambda f: [f.user_file], "already exists"),
    ],
    "corpus": [
        Case("out-fifo", lambda f: [f.source, "--out", f.fifo], lambda f: [f.fifo], "not a folder"),
        Case("out-users-corpus", lambda f: [f.source, "--out", f.corpus_dir], lambda f: [f.corpus_dir],
             "already exists"),
        Case("out-holds-source", lambda f: [f.source, "--out", f.source.parent], lambda f: [f.source.parent],
             "one of this command's inputs"),
    ],
    "austen-tasks": [
        Case("out-fifo", lambda f: ["--out", f.fifo], lambda f: [f.fifo], "not a folder"),
        Case("out-users-folder", lambda f: ["--out", f.mine], lambda f: [f.mine], "does not write"),
        Case("out-users-readme", lambda f: ["--out", f.readme_only], lambda f: [f.readme_only], "already exists"),
        Case("out-the-corpus", lambda f: ["--out", AUSTEN], lambda f: [AUSTEN], "does not write"),
    ],
    "polarity": [
        Case("cache-fifo", lambda f: ["--cache-dir", f.fifo], lambda f: [f.fifo], "not a folder"),
        Case("users-sentences", lambda f: ["--cache-dir", f.polarity], lambda f: [f.polarity], "--force"),
    ],
    "experiments": [
        Case("out-fifo", lambda f: ["sharing", "--out", f.fifo, "--estimate"], lambda f: [f.fifo], "not a folder"),
        Case("out-users-result", lambda f: ["sharing", "--seeds", "0", "--out", f.results], lambda f: [f.results],
             "already exists"),
        Case("out-holds-inputs", lambda f: ["sharing", "--out", DATA_ROOT, "--estimate"], lambda f: [AUSTEN],
             "one of this command's inputs"),
    ],
    "numerics": [
        Case("guard-fifo", lambda f: ["--write"], lambda f: [f.fifo], "FIFO",
             lambda f, mp: mp.setattr("albert_mini.harness.experiments.numerics.GUARD_FILE", f.fifo)),
    ],
    "book": [
        Case("notebook-fifo", lambda f: [f.chapter], lambda f: [f.chapter.parent], "FIFO"),
        Case("notebook-folder", lambda f: [f.chapter_dir], lambda f: [f.chapter_dir.parent], "is a folder"),
    ],
    "lab": [
        Case("settings-fifo", lambda f: ["--install-settings"], lambda f: [f.env], "FIFO",
             lambda f, mp: mp.setattr(sys, "prefix", str(f.env))),
        Case("kernel-fifo", lambda f: ["--install-settings"], lambda f: [f.kernel_env], "FIFO",
             lambda f, mp: mp.setattr(sys, "prefix", str(f.kernel_env))),
    ],
    "html": [
        Case("out-fifo", lambda f: ["--out", f.fifo], lambda f: [f.fifo], "not a folder"),
        Case("out-users-folder", lambda f: ["--out", f.mine], lambda f: [f.mine], "no book build wrote"),
        Case("out-sphinx-build-and-a-users-file", lambda f: ["--out", f.built_book], lambda f: [f.built_book],
             "my-notes.txt"),
        Case("out-holds-inputs", lambda f: ["--out", FIGURES_ROOT], lambda f: [FIGURES_ROOT / "sharing.png"],
             "one of this command's inputs"),
    ],
    "exercises": [
        Case("notebook-fifo", lambda f: [CHAPTER, "--out", f.handout_fifo, "--overwrite"],
             lambda f: [f.handout_fifo], "FIFO"),
        Case("out-the-chapters", lambda f: [CHAPTER, "--out", CHAPTER.parent], lambda f: [CHAPTER.parent],
             "folder of the chapters"),
        Case("out-fifo", lambda f: [CHAPTER, "--out", f.fifo], lambda f: [f.fifo], "not a folder"),
    ],
    "grade": [
        Case("out-fifo", lambda f: [f.submissions, "--out", f.fifo, "--overwrite"], lambda f: [f.fifo], "FIFO"),
        Case("out-a-notebook", lambda f: [f.submissions, "--out", f.notebook, "--overwrite"],
             lambda f: [f.submissions], "input files"),
        Case("out-users-file", lambda f: [f.submissions, "--out", f.user_file], lambda f: [f.user_file],
             "already exists"),
    ],
    "recipe-search": [
        Case("results-fifo", lambda f: ["results", "--records", f.records, "--out", f.fifo, "--overwrite"],
             lambda f: [f.fifo], "FIFO"),
        Case("results-input", lambda f: ["results", "--records", f.records, "--out", f.records / "base.json",
                                         "--overwrite"], lambda f: [f.records], "input files"),
        Case("results-shipped", lambda f: ["results", "--records", f.records, "--out",
                                           DATA_ROOT / "results" / "lexical_sop.json", "--overwrite"],
             lambda f: [DATA_ROOT / "results" / "lexical_sop.json"], "does not regenerate"),
        Case("results-default-without-overwrite", lambda f: ["results"],
             lambda f: [DATA_ROOT / "results" / "recipe_search.json", FIGURES_ROOT / "recipe_search.png"],
             "already exists"),
        Case("probe-users-record", lambda f: ["probe", "base", "--out", f.probes], lambda f: [f.probes],
             "already exists"),
    ],
    "leak-control": [
        Case("out-fifo", lambda f: ["--out", f.fifo, "--overwrite"], lambda f: [f.fifo], "FIFO"),
        Case("out-shipped", lambda f: ["--out", DATA_ROOT / "results" / "sentence_task.json", "--overwrite"],
             lambda f: [DATA_ROOT / "results" / "sentence_task.json"], "does not regenerate"),
        Case("out-users-file", lambda f: ["--out", f.user_file], lambda f: [f.user_file], "already exists"),
    ],
    "lexical-sop": [
        Case("default-without-overwrite", lambda f: [], lambda f: [DATA_ROOT / "results" / "lexical_sop.json"],
             "already exists"),
        Case("out-fifo", lambda f: ["--out", f.fifo, "--overwrite"], lambda f: [f.fifo], "FIFO"),
    ],
    "time-to-quality": [
        Case("out-input", lambda f: ["results", V1, V2, "--out", V1 / "run.json", "--overwrite"], lambda f: [V1],
             "input files"),
        Case("figure-shipped", lambda f: ["results", V1, V2, "--out", f.root / "t.json", "--figure",
                                          FIGURES_ROOT / "experiment_sharing.png", "--overwrite"],
             lambda f: [FIGURES_ROOT / "experiment_sharing.png"], "does not regenerate"),
        Case("out-fifo", lambda f: ["results", V1, V2, "--out", f.fifo, "--overwrite"], lambda f: [f.fifo], "FIFO"),
        Case("default-without-overwrite", lambda f: ["results", V1, V2],
             lambda f: [DATA_ROOT / "results" / "time_to_quality.json", FIGURES_ROOT / "time_to_quality.png"],
             "already exists"),
    ],
    "model-card": [
        Case("figure-outside-figures", lambda f: [f.card, "--figure", "../escape.png", "--overwrite"],
             lambda f: [f.card, REPO_ROOT / "escape.png"], "must be a file name"),
        Case("users-card", lambda f: [f.card, "--figure", "mine.png"], lambda f: [f.card], "already exists"),
        Case("shipped-card-without-overwrite", lambda f: [V1], lambda f: [V1, FIGURES_ROOT], "already exists"),
        Case("shipped-figure-of-another", lambda f: [f.card, "--figure", "experiment_sharing.png", "--overwrite"],
             lambda f: [f.card, FIGURES_ROOT / "experiment_sharing.png"], "does not regenerate"),
        Case("strata-of-the-shipped-card-without-overwrite", lambda f: [PRETRAINED_MODEL, "--strata"],
             lambda f: [PRETRAINED_MODEL], "already exists"),
    ],
    "env": [],  # it writes nothing and takes no path: nothing to refuse
}


def test_every_command_declares_its_writes_and_has_cases_here():
    for name in COMMANDS:
        writes = getattr(module_of(name), "WRITES", None)
        assert isinstance(writes, Writes), f"albert_mini/commands/{COMMANDS[name][0]}.py declares no WRITES"
        assert writes.command == name and writes.outputs and writes.inputs
    assert set(CASES) == set(COMMANDS), "every command needs its refusals in CASES"


def _timeout(signum, frame):
    raise TimeoutError("the command blocked (it opened a FIFO?) instead of refusing it")


@pytest.mark.parametrize("name, case", [(name, case) for name, cases in CASES.items() for case in cases],
                         ids=[f"{name}-{case.label}" for name, cases in CASES.items() for case in cases])
def test_each_command_refuses_in_one_line_and_changes_nothing(name, case, tmp_path, monkeypatch, capsys):
    files = Files(tmp_path)
    if case.setup is not None:
        case.setup(files, monkeypatch)
    protected = case.protected(files)
    before = [snapshot(p) for p in protected]
    safe_files.CHECKED.clear()
    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(120)
    try:
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            albert_mini([name, *map(str, case.argv(files))])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert case.says in err, err
    assert [snapshot(p) for p in protected] == before
    assert not list(tmp_path.rglob(".*.tmp-*"))  # no temp file left either


# --------------------------------------------------------------------------- the rule itself
def test_a_device_a_fifo_a_socket_and_a_folder_are_never_written_even_with_overwrite(tmp_path):
    fifo, sock_path, folder = tmp_path / "fifo", tmp_path / "sock", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        for path, kind in ((Path(os.devnull), "a device"), (fifo, "a FIFO"), (sock_path, "a socket"),
                           (folder, "is a folder")):
            with pytest.raises(UnsafeWriteError, match=kind):
                check_writes("test", files=[("--out", path)], overwrite=True)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    with pytest.raises(UnsafeWriteError, match="a FIFO"):  # a link to one is refused too
        check_writes("test", files=[("--out", link)], overwrite=True)


def test_inputs_are_compared_by_path_and_by_inode(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("read me")
    os.link(source, tmp_path / "hard")
    (tmp_path / "soft").symlink_to(source)
    for other in ("hard", "soft"):
        with pytest.raises(UnsafeWriteError, match="input files.*under another name"):
            check_writes("test", files=[("--out", tmp_path / other)], inputs=[source], overwrite=True)
    with pytest.raises(UnsafeWriteError, match="input files"):  # a folder of inputs stands for its files
        check_writes("test", files=[("--out", source)], inputs=[tmp_path], overwrite=True)
    with pytest.raises(UnsafeWriteError, match="holds .*in.txt, one of this command's inputs"):
        check_writes("test", folders=[("--out", tmp_path)], inputs=[source])
    with pytest.raises(UnsafeWriteError, match="also where --out goes"):
        check_writes("test", files=[("--out", tmp_path / "a"), ("--figure", tmp_path / "a")])
    assert source.read_text() == "read me"


def test_shipped_files_are_replaced_only_by_their_regenerator(tmp_path):
    shipped = AUSTEN / "stats.json"
    with pytest.raises(UnsafeWriteError, match="ships in data/"):
        check_writes("test", files=[("--out", shipped)], overwrite=True)
    with pytest.raises(UnsafeWriteError, match="already exists"):  # declared, but still not without overwrite
        check_writes("test", files=[("--out", shipped)], regenerates=[AUSTEN])
    assert check_writes("test", files=[("--out", shipped)], overwrite=True, regenerates=[AUSTEN]).files == [shipped]
    new = DATA_ROOT / "a-new-file-nobody-ships.json"  # a new file is no replacement
    assert check_writes("test", files=[("--out", new)]).files == [new] and not new.exists()


def test_a_manifest_keeps_every_line_it_does_not_own_in_place(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(name)
    other = "0" * 64
    text = (f"# checksums of my folder\n{other}  z.txt\nSHA256 (b.txt) = {'1' * 64}\n\n"
            f"SHA256 (y.txt) = {other}\n{'2' * 64} *a.txt\n")
    (tmp_path / MANIFEST).write_text(text)
    update_manifest(tmp_path, ["a.txt", "b.txt", "c.txt"])
    a, b, c = (sha256_file(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt"))
    assert (tmp_path / MANIFEST).read_text() == (
        f"# checksums of my folder\n{other}  z.txt\nSHA256 (b.txt) = {b}\n\n"
        f"SHA256 (y.txt) = {other}\n{a} *a.txt\n{c}  c.txt\n")
    from albert_mini.paths import read_manifest

    assert read_manifest(tmp_path) == {"z.txt": other, "b.txt": b, "y.txt": other, "a.txt": a, "c.txt": c}


def test_the_tokenizer_never_touches_a_manifest_it_does_not_own(tmp_path, capsys):
    folder = tmp_path / "models"
    folder.mkdir()
    manifest = f"# mine\nSHA256 (x.bin) = {'3' * 64}\n{'4' * 64}  z.bin\n"
    (folder / MANIFEST).write_text(manifest)
    text = tmp_path / "a.txt"
    text.write_text("\n".join(f"Line {i} of a small text, with words enough to train on." for i in range(300)))
    albert_mini(["tokenizer", "train", "--text", str(text), "--vocab-size", "60", "--out", str(folder / "t.model")])
    assert (folder / "t.model").is_file() and (folder / MANIFEST).read_text() == manifest
    from albert_mini.text.tokenizer import destinations

    names = [p.name for _, p in destinations(AUSTEN / "spiece.model")]
    assert names == ["spiece.model", "spiece.vocab", MANIFEST]  # only the shipped tokenizer's own manifest lines


def test_a_rerun_of_the_hand_out_replaces_its_own_files_but_not_a_learners_edit(tmp_path, capsys):
    out = tmp_path / "student"
    assert albert_mini(["exercises", str(CHAPTER), "--out", str(out)]) == 0
    notebook = out / "chapters" / "01_why_albert.ipynb"
    assert albert_mini(["exercises", str(CHAPTER), "--out", str(out)]) == 0  # its own, unchanged: replaced
    edited = json.loads(notebook.read_text())
    edited["cells"][0]["source"] = "my answers"
    notebook.write_text(json.dumps(edited))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        albert_mini(["exercises", str(CHAPTER), "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "01_why_albert.ipynb already exists" in err and "--overwrite" in err
    assert json.loads(notebook.read_text())["cells"][0]["source"] == "my answers"
    assert albert_mini(["exercises", str(CHAPTER), "--out", str(out), "--overwrite"]) == 0
    assert json.loads(notebook.read_text())["cells"][0]["source"] != "my answers"


def test_the_html_book_deletes_only_the_files_it_wrote(tmp_path):
    from albert_mini.book import html_book

    out, built = tmp_path / "html", tmp_path / "built"
    for name in ("index.html", "_static/a.js", "chapters/01.html"):
        (built / name).parent.mkdir(parents=True, exist_ok=True)
        (built / name).write_text(f"old {name}")
    html_book.replace_book(out, built, html_book.check_out_dir(out))
    shutil.rmtree(built)
    (built / "_static").mkdir(parents=True)
    (built / "index.html").write_text("new index")
    (built / "_static" / "b.js").write_text("new b")
    html_book.replace_book(out, built, html_book.check_out_dir(out))  # a book of its own: replaced
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        safe_files.OUTPUT_RECORD, "_static/b.js", "index.html"]
    assert not (out / "chapters").exists()  # the folder it emptied
    (out / "index.html").write_text("edited by hand")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(html_book.BookBuildError, match=r"\(index.html, notes.txt\)"):
        html_book.check_out_dir(out)
    assert (out / "notes.txt").read_text() == "mine" and (out / "index.html").read_text() == "edited by hand"
    (out / "index.html").write_text("new index")  # as it was written: its own again
    with pytest.raises(html_book.BookBuildError, match=r"\(notes.txt\)"):
        html_book.check_out_dir(out)
    assert OutputRecord(out, "html").unchanged(out / "index.html")
    assert not OutputRecord(out, "exercises").files  # a record is read only by the command that wrote it


def test_one_atomic_writer_and_one_fsync_helper():
    """safe_files holds the package's atomic writer and its fsync of a file or folder; nothing else defines one."""
    from albert_mini.training import checkpoint

    assert checkpoint._fsync_path is safe_files.fsync_path
    defined = []
    for path in (REPO_ROOT / "albert_mini").rglob("*.py"):
        for line in path.read_text().splitlines():
            if line.lstrip().startswith("def ") and ("atomic_write" in line or "fsync" in line):
                defined.append(f"{path.relative_to(REPO_ROOT)}: {line.strip()[:40]}")
    assert all(d.startswith("albert_mini/safe_files.py") for d in defined), defined
