"""The command line answers at once: --help, -V and `help COMMAND` import no torch; --help groups the commands by
audience; `env` prints what a bug report needs."""

import importlib
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest
import torch

import albert_mini
from albert_mini import commands
from albert_mini.commands import env
from albert_mini.commands import main as albert_mini_main
from albert_mini.paths import CACHE_ROOT, REPO_ROOT
from albert_mini.text.token_cache import CACHE_ENV
from cli_helpers import cli_error, fresh_import

HEAVY = ("torch", "numpy", "sentencepiece", "transformers", "matplotlib")

DRIVER = """\
import sys
sys.argv = ["albert-mini", *sys.argv[1:]]  # as the console script sees it, before the package is imported
from albert_mini.commands import main
try:
    main()
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print("IMPORTED", *sorted(name for name in {heavy!r} if name in sys.modules), file=sys.stderr)
"""


def imported_by(*args: str) -> tuple[set[str], str]:
    """The heavy packages `albert-mini ARGS` imports (as the console script), and what it printed."""
    done = subprocess.run([sys.executable, "-c", DRIVER.format(heavy=HEAVY), *args], capture_output=True, text=True,
                          timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(line for line in done.stderr.splitlines() if line.startswith("IMPORTED"))
    return set(line.split()[1:]), done.stdout


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["-V"], ["help"]]
                         + [["help", name] for name in commands.COMMANDS]
                         + [["recipe-search", "results", "--help"], ["time-to-quality", "results", "--help"]],
                         ids=" ".join)
def test_help_and_version_import_no_torch(args):
    """Every command's module imports at its top only what its parser needs (albert_mini/choices.py,
    harness/choices.py hold the names it offers); the work's modules are imported once the flags are read."""
    heavy, out = imported_by(*args)
    assert heavy == set(), f"albert-mini {' '.join(args)} imported {sorted(heavy)}"
    assert out.strip()


def test_prepare_imports_no_torch(tmp_path, monkeypatch):
    """Preparing text is SentencePiece and NumPy: `albert-mini prepare` spends no second importing torch, and its
    workers fork from a process without it."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "a.txt").write_text("One sentence here. Another one there.\n\nA second document.\n")
    heavy, out = imported_by("prepare", "--corpus", str(tmp_path / "a.txt"), "--tokenizer",
                             str(REPO_ROOT / "data" / "austen" / "spiece.model"), "--split-by", "blank-line", "--quiet")
    assert "2 documents" in out and heavy == {"numpy", "sentencepiece"}, (heavy, out)


def test_python_m_albert_mini_help_imports_no_torch():
    """The same through `python -m albert_mini`, read from Python's own import log (-X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "albert_mini", "--help"], capture_output=True,
                          text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "albert_mini.commands" in imported  # the log is read right
    assert not {name for name in imported if name.split(".")[0] in HEAVY}, sorted(imported)


def test_a_program_that_imports_the_package_still_gets_every_public_name():
    """Only the command line leaves the public names out; `python -c` (a script, a notebook) has them all."""
    facts = fresh_import()  # cli_helpers.py: one fresh interpreter, run from "/"
    assert (facts["lamb"], facts["torch"]) == ("Lamb", True)


def test_help_groups_every_command_once_by_audience():
    text = commands.help_text()
    grouped = [name for names in commands.AUDIENCES.values() for name in names]
    assert sorted(grouped) == sorted(commands.COMMANDS) and len(grouped) == len(set(grouped))
    assert [title.split()[0] for title in commands.AUDIENCES] == ["learners", "teachers", "pretraining", "research"]
    listed = re.findall(r"^for (.+):$|^  (\S+) ", text, re.M)
    order = [name or f"for {title}" for title, name in listed]
    assert order == [entry for title, names in commands.AUDIENCES.items() for entry in (f"for {title}", *names)]
    for name, (_, summary) in commands.COMMANDS.items():
        assert f"  {name} " in text and summary in text


def test_version_and_help_command(capsys):
    for flag in ("-V", "--version"):
        assert albert_mini_main([flag]) == 0
        assert capsys.readouterr().out == f"albert-mini {albert_mini.__version__}\n"
    assert albert_mini_main(["help"]) == 0 and capsys.readouterr().out == commands.help_text() + "\n"
    with pytest.raises(SystemExit) as stop:  # `help NAME` is NAME's own --help
        albert_mini_main(["help", "lab"])
    helped = capsys.readouterr().out
    with pytest.raises(SystemExit):
        albert_mini_main(["lab", "--help"])
    assert stop.value.code == 0 and helped == capsys.readouterr().out and helped.startswith("usage: albert-mini lab")
    assert "did you mean 'pretrain'?" in cli_error(albert_mini_main, ["help", "pretrian"], capsys)
    assert "takes one command" in cli_error(albert_mini_main, ["help", "lab", "book"], capsys)


