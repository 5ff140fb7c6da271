"""Chapter 7's exercise checks: the references agree with the package, the checks pass right answers, and they
reject stubs, plausible mistakes (each with its own hint) and cheats."""

import math
from pathlib import Path

import pytest
import torch
from exercise_helpers import (
    AlwaysEqual,
    SneakyFloat,
    fails_with,
    gives_nothing_away,
    gives_the_tiers_in_turn,
    grader_passes,
    passes_solutions_and_references,
    reports_a_stub,
)

from albert_mini.book.exercises import ch07, check_lamb_update, check_trust_ratio, check_warmup_poly_lr
from albert_mini.training import optim
from albert_mini.training.optim import Lamb, WarmupPolyDecay

SOLUTIONS = Path(__file__).resolve().parents[2] / "chapters" / "solutions" / "07_pretraining.py"

pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


# ------------------------------------------------------------------ learner-style answers written independently
def ratio_by_hand(w, u):
    w_norm, u_norm = float(torch.sqrt((w * w).sum())), float(torch.sqrt((u * u).sum()))
    return w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0


def lamb_by_hand(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    u = m / (v.sqrt() + eps) + weight_decay * w
    r = ratio_by_hand(w, u) if adapt else 1.0
    return w - lr * r * u, m, v


def lr_by_hand(step, peak_lr, total_steps, warmup_steps, power=1.0):
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * (1 - min(step, total_steps) / total_steps) ** power


# ------------------------------------------------------------------ the references agree with the package
def test_trust_ratio_reference_is_the_packages():
    for w, u in [(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.5])), (torch.zeros(3), torch.ones(3)),
                 (torch.ones(2, 2), torch.zeros(2, 2)), (ch07._random((5, 4), 1), ch07._random((5, 4), 2, 0.1))]:
        assert ch07.trust_ratio(w, u) == optim.trust_ratio(w, u)
    assert ch07.trust_ratio(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.5])) == pytest.approx(10.0)


@pytest.mark.parametrize("decay, adapt", [(0.05, True), (0.0, False), (0.01, True)])
def test_lamb_reference_is_one_step_of_the_packages_lamb_and_leaves_its_inputs(decay, adapt):
    w, g, m, v = ch07._moment_case((5, 3), 7)
    copies = [t.clone() for t in (w, g, m, v)]
    param = torch.nn.Parameter(w.clone())
    param.grad = g.clone()
    lamb = Lamb([param], lr=3e-3, weight_decay=decay, adapt=adapt)
    lamb.state[param].update(exp_avg=m.clone(), exp_avg_sq=v.clone())
    lamb.step()
    got = ch07.lamb_update(w, g, m, v, 3e-3, weight_decay=decay, adapt=adapt)
    for mine, theirs in zip(got, (param.detach(), lamb.state[param]["exp_avg"], lamb.state[param]["exp_avg_sq"])):
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-9)
    assert all(torch.equal(before, after) for before, after in zip(copies, (w, g, m, v)))


def test_schedule_reference_is_the_packages_and_keeps_the_reference_jump():
    for total, warmup, power in [(125_000, 3125, 1.0), (1200, 50, 1.0), (100, 0, 1.0), (100, 10, 2.0)]:
        schedule = WarmupPolyDecay(0.00176, total, warmup, power)
        for step in {0, 1, max(warmup - 1, 0), warmup, warmup + 1, total // 2, total - 1, total, total + 5}:
            assert ch07.warmup_poly_lr(step, 0.00176, total, warmup, power) == schedule(step)
    before, at = ch07.warmup_poly_lr(3124, 0.00176, 125_000, 3125), ch07.warmup_poly_lr(3125, 0.00176, 125_000, 3125)
    assert math.isclose(before, 0.00176 * 3124 / 3125) and math.isclose(at, 0.00176 * 0.975)


# ------------------------------------------------------------------ the checks pass right answers
def test_checks_pass_the_solutions_the_references_and_independent_answers(capsys):
    passes_solutions_and_references(ch07, SOLUTIONS)
    assert check_trust_ratio(ratio_by_hand) and check_lamb_update(lamb_by_hand) and check_warmup_poly_lr(lr_by_hand)
    assert check_trust_ratio(lambda w, u: torch.tensor(ratio_by_hand(w, u)))  # a 0-d tensor is a number
    assert "Well done!" in capsys.readouterr().out


@pytest.mark.parametrize("exercise, answer", [
    (ch07.TRUST_RATIO, ratio_by_hand), (ch07.LAMB_UPDATE, lamb_by_hand), (ch07.WARMUP_POLY, lr_by_hand)],
    ids=lambda x: getattr(x, "name", ""))
def test_the_grader_passes_right_answers_on_cases_drawn_at_grading_time(exercise, answer):
    grader_passes(exercise, answer)


@pytest.mark.parametrize("check", [check_trust_ratio, check_lamb_update, check_warmup_poly_lr])
def test_checks_report_a_stub(check, capsys):
    reports_a_stub(check, capsys)


# ------------------------------------------------------------------ Exercise 1
@pytest.mark.parametrize("wrong, hint", [
    (lambda w, u: float(u.norm() / w.norm()) if w.any() and u.any() else 1.0, "upside down"),
    (lambda w, u: float(w.norm() / u.norm()), "when either norm is 0 the ratio is 1.0"),
    (lambda w, u: float((w * w).sum() / (u * u).sum()) if w.any() and u.any() else 1.0, "squared norms"),
    (lambda w, u: float(w.abs().sum() / u.abs().sum()) if w.any() and u.any() else 1.0,
     "revisit what LAMB compares"),  # no targeted hint: the first tier
], ids=["inverted", "no-zero-guard", "squared", "1-norm"])
def test_trust_ratio_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_trust_ratio, wrong, capsys, "different answer", "input:", "hint:", hint)


