"""Installs that work where the README says: no Linux-only import, a lock that works without fcntl, and the
install files (pyproject.toml, constraints.txt, environment.yml) in step with each other."""

import os
import re
import subprocess
import sys
import tomllib

import pytest

from albert_mini.paths import REPO_ROOT
from albert_mini.training import rundir


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_the_package_imports_where_fcntl_does_not_exist(tmp_path):
    # Windows has no fcntl: importing albert_mini (and the run lock's module) must not need it, and a run lock
    # still works (here unlocked, as on a file system without locks).
    code = ("import sys\n"
            "sys.modules['fcntl'] = None\n"
            "import albert_mini\n"
            "from albert_mini.training import run, rundir\n"
            "from albert_mini.tasks import finetuning\n"
            f"with rundir.RunLock({str(tmp_path / 'run')!r}):\n"
            "    pass\n"
            "assert 'fcntl' not in sys.modules or sys.modules['fcntl'] is None\n"
            "print('imported', albert_mini.__version__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("imported 0.1.0")
    assert list((tmp_path / "run").iterdir()) == []


@pytest.mark.parametrize("in_folder", [True, False], ids=["directory lock (POSIX)", "temp-file lock (Windows)"])
def test_one_writer_per_run_folder_and_no_file_left_in_it(tmp_path, monkeypatch, in_folder):
    # Windows cannot open a directory, so there the lock is a file in the temporary folder: run here on Linux too.
    monkeypatch.setattr(rundir, "LOCK_IN_FOLDER", in_folder)
    monkeypatch.setattr(rundir.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "run"
    first = rundir.RunLock(out)
    with pytest.raises(rundir.RunDirError, match=r"--out .* is in use by another run \(another process\); wait"):
        rundir.RunLock(out)
    rundir.RunLock(tmp_path / "other").release()  # another folder is another lock
    first.release()
    with rundir.RunLock(out, flag="--out"):
        pass
    assert list(out.iterdir()) == []  # the run folder gains no lock file
    assert len(list((tmp_path / "tmp").rglob("*.lock"))) == (0 if in_folder else 2)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_install_files_agree_with_each_other():
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    pins = dict(line.split("==") for line in (REPO_ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    minimum = re.fullmatch(r">=(\d+\.\d+)", project["requires-python"]).group(1)
    assert sys.version_info[:2] >= _version(minimum)
    assert f"Python {minimum} or newer" in (REPO_ROOT / "README.md").read_text()
    environment = (REPO_ROOT / "environment.yml").read_text()
    assert re.search(rf"^\s*- python={re.escape(minimum)}\b", environment, re.M)
    assert re.search(r"^channels:\n  - conda-forge\n  - nodefaults\b", environment, re.M)
    assert "-e .[book]" in environment  # its pins against constraints.txt: tests/test_install.py
    # every dependency of the package and its extras is pinned, except the extras' self-reference
    names = [re.split(r"[<>=!~;\[ ]", requirement)[0].lower()
             for requirement in project["dependencies"] + sum(project["optional-dependencies"].values(), [])]
    pinned = {name.lower().replace("_", "-") for name in pins}
    assert [name for name in names if name != "albert-mini" and name not in pinned] == []
    # chapter 04 (and the comparison cells of 01, 09, 10) load the Hugging Face port: `pip install .[book]` has it
    book = {re.split(r"[<>=]", requirement)[0] for requirement in project["optional-dependencies"]["book"]}
    assert {"transformers", "protobuf"} <= book
    # the run lock's filelock is a direct dependency, pinned at a version with lock_descriptor (3.30)
    assert any(requirement.startswith("filelock") for requirement in project["dependencies"])
    assert _version(pins["filelock"]) >= (3, 30)


def test_files_and_checkpoints_are_written_where_a_folder_cannot_be_opened(tmp_path, monkeypatch):
    # Windows' os.open refuses a folder, so an fsync of a folder is skipped there; run that path here on Linux.
    from albert_mini import AlbertConfig, AlbertForPreTraining, safe_files
    from albert_mini.training import checkpoint

    real_open = os.open

    def windows_open(path, flags, *args, **kwargs):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(safe_files, "FSYNC_FOLDERS", False)  # checkpoints fsync through safe_files too
    monkeypatch.setattr(os, "open", windows_open)
    safe_files.atomic_write_text(tmp_path / "notes" / "a.txt", "written\n")
    assert (tmp_path / "notes" / "a.txt").read_text() == "written\n"
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    saved = checkpoint.save_checkpoint(tmp_path / "run", 1, model, {"step": 1})
    assert checkpoint.list_checkpoints(tmp_path / "run") == [saved]
    checkpoint.verify_checkpoint(saved)
