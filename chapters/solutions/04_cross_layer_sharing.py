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
# # Solutions: Chapter 4: Cross-layer parameter sharing
#
# The exercises are in [`04_cross_layer_sharing.py`](../04_cross_layer_sharing.py); try each one there first. Every
# solution below is followed by the chapter's own check, so running this notebook from top to bottom
# shows each one passing (the book's tests run it the same way).

# %%
# ruff: noqa: E402 (as in a chapter, a cell imports what it uses)
from albert_mini.book.exercises import check_layer_schedule, check_sharing_plan

# %% [markdown]
# ## Exercise 1: the layer schedule of a grouped model

# %%
def layer_schedule(L: int, G: int, K: int) -> list[int]:
    return [(i * G // L) * K + k for i in range(L) for k in range(K)]


# %%
assert check_layer_schedule(layer_schedule)

# %%
import inspect

from albert_mini import AlbertConfig
from albert_mini.model.albert import AlbertTransformer

print(inspect.getsource(AlbertConfig.layer_to_group))
print(inspect.getsource(AlbertTransformer.forward))


# %% [markdown]
# ## Exercise 2: the sharing plan

# %%
def sharing_plan(strategy: str, L: int) -> list[tuple[int, int]]:
    attention_shared = strategy in ("all", "attention")
    ffn_shared = strategy in ("all", "ffn")
    return [(0 if attention_shared else i, 0 if ffn_shared else i) for i in range(L)]


# %%
assert check_sharing_plan(sharing_plan)
