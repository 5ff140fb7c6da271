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
# # Solutions: Chapter 9: Scaling up
#
# The exercises are in [`09_scaling_up.py`](../09_scaling_up.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import (
    check_mlm_head_flops_per_token,
    check_training_memory_bytes,
)

# %% [markdown]
# ## Exercise 1: training memory for any optimizer

# %%
def training_memory_bytes(n_params: int, optimizer: str = "adamw") -> int:
    states = {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}[optimizer]
    return 4 * (2 + states) * n_params


# %%
assert check_training_memory_bytes(training_memory_bytes)


# %% [markdown]
# ## Exercise 2: the compute of the MLM head

# %%
from albert_mini import AlbertConfig


def mlm_head_flops_per_token(config: AlbertConfig) -> int:
    H, E, V = config.hidden_size, config.embedding_size, config.vocab_size
    return 2 * (H * E + E * V)


# %%
assert check_mlm_head_flops_per_token(mlm_head_flops_per_token)
