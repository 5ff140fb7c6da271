"""Checks for Chapter 7 (pretraining): LAMB's trust ratio, one LAMB update, the warmup + decay schedule."""

from __future__ import annotations

import torch

from ...training.optim import Lamb, WarmupPolyDecay
from ...training.optim import trust_ratio as package_trust_ratio
from .checking import check_against_reference


# ------------------------------------------------------------------------------------------- references
def trust_ratio(w: torch.Tensor, u: torch.Tensor) -> float:
    """||w|| / ||u||, or 1.0 when either norm is 0 (the package's optim.trust_ratio)."""
    return package_trust_ratio(w, u)


def lamb_update(w: torch.Tensor, g: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr: float,
                weight_decay: float = 0.01, adapt: bool = True, beta1: float = 0.9, beta2: float = 0.999,
                eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new w, new m, new v) after one step of the package's Lamb on copies of the inputs."""
    param = torch.nn.Parameter(w.detach().clone())
    param.grad = g.detach().clone()
    opt = Lamb([param], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, adapt=adapt)
    opt.state[param]["exp_avg"] = m.detach().clone()
    opt.state[param]["exp_avg_sq"] = v.detach().clone()
    opt.step()
    state = opt.state[param]
    return param.detach().clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()


def warmup_poly_lr(step: int, peak_lr: float, total_steps: int, warmup_steps: int, power: float = 1.0) -> float:
    """The learning rate of update `step` under the package's WarmupPolyDecay."""
    return WarmupPolyDecay(peak_lr, total_steps, warmup_steps, power)(step)


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


def _compare_as_floats(got, expected) -> bool:
    """The learner's trust ratio may be a float or a 0-d tensor; compare as floats."""
    try:
        value = float(got)
    except (TypeError, ValueError, RuntimeError):
        return False
    return abs(value - expected) <= 1e-5 * abs(expected) + 1e-9


# ------------------------------------------------------------------------------------------- checks
def check_trust_ratio(fn) -> bool:
    """Check `fn(w, u)` returns ||w|| / ||u|| per tensor, and 1.0 when either norm is 0."""
    cases = [
        ((torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.5])), {}),  # 5 / 0.5 = 10
        ((torch.zeros(4), _random((4,), 1)), {}),  # a fresh bias: ||w|| = 0
        ((_random((3, 5), 2), torch.zeros(3, 5)), {}),  # a zero update
        ((torch.zeros(2, 2), torch.zeros(2, 2)), {}),
    ]
    cases += [((_random((16, 8), seed), _random((16, 8), seed + 100, 0.1)), {}) for seed in (3, 4, 5)]
    return check_against_reference(
        "trust_ratio", fn, trust_ratio, cases, compare=_compare_as_floats,
        hint="the ratio is the weight's norm over the update's norm (whole tensors, 2-norm), so a big weight "
             "takes a big step; when either norm is 0 return 1.0 instead of dividing.",
    )


def check_lamb_update(fn) -> bool:
    """Check `fn(w, g, m, v, lr, weight_decay, adapt)` returns LAMB's (new w, new m, new v) for one tensor."""
    cases = []
    for seed, shape, lr, decay, adapt in [(0, (8, 4), 1e-3, 0.01, True), (10, (32,), 5e-3, 0.0, False),
                                          (20, (6, 6), 2e-3, 0.1, True), (30, (5,), 1e-2, 0.0, True)]:
        w, g, m, v = _moment_case(shape, seed)
        cases.append(((w, g, m, v, lr), dict(weight_decay=decay, adapt=adapt)))
    w, g, _, _ = _moment_case((4, 3), 40)
    cases.append(((w, g, torch.zeros(4, 3), torch.zeros(4, 3), 1e-3), dict(weight_decay=0.01, adapt=True)))  # step 1
    cases.append(((torch.zeros(7), _random((7,), 50, 0.01), torch.zeros(7), torch.zeros(7), 1e-3),
                  dict(weight_decay=0.0, adapt=False)))  # a fresh bias
    return check_against_reference(
        "lamb_update (new w, new m, new v)", fn, lamb_update, cases, rtol=1e-5, atol=1e-8,
        parts=("new w", "new m", "new v"), keep_inputs=True,
        hint="update m and v as Adam does but with no bias correction; u = m / (sqrt(v) + eps) + weight_decay * w; "
             "the trust ratio ||w|| / ||u|| (1 if a norm is 0, or if adapt is False) scales the whole of u, decay "
             "included; then w - lr * ratio * u. Do not change the tensors you are given.",
    )


def check_warmup_poly_lr(fn) -> bool:
    """Check `fn(step, peak_lr, total_steps, warmup_steps, power)` against the reference schedule."""
    cases = [((step, 0.00176, 125_000, 3125), {}) for step in (0, 1, 1000, 3124, 3125, 3126, 60_000, 124_999, 125_000)]
    cases += [((step, 5e-3, 1200, 50), {}) for step in (0, 25, 49, 50, 600, 1199, 1200)]
    cases += [((step, 1e-3, 100, 0), {}) for step in (0, 50, 100)]
    cases += [((step, 1e-3, 100, 10), dict(power=2.0)) for step in (5, 10, 55, 150)]
    return check_against_reference(
        "warmup_poly_lr", fn, warmup_poly_lr, cases, rtol=1e-9, atol=1e-15,
        hint="while step < warmup_steps the rate is peak_lr * step / warmup_steps (0 at step 0); from then on it is "
             "peak_lr * (1 - min(step, total_steps) / total_steps) ** power, which reaches 0 at total_steps.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "trust_ratio": [package_trust_ratio],
    "lamb_update": [Lamb.step],
    "warmup_poly_lr": [WarmupPolyDecay.__call__],
}
KEY_NUMBERS: dict[str, list] = {}
