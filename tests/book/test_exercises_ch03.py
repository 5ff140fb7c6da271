"""Chapter 3's exercise checks: they pass the references and the solutions, reject stubs, plausible wrong answers
and cheats (each common mistake with a hint of its own), and no hint gives a count's formula away."""

import runpy
from pathlib import Path

import pytest
import torch
from exercise_helpers import (
    GRADER_SEED,
    AlwaysEqual,
    SneakyInt,
    draws_unseen_cases,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    names_the_mistake,
    refuses_the_package_answer,
    reports_a_stub,
)
from torch import nn

from albert_mini import AlbertConfig, AlbertForPreTraining, count_parameters
from albert_mini.book.exercises import (
    ch03,
    check_break_even_embedding_size,
    check_factorized_embedding_params,
    check_mlm_head_params,
)
from albert_mini.model.albert import AlbertMLMHead
from albert_mini.model.counting import closed_form_breakdown

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "03_factorized_embeddings.py"
CHECKS = {"factorized_embedding_params": check_factorized_embedding_params,
          "break_even_embedding_size": check_break_even_embedding_size, "mlm_head_params": check_mlm_head_params}
pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


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


def test_tied_decoder_really_shares_storage():
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    assert model.predictions.decoder.weight is model.albert.embeddings.word_embeddings.weight
    assert torch.equal(model.predictions.decoder.bias, model.predictions.bias)


# ------------------------------------------------------------------ right answers pass, here and under the grader
def test_checks_pass_on_the_references_and_the_solutions(capsys):
    solutions = runpy.run_path(str(SOLUTIONS))
    capsys.readouterr()  # the solutions file runs its own checks
    for exercise in ch03.EXERCISES:
        if not exercise.unavailable:  # the MLM head's reference is the package's count, switched off meanwhile
            assert CHECKS[exercise.name](exercise.reference) is True
        assert CHECKS[exercise.name](solutions[exercise.name]) is True
        assert exercise.verdict(solutions[exercise.name], GRADER_SEED).passed is True
    assert capsys.readouterr().out.count("agree with the reference. Well done!") == 5


def test_numpy_integers_count_as_whole_numbers():
    import numpy as np

    assert check_factorized_embedding_params(lambda V, E, H: np.int64(V) * E + E * H + H)


def test_the_grader_draws_shapes_the_learner_never_saw():
    draws_unseen_cases(ch03.EXERCISES)
    table = {c.args: ch03.break_even_embedding_size(*c.args) for c in ch03.BREAK_EVEN.cases()}
    lookup = lambda V, H: table.get((V, H), 1)  # noqa: E731 (a table of the learner's cases)
    assert check_break_even_embedding_size(lookup) is True
    assert ch03.BREAK_EVEN.verdict(lookup, GRADER_SEED).passed is False


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ wrong answers: the common ones get their hint
@pytest.mark.parametrize("wrong, hint", [
    (lambda V, E, H: V * E, "that is the word table alone"),
    (lambda V, E, H: V * E + E * H, "you are short by exactly H"),
    (lambda V, E, H: V * H, ch03.FACTORIZED.hints[0]),  # the unfactorized table
    (lambda V, E, H: V * E + E * H + E, ch03.FACTORIZED.hints[0]),  # a bias of width E
], ids=["no-projection", "no-bias", "unfactorized", "bias-width-E"])
def test_factorized_check_rejects_wrong_answers(wrong, hint, capsys):
    names_the_mistake(check_factorized_embedding_params, wrong, hint, capsys)
    assert ch03.FACTORIZED.verdict(wrong, GRADER_SEED).passed is False


