"""The `albert-mini` command line: every subcommand's help, expected errors in one line with exit status 2,
--debug tracebacks, any cwd; and no other way in (no library module is a `python -m` command)."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import albert_mini
from albert_mini import commands
from albert_mini.commands import finetune, pretrain, tokenizer
from albert_mini.commands import main as albert_mini_main
from albert_mini.paths import PRETRAINED_MODEL, REPO_ROOT
from cli_helpers import REPO, cli_error, fresh_import, run_command
from import_graph import module_files

FIXTURES = REPO / "tests" / "tasks" / "fixtures" / "tasks"
OLD_COMMAND = re.compile(r"python -m albert_mini\.")  # the module commands the `albert-mini` command replaced


def console_script() -> Path:
    """The `albert-mini` script pip installed beside this Python (make venv installs the package)."""
    folder = Path(sys.executable).parent
    script = next((p for p in (folder / "albert-mini", folder / "albert-mini.exe") if p.is_file()), None)
    assert script is not None, f"no albert-mini script in {folder}: install the package (make venv)"
    return script


@pytest.mark.slow
def test_albert_mini_help_lists_every_command_and_python_m_albert_mini_is_the_same():
    done = subprocess.run([str(console_script()), "--help"], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    assert sorted(listed) == sorted(commands.COMMANDS)  # grouped by audience: tests/test_cli_start.py
    for name, (_, summary) in commands.COMMANDS.items():
        assert f"  {name} " in done.stdout and summary in done.stdout
    same = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "albert_mini", "--help"],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert (same.returncode, same.stdout, same.stderr) == (0, done.stdout, "")


@pytest.mark.parametrize("name", commands.COMMANDS)
def test_every_command_has_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        albert_mini_main([name, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith(f"usage: albert-mini {name} ") and "--debug" in out
    assert not OLD_COMMAND.search(out), "help names a command that no longer exists"


@pytest.mark.parametrize("name", commands.COMMANDS)
def test_every_command_refuses_a_bad_flag_in_one_line(name, capsys):
    error = cli_error(albert_mini_main, [name, "--no-such-flag"], capsys)
    assert error.rstrip().endswith(f"(see albert-mini {name} --help)"), error


def test_the_dispatcher_names_a_wrong_command_and_what_to_type(capsys):
    assert "did you mean 'pretrain'?" in cli_error(albert_mini_main, ["pretrian"], capsys)
    assert "albert-mini --help" in cli_error(albert_mini_main, [], capsys)
    assert albert_mini_main(["--version"]) == 0
    assert capsys.readouterr().out == f"albert-mini {albert_mini.__version__}\n"


def test_no_library_module_is_a_python_m_command():
    """One way in: `albert-mini` (albert_mini/commands/), and `python -m albert_mini` through __main__.py."""
    mains = []
    for name, path in module_files().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and re.fullmatch(r"__name__ == ['\"]__main__['\"]", ast.unparse(node.test)):
                mains.append(name)
    assert mains == ["albert_mini.__main__"]
    assert sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "albert_mini").rglob("__main__.py")) \
        == ["albert_mini/__main__.py"]


def documentation_files() -> list[Path]:
    """What a reader learns commands from: READMEs and guides, the Makefile, the chapters, scripts and CI."""
    patterns = ["*.md", "Makefile", "environment.yml", "chapters/*.py", "chapters/*.ipynb", "chapters/**/*.md",
                "chapters/solutions/*.py", "data/**/README.md", "albert_mini/**/README.md", "benchmarks/*.py",
                ".ci/*", "albert_mini/commands/*.py", "albert_mini/__main__.py"]
    return sorted({path for pattern in patterns for path in REPO_ROOT.glob(pattern) if path.is_file()})


def test_no_document_names_the_old_module_commands():
    files = documentation_files()
    assert {"README.md", "Makefile", "chapters/07_pretraining.ipynb", "data/results/README.md"} <= {
        p.relative_to(REPO_ROOT).as_posix() for p in files}
    stale = [f"{p.relative_to(REPO_ROOT)}:{n}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if OLD_COMMAND.search(line)]
    assert stale == [], "these lines name `python -m albert_mini.X`: it is `albert-mini COMMAND` now"


def test_every_public_name_resolves():
    """`from albert_mini import *` in a fresh interpreter: every name of __all__."""
    assert fresh_import()["star"] == len(albert_mini.__all__)  # cli_helpers.py: one fresh interpreter
    for name in albert_mini.__all__:  # every public name still comes from the package
        assert getattr(albert_mini, name) is not None, name
    assert set(albert_mini.__all__) <= set(dir(albert_mini))


@pytest.mark.slow
def test_finetune_starts_from_the_shipped_model_in_any_working_directory(tmp_path):
    done = run_command("finetune", "--task", "austen-mc", "--steps", "1", "--batch-size", "2",
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
    done = run_command("finetune", "--task", "austen-mc", "--steps", "1", "--batch-size", "2",
                      "--max-train-examples", "2", "--max-eval-examples", "2", cwd=tmp_path,
                      env={"ALBERT_MINI_ROOT": str(root)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{model / 'model.safetensors'} is corrupt" in done.stderr
    assert f"restore it with `git checkout -- data/pretrained/albert-mini-austen` in {root}" in done.stderr
    assert "delete" not in done.stderr


@pytest.mark.slow
def test_debug_shows_the_traceback(tmp_path):
    args = ["--format", "race", "--train-file", tmp_path / "absent.json", "--test-file", tmp_path / "absent.json",
            "--init", "random", "--preset", "albert-nano"]
    quiet = run_command("finetune", *args)
    assert quiet.returncode == 2 and quiet.stderr.startswith("error: task file") and "Traceback" not in quiet.stderr
    loud = run_command("finetune", *args, "--debug")
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
     "argument --steps: invalid int value: 'x' (see albert-mini pretrain --help)"),
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
    assert "not a .deb file" in cli_error(albert_mini_main, ["corpus", str(fake), "--out", str(tmp_path / "out")],
                                             capsys)
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
    done = run_command("pretrain", "--preset", "albert-nano", "--corpus", "synthetic", "--steps", "1",
                      "--out", out)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: --out {out} is a file, not a directory; give a directory path (it is created if " \
                          "absent)\n"
    assert os.path.getsize(out) == 1


def test_finetune_and_the_experiments_take_the_one_device_rule(capsys, monkeypatch):
    """--device (albert_mini.choices' names, default auto) reaches FinetuneSettings and the experiments' runs."""
    from albert_mini.choices import DEVICE_CHOICES
    from albert_mini.errors import UsageError

    for name in ("pretrain", "finetune", "experiments"):
        assert "argument --device: invalid choice: 'gpu'" in cli_error(albert_mini_main, [name, "--device", "gpu"],
                                                                        capsys)
    assert finetune.build_parser().get_default("device") == "auto"
    seen = []

    def stop(what):
        def record(*args, **kwargs):
            seen.append(what(*args, **kwargs))
            raise UsageError("stopped before any training")
        return record

    # Where the commands take them from once their flags are read (their modules import no torch at the top).
    monkeypatch.setattr("albert_mini.tasks.finetuning.run_task",
                        stop(lambda task, init, settings, **kw: settings.device))
    monkeypatch.setattr("albert_mini.harness.experiments.provenance.use_device", stop(lambda name: name))
    cli_error(albert_mini_main, ["finetune", "--task", "austen-mc", "--device", "cpu"], capsys)
    cli_error(albert_mini_main, ["experiments", "sharing", "--estimate", "--device", "cpu"], capsys)
    cli_error(albert_mini_main, ["experiments", "sharing", "--estimate"], capsys)
    assert seen == ["cpu", "cpu", "auto"] and set(DEVICE_CHOICES) >= {"auto", "cpu", "cuda", "mps"}
