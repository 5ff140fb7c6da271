# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (albert-mini)
#     language: python
#     name: albert-mini
# ---

# %% [markdown]
# # Chapter 0: Setting up
#
# This book builds ALBERT ("A Lite BERT", Lan et al., ICLR 2020) one idea at a time. Every chapter is a notebook
# you can run top to bottom on a laptop CPU. The code you read in a chapter either *is* the implementation (we
# build it in front of you) or is imported from `albert_mini`, the small package that lives next to the chapters.
#
# From a fresh clone of the repository, one command does everything:
#
# ```sh
# make lab   # installs .venv (once), fetches the polarity sentences, opens JupyterLab
# ```
#
# JupyterLab opens on the `chapters/` folder, where each chapter is a notebook (`NN_topic.ipynb`): double-click
# one to open it. Its text and code are stored in a plain Python file beside it (`NN_topic.py`, in jupytext's
# "percent" format, left out of the file browser), and saving keeps the pair in sync. Run each chapter from top to
# bottom, starting with this one.

# %% [markdown]
# ## The versions this book was run with
#
# Results in a deep-learning book depend on library versions. This cell prints the ones you are running.

# %%
import platform

import sentencepiece
import torch

import albert_mini

print(f"Python         {platform.python_version()}")
print(f"torch          {torch.__version__} (threads: {torch.get_num_threads()})")
print(f"sentencepiece  {sentencepiece.__version__}")
try:
    import transformers

    print(f"transformers   {transformers.__version__} (used only for comparisons)")
except ImportError:
    print("transformers   not installed (optional: only the comparison cells need it)")
print(f"albert_mini    {albert_mini.__version__}")

# %% [markdown]
# ## Fast mode
#
# Some chapters train small models. Under the tests (and whenever you are in a hurry) they run in **fast mode**,
# with fewer steps and smaller data, so that every chapter finishes in seconds. Fast mode is one environment
# variable, `ALBERT_MINI_FAST=1`, read in one place: `albert_mini.settings.fast_mode()`.
#
# ```sh
# ALBERT_MINI_FAST=1 make lab     # every chapter in fast mode
# ```
#
# A chapter states both settings in one line with `pick(fast, full)`:

# %%
from albert_mini.settings import fast_mode, pick

steps = pick(fast=20, full=600)
print("fast mode:", fast_mode(), "-> training steps:", steps)

# %% [markdown]
# Results that take longer than a few minutes to produce are not recomputed in the chapters: they are loaded from
# `data/results/`, and the chapter names the command that regenerates them.
#
# ## A first model
#
# Everything in the package starts from a config. Named presets cover the paper's models and three small ones for
# CPUs (`albert-nano`, `albert-mini` and `bert-mini`); `albert-mini` is the classroom model used throughout the book.

# %% tags=["nbval-check-output"]
from albert_mini import PRESETS, AlbertConfig, count_parameters

for name in PRESETS:
    config = AlbertConfig.from_preset(name)
    print(
        f"{name:15s} L={config.num_hidden_layers:2d} H={config.hidden_size:4d} "
        f"E={config.embedding_size:4d} "
        f"sharing={config.sharing:4s} parameters={count_parameters(config):>13,}"
    )

# %% [markdown]
# ## Exercises
#
# Chapters 01-09 end their sections with exercises. Each is three cells: the task in words; a function to write,
# handed out as its signature and docstring followed by `raise NotImplementedError(...)`
# (replace that line with your code); and a check cell, `check_<name>(<name>)`. Run your cell, then the check:
#
# - before you write anything it prints "not attempted yet";
# - a wrong answer prints "Not yet." with the failing case (its input, what was expected, what you returned) and
#   a hint: the first wrong try names the idea to revisit, the next a narrower pointer, and a common mistake
#   that the check recognises gets a hint of its own; for a number, the hint says whether yours is too high or
#   too low; after the last hint it says where the worked answer is;
# - a right answer prints "Well done!".
#
# A check never stops the chapter, and no later cell uses your function, so *Run All* always reaches the end.
# While your function is checked, the package's own version of it is switched off, so that you do not call it
# by accident. The worked answers live in `chapters/solutions/`, one file per chapter, for when you choose to
# look. The check in your notebook is for learning; a teacher's marks come from `make grade`, which runs your
# notebook in a sandbox on inputs drawn when it grades.

# %% [markdown]
# The next chapter asks why anyone needed a *lite* BERT in the first place.
