"""Chapter 9's exercise checks: the references agree with the package, the checks pass right answers, and they
reject stubs, plausible mistakes (each with its own hint) and cheats."""

from pathlib import Path

import numpy as np
import pytest
from exercise_helpers import (
    AlwaysEqual,
    SneakyInt,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    grader_passes,
    passes_solutions_and_references,
    reports_a_stub,
)

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.book.exercises import ch09, check_mlm_head_flops_per_token, check_training_memory_bytes
from albert_mini.study import memory, throughput

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "09_scaling_up.py"
STATES = {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}

pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


def right_memory(n_params, optimizer="adamw"):
    return 4 * n_params * (2 + STATES[optimizer])


def right_head(config):
    return 2 * (config.hidden_size * config.embedding_size + config.embedding_size * config.vocab_size)


# ------------------------------------------------------------------ the references agree with the package
def test_memory_reference_is_the_packages_parameter_bytes():
    for n in (0, 1, 334_607_360, 11_683_584):
        for optimizer in STATES:
            assert ch09.training_memory_bytes(n, optimizer) == memory.parameter_bytes(n, optimizer)
    assert ch09.training_memory_bytes(334_607_360) == 16 * 334_607_360  # BERT-large with AdamW: 5.35 GB


def test_head_reference_is_the_packages_and_counts_the_heads_matrices():
    for name in ("albert-base", "bert-base", "albert-xxlarge", "albert-nano"):
        config = AlbertConfig.from_preset(name)
        assert ch09.mlm_head_flops_per_token(config) == throughput.mlm_head_flops_per_token(config)
    config = AlbertConfig.from_preset("albert-nano")
    head = AlbertForPreTraining(config).predictions
    weights = head.dense.weight.numel() + head.decoder.weight.numel()  # the two matrices a position meets
    assert ch09.mlm_head_flops_per_token(config) == 2 * weights
    albert, bert = AlbertConfig.from_preset("albert-base"), AlbertConfig.from_preset("bert-base")
    assert ch09.mlm_head_flops_per_token(bert) > 5 * ch09.mlm_head_flops_per_token(albert)  # E = 128, not 768


# ------------------------------------------------------------------ the checks pass right answers
def test_checks_pass_the_solutions_the_references_and_independent_answers(capsys):
    passes_solutions_and_references(ch09, SOLUTIONS)
    assert check_training_memory_bytes(right_memory) and check_mlm_head_flops_per_token(right_head)
    assert check_training_memory_bytes(lambda n, optimizer="adamw": np.int64(right_memory(n, optimizer)))
    assert "Well done!" in capsys.readouterr().out


@pytest.mark.parametrize("exercise, answer", [(ch09.MEMORY, right_memory), (ch09.HEAD_FLOPS, right_head)],
                         ids=lambda x: getattr(x, "name", ""))
def test_the_grader_passes_right_answers_on_cases_drawn_at_grading_time(exercise, answer):
    grader_passes(exercise, answer)


@pytest.mark.parametrize("check", [check_training_memory_bytes, check_mlm_head_flops_per_token])
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ Exercise 1
@pytest.mark.parametrize("wrong, hint", [
    (lambda n, optimizer="adamw": 16 * n, "the wrong number of optimizer states"),
    (lambda n, optimizer="adamw": 4 * n * (1 + STATES[optimizer]), "one fp32 value per parameter is missing"),
    (lambda n, optimizer="adamw": 32 * n * (2 + STATES[optimizer]), "that is bits"),
    (lambda n, optimizer="adamw": n * (2 + STATES[optimizer]), "that counts values"),
    (lambda n, optimizer="adamw": 4 * n if optimizer != "sgd" else 8 * n, "that is the weights alone"),
    (lambda n, optimizer="adamw": right_memory(n, optimizer) + 8,
     "revisit what a training step keeps"),  # no targeted hint: the first tier
], ids=["always-adam", "no-gradients", "bits", "values", "weights-only", "eight-bytes-more"])
def test_memory_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_training_memory_bytes, wrong, capsys, "different answer", "hint:", hint)


