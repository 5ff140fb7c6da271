"""Chapter 3's exercise checks: they pass the references and the solutions, reject stubs, plausible wrong answers
and cheats (each common mistake with a hint of its own), and no hint gives a count's formula away."""

import re
import runpy
from pathlib import Path

import pytest
import torch
from torch import nn

from albert_mini import AlbertConfig, AlbertForPreTraining, count_parameters
from albert_mini.book.answering import call_all
from albert_mini.book.exercises import (
    ch03,
    check_break_even_embedding_size,
    check_factorized_embedding_params,
    check_mlm_head_params,
    checking,
)
from albert_mini.model.albert import AlbertMLMHead
from albert_mini.model.counting import closed_form_breakdown

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "03_factorized_embeddings.py"
CHECKS = {"factorized_embedding_params": check_factorized_embedding_params,
          "break_even_embedding_size": check_break_even_embedding_size, "mlm_head_params": check_mlm_head_params}


def not_written(*args):
    raise NotImplementedError("write your solution here")


@pytest.fixture(autouse=True)
def first_attempt(monkeypatch):
    """Every test starts as a learner's first try (the hint tiers count wrong tries per kernel)."""
    monkeypatch.setattr(checking, "_ATTEMPTS", {})


def judged(exercise, fn, seed=20240601):
    """The grader's verdict: cases drawn from a fresh seed, answers judged as plain data."""
    cases = exercise.cases(seed)
    requests, arrays = exercise.requests(cases)
    expected = exercise.expected(requests, arrays)
    records, out = call_all(fn, requests, arrays, exercise.unavailable, exercise.keep_inputs)
    return exercise.judge(cases, requests, expected, {"records": records}, {**arrays, **out})


def hint_of(printed: str) -> str:
    return re.search(r"hint: (.*)", printed).group(1)


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
        assert judged(exercise, solutions[exercise.name]).passed is True
    assert capsys.readouterr().out.count("agree with the reference. Well done!") == 5


def test_numpy_integers_count_as_whole_numbers():
    import numpy as np

    assert check_factorized_embedding_params(lambda V, E, H: np.int64(V) * E + E * H + H)


def test_the_grader_draws_shapes_the_learner_never_saw():
    for exercise in ch03.EXERCISES:
        learner, grader = exercise.cases(), exercise.cases(seed=11)
        assert len(grader) == len(learner) > len(exercise.fixed)
        assert [c.args for c in grader] != [c.args for c in learner]
    table = {c.args: ch03.break_even_embedding_size(*c.args) for c in ch03.BREAK_EVEN.cases()}
    lookup = lambda V, H: table.get((V, H), 1)  # noqa: E731 (a table of the learner's cases)
    assert check_break_even_embedding_size(lookup) is True
    assert judged(ch03.BREAK_EVEN, lookup).passed is False


@pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
def test_checks_report_a_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


# ------------------------------------------------------------------ wrong answers: the common ones get their hint
@pytest.mark.parametrize("wrong, hint", [
    (lambda V, E, H: V * E, "that is the word table alone"),
    (lambda V, E, H: V * E + E * H, "you are short by exactly H"),
    (lambda V, E, H: V * H, ch03.FACTORIZED.hints[0]),  # the unfactorized table
    (lambda V, E, H: V * E + E * H + E, ch03.FACTORIZED.hints[0]),  # a bias of width E
], ids=["no-projection", "no-bias", "unfactorized", "bias-width-E"])
def test_factorized_check_rejects_wrong_answers(wrong, hint, capsys):
    assert check_factorized_embedding_params(wrong) is False
    printed = capsys.readouterr().out
    assert "gives a different answer" in printed and "input:" in printed and hint_of(printed).startswith(hint)
    assert judged(ch03.FACTORIZED, wrong).passed is False


