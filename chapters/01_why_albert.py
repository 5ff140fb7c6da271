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
# # Chapter 1: Why ALBERT
#
# BERT showed that a transformer pretrained on plain text, then fine-tuned, beats task-specific models on most
# language-understanding benchmarks, and that bigger BERTs do better. ALBERT ("A Lite BERT", Lan et al., ICLR 2020)
# starts from the point where making BERT bigger stopped working, and asks how many of BERT's parameters are
# really needed. This chapter sets the scene: the kind of task the paper measures, what BERT's size costs, the
# three changes ALBERT makes, and the transformer layer that both models share.
#
# ## Learning goals
#
# - Know what a RACE reading-comprehension item looks like and how a BERT-style model answers one.
# - Count the parameters of BERT base, large and xlarge, and the memory their weights take.
# - Name ALBERT's three ideas (factorized embeddings, cross-layer sharing, sentence-order prediction) and n-gram
#   masking, and read the paper's Table 1 against exact counts.
# - Write a post-LN transformer layer from scratch and check it against `albert_mini.model.albert.AlbertLayer`.

# %% [markdown]
# ## A test for reading machines
#
# One of the benchmarks in the paper is **RACE**: English reading-comprehension exams written for middle- and
# high-school students in China. Each item is a passage, a question and four options; the model must pick one.
# Guessing scores 25%, people score about 95%. Many questions cannot be answered by finding a matching phrase:
# they ask why, ask for the main idea, or need two sentences put together. That made RACE the benchmark on which
# the models in the paper differ most. Here is an item written in the same style for this book (not taken from
# RACE):

# %%
passage = (
    "When the library in Millbrook lost half of its funding, the head librarian, Ruth"
    " Okafor, did not cut the opening hours. Instead she asked the town what else a "
    "library could lend. The answers surprised her. People wanted to borrow tools "
    "they needed once a year: ladders, sewing machines, a pressure washer. Parents "
    "asked for board games that were too expensive to buy for a single birthday "
    "party. A retired teacher offered to look after a shelf of vegetable seeds, on "
    "one condition: anyone who took seeds in spring had to bring back seeds from "
    "their own harvest in autumn.\n"
    "The first year was messy. Two drills never came back, and the seed shelf held "
    "more beans than anything else, because beans are the easiest seeds to save. But "
    "the number of visitors doubled, and many of the newcomers had not used a library"
    " card in years. In the second year the council gave back part of the money. "
    'Okafor says the lesson was never about funding. "A library is a promise that '
    'sharing works," she said. "We only had to widen what we share."'
)
questions = [
    {
        "question": "Why did the seed shelf hold more beans than other seeds?",
        "options": [
            "The retired teacher grew only beans.",
            "Bean seeds are easy to collect from a harvest.",
            "The council paid for the bean seeds.",
            "Beans were the cheapest seeds in the shop.",
        ],
    },
    {
        "question": "What happened during the first year of the new lending?",
        "options": [
            "The council restored all of the funding.",
            "Every borrowed tool was returned.",
            "The library had twice as many visitors.",
            "The library opened for fewer hours.",
        ],
    },
    {
        "question": (
            "According to Okafor, the main lesson of the experiment was that _."
        ),
        "options": [
            "money is what keeps a library open",
            "seeds are more popular than books",
            "tools should be lent only to members",
            "sharing can work for more than books",
        ],
    },
]

import textwrap

for paragraph in passage.split("\n"):
    print(textwrap.fill(paragraph, 88))
print(f"\n({len(passage.split())} words)\n")
for number, item in enumerate(questions, start=1):
    print(f"{number}. {item['question']}")
    for letter, option in zip("ABCD", item["options"]):
        print(f"   {letter}. {option}")

