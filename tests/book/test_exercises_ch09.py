"""Chapter 9 exercise checks accept the reference answers and reject stubs and plausible mistakes."""

import pytest

from albert_mini import AlbertConfig
from albert_mini.book.exercises import ExerciseFailed, check_mlm_head_flops_per_token, check_training_memory_bytes


def stub(*args):
    raise NotImplementedError


def right_memory(n_params, optimizer="adamw"):
    return 4 * n_params * (2 + {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}[optimizer])


def test_memory_accepts_reference():
    assert check_training_memory_bytes(right_memory)


def test_memory_reference_is_sixteen_bytes_for_adamw():
    assert right_memory(334_607_360) == 16 * 334_607_360  # BERT-large: 5.35 GB


@pytest.mark.parametrize("wrong", [
    lambda n, optimizer="adamw": 16 * n,  # AdamW's 16 bytes for every optimizer
    lambda n, optimizer="adamw": 4 * n * (1 + {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}[optimizer]),  # no grads
    lambda n, optimizer="adamw": 4 * n,  # weights only
    lambda n, optimizer="adamw": 32 * n * (2 + {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}[optimizer]),  # bits
], ids=["always-adam", "no-gradients", "weights-only", "bits"])
def test_memory_rejects(wrong):
    with pytest.raises(ExerciseFailed):
        check_training_memory_bytes(wrong)


def right_head(config):
    return 2 * (config.hidden_size * config.embedding_size + config.embedding_size * config.vocab_size)


def test_head_accepts_reference():
    assert check_mlm_head_flops_per_token(right_head)


def test_head_factorization_saves_compute():
    albert, bert = AlbertConfig.from_preset("albert-base"), AlbertConfig.from_preset("bert-base")
    assert right_head(bert) > 5 * right_head(albert)  # E = 128 instead of 768 in the decoder


@pytest.mark.parametrize("wrong", [
    lambda c: 2 * c.embedding_size * c.vocab_size,  # forgets the H -> E transform
    lambda c: c.hidden_size * c.embedding_size + c.embedding_size * c.vocab_size,  # multiply-adds, not FLOPs
    lambda c: 2 * (c.hidden_size * c.embedding_size + c.hidden_size * c.vocab_size),  # decoder at width H
    lambda c: 2 * (c.hidden_size * c.hidden_size + c.embedding_size * c.vocab_size),  # transform H -> H
], ids=["no-transform", "no-factor-2", "decoder-H", "transform-HH"])
def test_head_rejects(wrong):
    with pytest.raises(ExerciseFailed):
        check_mlm_head_flops_per_token(wrong)


@pytest.mark.parametrize("check", [check_training_memory_bytes])
def test_a_stub_is_not_attempted_yet(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(stub) is False
    assert ": not attempted yet;" in capsys.readouterr().out
