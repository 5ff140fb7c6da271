"""`experiments NAME --out DIR` run again into the folder it wrote replaces its own results (it refused them as
someone else's), while a result changed since is still refused."""

import json

import pytest

from cli_helpers import REPO, run_command


@pytest.mark.slow
def test_experiments_rerun_into_their_own_out_folder_and_refuse_a_changed_result(tmp_path):
    out = tmp_path / "results"
    argv = ["experiments", "sharing", "--seeds", "0", "--out", out]
    env = {"ALBERT_MINI_FAST": "1"}
    for attempt in range(2):
        done = run_command(*argv, cwd=REPO, env=env)
        assert done.returncode == 0, f"run {attempt + 1}: {done.stderr[-2000:]}"
    assert json.loads((out / "sharing.json").read_text())["meta"]["experiment"] == "sharing"
    (out / "sharing.json").write_text("{}\n")  # a learner's edit: no longer this command's file
    refused = run_command(*argv, cwd=REPO, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("sharing.json already exists and this command did not create it; choose a "
                                           "new path, or pass --overwrite to replace it"), refused.stderr
    assert (out / "sharing.json").read_text() == "{}\n"
