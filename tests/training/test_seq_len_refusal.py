"""A --seq-len too short for every pair of sentences of the text is the batch check's one line with the values
that work, not the instance builder's ValueError: the datasets are built so that the check speaks first."""

import random

from albert_mini.commands.pretrain import main
from albert_mini.text.tokenizer import DEFAULT_DIR
from cli_helpers import cli_error

WORDS = ("the of and to a in that was her it his with as had for she not be he you at but on is elizabeth darcy "
         "bingley netherfield longbourn").split()


def long_sentences(path, documents=120, seed=1) -> None:
    """Paragraph-per-line documents whose sentences are about 50 pieces each: no two fit in 32 tokens."""
    rng = random.Random(seed)
    text = "\n\n".join("\n".join(" ".join(rng.choice(WORDS) for _ in range(45)) + "." for _ in range(4))
                       for _ in range(documents))
    path.write_text(text + "\n", encoding="utf-8")


def test_a_seq_len_no_pair_of_sentences_fits_is_one_line_with_values_that_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ALBERT_MINI_CACHE", str(tmp_path / "cache"))
    text = tmp_path / "long.txt"
    long_sentences(text)
    argv = ["--corpus", str(text), "--tokenizer", str(DEFAULT_DIR / "spiece.model"), "--split-by", "blank-line",
            "--preset", "albert-base", "--config", "num_hidden_layers=1", "hidden_size=32", "num_attention_heads=2",
            "intermediate_size=64", "embedding_size=16", "--batch-size", "4", "--eval-batches", "1",
            "--steps", "1", "--quiet", "--out", str(tmp_path / "run")]
    err = cli_error(main, [*argv, "--seq-len", "32"], capsys)
    assert err.startswith("error: --seq-len 32 with --task sop: the training text gives 0 examples per process"), err
    assert "values that work: --seq-len 128" in err, err
    assert not (tmp_path / "run").exists()  # refused before the run folder was made