@pytest.mark.parametrize("wrong, hint", [
    (lambda V, H: H * (V - 1) // (V + H), "one too small"),  # floor instead of ceiling
    (lambda V, H: -(-(V * H) // (V + H)), "close: your inequality leaves out one tensor"),  # forgot the bias
    (lambda V, H: V * H // (V + H), "one too small"),  # both at once: here one below the answer
    (lambda V, H: H, ch03.BREAK_EVEN.hints[0]),  # E = H: where the table stops shrinking, not the break-even
], ids=["floor", "no-bias", "floor-and-no-bias", "e-equals-h"])
def test_break_even_check_rejects_wrong_answers(wrong, hint, capsys):
    assert check_break_even_embedding_size(wrong) is False
    printed = capsys.readouterr().out
    assert "gives a different answer" in printed and "input:" in printed and hint_of(printed).startswith(hint)
    assert judged(ch03.BREAK_EVEN, wrong).passed is False


def test_break_even_as_a_float_is_the_wrong_kind_of_answer(capsys):
    assert check_break_even_embedding_size(lambda V, H: H * (V - 1) / (V + H)) is False
    assert "returned the float" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda V, E, H: H * E + E + 2 * E + V + V * E, "the E x V decoder matrix is the word-embedding table"),
    (lambda V, E, H: H * E + E + 2 * E, "the decoder's matrix is shared, but its output bias"),
    (lambda V, E, H: H * E + E + V, "LayerNorm has parameters too"),
    (lambda V, E, H: H * H + H + 2 * H + V, "that is BERT's head"),  # BERT's head: transform at width H
    (lambda V, E, H: H * E + 2 * E + V, "short by exactly E"),  # forgot the dense layer's bias
], ids=["untied", "no-output-bias", "no-layernorm", "bert-width", "no-dense-bias"])
def test_mlm_head_check_rejects_wrong_answers(wrong, hint, capsys):
    assert check_mlm_head_params(wrong) is False
    printed = capsys.readouterr().out
    assert "gives a different answer" in printed and "input:" in printed and hint_of(printed).startswith(hint)
    assert judged(ch03.MLM_HEAD, wrong).passed is False


def test_the_tiers_come_in_turn_then_point_at_the_solutions(capsys):
    hints = []
    for _ in range(3):
        assert check_mlm_head_params(lambda V, E, H: 0) is False
        hints.append(hint_of(capsys.readouterr().out))
    assert hints[:2] == list(ch03.MLM_HEAD.hints)
    assert hints[2].startswith(ch03.MLM_HEAD.hints[1]) and "chapters/solutions/" in hints[2]


def test_failure_message_shows_input_but_not_the_reference_code(capsys):
    assert check_factorized_embedding_params(lambda V, E, H: V * E) is False
    message = capsys.readouterr().out
    assert "input:" in message and "hint:" in message
    assert "def factorized_embedding_params" not in message and "return V * E" not in message


# ------------------------------------------------------------------ cheats fail
class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = None


class SneakyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("cheat", [lambda *args: AlwaysEqual(), lambda *args: SneakyInt(1), lambda *args: "749"],
                         ids=["always-equal", "int-subclass", "a-string"])
def test_cheats_fail(name, cheat, capsys):
    assert CHECKS[name](cheat) is False
    assert "return the count as an int" in capsys.readouterr().out


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
    assert check_mlm_head_params(answer) is False
    assert "not available" in capsys.readouterr().out
    verdict = judged(ch03.MLM_HEAD, answer)
    assert verdict.passed is False and "not available" in verdict.message
    assert package_count(8000, 128, 256) == ch03.mlm_head_params(8000, 128, 256)  # and it works again after


# ------------------------------------------------------------------ hints point at the idea, not at the answer
def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


KEY_EXPRESSIONS = {
    "factorized_embedding_params": ["V*E+E*H+H", "E*H+H", "V*E+E*H", "VE+EH"],
    "break_even_embedding_size": ["H*(V-1)", "(V-1)", "/(V+H)", "-(-", "ceil", "E>="],
    "mlm_head_params": ["H*E+E", "2*E", "+V", "HE+E"],
}


@pytest.mark.parametrize("exercise", ch03.EXERCISES, ids=lambda e: e.name)
def test_no_hint_gives_the_formula_away(exercise):
    assert len(exercise.hints) >= 2
    hints = list(exercise.hints) + [m.hint for m in exercise.mistakes]
    assert [(k, h) for h in hints for k in KEY_EXPRESSIONS[exercise.name] if squeeze(k) in squeeze(h)] == []
    assert len({m.hint for m in exercise.mistakes}) == len(exercise.mistakes)
    assert not set(exercise.hints) & {m.hint for m in exercise.mistakes}
