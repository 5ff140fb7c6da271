"""The `albert-mini` command line: the table of its subcommands, one module each, and the dispatcher."""

# `albert-mini COMMAND ARGS...` (or `python -m albert_mini COMMAND ARGS...`) runs COMMANDS[COMMAND]'s module's
# `main(ARGS)`. A command module holds only its command line: the parser (flags, help, epilog) and a `main` that
# checks the flags and calls the library, where the work is done. Errors go through albert_mini.cli.run: one line
# `error: ...`, exit status 2. This is the top layer: nothing else in the package imports it, and a command's module
# is imported only when that command runs.
#
# Adding a command: a module here with `main(argv)` (building its parser with `command_parser(name)`), one line in
# COMMANDS (name -> (module, what it does, in one line)) and its name in the group of AUDIENCES it serves: --help
# lists the commands by audience, in that group's order.
#
# `--help`, `--version` (`-V`) and `help` import no torch (seconds): this module imports only albert_mini.cli and
# albert_mini.errors, and albert_mini/__init__ leaves the public names out in the command line. `help COMMAND`
# (COMMAND --help) imports no torch either: a command's module imports at its top only what its parser needs (the
# names it offers come from albert_mini/choices.py and harness/choices.py, a library module's docstring from
# `docstring_of`), and the modules that do the work once its flags are read (tests/test_cli_start.py).

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
from pathlib import Path

from ..cli import ERROR_STATUS, Parser
from ..cli import run as run_cli
from ..errors import UsageError

PROG = "albert-mini"

COMMANDS: dict[str, tuple[str, str]] = {
    "pretrain": ("pretrain", "pretrain ALBERT (Austen, your own text or synthetic data); rerun to resume"),
    "prepare": ("prepare", "tokenize your text into the token cache ahead of pretraining (pretrain does it too)"),
    "finetune": ("finetune", "fine-tune a pretrained model on a task and score its test split"),
    "tokenizer": ("tokenizer", "train ALBERT's SentencePiece tokenizer (`tokenizer train ...`)"),
    "corpus": ("corpus", "rebuild data/austen/ from the Debian package r-cran-janeaustenr"),
    "austen-tasks": ("austen_tasks", "rebuild data/tasks/ (austen-mc, austen-span) from the Austen corpus"),
    "polarity": ("polarity", "download Pang & Lee's 4,000 polarity sentences into cache/"),
    "experiments": ("experiments", "run the paper's experiments at mini scale, or print their tables"),
    "numerics": ("numerics", "the run cache's guard values: print them, or --write them after a numerics change"),
    "book": ("book", "execute chapters in full mode and refresh their notebooks (make book)"),
    "lab": ("lab", "start JupyterLab on the chapters (make lab)"),
    "html": ("html_book", "the book as static HTML, from the committed notebooks (make html)"),
    "exercises": ("exercises", "a hand-out folder for a class: the chapters without outputs, and their figures"),
    "grade": ("grade", "run every student's notebooks and write a gradebook (one row per exercise)"),
    "recipe-search": ("recipe_search", "research: probe a pretraining recipe, run a control, or build the results"),
    "leak-control": ("leak_control", "research: the sentence path trained on pairs built the reference way"),
    "lexical-sop": ("lexical_sop", "research: a no-network SOP baseline on the tokens at the segments' edges"),
    "time-to-quality": ("time_to_quality", "research: held-out accuracy against minutes, old recipe against new"),
    "model-card": ("model_card", "research: score an exported model and write its card (README.md)"),
    "env": ("env", "the versions, devices, threads and folders to paste into a bug report"),
}

# Who each command is for, in the README's words (learners, teachers, ML engineers who pretrain, and the project's
# research: the paper's experiments and the data they are built from).
AUDIENCES: dict[str, tuple[str, ...]] = {
    "learners (the chapters)": ("lab", "html", "polarity", "env"),  # env: what a learner's bug report needs
    "teachers (a class)": ("exercises", "grade", "book"),
    "pretraining (your own model)": ("pretrain", "prepare", "finetune", "tokenizer"),
    "research (the paper's experiments and the project's data)": (
        "experiments", "numerics", "recipe-search", "leak-control", "lexical-sop", "time-to-quality", "model-card",
        "corpus", "austen-tasks"),
}