def test_trust_ratio_check_wants_one_number_per_tensor(capsys):
    fails_with(check_trust_ratio, lambda w, u: torch.tensor([ratio_by_hand(w, u)]), capsys, "return a number")


# ------------------------------------------------------------------ Exercise 2
def lamb_with_bias_correction(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    """Adam's bias correction, at step 1 (the only step a one-step function could assume)."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    u = (m / (1 - beta1)) / ((v / (1 - beta2)).sqrt() + eps) + weight_decay * w
    r = ratio_by_hand(w, u) if adapt else 1.0
    return w - lr * r * u, m, v


def lamb_decay_outside_ratio(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    adam = m / (v.sqrt() + eps)
    r = ratio_by_hand(w, adam) if adapt else 1.0
    return w - lr * (r * adam + weight_decay * w), m, v


def lamb_ignoring_adapt(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    return lamb_by_hand(w, g, m, v, lr, weight_decay, True, beta1, beta2, eps)


def lamb_old_moments(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    return lamb_by_hand(w, g, m, v, lr, weight_decay, adapt, beta1, beta2, eps)[0], m, v


def lamb_wrong_way(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    new_w, new_m, new_v = lamb_by_hand(w, g, m, v, lr, weight_decay, adapt, beta1, beta2, eps)
    return 2 * w - new_w, new_m, new_v


def lamb_in_place(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    """The right numbers, but m and v are updated in the caller's tensors, which the exercise forbids."""
    m.mul_(beta1).add_((1 - beta1) * g)
    v.mul_(beta2).add_((1 - beta2) * g * g)
    u = m / (v.sqrt() + eps) + weight_decay * w
    r = ratio_by_hand(w, u) if adapt else 1.0
    return w - lr * r * u, m, v


@pytest.mark.parametrize("wrong, hint", [
    (lamb_with_bias_correction, "Adam's bias correction"), (lamb_decay_outside_ratio, "inside the update"),
    (lamb_ignoring_adapt, "with adapt=False"), (lamb_old_moments, "new m is the m you were given"),
    (lamb_wrong_way, "the step goes the wrong way"),
], ids=["bias-correction", "decay-outside", "ignores-adapt", "old-moments", "wrong-sign"])
def test_lamb_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_lamb_update, wrong, capsys, "different answer", "hint:", hint)


def test_lamb_names_an_answer_that_changes_its_inputs(capsys):
    fails_with(check_lamb_update, lamb_in_place, capsys, "changed input 3, input 4 in place")


def test_lamb_shows_the_part_that_differs_and_its_largest_difference(capsys):
    """Not two tuples of tensors printed alike: the part that differs, both values in full, and the largest gap."""
    printed = fails_with(check_lamb_update, lamb_with_bias_correction, capsys, "new w (item 0 of the tuple) differs")
    assert "new m (item" not in printed and "new v (item" not in printed  # the moments are right: not shown
    assert "largest difference" in printed and "tensor(" not in printed


def test_lamb_check_wants_three_tensors(capsys):
    fails_with(check_lamb_update, lambda *args, **kwargs: lamb_by_hand(*args, **kwargs)[0], capsys,
               "return the three tensors")


