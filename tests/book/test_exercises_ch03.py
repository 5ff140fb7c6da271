"""Chapter 3's exercise checks: they pass the references, and reject stubs and plausible wrong answers."""

import pytest
import torch
from torch import nn

from albert_mini import AlbertConfig, AlbertForPreTraining, count_parameters
from albert_mini.book.exercises import (
    ExerciseFailed,
    ch03,
    check_break_even_embedding_size,
    check_factorized_embedding_params,
    check_mlm_head_params,
)
from albert_mini.model.albert import AlbertMLMHead


def not_written(*args):
    raise NotImplementedError("write your solution here")


# ------------------------------------------------------------------ the references agree with built modules
@pytest.mark.parametrize("V, E, H", [(8000, 128, 256), (500, 7, 33), (30000, 768, 768)])
def test_factorized_reference_counts_built_modules(V, E, H):
    modules = nn.Sequential(nn.Embedding(V, E), nn.Linear(E, H))
    assert ch03.factorized_embedding_params(V, E, H) == sum(p.numel() for p in modules.parameters())


@pytest.mark.parametrize("V, E, H", [(8000, 128, 256), (500, 7, 33)])
def test_mlm_head_reference_counts_built_head(V, E, H):
    config = AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H, num_attention_heads=1)
    head = AlbertMLMHead(config)
    untied = sum(p.numel() for p in head.parameters())  # the decoder weight is tied in the full model
    assert ch03.mlm_head_params(V, E, H) == untied - V * E


def test_mlm_head_reference_matches_pretraining_model_breakdown():
    config = AlbertConfig.from_preset("albert-nano")
    model = AlbertForPreTraining(config)
    head = count_parameters(model, breakdown=True)["mlm_head"]
    assert ch03.mlm_head_params(config.vocab_size, config.embedding_size, config.hidden_size) == head


def test_break_even_is_the_smallest_size_that_does_not_save():
    for V, H in [(30000, 768), (21128, 2048), (3, 3), (8000, 256), (1000, 1)]:
        E = ch03.break_even_embedding_size(V, H)
        assert ch03.factorized_embedding_params(V, E, H) >= V * H
        assert ch03.factorized_embedding_params(V, E - 1, H) < V * H
    assert ch03.break_even_embedding_size(30000, 768) == 749


# ------------------------------------------------------------------ the checks accept the references
def test_checks_pass_on_references(capsys):
    assert check_factorized_embedding_params(ch03.factorized_embedding_params)
    assert check_break_even_embedding_size(ch03.break_even_embedding_size)
    assert check_mlm_head_params(ch03.mlm_head_params)
    assert "agree with the reference" in capsys.readouterr().out


@pytest.mark.parametrize("check", [check_factorized_embedding_params, check_break_even_embedding_size,
                                   check_mlm_head_params])
def test_checks_report_a_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


# ------------------------------------------------------------------ the checks reject plausible mistakes
@pytest.mark.parametrize("wrong", [
    lambda V, E, H: V * E,  # forgot the E x H projection
    lambda V, E, H: V * E + E * H,  # forgot the projection's bias
    lambda V, E, H: V * H,  # the unfactorized table
    lambda V, E, H: V * E + E * H + E,  # bias of the wrong width
], ids=["no-projection", "no-bias", "unfactorized", "bias-width-E"])
def test_factorized_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_factorized_embedding_params(wrong)


@pytest.mark.parametrize("wrong", [
    lambda V, H: H * (V - 1) // (V + H),  # floor instead of ceiling
    lambda V, H: -(-(V * H) // (V + H)),  # forgot the projection's bias
    lambda V, H: H * (V - 1) / (V + H),  # the real-valued root, not an integer size
], ids=["floor", "no-bias", "not-integer"])
def test_break_even_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_break_even_embedding_size(wrong)


@pytest.mark.parametrize("wrong", [
    lambda V, E, H: H * E + E + 2 * E + V + V * E,  # counted the tied decoder weight again
    lambda V, E, H: H * H + H + 2 * H + V,  # BERT's head: transform at width H
    lambda V, E, H: H * E + E + 2 * E,  # forgot the output bias
    lambda V, E, H: H * E + 2 * E + V,  # forgot the dense layer's bias
], ids=["untied", "bert-width", "no-output-bias", "no-dense-bias"])
def test_mlm_head_check_rejects_wrong_answers(wrong):
    with pytest.raises(ExerciseFailed, match="different answer"):
        check_mlm_head_params(wrong)


def test_failure_message_shows_input_but_not_the_reference_code():
    with pytest.raises(ExerciseFailed) as caught:
        check_factorized_embedding_params(lambda V, E, H: V * E)
    message = str(caught.value)
    assert "input:" in message and "hint:" in message
    assert "def factorized_embedding_params" not in message and "return V * E" not in message


def test_tied_decoder_really_shares_storage():
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    assert model.predictions.decoder.weight is model.albert.embeddings.word_embeddings.weight
    assert torch.equal(model.predictions.decoder.bias, model.predictions.bias)
