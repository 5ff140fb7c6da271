"""Checks for Chapter 7 (pretraining): LAMB's trust ratio, one LAMB update, the warmup + decay schedule."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...training.optim import Lamb, WarmupPolyDecay
from ...training.optim import trust_ratio as package_trust_ratio
from .checking import Case, Exercise, Mistake, WrongForm, kind_of, number

# The package functions that answer an exercise, switched off while the learner's function is checked.
_TRUST_RATIO = "albert_mini.training.optim:trust_ratio"
_LAMB_STEP = "albert_mini.training.optim:Lamb.step"
_SCHEDULE = ("albert_mini.training.optim:WarmupPolyDecay.__call__",
             "albert_mini.training.optim:WarmupPolyDecay.__init__")


# ------------------------------------------------------------------------------------------- references
# Written here, apart from the package's optimizer and schedule (those are switched off while an answer, the
# reference included, is checked); tests/book/test_exercises_ch07.py shows that they agree with the package.
def trust_ratio(w: torch.Tensor, u: torch.Tensor) -> float:
    """||w|| / ||u||, or 1.0 when either norm is 0 (the package's optim.trust_ratio)."""
    w_norm, u_norm = w.norm().item(), u.norm().item()
    return w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0


def _lamb(w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6, *,
          bias_correction=False, decay_after_ratio=False, ratio_always=False):
    """One LAMB step, and the tempting variants the mistakes below recognise."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_used, v_used = (m / (1 - beta1), v / (1 - beta2)) if bias_correction else (m, v)
    adam = m_used / (v_used.sqrt() + eps)
    update = adam if decay_after_ratio else adam + weight_decay * w
    ratio = trust_ratio(w, update) if adapt or ratio_always else 1.0
    step = ratio * update + (weight_decay * w if decay_after_ratio else 0.0)
    return w - lr * step, m, v


def lamb_update(w: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr: float,
                weight_decay: float = 0.01, adapt: bool = True, beta1: float = 0.9, beta2: float = 0.999,
                eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new w, new m, new v) after one step of the package's Lamb, its inputs left as they were."""
    return _lamb(w, g, m, v, lr, weight_decay, adapt, beta1, beta2, eps)


def warmup_poly_lr(step: int, peak_lr: float, total_steps: int, warmup_steps: int, power: float = 1.0) -> float:
    """The learning rate of update `step` under the package's WarmupPolyDecay."""
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * (1.0 - min(step, total_steps) / total_steps) ** power


# ------------------------------------------------------------------------------------------- inputs
def _random(shape, seed: int, scale: float = 1.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return scale * torch.randn(shape, generator=generator)


def _moment_case(shape, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A weight, a gradient, and moments as they look after some steps (v >= 0)."""
    w = _random(shape, seed, 0.05)
    g = _random(shape, seed + 1, 0.01)
    m = _random(shape, seed + 2, 0.003)
    v = _random(shape, seed + 3, 1e-3) ** 2
    return w, g, m, v


def _drawn_shape(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 12, size=int(rng.integers(1, 3))))


# ------------------------------------------------------------------------------------------- Exercise 1
def _ratio_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(4):
        shape, seed = _drawn_shape(rng), int(rng.integers(2**31))
        cases.append(Case((_random(shape, seed), _random(shape, seed + 1, float(rng.choice([1e-3, 0.1, 10]))))))
    return cases


def _zero(tensor) -> bool:
    return not bool(tensor.any())


TRUST_RATIO = Exercise(
    "trust_ratio", "07", trust_ratio,
    [Case((torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.5])), note="5 / 0.5"),
     Case((torch.zeros(4), _random((4,), 1)), note="a fresh bias: ||w|| = 0"),
     Case((_random((3, 5), 2), torch.zeros(3, 5)), note="a zero update"),
     Case((torch.zeros(2, 2), torch.zeros(2, 2)), note="both zero"),
     *[Case((_random((16, 8), seed), _random((16, 8), seed + 100, 0.1))) for seed in (3, 4, 5)]],
    drawn=_ratio_cases, normalize=number, rtol=1e-5, atol=1e-9, unavailable=(_TRUST_RATIO,),
    hints=("revisit what LAMB compares: the size of the whole weight tensor against the size of the whole "
           "update.",
           "look at the cases where a tensor is all zeros: the ratio must still be a finite number."),
    mistakes=(
        Mistake(lambda got, want, args, kw: (_zero(args[0]) or _zero(args[1])) and got != 1.0,
                "when either norm is 0 the ratio is 1.0 (a fresh bias, a zero update): no division then."),
        Mistake(lambda got, want, args, kw: got != 0 and math.isclose(1 / got, want, rel_tol=1e-5),
                "upside down: the weight's norm goes on top, so that a large weight takes a large step."),
        Mistake(lambda got, want, args, kw: math.isclose(got, want ** 2, rel_tol=1e-5),
                "those are squared norms: take the 2-norm itself (the square root of the sum of squares)."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 2
def three_tensors(value) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new w, new m, new v): three tensors (numpy arrays are accepted), as a tuple of float tensors."""
    if type(value) not in (tuple, list) or len(value) != 3:
        raise WrongForm(f"returned {kind_of(value)}; return the three tensors (new w, new m, new v)")
    parts = []
    for name, part in zip(("new w", "new m", "new v"), value):
        if isinstance(part, np.ndarray) and part.dtype.kind in "iuf":
            part = torch.from_numpy(part)
        if not isinstance(part, torch.Tensor):
            raise WrongForm(f"{name} is {kind_of(part)}; return a tensor of the weight's shape")
        parts.append(part.double())
    return tuple(parts)


def _lamb_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(3):
        w, g, m, v = _moment_case(_drawn_shape(rng), int(rng.integers(2**31)))
        cases.append(Case((w, g, m, v, float(rng.choice([1e-3, 5e-3, 1e-2]))),
                          {"weight_decay": float(rng.choice([0.0, 0.01, 0.1])), "adapt": bool(rng.integers(2))}))
    return cases


def _lamb_fixed() -> list[Case]:
    cases = []
    for seed, shape, lr, decay, adapt in [(0, (8, 4), 1e-3, 0.01, True), (10, (32,), 5e-3, 0.0, False),
                                          (20, (6, 6), 2e-3, 0.1, True), (30, (5,), 1e-2, 0.0, True)]:
        w, g, m, v = _moment_case(shape, seed)
        cases.append(Case((w, g, m, v, lr), {"weight_decay": decay, "adapt": adapt}))
    w, g, _, _ = _moment_case((4, 3), 40)
    cases.append(Case((w, g, torch.zeros(4, 3), torch.zeros(4, 3), 1e-3), {"weight_decay": 0.01, "adapt": True},
                      note="the first step: both moments still zero"))
    cases.append(Case((torch.zeros(7), _random((7,), 50, 0.01), torch.zeros(7), torch.zeros(7), 1e-3),
                      {"weight_decay": 0.0, "adapt": False}, note="a fresh bias"))
    return cases


def _step_is(**variant):
    """A mistake test on the new weight: it matches one LAMB step computed with `variant`."""
    def test(got, expected, args, kwargs):
        other = _lamb(*args, **kwargs, **variant)[0].double()
        return not torch.allclose(got[0], expected[0]) and torch.allclose(got[0], other, rtol=1e-5, atol=1e-8)
    return test


LAMB_UPDATE = Exercise(
    "lamb_update", "07", lamb_update, _lamb_fixed(), drawn=_lamb_cases, normalize=three_tensors,
    rtol=1e-5, atol=1e-8, parts=("new w", "new m", "new v"), keep_inputs=True,
    unavailable=(_LAMB_STEP, _TRUST_RATIO), title="lamb_update (new w, new m, new v)",
    hints=("revisit the three details the chapter lists after LAMB's update: what Adam does that LAMB does not, "
           "where the weight decay goes, and what the norms are taken over.",
           "work on one part at a time: the check names which of new w, new m and new v differs, and the two "
           "moments do not depend on the trust ratio."),
    mistakes=(
        Mistake(lambda got, want, args, kw: torch.allclose(got[1], args[2].double()) and not torch.allclose(
                    want[1], args[2].double()),
                "new m is the m you were given: return the updated moments, not the old ones."),
        Mistake(_step_is(bias_correction=True),
                "that is Adam's bias correction: LAMB as the reference writes it divides the raw moments."),
        Mistake(_step_is(decay_after_ratio=True),
                "the weight decay goes inside the update, before the trust ratio, so the ratio scales it too."),
        Mistake(_step_is(ratio_always=True),
                "with adapt=False (a LayerNorm or a bias) the ratio is 1: no trust ratio for that tensor."),
        Mistake(lambda got, want, args, kw: torch.allclose(got[0], 2 * args[0].double() - want[0]),
                "the step goes the wrong way: subtract the scaled update from w."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 3
def _schedule_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(3):
        total = int(rng.integers(10, 5000))
        warmup = int(rng.integers(0, total // 2 + 1))
        peak, power = float(rng.choice([1e-4, 1e-3, 5e-3])), float(rng.choice([0.5, 1.0, 2.0]))
        steps = {0, max(warmup - 1, 0), warmup, total, total + int(rng.integers(1, 50)),
                 int(rng.integers(0, total + 1))}
        cases += [Case((step, peak, total, warmup), {"power": power}) for step in sorted(steps)]
    return cases


def _lr(rule):
    """A schedule whose phases come from `rule(step, peak, total, warmup, power)`, for the mistakes."""
    return lambda step, peak, total, warmup, power=1.0: rule(step, peak, total, warmup, power)


def _close(a, b) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


WARMUP_POLY = Exercise(
    "warmup_poly_lr", "07", warmup_poly_lr,
    [*[Case((step, 0.00176, 125_000, 3125), note=note) for step, note in [
        (0, "the very first update"), (1, ""), (1000, ""), (3124, "the last warmup step"),
        (3125, "the first step after the warmup"), (3126, ""), (60_000, ""), (124_999, ""),
        (125_000, "the last step")]],
     *[Case((step, 5e-3, 1200, 50)) for step in (0, 25, 49, 50, 600, 1199, 1200)],
     *[Case((step, 1e-3, 100, 0), note="no warmup at all" if step == 0 else "") for step in (0, 50, 100)],
     *[Case((step, 1e-3, 100, 10), {"power": 2.0}, note="beyond total_steps" if step > 100 else "")
       for step in (5, 10, 55, 150)]],
    drawn=_schedule_cases, normalize=number, rtol=1e-9, atol=1e-15, unavailable=_SCHEDULE,
    hints=("revisit the two phases of the schedule: how the rate rises at the start and how it falls to 0 at the "
           "end, and from which step each phase is counted.",
           "evaluate your function by hand at step 0, at warmup_steps - 1, at warmup_steps and at total_steps, "
           "and compare with the expected values."),
    mistakes=(
        Mistake(lambda got, want, args, kw: args[0] < args[3] and _close(
                    got, _lr(lambda t, p, T, W, k: p * (1 - min(t, T) / T) ** k)(*args, **kw)),
                "no warmup: during the first warmup_steps updates the rate climbs from 0 to the peak."),
        Mistake(lambda got, want, args, kw: args[0] < args[3] and _close(got, args[1] * (args[0] + 1) / args[3]),
                "off by one in the warmup: at step 0 the rate is 0, so the first update only fills LAMB's "
                "moments."),
        Mistake(lambda got, want, args, kw: args[0] == args[3] > 0 and _close(got, args[1]),
                "at step == warmup_steps the rate is already decaying, and the decay is counted from step 0, not "
                "from the end of the warmup: hence a small drop there."),
        Mistake(lambda got, want, args, kw: args[3] <= args[0] <= args[2] and _close(
                    got, _lr(lambda t, p, T, W, k: p * (1 - (t - W) / (T - W)) ** k)(*args, **kw)),
                "you decay over the steps after the warmup; the reference counts the decay from step 0 (hence "
                "the small drop at the end of the warmup)."),
        Mistake(lambda got, want, args, kw: args[0] > args[2] and got != 0,
                "past total_steps the rate stays at 0."),
        Mistake(lambda got, want, args, kw: kw.get("power", 1.0) != 1.0 and _close(
                    got, warmup_poly_lr(*args)),
                "the decay is raised to `power`: with power 2 it falls faster at the start."),
    ),
)
EXERCISES = [TRUST_RATIO, LAMB_UPDATE, WARMUP_POLY]


def check_trust_ratio(fn) -> bool:
    """Check `fn(w, u)` returns ||w|| / ||u|| per tensor, and 1.0 when either norm is 0."""
    return TRUST_RATIO.check(fn)


def check_lamb_update(fn) -> bool:
    """Check `fn(w, g, m, v, lr, weight_decay, adapt)` returns LAMB's (new w, new m, new v) for one tensor."""
    return LAMB_UPDATE.check(fn)


def check_warmup_poly_lr(fn) -> bool:
    """Check `fn(step, peak_lr, total_steps, warmup_steps, power)` against the reference schedule."""
    return WARMUP_POLY.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "trust_ratio": [package_trust_ratio, trust_ratio],
    "lamb_update": [Lamb.step, _lamb],
    "warmup_poly_lr": [WarmupPolyDecay.__call__, warmup_poly_lr],
}
KEY_NUMBERS: dict[str, list] = {}
