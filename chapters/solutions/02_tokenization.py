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
# # Solutions: Chapter 2: Tokenization with SentencePiece
#
# The exercises are in [`02_tokenization.py`](../02_tokenization.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
# %% [markdown]
# ## Exercise 1: write the preprocessing
# %%
import unicodedata

from albert_mini.book.exercises import (
    check_albert_preprocess,
    check_pair_layout,
    check_truncate_longest_first,
)


def albert_preprocess(text):
    """ALBERT's normalisation: quotes, NFKD, no accents, lower case, single spaces."""
    text = text.replace("``", '"').replace("''", '"')
    text = "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
    )
    return " ".join(text.lower().split())


# %%
assert check_albert_preprocess(albert_preprocess)

# %% [markdown]
# The package's version, `albert_mini.text.tokenizer.preprocess_text`, for comparison with yours:

# %%
import inspect

from albert_mini.text.tokenizer import preprocess_text

print(inspect.getsource(preprocess_text))


# %% [markdown]
# ## Exercise 2: the pair layout

# %%
from albert_mini.specials import CLS_ID, SEP_ID


def pair_layout(ids_a, ids_b=None):
    """[CLS] A [SEP] (B [SEP]) and its token types."""
    input_ids = [CLS_ID, *ids_a, SEP_ID]
    token_type_ids = [0] * len(input_ids)
    if ids_b is not None:
        input_ids += [*ids_b, SEP_ID]
        token_type_ids += [1] * (len(ids_b) + 1)
    return input_ids, token_type_ids


# %%
assert check_pair_layout(pair_layout)


# %% [markdown]
# ## Exercise 3: longest-first truncation

# %%
def truncate_longest_first(ids_a, ids_b, max_total):
    """Cut the longer segment (B on a tie) from its end until both fit in max_total."""
    a, b = list(ids_a), list(ids_b)
    while len(a) + len(b) > max_total:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    return a, b


# %%
assert check_truncate_longest_first(truncate_longest_first)
