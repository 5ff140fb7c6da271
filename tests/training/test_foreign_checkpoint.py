"""A checkpoint of another run copied into a run's folder is refused in one line instead of resumed: every
checkpoint records a digest of its run's record (settings, model, tokenizer, text), compared on resume."""

import shutil

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training.checkpoint import list_checkpoints
from cli_helpers import cli_error

FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "32", "--batch-size", "2", "--steps", "4",
         "--save-every", "2", "--keep", "3", "--eval-batches", "1", "--log-every", "2", "--quiet"]


def test_a_checkpoint_of_another_run_is_refused_and_its_own_still_resumes(tmp_path, capsys):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    pretrain(FLAGS + ["--out", str(ours)])
    pretrain(FLAGS + ["--seed", "1", "--out", str(theirs)])
    shutil.rmtree(ours / "checkpoints" / "step-0000004")
    shutil.copytree(theirs / "checkpoints" / "step-0000004", ours / "checkpoints" / "step-0000004")
    error = cli_error(pretrain, FLAGS + ["--out", str(ours)], capsys)
    assert "step-0000004 belongs to another run" in error, error
    shutil.rmtree(ours / "checkpoints" / "step-0000004")
    pretrain(FLAGS + ["--out", str(ours)])  # its own step-2 checkpoint resumes as before
    assert [p.name for p in list_checkpoints(ours)][-1] == "step-0000004"
    assert '"type": "resume", "step": 2' in (ours / "metrics.jsonl").read_text()
