"""A torch that cannot be imported (its library missing) or is not torch (an empty package of that name) is one
line naming the package and the fix for every command that imports it, and a line of its own in `env`."""

import pytest

from cli_helpers import REPO, run_command

FAKES = {"raises": 'raise ImportError("libtorch_cpu.so: cannot open shared object file: No such file or directory")\n',
         "empty": ""}
COMMANDS = {"pretrain": ["pretrain", "--preset", "albert-nano", "--corpus", "synthetic", "--steps", "1"],
            "finetune": ["finetune", "--task", "austen-mc", "--steps", "1"],
            "experiments": ["experiments", "sharing", "--estimate"]}


def broken_torch(tmp_path, kind) -> dict:
    package = tmp_path / kind / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKES[kind])
    return {"PYTHONPATH": str(tmp_path / kind)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FAKES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_broken_torch_is_one_line_naming_it_and_the_fix(command, kind, tmp_path):
    argv = COMMANDS[command] + (["--out", tmp_path / "out"] if command != "experiments" else [])
    done = run_command(*argv, cwd=REPO, env=broken_torch(tmp_path, kind))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the installed package torch cannot be used"), done.stderr
    assert "reinstall the environment (make venv" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FAKES))
def test_env_reports_a_broken_torch_in_its_own_line(kind, tmp_path):
    done = run_command("env", cwd=REPO, env=broken_torch(tmp_path, kind))
    assert done.returncode == 0, done.stderr[-2000:]
    torch_lines = [line for line in done.stdout.splitlines() if line.startswith("- torch: ")]
    assert len(torch_lines) == 1 and ("cannot be imported" in torch_lines[0] or "is not torch" in torch_lines[0])
    assert "Traceback" not in done.stderr
