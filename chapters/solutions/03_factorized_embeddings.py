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
# # Solutions: Chapter 3: Factorized embedding parameterization
#
# The exercises are in [`03_factorized_embeddings.py`](../03_factorized_embeddings.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import (
    check_break_even_embedding_size,
    check_factorized_embedding_params,
    check_mlm_head_params,
)

# %% [markdown]
# ## Exercise 1: count the factorized word table

# %%
def factorized_embedding_params(V, E, H):
    """Parameters of a V x E word table followed by an E -> H projection with bias."""
    return V * E + E * H + H


# %%
assert check_factorized_embedding_params(factorized_embedding_params)


# %% [markdown]
# ## Exercise 2: where factorizing stops saving

# %%
def break_even_embedding_size(V, H):
    """Smallest E at which V*E + E*H + H >= V*H."""
    # E * (V + H) >= H * (V - 1); the ceiling of the ratio, in integers
    return -(-(H * (V - 1)) // (V + H))


# %%
assert check_break_even_embedding_size(break_even_embedding_size)


# %% [markdown]
# ## Exercise 3: count the MLM head

# %%
def mlm_head_params(V, E, H):
    """Parameters of ALBERT's MLM head, its decoder tied to the word embeddings."""
    dense = H * E + E
    layer_norm = 2 * E
    output_bias = V
    return dense + layer_norm + output_bias


# %%
assert check_mlm_head_params(mlm_head_params)