# ------------------------------------------------------------------ Exercise 3
@pytest.mark.parametrize("wrong, hint", [
    (lambda s, p, T, W, power=1.0: p * (1 - min(s, T) / T) ** power, "no warmup"),
    (lambda s, p, T, W, power=1.0: p * (s + 1) / W if s < W else lr_by_hand(s, p, T, W, power), "off by one"),
    (lambda s, p, T, W, power=1.0: p * s / W if W and s <= W else lr_by_hand(s, p, T, W, power),
     "the rate is already decaying"),
    (lambda s, p, T, W, power=1.0: p * (1 - (s - W) / (T - W)) ** power if s >= W > 0 else lr_by_hand(
        s, p, T, W, power), "the rate is already decaying"),  # smooth: the first case it fails is step == W
    (lambda s, p, T, W, power=1.0: p * s / W if s < W else p * abs(1 - s / T) ** power, "past total_steps"),
    (lambda s, p, T, W, power=1.0: lr_by_hand(s, p, T, W), "raised to `power`"),
], ids=["no-warmup", "off-by-one", "warmup-includes-W", "decay-after-warmup", "no-clamp", "no-power"])
def test_schedule_check_rejects_mistakes_with_their_hint(wrong, hint, capsys):
    fails_with(check_warmup_poly_lr, wrong, capsys, "different answer", "hint:", hint)


def test_the_hint_for_decaying_after_the_warmup_is_its_own():
    """Where the smooth schedule differs beyond step == warmup_steps, its own hint names it."""
    args = (60_000, 0.00176, 125_000, 3125)
    smooth = args[1] * (1 - (args[0] - args[3]) / (args[2] - args[3]))
    hint = next(m.hint for m in ch07.WARMUP_POLY.mistakes if m.test(smooth, ch07.warmup_poly_lr(*args), args, {}))
    assert "counts the decay from step 0" in hint


# ------------------------------------------------------------------ cheats
@pytest.mark.parametrize("check, cheat", [
    (check_trust_ratio, lambda w, u: AlwaysEqual()),
    (check_trust_ratio, lambda w, u: SneakyFloat(ratio_by_hand(w, u) + 1)),
    (check_lamb_update, lambda *args, **kwargs: (AlwaysEqual(),) * 3),
    (check_warmup_poly_lr, lambda *args, **kwargs: SneakyFloat(0.5)),
], ids=["eq-ratio", "float-subclass-ratio", "eq-lamb", "float-subclass-lr"])
def test_checks_reject_objects_that_claim_to_be_equal(check, cheat, capsys):
    fails_with(check, cheat, capsys)


def lamb_by_the_package(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    param = torch.nn.Parameter(w.clone())
    param.grad = g.clone()
    lamb = Lamb([param], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, adapt=adapt)
    lamb.state[param].update(exp_avg=m.clone(), exp_avg_sq=v.clone())
    lamb.step()
    return param.detach(), lamb.state[param]["exp_avg"], lamb.state[param]["exp_avg_sq"]


def lamb_with_the_packages_ratio(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    u = m / (v.sqrt() + eps) + weight_decay * w
    return w - lr * (optim.trust_ratio(w, u) if adapt else 1.0) * u, m, v


@pytest.mark.parametrize("check, cheat", [
    (check_trust_ratio, optim.trust_ratio),
    (check_lamb_update, lamb_by_the_package),
    (check_lamb_update, lamb_with_the_packages_ratio),
    (check_warmup_poly_lr, lambda s, p, T, W, power=1.0: WarmupPolyDecay(p, T, W, power)(s)),
], ids=["package-ratio", "package-lamb", "package-ratio-inside-lamb", "package-schedule"])
def test_the_packages_own_answer_is_switched_off(check, cheat, capsys):
    fails_with(check, cheat, capsys, "switched off while your function is checked")
    assert WarmupPolyDecay(1.0, 10, 2)(1) == 0.5 and optim.trust_ratio(torch.ones(1), torch.ones(1)) == 1.0


# ------------------------------------------------------------------ hints teach, they do not answer
KEY_EXPRESSIONS = {  # what would hand over each solution, in the forms a hint could spell it
    "trust_ratio": [".norm", "w_norm", "/ u", "||w|| / ||u||"],
    "lamb_update": ["beta1 *", "beta2 *", "sqrt(", ".sqrt", "+ eps", "weight_decay * w", "lr *", "(1 - beta"],
    "warmup_poly_lr": ["step / warmup", "* step", "min(", "** power", "1 - ", "peak_lr *"],
}


@pytest.mark.parametrize("exercise", ch07.EXERCISES, ids=lambda e: e.name)
def test_no_hint_spells_out_the_solution(exercise):
    gives_nothing_away(exercise, KEY_EXPRESSIONS[exercise.name])


def test_later_tries_get_narrower_hints_then_the_solutions_file(capsys):
    one_norm = lambda w, u: float(w.abs().sum() / u.abs().sum()) if w.any() and u.any() else 1.0  # noqa: E731
    gives_the_tiers_in_turn(check_trust_ratio, one_norm, ch07.TRUST_RATIO, capsys)
