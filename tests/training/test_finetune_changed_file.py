"""A finished fine-tuning run is not taken as done once its training file changed: its run.json records the
files' sha256, so the same command is refused naming the file (and --overwrite trains it again)."""

import json
import shutil

from albert_mini.commands.finetune import main as finetune
from cli_helpers import REPO, cli_error

SST2 = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "sst2.tsv"


def test_a_changed_training_file_is_refused_naming_it_and_overwrite_trains_again(tmp_path, capsys):
    train = tmp_path / "train.tsv"
    shutil.copy(SST2, train)
    out = tmp_path / "ft"
    flags = ["--format", "sst2", "--train-file", str(train), "--test-file", str(SST2), "--init", "random",
             "--preset", "albert-nano", "--steps", "2", "--batch-size", "2", "--out", str(out)]
    assert finetune(flags) == 0
    capsys.readouterr()
    assert str(train) in json.loads((out / "run.json").read_text())["corpus"]["files"]
    assert finetune(flags) == 0  # unchanged: the finished run, as before
    capsys.readouterr()
    lines = train.read_text().splitlines()
    train.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")  # the same path, other text
    error = cli_error(finetune, flags, capsys)
    assert "the text of --train-file and --test-file changed since the run" in error and str(train) in error
    assert finetune(flags + ["--overwrite"]) == 0