# %% [markdown]
# Try the three questions before reading on; the answers, and the skill each one tests, are in the
# chapter's solutions (`chapters/solutions/01_why_albert.py`).
#
# ### How a BERT-style model answers
#
# The model does not generate an answer. It reads the passage together with each option in turn, as a sentence
# pair `[CLS] passage [SEP] question+option [SEP]`, and a small head turns the `[CLS]` representation into one
# score per option; a softmax over the four scores gives the choice. In the official ALBERT code, a question
# with a blank `_` gets the option written into the blank, and any other question gets the option appended. With
# the book's tokenizer (trained on Jane Austen, so some modern words split into several pieces) the four inputs
# for question 3 form one batch of four rows:

# %% tags=["nbval-check-output"]
from albert_mini import Tokenizer


def question_with_option(question: str, option: str) -> str:
    """RACE's second segment: the option fills the blank, or follows the question."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


tokenizer = Tokenizer.default()
item = questions[2]
second_segments = [
    question_with_option(item["question"], option) for option in item["options"]
]
batch = tokenizer([passage] * 4, second_segments)  # one row per option
print("input_ids", tuple(batch["input_ids"].shape), "(options, tokens)")
print(textwrap.fill(f"second segment of option A: {second_segments[0]}", 88))
option_pieces = " ".join(tokenizer.tokenize(second_segments[0]))
print(textwrap.fill(f"its pieces: {option_pieces}", 88))

# %% [markdown]
# A multiple-choice head is one `Linear(H, 1)` on the pooled `[CLS]` vector. On an untrained model the four
# scores are nearly equal, so the model starts exactly at RACE's chance level of 25%. Pretraining is what moves
# it: in the paper's Table 2 (125k pretraining steps, then fine-tuning), RACE accuracy is 68.2 for BERT-base,
# 73.9 for BERT-large and 82.3 for ALBERT-xxlarge; with more data and an ensemble, ALBERT reached 89.4.


# %%
import torch
from torch import nn

from albert_mini import AlbertConfig, AlbertModel

torch.manual_seed(0)
config = AlbertConfig.from_preset("albert-mini")
encoder = AlbertModel(config).eval()
score_option = nn.Linear(config.hidden_size, 1)  # one number per (passage, option) pair
with torch.no_grad():
    pooled = encoder(**batch).pooler_output  # (4, H)
    # (1 question, 4 options)
    probabilities = score_option(pooled).view(1, 4).softmax(dim=-1)
print(
    "untrained choice probabilities:", [round(p, 3) for p in probabilities[0].tolist()]
)

# %% [markdown]
# ## What BERT costs
#
# BERT's recipe for better scores was to grow the model. The paper's Table 1 lists three BERT sizes. Their
# parameter counts follow from the config alone (`count_parameters` evaluates a closed form; nothing is
# allocated). The weights alone take 4 bytes each in fp32; training with Adam also keeps a gradient and two moment
# estimates per weight, so at least 16 bytes per parameter before a single activation is stored.

# %% tags=["nbval-check-output"]
from albert_mini import count_parameters

print(
    f"{'model':12s} {'L':>3s} {'H':>5s} {'parameters':>15s} {'fp32 weights':>13s} "
    f"{'+ Adam state':>13s}"
)
for name in ("bert-base", "bert-large", "bert-xlarge"):
    c = AlbertConfig.from_preset(name)
    n = count_parameters(c)  # encoder and pooler, no pretraining heads
    print(
        f"{name:12s} {c.num_hidden_layers:3d} {c.hidden_size:5d} {n:>15,} "
        f"{4 * n / 1e9:10.2f} GB "
        f"{16 * n / 1e9:10.1f} GB"
    )

# %% [markdown]
# Memory is not the only cost. Each step of data-parallel training exchanges a gradient as large as the model,
# so communication grows with the parameter count too. And bigger stopped meaning better: the paper trained
# **BERT-xlarge** (1270M parameters, H = 2048) in the same setting, and it scored far below BERT-large. The
# final version of the paper (ICLR 2020) keeps BERT-xlarge in Table 1 but no longer lists its scores; they are
# in Table 2 of an earlier arXiv version (2019), which compared every model with BERT-xlarge:
#
# | model | params | SQuAD1.1 | SQuAD2.0 | MNLI | SST-2 | RACE | Avg |
# |---|---|---|---|---|---|---|---|
# | BERT-large (Table 2, ICLR 2020) | 334M | 92.2/85.5 | 85.0/82.2 | 86.6 | 93.0 | 73.9 | 85.2 |
# | BERT-xlarge (Table 2, earlier arXiv version) | 1270M | 86.3/77.9 | 73.8/70.5 | 80.5 | 87.8 | 39.7 | 76.7 |
#
# The columns are the paper's benchmarks: **SQuAD** 1.1 and 2.0 answer a question by marking a span of a Wikipedia
# paragraph (2.0 adds questions with no answer; F1/exact match), **MNLI** asks whether one sentence entails,
# contradicts or is neutral to another, **SST-2** is the sentiment (positive or negative) of a movie-review
# sentence, and RACE is the exams above. On RACE it fell to 39.7, not far above guessing, and its average is even below BERT-base's 82.3. Past some
# size, adding parameters to BERT the straightforward way stopped helping and started to hurt. ALBERT's answer is
# to spend parameters more carefully.

# %% [markdown]
# ## What ALBERT changes, on one page
#
# 1. **Factorized embedding parameterization** (Chapter 3). BERT's token table is $V \times H$, as wide as the
#    model. ALBERT uses a narrow $V \times E$ table ($E = 128$) and one $E \times H$ projection. The table no
#    longer grows with the hidden size.
# 2. **Cross-layer parameter sharing** (Chapter 4). All L layers use the same weights: the encoder is one layer applied
#    L times. The parameter count no longer grows with depth. The paper also tries sharing only the attention or
#    only the feed-forward blocks (Table 4).
# 3. **Sentence-order prediction (SOP)** instead of BERT's next-sentence prediction (NSP). Positive pairs are two
#    consecutive segments of a document; negatives are the same two segments swapped. NSP's negatives came from
#    another document and could often be spotted by topic alone; SOP's two segments always share a topic, so
#    the model has to judge how the text flows.
#
# Besides these, ALBERT keeps BERT's main pretraining task, the **masked language model (MLM)**: hide some tokens
# and predict them from the rest. It masks **n-grams** for it: spans of up to 3 words, with length $n$ chosen with
# probability $\propto 1/n$, selecting 15% of the tokens (80% replaced by `[MASK]`, 10% by a random token, 10% left
# unchanged). It uses a 30,000-piece SentencePiece vocabulary and, in its final models, no dropout.
#
# The whole model in one picture: ALBERT-base set up for pretraining, read from the bottom. Token ids pick rows
# of the narrow word table (idea 1), a projection widens them to H, one layer runs L = 12 times (idea 2), and
# two heads read the result: the MLM head at every masked position, the SOP head (idea 3) on the `[CLS]` vector.
# Every count is computed from the config (`albert_mini.book.diagrams.albert_diagram`); the shared layer holds
# most of the parameters, the word table most of the rest.

# %%
import matplotlib.pyplot as plt

from albert_mini.book.diagrams import albert_diagram
from albert_mini.paths import save_figure

fig = albert_diagram(AlbertConfig.from_preset("albert-base"))
save_figure(fig, "01_albert_whole_model.png")
plt.show()

# %% [markdown]
# The first two ideas cut parameters; the third changes what is learned. Here are the seven configurations of
# the paper's Table 1 (ICLR 2020 version: three BERTs, BERT-xlarge among them, and four ALBERTs), counted
# exactly from the architecture and next to the printed numbers. The speed column is Table 2's training
# throughput relative to BERT-large (also the ICLR 2020 version).

# %% tags=["nbval-check-output"]
from albert_mini.study.paper import (
    KNOWN_DISAGREEMENTS,
    TABLE1,
    TABLE2_SPEEDUP,
    paper_convention_count,
)

header = (
    f"{'model':15s} {'L':>3s} {'H':>5s} {'E':>5s} {'shared':>6s} {'exact':>9s} "
    f"{'paper rules':>11s} {'Table 1':>8s} {'':7s} {'speed':>5s}"
)
print(header)
for name, printed in TABLE1.items():
    c = AlbertConfig.from_preset(name)
    exact, convention = count_parameters(c) / 1e6, paper_convention_count(c) / 1e6
    # Table 1 prints millions; 1270M is rounded to three figures
    digits = -1 if printed >= 1000 else 0
    verdict = "ok" if round(convention, digits) == printed else "differs"
    speed = f"{TABLE2_SPEEDUP[name]}x" if name in TABLE2_SPEEDUP else "-"
    print(
        f"{name:15s} {c.num_hidden_layers:3d} {c.hidden_size:5d} {c.embedding_size:5d} "
        f"{'yes' if c.sharing == 'all' else 'no':>6s} {exact:8.1f}M "
        f"{convention:10.1f}M {printed:7d}M {verdict:7s} {speed:>5s}"
    )
print()
for name, note in KNOWN_DISAGREEMENTS.items():
    print(textwrap.fill(f"{name}: {note}", 88, subsequent_indent="  "))

# %% [markdown]
# Reading the table:
#
# - "exact" counts every tensor of the encoder and pooler as built. "paper rules" applies the convention that
#   reproduces the paper's printed counts (the pooler counted only for shared models, no projection when
#   $E = H$; Chapter 3 works through it). Five of the seven rows agree with Table 1.
# - The two that do not are ALBERT-xlarge and ALBERT-xxlarge. No counting rule we tried gives 60M or 235M from the
#   published architecture; the exact counts (58.7M and 222.6M) are what the released checkpoints hold (the
#   Hugging Face model card of xxlarge says 223M), so the book uses them. (An earlier version of the paper
#   printed 59M and 233M.)
# - ALBERT-large has about 19 times fewer parameters than BERT-large. ALBERT-xxlarge, with a hidden size of 4096, is
#   still smaller than BERT-large, and in Table 2 it beats it on every benchmark (RACE 82.3 against 73.9).
# - But the speed column runs the other way: ALBERT-xxlarge trains at 0.3x the speed of BERT-large. Sharing
#   weights saves memory and communication; it does not save computation, since all L layers are still computed.
#   That is the trade the paper makes, and we will measure it ourselves.

# %% [markdown]
# ## The layer both models share: post-LN
#
# ALBERT changes how many distinct layers there are, not what a layer computes. It keeps BERT's transformer
# layer, including the position of the LayerNorms: **after** each residual addition ("post-LN"). The layer has
# two sub-layers, multi-head attention and then a feed-forward network (FFN), and each one is wrapped the same
# way: a residual connection around it, and a LayerNorm on the result.
#
# Many later models (GPT-2 and most large language models) normalize *before* each sub-layer instead and add the
# raw sub-layer output to an un-normalized residual stream; that is "pre-LN". The two side by side
# (`albert_mini.book.diagrams.layer_norm_placement_diagram`):

# %%
from albert_mini.book.diagrams import layer_norm_placement_diagram

fig = layer_norm_placement_diagram()
save_figure(fig, "01_post_ln_pre_ln.png")
plt.show()

# %% [markdown]
# The same four pieces, in another order. In post-LN the residual stream is renormalized after every
# sub-layer; in pre-LN it only accumulates, which makes very deep stacks easier to train without a long warm-up.
# Before we write the whole layer, the optional exercise below asks for just that order of operations.

# %% [markdown]
# ### Exercise (optional): the order of operations
#
# The difference between post-LN and pre-LN is only the order in which the same pieces are applied. Write
# `post_ln_block(h, attention, ffn, norm_1, norm_2)`, where each argument after `h` is a function from a tensor to
# a tensor of the same shape (`attention` and `ffn` are the sub-layers without residual or normalization), and
# return the output of a post-LN layer, in the order described above (the left half of the figure), leaving `h`
# itself unchanged.

# %% nbgrader={"grade": false, "grade_id": "post_ln_block", "locked": false, "schema_version": 3, "solution": true, "task": false}
def post_ln_block(h, attention, ffn, norm_1, norm_2):
    """One post-LN layer built from its parts."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_post_ln_block", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_post_ln_block

