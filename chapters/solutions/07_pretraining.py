# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (albert-mini)
#     language: python
#     name: albert-mini
# ---

# %% [markdown]
# # Solutions: Chapter 7: Pretraining ALBERT-mini
#
# The exercises are in [`07_pretraining.py`](../07_pretraining.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import (
    check_lamb_update,
    check_trust_ratio,
    check_warmup_poly_lr,
)

# %% [markdown]
# ## Exercise 1: the trust ratio

# %%
def trust_ratio(w, u):
    """||w|| / ||u|| for one tensor, or 1.0 when either norm is 0."""
    w_norm, u_norm = float(w.norm()), float(u.norm())
    if w_norm == 0 or u_norm == 0:
        return 1.0
    return w_norm / u_norm


# %%
assert check_trust_ratio(trust_ratio)


# %% [markdown]
# ## Exercise 2: one LAMB update, both groups

# %%
def lamb_update(
    w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6
):
    """(new w, new m, new v) after one LAMB step of one tensor."""
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    update = m / (v.sqrt() + eps) + weight_decay * w
    ratio = trust_ratio(w, update) if adapt else 1.0
    return w - lr * ratio * update, m, v


# %%
assert check_lamb_update(lamb_update)

# %% [markdown]
# Five LAMB steps of one tensor with these two functions, compared step by step with `albert_mini.Lamb`:

# %%
import torch

from albert_mini import Lamb

torch.manual_seed(0)
w0 = 0.02 * torch.randn(64, 32)  # a weight matrix at albert's init scale
mine, m, v = w0.clone(), torch.zeros_like(w0), torch.zeros_like(w0)
theirs = torch.nn.Parameter(w0.clone())
package_lamb = Lamb([theirs], lr=1e-3)  # one group: decay 0.01, trust ratio on
for step in range(5):
    g = torch.randn(w0.shape, generator=torch.Generator().manual_seed(step))
    mine, m, v = lamb_update(mine, g, m, v, lr=1e-3)
    theirs.grad = g.clone()
    package_lamb.step()
    torch.testing.assert_close(mine, theirs.detach(), rtol=1e-5, atol=1e-8)
print("5 steps of lamb_update agree with albert_mini.Lamb")


# %% [markdown]
# ## Exercise 3: the schedule

# %%
def warmup_poly_lr(step, peak_lr, total_steps, warmup_steps, power=1.0):
    """The learning rate of optimizer update number `step` (from 0)."""
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * (1 - min(step, total_steps) / total_steps) ** power


# %%
assert check_warmup_poly_lr(warmup_poly_lr)
