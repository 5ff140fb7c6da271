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
# # Solutions: Chapter 8: Fine-tuning
#
# The exercises are in [`08_fine_tuning.py`](../08_fine_tuning.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import (
    check_answer_token_span,
    check_race_pack,
    check_squad_f1,
)

# %% [markdown]
# ## Exercise A: pack one option
# %%
from albert_mini.specials import CLS_ID, SEP_ID


def race_pack(passage_ids, qa_ids, max_length=512, max_qa_length=128):
    """`[CLS] passage [SEP] qa [SEP]`: qa keeps its end, the passage its start."""
    qa = list(qa_ids)[-max_qa_length:]
    passage = list(passage_ids)[: max_length - 3 - len(qa)]
    input_ids = [CLS_ID, *passage, SEP_ID, *qa, SEP_ID]
    token_type_ids = [0] * (len(passage) + 2) + [1] * (len(qa) + 1)
    return input_ids, token_type_ids


# %%
assert check_race_pack(race_pack)


# %% [markdown]
# ## Exercise B: characters to tokens

# %%
def answer_token_span(offsets, char_start, char_end):
    """(first, last) token covering characters [char_start, char_end), or None."""
    covering = [
        i
        for i, (start, end) in enumerate(offsets)
        if start < end and end > char_start and start < char_end
    ]
    if not covering:
        return None
    return covering[0], covering[-1]


# %%
assert check_answer_token_span(answer_token_span)


# %% [markdown]
# ## Exercise C: SQuAD's F1

# %%
import re
import string
from collections import Counter


def squad_f1(prediction, golds):
    """SQuAD v1.1 token F1 of a prediction against the best gold answer, in [0, 1]."""
    def words(text):
        text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    best = 0.0
    for gold in golds:
        predicted, wanted = words(prediction), words(gold)
        shared = sum((Counter(predicted) & Counter(wanted)).values())
        if shared:
            precision, recall = shared / len(predicted), shared / len(wanted)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


# %%
assert check_squad_f1(squad_f1)
