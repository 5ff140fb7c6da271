"""The install files say one thing: the version written once, environment.yml pinning what `.[book]` installs at
constraints.txt's versions without a relative `-c`, and the Makefile handing TORCH_INDEX_URL to pip."""

import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import albert_mini
from albert_mini.paths import REPO_ROOT

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def pins() -> dict[str, str]:
    """constraints.txt as canonical name -> version."""
    lines = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    return {canonicalize_name(name): version.strip()
            for name, version in (line.split("==") for line in lines if "==" in line and not line.startswith("#"))}


def environment_pip_lines() -> list[str]:
    """The lines of environment.yml's pip section, as conda, mamba and micromamba hand them to pip."""
    text = (REPO_ROOT / "environment.yml").read_text()
    section = re.search(r"^  - pip:\n((?:      - .*\n)+)", text, re.M)
    assert section, "environment.yml has a `- pip:` list"
    return [line.removeprefix("      - ").split(" #")[0].strip() for line in section.group(1).splitlines()]


def installed_closure(name: str, extras: frozenset[str]) -> set[str]:
    """Every distribution that installing `name[extras]` installs here, read from the installed metadata."""
    seen, todo = set(), [(canonicalize_name(name), extras)]
    while todo:
        current, wanted = todo.pop()
        if (current, wanted) in seen:
            continue
        seen.add((current, wanted))
        for line in metadata.distribution(current).requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in wanted or {""}):
                todo.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return {current for current, _ in seen}


def test_the_version_is_written_once_and_read_without_torch():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "albert_mini.__version__"}
    # setuptools reads the literal from the file (no import): what a build sees, in a fresh process
    code = ("import sys\n"
            "from setuptools.config.expand import read_attr\n"
            f"print(read_attr('albert_mini.__version__', root_dir={str(REPO_ROOT)!r}), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [albert_mini.__version__, "False"]
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+"$', (REPO_ROOT / "albert_mini" / "__init__.py").read_text(), re.M)
    # the installed metadata is what `pip show` and importlib report: a stale install fails here (make venv)
    assert metadata.version("albert-mini") == albert_mini.__version__


def test_environment_yml_installs_the_book_extra_at_the_pinned_versions():
    lines = environment_pip_lines()
    assert "-e .[book]" in lines and not any("[test]" in line for line in lines)
    # no relative `-c`/`-r`: micromamba writes the list to /tmp, where such a path names nothing
    assert not [line for line in lines if re.match(r"(-c|-r|--constraint|--requirement)\b", line)]
    assert f"--extra-index-url {CPU_INDEX}" in lines  # the learner's torch is the CPU build
    pinned_here = dict(line.split("==") for line in lines if "==" in line)
    pinned_here = {canonicalize_name(name): version for name, version in pinned_here.items()}
    constraints = pins()
    assert {name: constraints.get(name) for name in pinned_here} == pinned_here, "environment.yml vs constraints.txt"
    # exactly the pinned packages `.[book]` installs (read from this venv, which make venv pinned the same way)
    book = installed_closure("albert-mini", frozenset({"book"}))
    assert set(pinned_here) == {name for name in book if name in constraints}
    assert {"torch", "transformers", "jupyterlab", "jupytext"} <= set(pinned_here)
    assert not {"pytest", "ruff", "sphinx", "selenium", "nbval"} & set(pinned_here)


def test_the_book_extra_is_what_the_chapters_import_beyond_the_package():
    """`.[book]` (environment.yml's install) holds JupyterLab with its notebook kernel, jupytext for the .py
    chapters, widgets, and the Hugging Face port; the test stack is `.[test]`'s."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    book = {canonicalize_name(Requirement(line).name) for line in extras["book"]}
    assert book == {"jupyterlab", "jupytext", "ipykernel", "ipywidgets", "transformers", "protobuf"}
    assert "albert-mini[book,html,browser]" in extras["test"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_makefile_hands_torch_index_url_to_pip():
    def pip_line(*variables: str) -> str:
        done = subprocess.run(["make", "-n", "-B", "venv", *variables], capture_output=True, text=True, timeout=60,
                              cwd=REPO_ROOT)  # -n: print the recipe, run nothing; -B: as on a fresh clone
        assert done.returncode == 0, done.stderr
        return next(line for line in done.stdout.splitlines() if "pip install" in line and "-e '.[test]'" in line)

    assert "--extra-index-url" not in pip_line() and "--index-url" not in pip_line()  # opt-in: PyPI alone
    line = pip_line(f"TORCH_INDEX_URL={CPU_INDEX}")
    assert f"--extra-index-url {CPU_INDEX} " in line and "-c constraints.txt" in line
