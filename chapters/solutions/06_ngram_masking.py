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
# # Solutions: Chapter 6: n-gram masking
#
# The exercises are in [`06_ngram_masking.py`](../06_ngram_masking.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
# %% [markdown]
# ## Exercise 1: the span-length law
# %%
import numpy as np

from albert_mini.book.exercises import (
    check_apply_80_10_10,
    check_ngram_probabilities,
    check_prediction_budget,
    check_sample_span_length,
)


def ngram_probabilities(max_n):
    """p(n) for n = 1..max_n, proportional to 1/n."""
    weights = 1.0 / np.arange(1, max_n + 1)
    return weights / weights.sum()


# %%
assert check_ngram_probabilities(ngram_probabilities)


# %% [markdown]
# ## Exercise 2: draw a span length

# %%
def sample_span_length(rng, max_n=3):
    """One n in 1..max_n with probability proportional to 1/n, drawn from `rng`."""
    weights = 1.0 / np.arange(1, max_n + 1)
    return int(rng.choice(max_n, p=weights / weights.sum())) + 1


# %%
assert check_sample_span_length(sample_span_length)


# %% [markdown]
# ## Exercise 3: the budget

# %%
def prediction_budget(n_tokens, max_predictions=20, masked_lm_prob=0.15):
    """How many tokens to predict in a sequence of n_tokens (specials included)."""
    return min(max_predictions, max(1, round(masked_lm_prob * n_tokens)))


# %%
assert check_prediction_budget(prediction_budget)


# %% [markdown]
# ## Exercise 4: apply the rule

# %%
def apply_80_10_10(tokens, spans, rng, mask_id, replacement_ids):
    """Each span token becomes [MASK] (80%), a random id (10%) or itself (10%)."""
    out = np.array(tokens, copy=True)
    positions = np.array(
        [i for start, end in spans for i in range(start, end)], dtype=np.int64
    )
    u = rng.random(len(positions))
    out[positions[u < 0.8]] = mask_id
    randomized = positions[(u >= 0.8) & (u < 0.9)]
    out[randomized] = rng.choice(replacement_ids, size=len(randomized))
    return out


# %%
assert check_apply_80_10_10(apply_80_10_10)

# %%
import inspect

from albert_mini.text.masking import replace_80_10_10

print(inspect.getsource(replace_80_10_10))