@pytest.mark.parametrize("wrong, hint", [
    (lambda V, H: H * (V - 1) // (V + H), "one too small"),  # floor instead of ceiling
    (lambda V, H: -(-(V * H) // (V + H)), "close: your inequality leaves out one tensor"),  # forgot the bias
    (lambda V, H: V * H // (V + H), "one too small"),  # both at once: here one below the answer
    (lambda V, H: H, ch03.BREAK_EVEN.hints[0]),  # E = H: where the table stops shrinking, not the break-even
], ids=["floor", "no-bias", "floor-and-no-bias", "e-equals-h"])
def test_break_even_check_rejects_wrong_answers(wrong, hint, capsys):
    names_the_mistake(check_break_even_embedding_size, wrong, hint, capsys)
    assert ch03.BREAK_EVEN.verdict(wrong, GRADER_SEED).passed is False


def test_break_even_as_a_float_is_the_wrong_kind_of_answer(capsys):
    fails_with(check_break_even_embedding_size, lambda V, H: H * (V - 1) / (V + H), capsys, "returned the float")


@pytest.mark.parametrize("wrong, hint", [
    (lambda V, E, H: H * E + E + 2 * E + V + V * E, "the E x V decoder matrix is the word-embedding table"),
    (lambda V, E, H: H * E + E + 2 * E, "the decoder's matrix is shared, but its output bias"),
    (lambda V, E, H: H * E + E + V, "LayerNorm has parameters too"),
    (lambda V, E, H: H * H + H + 2 * H + V, "that is BERT's head"),  # BERT's head: transform at width H
    (lambda V, E, H: H * E + 2 * E + V, "short by exactly E"),  # forgot the dense layer's bias
], ids=["untied", "no-output-bias", "no-layernorm", "bert-width", "no-dense-bias"])
def test_mlm_head_check_rejects_wrong_answers(wrong, hint, capsys):
    names_the_mistake(check_mlm_head_params, wrong, hint, capsys)
    assert ch03.MLM_HEAD.verdict(wrong, GRADER_SEED).passed is False


def test_the_tiers_come_in_turn_then_point_at_the_solutions(capsys):
    gives_the_tiers_in_turn(check_mlm_head_params, lambda V, E, H: 0, ch03.MLM_HEAD, capsys)


def test_failure_message_shows_input_but_not_the_reference_code(capsys):
    message = fails_with(check_factorized_embedding_params, lambda V, E, H: V * E, capsys, "input:", "hint:")
    assert "def factorized_embedding_params" not in message and "return V * E" not in message


# ------------------------------------------------------------------ cheats fail
@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("cheat", [lambda *args: AlwaysEqual(), lambda *args: SneakyInt(1), lambda *args: "749"],
                         ids=["always-equal", "int-subclass", "a-string"])
def test_cheats_fail(name, cheat, capsys):
    fails_with(CHECKS[name], cheat, capsys, "return the count as an int")


def package_count(V, E, H):
    config = AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H, num_attention_heads=1)
    return closed_form_breakdown(config, heads=True)["mlm_head"]


def package_count_of_a_model(V, E, H):
    config = AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H, num_attention_heads=1)
    return count_parameters(config, breakdown=True, heads=True)["mlm_head"]


@pytest.mark.parametrize("answer", [package_count, package_count_of_a_model, ch03.mlm_head_params],
                         ids=["closed_form_breakdown", "count_parameters", "reference"])
def test_the_package_count_is_not_available_while_checking_exercise_3(answer, capsys):
    """The chapter imports closed_form_breakdown before Exercise 3; while the check runs it answers nothing."""
    refuses_the_package_answer(ch03.MLM_HEAD, answer, capsys, check=check_mlm_head_params)
    assert package_count(8000, 128, 256) == ch03.mlm_head_params(8000, 128, 256)  # and it works again after


# ------------------------------------------------------------------ hints point at the idea, not at the answer
KEY_EXPRESSIONS = {
    "factorized_embedding_params": ["V*E+E*H+H", "E*H+H", "V*E+E*H", "VE+EH"],
    "break_even_embedding_size": ["H*(V-1)", "(V-1)", "/(V+H)", "-(-", "ceil", "E>="],
    "mlm_head_params": ["H*E+E", "2*E", "+V", "HE+E"],
}


@pytest.mark.parametrize("exercise", ch03.EXERCISES, ids=lambda e: e.name)
def test_no_hint_gives_the_formula_away(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_a_recognised_mistake_leaves_the_first_tier_for_the_next_wrong_try(capsys):
    """The missing bias gets its own hint; the next, unrecognised wrong answer then gets tier 1, not tier 2."""
    from albert_mini.book.exercises import check_factorized_embedding_params
    from albert_mini.book.exercises.ch03 import FACTORIZED

    check_factorized_embedding_params(lambda V, E, H: V * E + E * H)
    assert "short by exactly H" in capsys.readouterr().out
    check_factorized_embedding_params(lambda V, E, H: V * E + E * H + H + 7)
    assert f"hint: {FACTORIZED.hints[0]} (your answer is too high)" in capsys.readouterr().out
    check_factorized_embedding_params(lambda V, E, H: V * E + E * H + H - 7)
    assert f"hint: {FACTORIZED.hints[1]} (your answer is too low)" in capsys.readouterr().out
