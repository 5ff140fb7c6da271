"""Chapter 4's exercise checks: they pass the references and the solutions, reject stubs, plausible wrong answers
and cheats with a hint of their own, and neither the chapter nor a hint gives the schedule away."""

import runpy
from pathlib import Path

import pytest
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
    squeeze,
)

from albert_mini import AlbertConfig, AlbertModel
from albert_mini.book.exercises import ch04, check_layer_schedule, check_sharing_plan
from albert_mini.book.exercises.ch04 import FLOAT_FORMULA_TRAPS

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "chapters" / "04_cross_layer_sharing.py"
SOLUTIONS = ROOT / "chapters" / "solutions" / "04_cross_layer_sharing.py"
pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


def right_schedule(L, G, K):
    return [(i * G // L) * K + k for i in range(L) for k in range(K)]


def right_plan(strategy, L):
    return [(0 if strategy in ("all", "attention") else i, 0 if strategy in ("all", "ffn") else i) for i in range(L)]


# ------------------------------------------------------------------ the references read built models
def test_the_references_agree_with_the_closed_forms_on_every_case():
    for case in ch04.SCHEDULE.cases() + ch04.SCHEDULE.cases(seed=3):
        assert ch04._reference_schedule(*case.args) == right_schedule(*case.args)
    for case in ch04.PLAN.cases() + ch04.PLAN.cases(seed=3):
        assert ch04._reference_plan(*case.args) == right_plan(*case.args)


def test_float_traps_really_are_traps():
    assert all(int(i / L * G) != i * G // L for i, L, G in FLOAT_FORMULA_TRAPS)


# ------------------------------------------------------------------ right answers pass, here and under the grader
def test_checks_pass_the_solutions_and_independent_answers(capsys):
    solutions = runpy.run_path(str(SOLUTIONS))
    assert check_layer_schedule(solutions["layer_schedule"]) and check_layer_schedule(right_schedule)
    assert check_sharing_plan(solutions["sharing_plan"]) and check_sharing_plan(right_plan)
    assert check_sharing_plan(lambda s, L: [list(pair) for pair in right_plan(s, L)])  # lists of lists
    assert check_layer_schedule(lambda L, G, K: tuple(right_schedule(L, G, K)))  # a tuple of ints
    assert capsys.readouterr().out.count("Well done!") >= 6
    assert ch04.SCHEDULE.verdict(right_schedule, GRADER_SEED).passed is True
    assert ch04.PLAN.verdict(right_plan, GRADER_SEED).passed is True


def test_the_grader_draws_shapes_the_learner_never_saw():
    draws_unseen_cases(ch04.EXERCISES)
    table = {c.args: right_schedule(*c.args) for c in ch04.SCHEDULE.cases()}
    lookup = lambda L, G, K: table.get((L, G, K), [])  # noqa: E731 (a table of the learner's cases)
    assert check_layer_schedule(lookup) is True
    assert ch04.SCHEDULE.verdict(lookup, GRADER_SEED).passed is False


@pytest.mark.parametrize("check", [check_layer_schedule, check_sharing_plan])
def test_a_stub_is_not_attempted_yet(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ wrong answers: each common one with its hint
@pytest.mark.parametrize("wrong, hint", [
    (lambda L, G, K: [int(i / L * G) * K + k for i in range(L) for k in range(K)],
     "that is the floating-point formula of the original code"),
    (lambda L, G, K: [min((i + 1) * G // L, G - 1) * K + k for i in range(L) for k in range(K)], "off by one"),
    (lambda L, G, K: [(i % G) * K + k for i in range(L) for k in range(K)], "consecutive applications share"),
    (lambda L, G, K: [i * G // L for i in range(L)], "each call of a group runs all K of its inner layers"),
    (lambda L, G, K: [(i * G // L) + k * G for i in range(L) for k in range(K)], "stored layers are numbered"),
    (lambda L, G, K: [0] * (L * K), ch04.SCHEDULE.hints[0]),
], ids=["tf-float", "off-by-one", "round-robin", "no-inner", "inner-major", "unrecognised"])
def test_layer_schedule_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_layer_schedule, wrong, hint, capsys)
    assert ch04.SCHEDULE.verdict(wrong, GRADER_SEED).passed is False


def test_the_float_trap_fails_on_a_case_that_says_so(capsys):
    float_formula = lambda L, G, K: [int(i / L * G) * K + k for i in range(L) for k in range(K)]  # noqa: E731
    fails_with(check_layer_schedule, float_formula, capsys,
               "(a shape where rounding in floating point picks the wrong group)")


@pytest.mark.parametrize("wrong, hint", [
    (lambda s, L: right_plan({"attention": "ffn", "ffn": "attention"}.get(s, s), L), "the strategy names the block"),
    (lambda s, L: [(a + 1, f + 1) for a, f in right_plan(s, L)], "blocks are numbered from 0"),
    (lambda s, L: right_plan("none" if s == "all" else s, L), "\"all\" shares both blocks"),
    (lambda s, L: right_plan("all" if s == "none" else s, L), "\"none\" shares nothing"),
    (lambda s, L: right_plan(s, L)[:-1], "one pair per layer application"),
    (lambda s, L: [(f, a) for a, f in right_plan(s, L)][::-1], ch04.PLAN.hints[0]),
], ids=["swapped", "one-based", "all-as-none", "none-as-all", "short", "unrecognised"])
def test_sharing_plan_names_the_mistake(wrong, hint, capsys):
    names_the_mistake(check_sharing_plan, wrong, hint, capsys)
    assert ch04.PLAN.verdict(wrong, GRADER_SEED).passed is False


def test_the_tiers_come_in_turn_then_point_at_the_solutions(capsys):
    gives_the_tiers_in_turn(check_layer_schedule, lambda L, G, K: [0] * (L * K), ch04.SCHEDULE, capsys)


# ------------------------------------------------------------------ cheats fail
@pytest.mark.parametrize("check, cheat, message", [
    (check_layer_schedule, lambda L, G, K: AlwaysEqual(), "not plain data"),
    (check_layer_schedule, lambda L, G, K: [SneakyInt(0)] * (L * K), "not plain data"),
    (check_layer_schedule, lambda L, G, K: {"schedule": right_schedule(L, G, K)}, "return a list of ints"),
    (check_sharing_plan, lambda s, L: AlwaysEqual(), "not plain data"),
    (check_sharing_plan, lambda s, L: [(SneakyInt(0), SneakyInt(0))] * L, "not plain data"),
    (check_sharing_plan, lambda s, L: [a for a, _ in right_plan(s, L)], "each item is a pair"),
], ids=["always-equal", "int-subclass", "a-dict", "always-equal-plan", "int-subclass-plan", "not-pairs"])
def test_cheats_fail(check, cheat, message, capsys):
    fails_with(check, cheat, capsys, message)


def schedule_from_the_config(L, G, K):
    config = AlbertConfig(vocab_size=16, embedding_size=8, hidden_size=8, num_hidden_layers=L, num_attention_heads=1,
                          intermediate_size=16, num_hidden_groups=G, inner_group_num=K)
    return [config.layer_to_group(i) * K + k for i in range(L) for k in range(K)]


def schedule_from_a_model(L, G, K):
    model = AlbertModel(AlbertConfig.from_preset("albert-nano", num_hidden_layers=L, num_hidden_groups=G,
                                                 inner_group_num=K))
    return [g * K + k for g in model.encoder.layer_plan() for k in range(K)]


def plan_from_models(strategy, L):
    """The chapter's own `block_usage`, run on a model of each strategy: the package answers it."""
    groups = L if strategy == "none" else 1
    model = AlbertModel(AlbertConfig.from_preset("albert-nano", num_hidden_layers=L, sharing=strategy,
                                                 num_hidden_groups=groups))
    attention_ids, ffn_ids, plan = {}, {}, []
    for group in model.encoder.layer_plan():
        layer = model.encoder.albert_layer_groups[group].albert_layers[0]
        plan.append((attention_ids.setdefault(id(layer.attention), len(attention_ids)),
                     ffn_ids.setdefault(id(layer.ffn), len(ffn_ids))))
    return plan


@pytest.mark.parametrize("exercise, package_answer", [
    (ch04.SCHEDULE, schedule_from_the_config), (ch04.SCHEDULE, schedule_from_a_model),
    (ch04.SCHEDULE, ch04._reference_schedule), (ch04.PLAN, plan_from_models), (ch04.PLAN, ch04._reference_plan),
], ids=["layer_to_group", "layer_plan", "reference-schedule", "built-models", "reference-plan"])
def test_the_package_answer_is_not_available_while_checking(exercise, package_answer, capsys):
    refuses_the_package_answer(exercise, package_answer, capsys)
    assert schedule_from_the_config(6, 3, 2) == right_schedule(6, 3, 2)  # and the package works again afterwards


# ------------------------------------------------------------------ hints point at the idea, not at the answer
KEY_EXPRESSIONS = {
    "layer_schedule": ["i*G//L", "iG/L", "G//L", "*K+k", "foriinrange", "lfloor"],
    "sharing_plan": ["0ifattention_shared", "inrange(L)", "strategyin(", "elsei"],
}


@pytest.mark.parametrize("exercise", ch04.EXERCISES, ids=lambda e: e.name)
def test_no_hint_gives_the_answer_away(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_the_chapter_gives_the_group_formula_only_after_exercise_1():
    import jupytext

    cells = jupytext.read(CHAPTER).cells
    stub = next(i for i, c in enumerate(cells) if "def layer_schedule(" in c.source)
    before = squeeze("\n".join(c.source for c in cells[:stub]))
    after = squeeze("\n".join(c.source for c in cells[stub:]))
    for formula in ("iG/L", "i*G//L", "int(i/L*G)"):
        assert formula not in before and formula in after
