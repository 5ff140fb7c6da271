"""Run directories: nothing a run did not write is ever deleted or overwritten; hints fit what the directory is."""

import json

import pytest
import torch

from albert_mini.commands.finetune import main as finetune
from albert_mini.commands.pretrain import main as pretrain
from albert_mini.training.checkpoint import (
    CheckpointError,
    export_pretrained,
    latest_checkpoint,
    list_checkpoints,
    load_pretrained,
)
from albert_mini.training.rundir import RUN, RunDirError, inspect, read_metrics
from cli_helpers import REPO, cli_error

SST2 = REPO / "tests" / "tasks" / "fixtures" / "tasks" / "sst2.tsv"  # the task fixtures live beside the task tests
FLAGS = ["--preset", "albert-nano", "--corpus", "synthetic", "--seq-len", "16", "--batch-size", "2",
         "--eval-every", "0", "--eval-batches", "1", "--save-every", "1", "--keep", "3", "--quiet"]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def snapshot(folder) -> dict:
    """Every file under `folder` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def make_run(out, steps=2, *extra):
    pretrain(FLAGS + ["--steps", str(steps), "--out", str(out), *extra])
    return out


def test_a_synthetic_run_records_the_output_bias_its_model_started_from(tmp_path):
    """Synthetic data has no text to count, so the bias starts at zero, and run.json says so (not the default)."""
    out = make_run(tmp_path / "run", 1)
    assert json.loads((out / "run.json").read_text())["settings"]["output_bias"] == "zeros"
    make_run(out, 1)  # the same command again is the same run (its record matches what it does)
    assert json.loads((out / "run.json").read_text())["settings"]["output_bias"] == "zeros"


# ---------------------------------------------------------------------- what is refused
def test_a_folder_of_yours_is_refused_and_left_alone_even_with_overwrite(tmp_path, capsys):
    folder = tmp_path / "mine"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "notes.txt").write_text("my notes")
    (folder / "checkpoints" / "weights.bin").write_bytes(b"precious")
    (folder / "metrics.jsonl").write_text("my,own,csv\n")  # a run's file name, not a run's content
    before = snapshot(folder)
    for extra in ([], ["--overwrite"]):
        error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(folder), *extra], capsys)
        assert "holds files that no run wrote: checkpoints/weights.bin, metrics.jsonl, notes.txt" in error
        assert "never deletes anything else, not even with --overwrite" in error
    assert snapshot(folder) == before


def test_a_run_whose_run_json_went_missing_is_refused_not_restarted(tmp_path, capsys):
    out = make_run(tmp_path / "run")
    record = (out / "run.json").read_text()
    (out / "run.json").unlink()
    before = snapshot(out)
    error = cli_error(pretrain, FLAGS + ["--steps", "2", "--out", str(out)], capsys)
    assert "holds checkpoints step-0000001, step-0000002 but no run.json" in error
    assert "put its run.json back to resume it" in error and "--overwrite" in error
    assert snapshot(out) == before
    (out / "run.json").write_text(record)  # following the hint resumes the run where it was: finished,
    assert pretrain(FLAGS + ["--steps", "2", "--out", str(out)]).step == 2
    assert {k: v for k, v in snapshot(out).items() if k != "run.json"} == before  # so nothing is added


def test_overwrite_replaces_a_run_without_run_json_by_deleting_only_its_files(tmp_path):
    out = make_run(tmp_path / "run")
    (out / "run.json").unlink()
    old = (latest_checkpoint(out) / "model.safetensors").read_bytes()
    make_run(out, 2, "--overwrite", "--seed", "1")
    assert [p.name for p in list_checkpoints(out)] == ["step-0000001", "step-0000002"]
    assert (latest_checkpoint(out) / "model.safetensors").read_bytes() != old
    assert json.loads((out / "run.json").read_text())["settings"]["seed"] == 1


def test_an_exported_model_is_never_pretrained_into(tmp_path, capsys):
    exported = export_pretrained(make_run(tmp_path / "run"), tmp_path / "model")
    before = snapshot(exported)
    for extra in ([], ["--overwrite"]):
        error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(exported), *extra], capsys)
        assert f"--out {exported} holds an exported model" in error
        assert f"albert-mini finetune --task TASK --init {exported}" in error
    assert snapshot(exported) == before
    load_pretrained(exported)  # still loads


def test_a_config_json_of_someone_else_is_foreign(tmp_path, capsys):
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["AlbertModel"], "hidden_size": 8}))
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(folder), "--overwrite"], capsys)
    assert "holds files that no run wrote: config.json" in error
    assert inspect(folder, RUN).foreign == ["config.json"]


def test_out_that_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    assert f"--out {target} is a file, not a directory" in cli_error(
        pretrain, FLAGS + ["--steps", "1", "--out", str(target)], capsys)
    assert f"--out {target} is a file, not a directory" in cli_error(
        finetune, ["--format", "sst2", "--train-file", str(SST2), "--test-file", str(SST2), "--init", "random",
                   "--preset", "albert-nano", "--steps", "1", "--batch-size", "1", "--out", str(target)], capsys)
    assert target.read_text() == "keep me"


def test_a_run_with_a_file_of_yours_added_is_not_written_into(tmp_path, capsys):
    out = make_run(tmp_path / "run")
    (out / "checkpoints" / "step-0000002" / "my-notes.md").write_text("mine")
    error = cli_error(pretrain, FLAGS + ["--steps", "3", "--out", str(out)], capsys)
    assert "checkpoints/step-0000002/my-notes.md" in error
    assert (out / "checkpoints" / "step-0000002" / "my-notes.md").read_text() == "mine"


def test_overwrite_deletes_exactly_the_old_runs_files(tmp_path):
    out = make_run(tmp_path / "run", 3)
    (out / "checkpoints" / ".tmp-step-0000004-123").mkdir()  # an interrupted save is the run's own too
    (out / ".run.json.tmp-77").write_text("{")  # and so is a killed atomic write
    assert inspect(out, RUN).foreign == []
    make_run(out, 1, "--overwrite")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints", "config.json", "metrics.jsonl", "run.json"]
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["step-0000001"]


# ---------------------------------------------------------------------- exports
def test_export_targets_follow_the_same_rule(tmp_path):
    run = make_run(tmp_path / "run", 3, "--log-every", "1")
    with pytest.raises(RunDirError, match="holds a training run"):
        export_pretrained(run, run)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    with pytest.raises(RunDirError, match="holds files an export does not write: thesis.tex"):
        export_pretrained(run, foreign, overwrite=True)
    model = export_pretrained(run / "checkpoints" / "step-0000002", tmp_path / "model")
    # The run's record goes along, with the metrics up to the exported step.
    assert sorted(p.name for p in model.iterdir()) == ["config.json", "manifest.json", "metrics.jsonl",
                                                       "model.safetensors", "run.json"]
    assert max(json.loads(line)["step"] for line in (model / "metrics.jsonl").read_text().splitlines()) == 2
    with pytest.raises(RunDirError, match="already holds an exported model.*overwrite=True"):
        export_pretrained(run, model)
    export_pretrained(run, model, overwrite=True)
    assert json.loads((model / "manifest.json").read_text())["step"] == 3
    assert torch.equal(load_pretrained(model).albert.pooler.weight, load_pretrained(run).albert.pooler.weight)


# ---------------------------------------------------------------------- hints that fit the directory
def corrupt(file):
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def test_a_corrupt_newest_checkpoint_is_skipped_for_the_previous_one(tmp_path, capsys):
    straight = make_run(tmp_path / "straight", 3)
    out = make_run(tmp_path / "run", 3)
    corrupt(out / "checkpoints" / "step-0000003" / "model.safetensors")
    capsys.readouterr()
    assert pretrain(FLAGS + ["--steps", "3", "--out", str(out)]).step == 3
    note = [line for line in capsys.readouterr().err.splitlines() if "skipped" in line]
    assert len(note) == 1 and "skipped the damaged checkpoint step-0000003" in note[0], note
    assert "model.safetensors is corrupt" in note[0] and "moved to step-0000003.corrupt" in note[0]
    assert (out / "checkpoints" / "step-0000003.corrupt").is_dir()  # kept for a look, out of the run's way
    assert [p.name for p in list_checkpoints(out)] == ["step-0000001", "step-0000002", "step-0000003"]
    redone = out / "checkpoints" / "step-0000003" / "model.safetensors"
    assert redone.read_bytes() == (straight / "checkpoints" / "step-0000003" / "model.safetensors").read_bytes()

    def train_steps(run):
        return [r["step"] for r in read_metrics(run / "metrics.jsonl")[0] if r["type"] == "train"]

    assert train_steps(out) == train_steps(straight) == [3]  # step 3 once as its readers take it (the last line)
    raw = [r["type"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())]
    assert raw.count("resume") == 1 and raw.index("resume") > raw.index("train")  # appended after a resume line
    assert pretrain(FLAGS + ["--steps", "3", "--out", str(out)]).step == 3  # the set-aside copy is no obstacle


def test_a_corrupt_only_checkpoint_has_nothing_to_fall_back_to(tmp_path, capsys):
    out = make_run(tmp_path / "run", 1)
    corrupt(out / "checkpoints" / "step-0000001" / "trainer_state.pt")
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(out)], capsys)
    assert "it is the oldest checkpoint of the run" in error and "--overwrite" in error
    assert "fall back to the previous" not in error


def test_a_corrupt_exported_model_is_never_to_be_deleted(tmp_path):
    model = export_pretrained(make_run(tmp_path / "run"), tmp_path / "model")
    corrupt(model / "model.safetensors")
    with pytest.raises(CheckpointError) as error:
        load_pretrained(model)
    message = str(error.value)
    assert "model.safetensors is corrupt" in message and "is an exported model, not a run" in message
    assert "export_pretrained(RUN_DIR" in message and "overwrite=True" in message
    assert "delete" not in message


# ---------------------------------------------------------------------- fine-tuning --out
def test_finetune_out_resumes_the_same_command_and_refuses_anything_else(tmp_path, capsys):
    out = tmp_path / "ft"
    flags = ["--format", "sst2", "--train-file", str(SST2), "--test-file", str(SST2), "--init", "random",
             "--preset", "albert-nano", "--steps", "2", "--batch-size", "2", "--out", str(out)]
    assert finetune(flags) == 0
    first = json.loads(capsys.readouterr().out)
    record = json.loads((out / "run.json").read_text())
    # A file inside the repository is named from its root, as pretraining's run.json names one.
    assert record["kind"] == "finetune" and record["settings"]["train_file"] == "tests/tasks/fixtures/tasks/sst2.tsv"
    assert [p.name for p in list_checkpoints(out)] == ["step-0000002"]
    log = (out / "metrics.jsonl").read_text()
    assert finetune(flags) == 0  # the same command: resumed at its end, the same model and score
    assert json.loads(capsys.readouterr().out)["accuracy"] == first["accuracy"]
    assert (out / "metrics.jsonl").read_text() == log  # a finished run trains nothing and appends nothing
    assert "settings.lr: 0.0003 -> 0.001" in cli_error(finetune, flags + ["--lr", "1e-3"], capsys)
    error = cli_error(pretrain, FLAGS + ["--steps", "1", "--out", str(out)], capsys)
    assert "holds a fine-tuning run with different settings: kind: 'finetune' -> 'pretrain'" in error
    assert finetune(flags + ["--lr", "1e-3", "--overwrite"]) == 0
    (out / "notes.txt").write_text("mine")
    assert "notes.txt" in cli_error(finetune, flags + ["--overwrite"], capsys)
