"""A pretraining run is built once: its config resolved once, each dataset built once and checked after, the
examples of other settings counted only to suggest values when a check fails."""

import pytest

from albert_mini.errors import UsageError
from albert_mini.model.config import AlbertConfig
from albert_mini.training import run_data
from albert_mini.training.run import Run, RunDirectory, pretrain
from albert_mini.training.setup import PretrainingSetup

SMALL = dict(preset="albert-nano", corpus="austen", task="sop", seq_len=64, batch_size=4, steps=2, eval_batches=1,
             quiet=True)


def counting(monkeypatch, owner, name: str) -> list:
    """Record every call of owner.name (still calling it)."""
    calls, original = [], getattr(owner, name)

    def wrapper(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_the_config_is_resolved_once_and_each_dataset_built_once(monkeypatch, tmp_path):
    setup = PretrainingSetup(**SMALL, short_seq_len=32, out=str(tmp_path / "run"))  # two phases
    resolved = counting(monkeypatch, AlbertConfig, "from_preset")
    built = counting(monkeypatch, run_data, "build_pretraining_dataset")

    def no_counting(*args, **kwargs):
        raise AssertionError("examples were counted although every check passed")

    monkeypatch.setattr(run_data, "count_examples", no_counting)
    run = Run.build(setup)
    try:
        assert resolved == []  # the setup built its config once, when it was checked; the build reuses it
        assert len(built) == 3  # the two phases' training sets and the held-out set
        assert run.trainer.model is run.model and run.config.vocab_size == run.tokenizer.vocab_size
        assert (tmp_path / "run" / "run.json").is_file() and not run.directory.resuming
    finally:
        run.close()


def test_a_failed_check_counts_examples_to_name_values_that_work(monkeypatch):
    counted = counting(monkeypatch, run_data, "count_examples")
    with pytest.raises(UsageError, match=r"--eval-batches 100000 .* values that work: --eval-batches \d+"):
        Run.build(PretrainingSetup(**{**SMALL, "eval_batches": 100000}))
    assert counted  # the suggestions come from counting, once the check failed


def test_a_run_directory_in_one_process_decides_resumption_and_releases_its_lock(tmp_path):
    out = tmp_path / "run"
    record = {"kind": "pretrain", "settings": {"steps": 2}, "model": None, "tokenizer": None, "corpus": None}
    first = RunDirectory.open(out)
    assert first.settle(record, overwrite=False) is False
    assert first.checkpoint is None
    with pytest.raises(Exception, match="in use by another run"):
        RunDirectory.open(out)  # the first one still holds its lock
    first.release()
    again = RunDirectory.open(out)
    try:
        assert again.settle(record, overwrite=False) is True  # the same run: resumed
    finally:
        again.release()


def test_pretrain_from_code_without_an_out_folder_trains_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    result = pretrain(PretrainingSetup(**{**SMALL, "quiet": False}))
    assert result.step == SMALL["steps"] and result.eval is not None
    assert "nothing written (no --out)" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_a_resume_with_other_settings_is_refused_before_any_text_is_read(monkeypatch, tmp_path):
    out = tmp_path / "run"
    Run.build(PretrainingSetup(**SMALL, out=str(out))).close()  # a run.json of these settings
    import albert_mini.training.run as run_module

    read = counting(monkeypatch, run_module, "load_run_data")
    with pytest.raises(Exception, match=r"different settings: settings\.seq_len: 64 -> 32"):
        Run.build(PretrainingSetup(**{**SMALL, "seq_len": 32}, out=str(out)))
    assert read == []  # refused from run.json alone
    run = Run.build(PretrainingSetup(**SMALL, out=str(out)))  # the same settings still resume
    try:
        assert run.directory.resuming and len(read) == 1
    finally:
        run.close()


def test_a_run_built_from_code_gets_the_memory_check_too(monkeypatch):
    """The memory check is the library's (training/shell/fits.py), not the command's: a run built from code with a
    model that cannot fit is refused with the estimate before the text is read or anything is allocated."""
    from albert_mini.training import run as run_module

    read = counting(monkeypatch, run_module, "load_run_data")
    setup = PretrainingSetup(**{**SMALL, "corpus": "synthetic"}, config=("hidden_size=100000000",))
    with pytest.raises(UsageError, match="needs about .* to train"):
        Run.build(setup)
    assert read == []