DOCUMENTED = sorted(set(re.findall(r'docstring_of\("([\w.]+)"\)', "".join(
    path.read_text(encoding="utf-8") for path in (REPO_ROOT / "albert_mini" / "commands").glob("*.py")))))


@pytest.mark.parametrize("module", DOCUMENTED)
def test_a_description_read_from_the_source_is_the_module_s_docstring(module):
    """`docstring_of` reads a docstring without importing its module: the text Python gives the imported one."""
    assert commands.docstring_of(module) == importlib.import_module(f"albert_mini.{module}").__doc__


def test_recipe_search_s_subcommands_add_their_flags_when_they_parse(capsys):
    """probe's and control's flags (the Recipe's fields, the control's rules) are added when they parse, so
    their --help is complete though `recipe-search --help` imports neither."""
    from albert_mini.commands import recipe_search
    from albert_mini.harness.research.recipe_space import RECORD_NAMES
    from albert_mini.study.collapse import RULES

    for name in ("probe", "control"):
        with pytest.raises(SystemExit) as stop:
            albert_mini_main(["recipe-search", name, "--help"])
        helped = " ".join(capsys.readouterr().out.split())  # argparse's line breaks aside
        assert stop.value.code == 0 and f"usage: albert-mini recipe-search {name} [-h] [--debug] [--set" in helped
        assert "Recipe fields to change: " + ", ".join(RECORD_NAMES) in helped
    assert f"--rule {{{','.join(RULES + ('sop',))}}}" in helped
    args = recipe_search.build_parser().parse_args(["control", "x", "--rule", "sop", "--steps", "3"])
    assert (args.command, args.name, args.rule, args.steps, args.every) == ("control", "x", "sop", 3, 10)


def report_of(capsys, monkeypatch, **environ) -> dict[str, str]:
    """`albert-mini env` run here, as its lines' key -> value."""
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert albert_mini_main(["env"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(env.HEADER + "\n\n")
    return dict(line[2:].split(": ", 1) for line in out.splitlines()[2:])


def test_env_reports_the_versions_devices_threads_and_folders_in_use(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    report = report_of(capsys, monkeypatch, **{CACHE_ENV: str(tmp_path / "tokens"), "MKL_NUM_THREADS": "3"})
    assert report["albert-mini"] == f"{albert_mini.__version__} ({REPO_ROOT / 'albert_mini'})"
    assert report["Python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    for name in ("numpy", "sentencepiece", "safetensors", "transformers"):
        assert report[name] == metadata.version(name)
    assert report["torch"].startswith(f"{torch.__version__} (")
    assert ("CPU only" in report["torch"]) == (torch.version.cuda is None and not getattr(torch.version, "hip", None))
    assert report["CUDA available"] == ("no" if not torch.cuda.is_available() else report["CUDA available"])
    assert report["--device auto"].startswith("cuda: " if torch.cuda.is_available() else ("mps: ", "cpu: "))
    assert report["threads"].startswith(f"torch {torch.get_num_threads()} (inter-op "
                                        f"{torch.get_num_interop_threads()}), {len(os.sched_getaffinity(0))} cores")
    assert report["OMP_NUM_THREADS"] == "not set" and report["MKL_NUM_THREADS"] == "3"
    assert report["cache"] == str(CACHE_ROOT) and report["token cache"] == str(tmp_path / "tokens")
    assert "gloo" in report["torch.distributed"]


def test_env_names_what_it_cannot_load_instead_of_failing(capsys, monkeypatch):
    """A missing package is "not installed"; an install older than the checkout says so."""
    real = metadata.version

    def version(name):
        if name in ("transformers", "albert-mini"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(env.metadata, "version", version)
    monkeypatch.delenv(CACHE_ENV, raising=False)
    report = report_of(capsys, monkeypatch)
    assert report["transformers"] == "not installed"
    assert report["albert-mini"].endswith("the installed metadata says not installed: reinstall (make venv)")
    assert report["token cache"] == f"{CACHE_ROOT / 'tokens'} (${CACHE_ENV} not set)"


def test_env_refuses_a_flag_in_one_line(capsys):
    assert cli_error(albert_mini_main, ["env", "--json"], capsys).startswith("error: unrecognized arguments: --json")