def command_parser(name: str, description: str | None = None, **kwargs) -> Parser:
    """The parser of command `name`: `albert-mini NAME` in its usage and errors, its table line as description."""
    return Parser(prog=f"{PROG} {name}", description=description or COMMANDS[name][1], **kwargs)


def docstring_of(module: str) -> str:
    """The docstring of the package's module `module` (e.g. "book.grade"), read from its source, not imported: a
    command whose parser shows a library module's docstring builds it without torch (`albert-mini help COMMAND`)."""
    path = Path(__file__).resolve().parents[1].joinpath(*module.split("."))
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not source.is_file():  # a wing that ships only with a checkout (CHECKOUT_WINGS), as an import would say
        raise ModuleNotFoundError(f"No module named 'albert_mini.{module}'", name=f"albert_mini.{module}")
    return ast.get_docstring(ast.parse(source.read_text(encoding="utf-8")), clean=False) or ""


def module_of(name: str):
    """The module of command `name` (imported now)."""
    return importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")


# The wings that ship with a checkout of the repository, not with `pip install albert-mini` (pyproject.toml): they
# work on the checkout's chapters/ and data/.
CHECKOUT_WINGS = ("albert_mini.book", "albert_mini.harness")


def missing_wing(error: ModuleNotFoundError) -> str | None:
    """The checkout-only wing whose absence `error` reports (its folder is not installed), else None."""
    missing = error.name or ""
    for wing in CHECKOUT_WINGS:
        if (missing == wing or missing.startswith(wing + ".")) and importlib.util.find_spec(wing) is None:
            return wing
    return None


def help_text() -> str:
    """`albert-mini --help`: the commands grouped by audience."""
    from .. import __version__

    width = max(map(len, COMMANDS)) + 2
    lines = [f"usage: {PROG} COMMAND [ARGS...]",
             "",
             f"albert-mini {__version__}: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a "
             "laptop CPU."]
    for audience, names in AUDIENCES.items():
        lines += ["", f"for {audience}:"]
        lines += [f"  {name:<{width}}{COMMANDS[name][1]}" for name in names]
    lines += ["",
              f"`{PROG} COMMAND --help` (or `{PROG} help COMMAND`) shows a command's flags; `{PROG} -V` its "
              "version.",
              "`python -m albert_mini COMMAND ...` is the same command. Bad flags, files or folders end with one "
              "line `error: ...`",
              f"and exit status {ERROR_STATUS}; --debug (after the command) shows the traceback."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`albert-mini COMMAND ARGS...`: run the command; its exit status (0 unless it says otherwise)."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]) or argv == ["help"]:
        print(help_text())
        return 0
    if argv[:1] in (["-V"], ["--version"]):
        from .. import __version__

        print(f"{PROG} {__version__}")
        return 0
    if not argv:
        raise UsageError(f"give a command, e.g. `{PROG} pretrain --help`; `{PROG} --help` lists them all")
    if argv[0] == "help":  # `albert-mini help COMMAND`, as git and pip have it: the command's own --help
        if len(argv) > 2:
            raise UsageError(f"`{PROG} help` takes one command, got {' '.join(argv[1:])!r} (see {PROG} --help)")
        argv = [argv[1], "--help"]
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(f"unknown command {name!r}; {hint}choose from {', '.join(COMMANDS)} (see {PROG} --help)")
    try:
        result = module_of(name).main(args)
    except ModuleNotFoundError as error:
        wing = missing_wing(error)
        if wing is None:
            raise
        folder = wing.replace(".", "/")
        raise UsageError(f"`{PROG} {name}` needs {folder}/, which comes with a checkout of the repository, not with "
                         "the installed package (pip install albert-mini installs the library and the command "
                         "line): clone the repository and run the command there after `make lab` or "
                         "`pip install -e .`") from None
    return result if isinstance(result, int) and not isinstance(result, bool) else 0
