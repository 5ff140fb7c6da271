"""Command lines: expected errors in one line with exit status 2, --debug tracebacks, no runpy warning, any cwd."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import albert_mini
from albert_mini.import_graph import module_files
from albert_mini.paths import PRETRAINED_MODEL, REPO_ROOT
from albert_mini.tasks import finetune
from albert_mini.text import build_corpus, tokenizer
from albert_mini.training import pretrain
from cli_helpers import REPO, cli_error, run_module

FIXTURES = REPO / "tests" / "tasks" / "fixtures" / "tasks"
CLI_MODULES = ["training.pretrain", "tasks.finetune", "text.tokenizer", "text.build_corpus", "tasks.polarity",
               "tasks.austen_tasks", "study.experiments", "book.build", "book.exercises.student", "book.lab",
               "book.html_book"]


def test_importing_the_package_imports_none_of_its_command_lines():
    """What keeps runpy quiet: `python -m albert_mini.X.Y` finds X.Y not yet imported."""
    code = "import sys, albert_mini; print(sorted(m for m in sys.modules if m.startswith('albert_mini')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = set(json.loads(done.stdout.replace("'", '"')))
    commands = {name for name, path in module_files().items() if '__name__ == "__main__"' in path.read_text()}
    assert len(commands) >= len(CLI_MODULES) and not imported & commands
    assert {"albert_mini.model.albert", "albert_mini.training.trainer", "albert_mini.tasks.finetuning"} <= imported
    assert not {"albert_mini.text.tokenizer", "albert_mini.tasks.registry"} & imported  # the lazy names' modules


def test_every_public_name_resolves():
    """`from albert_mini import *` in a fresh interpreter: every name of __all__, the lazy ones included."""
    code = "from albert_mini import *; import albert_mini; print(sum(n in globals() for n in albert_mini.__all__))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(albert_mini.__all__)
    for name in albert_mini.__all__:  # every public name still comes from the package
        assert getattr(albert_mini, name) is not None, name
    assert set(albert_mini.__all__) <= set(dir(albert_mini))


@pytest.mark.parametrize("module", CLI_MODULES)
def test_every_command_line_runs_without_a_runpy_warning(module):
    done = run_module(module, "--help", cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "" and "--debug" in done.stdout


def test_finetune_starts_from_the_shipped_model_in_any_working_directory(tmp_path):
    done = run_module("tasks.finetune", "--task", "austen-mc", "--steps", "1", "--batch-size", "2",
                      "--max-train-examples", "2", "--max-eval-examples", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Warning" not in done.stderr
    assert json.loads(done.stdout)["init"] == str(PRETRAINED_MODEL)
    assert PRETRAINED_MODEL == REPO_ROOT / "data" / "pretrained" / "albert-mini-austen"


def test_a_corrupt_shipped_model_says_restore_it_with_git_never_delete_it(tmp_path):
    """ALBERT_MINI_ROOT points the package at a copy of the repository layout whose shipped model is damaged."""
    root = tmp_path / "checkout"
    (root / "data" / "pretrained").mkdir(parents=True)
    for shared in ("austen", "tasks"):
        (root / "data" / shared).symlink_to(REPO / "data" / shared)
    model = shutil.copytree(REPO / "data" / "pretrained" / "albert-mini-austen", root / "data" / "pretrained"
                            / "albert-mini-austen")
    weights = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(weights[:-1000])
    done = run_module("tasks.finetune", "--task", "austen-mc", "--steps", "1", "--batch-size", "2",
                      "--max-train-examples", "2", "--max-eval-examples", "2", cwd=tmp_path,
                      env={"ALBERT_MINI_ROOT": str(root)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{model / 'model.safetensors'} is corrupt" in done.stderr
    assert f"restore it with `git checkout -- data/pretrained/albert-mini-austen` in {root}" in done.stderr
    assert "delete" not in done.stderr


def test_debug_shows_the_traceback(tmp_path):
    args = ["--format", "race", "--train-file", tmp_path / "absent.json", "--test-file", tmp_path / "absent.json",
            "--init", "random", "--preset", "albert-nano"]
    quiet = run_module("tasks.finetune", *args)
    assert quiet.returncode == 2 and quiet.stderr.startswith("error: task file") and "Traceback" not in quiet.stderr
    loud = run_module("tasks.finetune", *args, "--debug")
    assert loud.returncode == 1 and "Traceback (most recent call last)" in loud.stderr
    assert "MissingFileError: task file" in loud.stderr


def test_a_bad_race_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "race.json"
    bad.write_text(json.dumps({"id": "r1", "article": "Text.", "questions": ["Q?"], "options": [["a", "b"]],
                               "answers": ["E"]}))
    error = cli_error(finetune.main, ["--format", "race", "--train-file", str(bad), "--test-file", str(bad),
                                      "--init", "random", "--preset", "albert-nano"], capsys)
    assert str(bad) in error


@pytest.mark.parametrize("argv,expected", [
    (["--steps", "x", "--out", "o"],
     "argument --steps: invalid int value: 'x' (see python -m albert_mini.training.pretrain --help)"),
    (["--steps", "1"], "the following arguments are required: --out"),
    (["--steps", "1", "--out", "o", "--nope"], "unrecognized arguments: --nope"),
    (["--steps", "0", "--out", "o"], "--steps must be >= 1, got 0"),
    (["--steps", "1", "--out", "o", "--corpus", "synthetic", "--tokenizer", "t.model"],
     "--tokenizer has no effect with --corpus synthetic"),
    (["--steps", "1", "--out", "o", "--tokenizer", "absent.model"], "tokenizer model absent.model does not exist"),
    (["--steps", "1", "--out", "o", "--corpus", "austen", "--validation", "v.txt"],
     "--validation applies to your own text (--corpus PATH...); --corpus austen has its own validation split"),
])
def test_pretrain_flag_errors_are_one_line(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert expected in cli_error(pretrain.main, argv, capsys)
    assert not (tmp_path / "o").exists()


def test_tokenizer_and_build_corpus_errors_are_one_line(tmp_path, capsys):
    latin = tmp_path / "notes.txt"
    latin.write_bytes("Un caf\u00e9 cr\u00e8me.\nEt puis.\n".encode("latin-1"))
    error = cli_error(tokenizer.main, ["train", "--text", str(latin), "--out", str(tmp_path / "t.model")], capsys)
    assert f"{latin} is not UTF-8 text: byte 0xe9 at byte offset 6 (line 1)" in error
    assert f"iconv -f latin1 -t utf-8 {latin} > {tmp_path / 'notes.utf8.txt'}" in error
    assert not (tmp_path / "t.model").exists()
    fake = tmp_path / "x.deb"
    fake.write_bytes(b"not an archive")
    assert "not a .deb file" in cli_error(build_corpus.main, [str(fake), "--out", str(tmp_path / "out")], capsys)
    assert "invalid choice: 'fit'" in cli_error(tokenizer.main, ["fit"], capsys)


def test_cli_run_lets_bugs_keep_their_traceback():
    from albert_mini import cli

    def buggy(argv):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        cli.run(buggy, [])
    assert cli.one_line("first\n  second\n\nthird") == "first; second; third"


def test_subprocess_errors_print_exactly_one_line(tmp_path):
    out = tmp_path / "file"
    out.write_text("x")
    done = run_module("training.pretrain", "--preset", "albert-nano", "--corpus", "synthetic", "--steps", "1",
                      "--out", out)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: --out {out} is a file, not a directory; give a directory path (it is created if " \
                          "absent)\n"
    assert os.path.getsize(out) == 1
