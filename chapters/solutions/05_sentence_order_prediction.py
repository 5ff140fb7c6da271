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
# # Solutions: Chapter 5: Sentence-order prediction
#
# The exercises are in [`05_sentence_order_prediction.py`](../05_sentence_order_prediction.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import (
    check_nsp_label_from_sources,
    check_overlap_feature,
    check_sop_pair,
)

# %% [markdown]
# ## Exercise 1: an SOP pair

# %%
def sop_pair(segment_a, segment_b, swap):
    """(first, second, label) for two consecutive segments; label 1 = swapped."""
    if swap:
        return list(segment_b), list(segment_a), 1
    return list(segment_a), list(segment_b), 0


# %%
assert check_sop_pair(sop_pair)


# %% [markdown]
# ## Exercise 2: the NSP label from where the segments came from

# %%
def nsp_label_from_sources(source_a, source_b):
    """0 when B starts exactly where A ends in the same document, else 1."""
    same_document = source_a[0] == source_b[0]
    return 0 if same_document and source_b[1] == source_a[2] else 1


# %%
assert check_nsp_label_from_sources(nsp_label_from_sources)


# %% [markdown]
# ## Exercise 3: the overlap feature

# %%
def overlap_feature(tokens_a, tokens_b):
    """The fraction of B's distinct tokens that also occur in A."""
    types_b = set(int(t) for t in tokens_b)
    if not types_b:
        return 0.0
    return len(types_b & set(int(t) for t in tokens_a)) / len(types_b)


# %%
assert check_overlap_feature(overlap_feature)

# %% [markdown]
# The same feature with NumPy: `np.unique` gives B's word types, `np.isin` marks those found in A.

# %%
import numpy as np


def overlap_feature_numpy(tokens_a, tokens_b):
    """The fraction of B's distinct tokens that also occur in A, with NumPy."""
    types_b = np.unique(np.asarray(tokens_b))
    return float(np.isin(types_b, tokens_a).mean()) if types_b.size else 0.0


assert check_overlap_feature(overlap_feature_numpy)
