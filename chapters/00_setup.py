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
# JupyterLab opens on the `chapters/` folder. The chapters are stored as plain Python files (`NN_topic.py`, in
# jupytext's "percent" format) paired with notebooks (`NN_topic.ipynb`): double-click a `.py` file and it opens as
# a notebook; saving keeps the pair in sync. Run each chapter from top to bottom, starting with this one.

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
# The next chapter asks why anyone needed a *lite* BERT in the first place.
