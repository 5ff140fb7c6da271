"""Flag combinations that cannot fill a batch are refused before training, with values that work."""

import pytest

from albert_mini.commands.pretrain import main as pretrain
from albert_mini.text.batches import DataSettings, build_pretraining_dataset, count_examples
from albert_mini.text.corpus import load_corpus
from cli_helpers import cli_error
from pretraining_helpers import austen_token_documents_head, tokenizer
from user_text import PRETRAIN_FLAGS as FLAGS
from user_text import write_texts

AUSTEN = ["--preset", "albert-nano", "--corpus", "austen", "--steps", "1", "--save-every", "0", "--eval-every", "0",
          "--quiet"]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def suggestions(error: str) -> list[list[str]]:
    """The flag sets after 'values that work:', e.g. [['--seq-len', '32'], ['--batch-size', '1', ...]]."""
    fixes = error.split("values that work: ", 1)[1].strip()
    return [fix.split() for fix in fixes.split(" or ")]


@pytest.mark.slow
def test_a_batch_larger_than_an_epoch_names_the_flags_and_values_that_work(tmp_path, capsys):
    """`--seq-len 8 --task sop` on Austen used to die after loading with 'epoch 0 has 13 examples'."""
    error = cli_error(pretrain, AUSTEN + ["--seq-len", "8", "--task", "sop", "--out", str(tmp_path / "run")], capsys)
    assert error == (
        "error: --seq-len 8 with --task sop: the training text gives 13 examples per process, fewer than one batch "
        "of --batch-size 32; the validation text gives 1 example per process, fewer than --eval-batches 8 x "
        "--batch-size 32 = 256; values that work: --batch-size 1 --eval-batches 1 or --seq-len 32\n")
    assert not (tmp_path / "run").exists()
    for i, fix in enumerate(suggestions(error)):  # each suggestion really runs
        flags = AUSTEN + ["--seq-len", "8", "--task", "sop", "--out", str(tmp_path / f"fix{i}")]
        for flag, value in zip(fix[::2], fix[1::2]):
            flags += [flag, value]
        assert pretrain(flags).step == 1


@pytest.mark.slow
def test_too_many_evaluation_batches_suggests_how_many_there_are(tmp_path, capsys):
    base = AUSTEN + ["--seq-len", "64", "--batch-size", "64", "--out", str(tmp_path / "run")]
    error = cli_error(pretrain, base + ["--eval-batches", "50"], capsys)
    # The held-out set the CLI would build, masked once: the count in the message is its size.
    held = len(build_pretraining_dataset(load_corpus("austen", "validation"), tokenizer(), task="sop", max_seq_len=64,
                                         seed=0, dynamic=False))
    assert f"the validation text gives {held} examples per process, fewer than --eval-batches 50 x --batch-size 64" \
        in error
    assert suggestions(error)[0] == ["--eval-batches", str(held // 64)]
    assert pretrain(base + suggestions(error)[0]).step == 1


def test_a_batch_larger_than_your_text_suggests_one_that_fits(model_file, tmp_path, capsys):
    texts = write_texts(tmp_path / "texts", files=6)
    flags = FLAGS + ["--corpus", str(texts), "--tokenizer", str(model_file), "--holdout-fraction", "0.5",
                     "--out", str(tmp_path / "run")]
    error = cli_error(pretrain, flags + ["--batch-size", "64"], capsys)
    assert "the training text gives" in error and "fewer than one batch of --batch-size 64" in error
    fix = next(f for f in suggestions(error) if f[0] == "--batch-size")
    assert pretrain(flags + fix).step == 2
    assert int(fix[1]) < 64


@pytest.mark.parametrize("task,dynamic,dupes", [("sop", True, 1), ("nsp", False, 2), ("none", False, 1)])
def test_counted_examples_are_those_of_the_dataset(task, dynamic, dupes):
    documents = austen_token_documents_head(6)
    dataset = build_pretraining_dataset(documents, tokenizer(), task=task, max_seq_len=48, seed=3, dynamic=dynamic,
                                        dupe_factor=dupes)
    settings = DataSettings(task=task, max_seq_len=48, seed=3, dynamic=dynamic, dupe_factor=dupes)
    assert count_examples(documents, settings) == len(dataset) > 0
    tiny = DataSettings(task=task, max_seq_len=6, seed=3)
    assert count_examples(documents, tiny) == 0 or task == "none"
