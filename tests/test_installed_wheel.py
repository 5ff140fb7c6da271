"""What `pip install albert-mini` installs: the library and the command line, built as a wheel from the checkout's
tracked files. The book's machinery and the project's harness stay in the repository: the wheel holds none of their
files, and each of their subcommands says so in one line (exit 2) where they are absent."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from albert_mini.commands import CHECKOUT_WINGS, COMMANDS
from cli_helpers import REPO
from import_graph import closure

PACKAGE_FOLDERS = {wing.split(".")[1] for wing in CHECKOUT_WINGS}  # book, harness
LEARNERS_ALBERT = ("model", "text", "training", "tasks")  # what a learner reads: chapters 1-9 import these

# The installed command line, run without the checkout: Python's editable-install finder (the venv's `pip install -e
# .`) is taken off the import path, so only the wheel's albert_mini answers.
RUN_INSTALLED = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.argv[0] = "albert-mini"
from albert_mini.commands import main
sys.exit(main())
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the wheel, the folder it is installed into), built from a copy of the checkout's tracked files."""
    root = tmp_path_factory.mktemp("wheel")
    source, wheels, target = root / "source", root / "wheels", root / "site"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (REPO / name).is_file():  # (a file deleted in the working tree is not built)
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)],
                   check=True, capture_output=True)
    [wheel] = wheels.glob("albert_mini-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--no-compile", "--target", str(target), str(wheel)], check=True,
                   capture_output=True)
    return wheel, target


def run_installed(target: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN_INSTALLED, *argv], cwd=target.parent, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target), "HOME": str(target)},
                          timeout=120)


def python_lines(files: dict[str, bytes]) -> int:
    return sum(data.count(b"\n") for data in files.values())


@pytest.mark.slow  # builds and installs a wheel with pip, then runs its commands in subprocesses
def test_the_wheel_holds_the_package_but_the_checkout_only_wings(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        modules = {name: archive.read(name) for name in archive.namelist()
                   if name.startswith("albert_mini/") and name.endswith(".py")}
    checkout = {path.relative_to(REPO).as_posix() for path in (REPO / "albert_mini").rglob("*.py")
                if "__pycache__" not in path.parts}
    expected = {name for name in checkout if name.split("/")[1] not in PACKAGE_FOLDERS}
    assert set(modules) == expected  # nothing of a wing, and nothing else left behind
    # The learner's ALBERT is at least a third of what pip installs (the wings it leaves out are half the package)
    learners = python_lines({n: d for n, d in modules.items() if n.split("/")[1] in LEARNERS_ALBERT})
    assert learners >= python_lines(modules) / 3, (learners, python_lines(modules))


@pytest.mark.slow  # builds and installs a wheel with pip, then runs its commands in subprocesses
def test_every_command_runs_from_the_wheel_or_names_the_checkout_it_needs(installed):
    """A command whose code reaches a checkout-only wing (by the import graph) refuses in one line that says to run
    it in a checkout; every other command's --help answers from the wheel alone."""
    _, target = installed
    for name, (module, _) in COMMANDS.items():
        needs_checkout = any(m.startswith(CHECKOUT_WINGS) for m in closure(f"albert_mini.commands.{module}"))
        done = run_installed(target, name, "--help")
        if needs_checkout:
            assert done.returncode == 2 and done.stdout == "", (name, done.stdout, done.stderr)
            assert done.stderr.count("\n") == 1 and "comes with a checkout of the repository" in done.stderr, name
            assert f"`albert-mini {name}` needs albert_mini/" in done.stderr, done.stderr
        else:
            assert done.returncode == 0 and f"usage: albert-mini {name}" in done.stdout, (name, done.stderr[-2000:])


@pytest.mark.slow  # builds and installs a wheel with pip, then trains in a subprocess
def test_the_wheel_pretrains_alone(installed, tmp_path):
    _, target = installed
    done = run_installed(target, "pretrain", "--preset", "albert-nano", "--corpus", "synthetic", "--steps", "2",
                         "--quiet", "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "run.json").is_file()
    assert str(target / "albert_mini") in run_installed(target, "env").stdout  # the wheel's package ran, not ours
