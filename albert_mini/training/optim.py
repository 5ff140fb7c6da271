"""ALBERT's optimization recipe: LAMB (or AdamW) on two parameter groups, warmup + linear decay, global clipping.

Everything follows the reference code (`lamb_optimizer.py`, `optimization.py`): LAMB without bias correction,
a per-tensor trust ratio, LayerNorm and bias tensors excluded from both weight decay and the trust ratio,
lr = init * t / W during warmup then init * (1 - t / T)^power, and gradients clipped to global norm 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ..choices import OPTIMIZERS

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["SCHEDULES", "WarmupPolyDecay", "build_optimizer", "build_schedule", "clip_grad_global_norm",
           "param_groups"]

# Any parameter whose name contains one of these gets neither weight decay nor the trust ratio.
NO_DECAY_PATTERNS = ("LayerNorm", "layer_norm", "bias")


class Lamb(torch.optim.Optimizer):
    """LAMB (You et al. 2019) as ALBERT's reference implements it: Adam moments with no bias correction,
    decoupled weight decay inside the update, and a per-tensor trust ratio ||w|| / ||u||.

    Each param group may set `adapt=False` to skip the trust ratio (LayerNorm and bias tensors).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.01, adapt: bool = True):
        check_rate(lr)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        if not (0 < eps < math.inf and 0 <= weight_decay < math.inf):
            raise ValueError(f"eps must be > 0 and weight_decay >= 0, got eps={eps}, weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, adapt=adapt))

    @torch.no_grad()
    def step(self, closure=None):
        """One LAMB update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for w in group["params"]:
                if w.grad is None:
                    continue
                g = w.grad
                if g.is_sparse:
                    raise RuntimeError("Lamb does not support sparse gradients; use dense embeddings")
                state = self.state[w]
                if not state:
                    state["exp_avg"] = torch.zeros_like(w)
                    state["exp_avg_sq"] = torch.zeros_like(w)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # No bias correction: the reference divides the raw moments, so early steps are damped.
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(w, alpha=group["weight_decay"])
                if group["adapt"]:
                    # The ratio stays a tensor on the weights' device: reading it on the host (`.item()`, twice per
                    # tensor) would stall a GPU once per weight tensor of every step.
                    w.add_(update.mul_(trust_ratio(w, update) * -group["lr"]))
                else:
                    w.add_(update, alpha=-group["lr"])
        return loss


def trust_ratio(weight: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
    """||w|| / ||u|| for one tensor, or 1 when either norm is 0 (a fresh bias, a zero update), as a 0-d tensor."""
    w_norm, u_norm = weight.norm(), update.norm()
    return torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))


def is_excluded(name: str) -> bool:
    """True for LayerNorm and bias parameters, which skip weight decay and the trust ratio."""
    return any(pattern in name for pattern in NO_DECAY_PATTERNS)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two optimizer groups by parameter name: decayed + adapted, and LayerNorm / bias (neither).

    A tensor shared under several names (tied embeddings, shared layers) is listed once, under its first name;
    every name it has must agree on the group, otherwise the exclusion rule would be ambiguous.
    """
    names_of: dict[int, list[str]] = {}
    tensors: dict[int, nn.Parameter] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if p.requires_grad:
            names_of.setdefault(id(p), []).append(name)
            tensors[id(p)] = p
    decay, no_decay = [], []
    for key, names in names_of.items():
        verdicts = {is_excluded(n) for n in names}
        if len(verdicts) > 1:
            raise ValueError(
                f"one tensor is shared under names {names} that disagree on the LayerNorm/bias exclusion; "
                "rename the modules so every name of a shared tensor falls in the same group"
            )
        (no_decay if verdicts.pop() else decay).append((names[0], tensors[key]))
    return [
        {"params": decay, "weight_decay": weight_decay, "adapt": True},
        {"params": no_decay, "weight_decay": 0.0, "adapt": False},
    ]


def check_rate(lr, what: str = "learning rate") -> None:
    """ValueError unless `lr` is a finite number >= 0 (NaN passes every `< 0` test, and would train NaN weights)."""
    value = float(lr)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{what} must be a finite number >= 0, got {lr}")


def check_steps(value, what: str) -> None:
    """ValueError unless `value` is a whole number (an int, or a float such as 6.0): 5.5 steps cannot be run."""
    whole = isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()
    if not whole and not hasattr(value, "__index__"):
        raise ValueError(f"{what} must be a whole number, got {value!r}")


def build_optimizer(model: nn.Module, name: str = "lamb", lr: float = 1.76e-3, weight_decay: float = 0.01,
                    betas=(0.9, 0.999), eps: float = 1e-6) -> torch.optim.Optimizer:
    """LAMB (the paper's pretraining optimizer) or torch's AdamW, both on `param_groups(model, weight_decay)`."""
    check_rate(lr)
    check_rate(weight_decay, "weight_decay")
    groups = param_groups(model, weight_decay)
    if name == "lamb":
        return Lamb(groups, lr=lr, betas=betas, eps=eps)
    if name == "adamw":
        for group in groups:
            group.pop("adapt")  # AdamW has no trust ratio; its weight decay is already decoupled
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
    raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")


@dataclass(frozen=True)
class WarmupPolyDecay:
    """The reference schedule as a pure function of the step t (optimizer updates done so far, from 0).

    lr(t) = peak * t / warmup while t < warmup, else peak * (1 - min(t, total) / total) ** power.
    At t = 0 the rate is 0, as in the reference: the first update only fills LAMB's moments.
    Being a function of t alone, it needs no state of its own to resume exactly.
    """

    peak_lr: float
    total_steps: int
    warmup_steps: int = 0
    power: float = 1.0

    def __post_init__(self):
        check_steps(self.total_steps, "total_steps")
        check_steps(self.warmup_steps, "warmup_steps")
        check_rate(self.peak_lr, "peak_lr")
        if not 0 < self.power < math.inf:
            raise ValueError(f"power must be a finite number > 0, got {self.power}")
        if self.total_steps <= 0:
            raise ValueError(f"total_steps must be > 0, got {self.total_steps}")
        if not 0 <= self.warmup_steps <= self.total_steps:
            raise ValueError(
                f"warmup_steps must be in [0, total_steps={self.total_steps}], got {self.warmup_steps}"
            )
        if self.peak_lr < 0 or self.power <= 0:
            raise ValueError(f"peak_lr must be >= 0 and power > 0, got {self.peak_lr} and {self.power}")

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.peak_lr * step / self.warmup_steps
        return self.peak_lr * (1.0 - min(step, self.total_steps) / self.total_steps) ** self.power

    def apply(self, optimizer: torch.optim.Optimizer, step: int) -> float:
        """Set every group's lr for update number `step`; returns the rate."""
        lr = self(step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        return lr

    def state_dict(self) -> dict:
        return {"peak_lr": self.peak_lr, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps,
                "power": self.power}


@dataclass(frozen=True)
class WarmupDecay:
    """Linear warm-up, then peak * shape(t / total): a schedule from any decay shape of the fraction done (1 at 0).

    What a new entry of SCHEDULES builds, e.g. cosine: WarmupDecay(lr, steps, warmup, lambda f: (1 + cos(pi f)) / 2).
    """

    peak_lr: float
    total_steps: int
    warmup_steps: int
    shape: Callable[[float], float]
    name: str = "decay"  # what a checkpoint records of the shape, so a resume with another one is refused

    def __post_init__(self):
        WarmupPolyDecay(self.peak_lr, self.total_steps, self.warmup_steps)  # the same checks

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.peak_lr * step / self.warmup_steps
        return self.peak_lr * self.shape(min(step, self.total_steps) / self.total_steps)

    apply = WarmupPolyDecay.apply

    def state_dict(self) -> dict:
        return {"peak_lr": self.peak_lr, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps,
                "shape": self.name}


# The learning-rate schedules by name (PretrainingSetup.decay): (peak_lr, total_steps, warmup_steps) -> schedule,
# anything with `apply(optimizer, step) -> lr`, `state_dict()` and `warmup_steps`. A new schedule is a new entry.
SCHEDULES: dict[str, Callable[[float, int, int], object]] = {
    "linear": lambda lr, steps, warmup: WarmupPolyDecay(lr, steps, warmup, power=1.0),  # the paper's
    "constant": lambda lr, steps, warmup: WarmupPolyDecay(lr, steps, warmup, power=1e-9),  # 1 until the last step
}


def build_schedule(name: str, peak_lr: float, total_steps: int, warmup_steps: int = 0):
    """The schedule `name` of SCHEDULES."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; choose one of {', '.join(SCHEDULES)}")
    return SCHEDULES[name](peak_lr, total_steps, warmup_steps)


@torch.no_grad()
def clip_grad_global_norm(params, max_norm: float = 1.0) -> float:
    """Scale all gradients by max_norm / max(norm, max_norm), as tf.clip_by_global_norm; returns the norm.

    Unlike torch's clip_grad_norm_, no epsilon is added, so gradients under the limit are left bit-exact.
    """
    if not max_norm > 0:  # NaN or a negative limit would neither clip nor say so
        raise ValueError(f"max_norm must be > 0 (math.inf: no clipping), got {max_norm}")
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if not math.isfinite(norm):
        raise FloatingPointError(
            f"gradient norm is {norm}; the loss diverged. Lower the learning rate or lengthen the warmup"
        )
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / norm)
    return norm