check_post_ln_block(post_ln_block);

# %% [markdown]
# Written out for an input $h$ of shape (B, T, H), the post-LN layer is
#
# $$a = \mathrm{LN}_1\big(h + \mathrm{Attention}(h)\big), \qquad
#   h' = \mathrm{LN}_2\big(a + W_2\, \mathrm{gelu}(W_1 a + b_1) + b_2\big).$$
#
# Here is the whole post-LN layer in a dozen lines, with q, k and v computed by one fused matrix:

# %%
import math

import torch.nn.functional as F


class PostLNLayer(nn.Module):
    """A BERT/ALBERT layer: attention, add, LayerNorm; then FFN, add, LayerNorm."""

    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float = 1e-12):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm_1 = nn.LayerNorm(hidden, eps=eps)
        self.up = nn.Linear(hidden, intermediate)
        self.down = nn.Linear(intermediate, hidden)
        self.norm_2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, h):
        B, T, H = h.shape
        # 3 x (B, nh, T, d)
        q, k, v = (
            self.qkv(h)
            .view(B, T, 3, self.heads, H // self.heads)
            .permute(2, 0, 3, 1, 4)
        )
        # (B, nh, T, T)
        weights = (q @ k.transpose(-2, -1) / math.sqrt(H // self.heads)).softmax(dim=-1)
        # heads side by side again
        context = (weights @ v).transpose(1, 2).reshape(B, T, H)
        # add the residual first, then normalize: post-LN
        a = self.norm_1(h + self.out(context))
        return self.norm_2(a + self.down(F.gelu(self.up(a), approximate="tanh")))


# %% [markdown]
# To check it, take an `AlbertLayer` from the package, give its LayerNorms random values (so that copying them
# matters), copy every weight into our layer, and compare the outputs. The package keeps Hugging Face's names
# (`query`, `key`, `value`, `dense`, `ffn`, `ffn_output`, ...), so the copy doubles as a map between the two
# vocabularies.

# %% tags=["nbval-check-output"]
from albert_mini.model.albert import AlbertLayer

torch.manual_seed(0)
albert_layer = AlbertLayer(config).eval()
attention = albert_layer.attention
with torch.no_grad():
    for norm in (attention.LayerNorm, albert_layer.full_layer_layer_norm):
        norm.weight.normal_(1.0, 0.2)
        norm.bias.normal_(0.0, 0.2)

ours = PostLNLayer(
    config.hidden_size, config.num_attention_heads, config.intermediate_size
).eval()
with torch.no_grad():
    ours.qkv.weight.copy_(
        torch.cat(
            [attention.query.weight, attention.key.weight, attention.value.weight]
        )
    )
    ours.qkv.bias.copy_(
        torch.cat([attention.query.bias, attention.key.bias, attention.value.bias])
    )
    for mine, theirs in [
        (ours.out, attention.dense),
        (ours.norm_1, attention.LayerNorm),
        (ours.up, albert_layer.ffn),
        (ours.down, albert_layer.ffn_output),
        (ours.norm_2, albert_layer.full_layer_layer_norm),
    ]:
        mine.load_state_dict(theirs.state_dict())

# (B, T, H)
h = torch.randn(2, 10, config.hidden_size, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    expected, _ = albert_layer(h)
    got = ours(h)
torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
print("PostLNLayer == AlbertLayer on the same weights:", tuple(got.shape))

# %% [markdown]
# > **Differs from BERT.** Nothing inside the layer: ALBERT keeps BERT's post-LN layer as it is. What changes is
# > how many distinct layers hold parameters (one, in every ALBERT), the width of the embeddings, and the
# > sentence-level pretraining task.
#
# > **Differs from the reference code.** Two details of the layer, both settled the way the original TensorFlow
# > code does it:
# >
# > - *GELU.* The TensorFlow code's `gelu` is the tanh approximation. Hugging Face calls that `gelu_new`; its
# >   `gelu` is the exact, erf-based function. The v1 configs on the Hugging Face hub said `gelu`, a small
# >   mismatch with the original that was fixed for v2 (transformers#2395). `albert_mini` defaults to `gelu_new`
# >   and supports both. The two differ by less than $5 \times 10^{-4}$ anywhere (printed below), but the
# >   difference passes through every layer.
# > - *Dropout after the FFN.* The TensorFlow layer applies dropout to the FFN output before the residual addition.
# >   Hugging Face's `AlbertLayer` creates a `dropout` module for it and never calls it. We apply it, as the
# >   original does. This matters only with `hidden_dropout_prob > 0`: every v2 model, and every preset here
# >   except the BERT baselines, uses 0.

# %% tags=["nbval-check-output"]
x = torch.linspace(-8, 8, 160001, dtype=torch.float64)
gap = (F.gelu(x, approximate="tanh") - F.gelu(x)).abs()
print(
    f"max |gelu_tanh(x) - gelu(x)| on [-8, 8]: {gap.max().item():.2e} at x = "
    f"{x[gap.argmax()].item():.2f}"
)

# %% [markdown]
# If Hugging Face transformers is installed, the dropout difference can be seen directly. With
# `hidden_dropout_prob = 0.1`, in training mode and from the same random seed, the two layers disagree; once our
# FFN dropout is switched off they agree again, because the attention block's dropout draws the same random mask
# in both.

# %%
try:
    from transformers.models.albert.modeling_albert import AlbertLayer as HFAlbertLayer

    from albert_mini.model.hf import config_to_hf
except ImportError:
    print("transformers is not installed; skipping the comparison with Hugging Face")
else:
    dropout_config = config.replace(hidden_dropout_prob=0.1)
    hf_config = config_to_hf(dropout_config)
    # a standalone layer gets no attention backend from a model
    hf_config._attn_implementation = "eager"
    torch.manual_seed(0)
    ours_with_dropout = AlbertLayer(dropout_config).train()
    theirs = HFAlbertLayer(hf_config).train()
    theirs.load_state_dict(ours_with_dropout.state_dict())  # same names, same shapes

    def run_both():
        torch.manual_seed(123)
        mine = ours_with_dropout(h)[0]
        torch.manual_seed(123)
        return (mine - theirs(h)).abs().max().item()

    print(
        f"training mode, FFN dropout applied (ours):   max difference {run_both():.3f}"
    )
    ours_with_dropout.dropout = nn.Identity()  # what HF effectively does
    print(
        f"training mode, FFN dropout removed from ours: max difference {run_both():.1e}"
    )

# %% [markdown]
# ## Summary
#
# - ALBERT was evaluated on benchmarks such as RACE, where a model scores each (passage, question + option) pair
#   and picks the best of four; chance is 25%, and in Table 2 ALBERT-xxlarge reaches 82.3 against BERT-large's
#   73.9.
# - BERT-large has 334M parameters (1.3 GB of fp32 weights) and BERT-xlarge about 1.27B (5.1 GB); BERT-xlarge scored
#   *worse* than BERT-large, so growing BERT had stopped paying off.
# - ALBERT's three ideas: a factorized $V \times E + E \times H$ embedding, one set of layer weights shared by all
#   layers, and sentence-order prediction; plus n-gram masking. ALBERT-base has 11.7M parameters against
#   BERT-base's 109.1M, both exact counts from the architecture (the paper's Table 1 rounds them to 12M and
#   108M, the latter by its own counting convention), but sharing does not reduce computation (ALBERT-xxlarge
#   trains at 0.3x BERT-large's speed).
# - The layer is BERT's post-LN layer unchanged; `albert_mini` uses the tanh GELU and applies dropout after the FFN,
#   as the original TensorFlow code does.
#
# ## Further reading / pointers
#
# - The paper: Section 1 (the motivation and the BERT-xlarge degradation), Section 3 (the three ideas), Section 4
#   (Tables 1 and 2).
# - Code: `AlbertLayer` and `AlbertAttention` in `albert_mini/model/albert.py`; `count_parameters` in
#   `albert_mini/model/counting.py`; the paper's numbers in `albert_mini/study/paper.py`.
# - Next: the following chapters build ALBERT piece by piece; Chapter 3 starts with the first idea, the factorized
#   embedding.