def test_memory_check_wants_a_count_not_gigabytes(capsys):
    fails_with(check_training_memory_bytes, lambda n, optimizer="adamw": right_memory(n, optimizer) / 1e9, capsys,
               "a count is a whole number")


# ------------------------------------------------------------------ Exercise 2
@pytest.mark.parametrize("wrong, hint", [
    (lambda c: 2 * c.embedding_size * c.vocab_size, "the dense layer from H to E runs before the decoder"),
    (lambda c: c.hidden_size * c.embedding_size + c.embedding_size * c.vocab_size, "a multiply-add is 2 FLOPs"),
    (lambda c: 2 * (c.hidden_size * c.embedding_size + c.hidden_size * c.vocab_size), "the decoder works at width E"),
    (lambda c: 2 * (c.hidden_size * c.hidden_size + c.embedding_size * c.vocab_size), "not H to H"),
    (lambda c: 2 * c.hidden_size * c.embedding_size, "the decoder to V vocabulary logits is missing"),
    (lambda c: right_head(c) + c.embedding_size + c.vocab_size, "leave out the biases"),
], ids=["no-transform", "no-factor-2", "decoder-H", "transform-HH", "no-decoder", "biases"])
def test_head_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_mlm_head_flops_per_token, wrong, capsys, "different answer", "hint:", hint)


# ------------------------------------------------------------------ cheats
@pytest.mark.parametrize("check, cheat", [
    (check_training_memory_bytes, lambda n, optimizer="adamw": AlwaysEqual()),
    (check_training_memory_bytes, lambda n, optimizer="adamw": SneakyInt(1)),
    (check_mlm_head_flops_per_token, lambda config: SneakyInt(1)),
], ids=["eq", "int-subclass-memory", "int-subclass-head"])
def test_checks_reject_objects_that_claim_to_be_equal(check, cheat, capsys):
    fails_with(check, cheat, capsys)


@pytest.mark.parametrize("check, cheat", [
    (check_training_memory_bytes, memory.parameter_bytes),
    (check_mlm_head_flops_per_token, throughput.mlm_head_flops_per_token),
], ids=["package-memory", "package-head"])
def test_the_packages_own_answer_is_switched_off(check, cheat, capsys):
    fails_with(check, cheat, capsys, "switched off while your function is checked")
    assert memory.parameter_bytes(1, "sgd") == 8


def test_no_chapter_imports_a_reference_from_the_exercises_package():
    chapters = Path(__file__).resolve().parents[2] / "chapters"
    for chapter in sorted(chapters.glob("[0-9][0-9]_*.py")):
        assert "albert_mini.book.exercises.ch" not in chapter.read_text(), chapter.name


# ------------------------------------------------------------------ hints teach, they do not answer
KEY_EXPRESSIONS = {  # what would hand over each solution, in the forms a hint could spell it
    "training_memory_bytes": ["16 bytes", "4 * (", "(2 +", "* n_params", "12 bytes", "8 bytes"],
    "mlm_head_flops_per_token": ["H * E", "E * V", "2 * (", "H*E", "E*V", "HE + EV"],
}


@pytest.mark.parametrize("exercise", ch09.EXERCISES, ids=lambda e: e.name)
def test_no_hint_spells_out_the_solution(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_later_tries_get_narrower_hints_then_the_solutions_file(capsys):
    one_too_many = lambda n, optimizer="adamw": right_memory(n, optimizer) + 8  # noqa: E731
    gives_the_tiers_in_turn(check_training_memory_bytes, one_too_many, ch09.MEMORY, capsys)


def test_a_missing_state_with_the_gradient_kept_is_not_told_to_keep_the_gradient(capsys):
    """Weight, gradient and one of AdamW's two states gives the same number as forgetting the gradient: the hint
    names the missing value without claiming which one it is."""
    keeps_gradient = lambda n, optimizer="adamw": 4 * n * (2 + max(STATES[optimizer] - 1, 0))  # noqa: E731
    printed = fails_with(check_training_memory_bytes, keeps_gradient, capsys, "hint:")
    assert "gradient is kept too" not in printed and "one fp32 value per parameter is missing" in printed
