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
# # Solutions: Chapter 1: Why ALBERT
#
# The exercises are in [`01_why_albert.py`](../01_why_albert.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import check_post_ln_block

# %% [markdown]
# ## Exercise (optional): the order of operations

# %%
def post_ln_block(h, attention, ffn, norm_1, norm_2):
    """One post-LN layer built from its parts."""
    a = norm_1(h + attention(h))
    return norm_2(a + ffn(a))


# %%
assert check_post_ln_block(post_ln_block)


# %% [markdown] after="Try the three questions before reading on"
# ## The RACE questions
#
# The answers to the three questions: **1 B, 2 C, 3 D**. Each needs a different skill: question 1 asks for a
# cause that the passage gives in a "because" clause but in other words (the distractors mention things that
# *are* in the passage: the teacher, the council); question 2 needs "doubled" matched to "twice as many" while
# rejecting two options that the passage contradicts; question 3 asks for the gist of a quotation that never
# uses the words of the right option.
