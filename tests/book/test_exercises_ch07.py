"""Chapter 7's exercise checks: they pass the references and learner-style answers, and reject wrong ones."""

import math
import re

import pytest
import torch

from albert_mini.book.exercises import ExerciseFailed, ch07, check_lamb_update, check_trust_ratio, check_warmup_poly_lr


def not_written(*args, **kwargs):
    raise NotImplementedError("write your solution here")


# ------------------------------------------------------------------ learner-style answers written independently
def ratio_by_hand(w, u):
    w_norm, u_norm = float(torch.sqrt((w * w).sum())), float(torch.sqrt((u * u).sum()))
    return w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0


def inverted_ratio(w, u):
    w_norm, u_norm = float(w.norm()), float(u.norm())
    return u_norm / w_norm if w_norm > 0 and u_norm > 0 else 1.0


def ratio_without_zero_guard(w, u):
    return float(w.norm() / u.norm())


def lamb_by_hand(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    u = m / (v.sqrt() + eps) + weight_decay * w
    r = ratio_by_hand(w, u) if adapt else 1.0
    return w - lr * r * u, m, v


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


def lamb_in_place(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    """The right numbers, but m and v are updated in the caller's tensors, which the exercise forbids."""
    m.mul_(beta1).add_((1 - beta1) * g)
    v.mul_(beta2).add_((1 - beta2) * g * g)
    u = m / (v.sqrt() + eps) + weight_decay * w
    r = ratio_by_hand(w, u) if adapt else 1.0
    return w - lr * r * u, m, v


def lamb_ignoring_adapt(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6):
    return lamb_by_hand(w, g, m, v, lr, weight_decay, True, beta1, beta2, eps)


def lr_by_hand(step, peak_lr, total_steps, warmup_steps, power=1.0):
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * (1 - min(step, total_steps) / total_steps) ** power


def lr_without_warmup(step, peak_lr, total_steps, warmup_steps, power=1.0):
    return peak_lr * (1 - min(step, total_steps) / total_steps) ** power


def lr_warmup_to_peak_then_decay_from_warmup(step, peak_lr, total_steps, warmup_steps, power=1.0):
    """A smooth schedule: decays over the steps after warmup (no jump), unlike the reference."""
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * (1 - (min(step, total_steps) - warmup_steps) / (total_steps - warmup_steps)) ** power


# ------------------------------------------------------------------ the references agree with closed forms
def test_trust_ratio_reference_closed_form():
    assert ch07.trust_ratio(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.5])) == pytest.approx(10.0)
    assert ch07.trust_ratio(torch.zeros(3), torch.ones(3)) == 1.0


def test_lamb_reference_matches_hand_formula_and_leaves_inputs():
    w, g, m, v = ch07._moment_case((5, 3), 7)
    copies = [t.clone() for t in (w, g, m, v)]
    got = ch07.lamb_update(w, g, m, v, 3e-3, weight_decay=0.05)
    for a, b in zip(got, lamb_by_hand(w, g, m, v, 3e-3, weight_decay=0.05)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-8)
    for before, after in zip(copies, (w, g, m, v)):
        assert torch.equal(before, after)


def test_schedule_reference_has_the_reference_jump():
    before, at = ch07.warmup_poly_lr(3124, 0.00176, 125_000, 3125), ch07.warmup_poly_lr(3125, 0.00176, 125_000, 3125)
    assert math.isclose(before, 0.00176 * 3124 / 3125) and math.isclose(at, 0.00176 * 0.975)


# ------------------------------------------------------------------ checks pass right answers
@pytest.mark.parametrize("check, answer", [
    (check_trust_ratio, ch07.trust_ratio), (check_trust_ratio, ratio_by_hand),
    (check_lamb_update, ch07.lamb_update), (check_lamb_update, lamb_by_hand),
    (check_warmup_poly_lr, ch07.warmup_poly_lr), (check_warmup_poly_lr, lr_by_hand),
])
def test_check_passes_right_answers(check, answer):
    assert check(answer) is True


# ------------------------------------------------------------------ and reject stubs and plausible mistakes
@pytest.mark.parametrize("check, answer", [
    (check_trust_ratio, inverted_ratio),
    (check_trust_ratio, ratio_without_zero_guard),
    (check_lamb_update, lamb_with_bias_correction),
    (check_lamb_update, lamb_decay_outside_ratio), (check_lamb_update, lamb_ignoring_adapt),
    (check_lamb_update, lamb_in_place),
    (check_warmup_poly_lr, lr_without_warmup),
    (check_warmup_poly_lr, lr_warmup_to_peak_then_decay_from_warmup),
])
def test_check_rejects_wrong_answers(check, answer):
    with pytest.raises(ExerciseFailed):
        check(answer)


@pytest.mark.parametrize("check", [check_trust_ratio, check_lamb_update, check_warmup_poly_lr])
def test_a_stub_is_not_attempted_yet(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    assert ": not attempted yet;" in capsys.readouterr().out


def test_lamb_names_an_answer_that_changes_its_inputs():
    with pytest.raises(ExerciseFailed, match=r"changed its input `m`, `v` in place"):
        check_lamb_update(lamb_in_place)


def test_lamb_shows_the_part_that_differs_and_its_largest_difference():
    """Not two tuples of tensors printed alike: the part that differs, both values in full, and the largest gap."""
    with pytest.raises(ExerciseFailed) as failure:
        check_lamb_update(lamb_with_bias_correction)
    message = str(failure.value)
    assert "new w (item 0 of the tuple) differs" in message
    assert "new m (item" not in message and "new v (item" not in message  # the moments are right: not shown
    assert re.search(r"largest difference [0-9.e-]+ at index \(\d+, \d+\): expected -?[0-9.]+, got -?[0-9.]+", message)
    assert "tensor(" not in message
