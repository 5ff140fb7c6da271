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
# # Chapter 6: n-gram masking
#
# ALBERT keeps BERT's masked-language-model objective: hide some tokens of the input and ask the model to
# predict what was there. What changes is *which* tokens are hidden. BERT picked single pieces at random; ALBERT
# picks whole words, and often two or three neighbouring words at once, so that the model cannot fill a gap by
# looking at the other half of the same word or phrase. The paper gives this one sentence (Section 4.1): masked
# inputs are made with n-gram masking (Joshi et al., 2019), with n up to 3 and shorter n-grams more likely.
# This chapter takes that sentence apart on real sequences from the Austen corpus.
#
# ## Learning goals
#
# - Compute the span-length law $p(n) \propto 1/n$ for $n \le 3$ and see it in the spans the package's `Masker`
#   chooses.
# - Explain why spans are made of whole words, and read the word boundaries off `Tokenizer.word_start`.
# - Compute the prediction budget $\min(20, \max(1, \mathrm{round}(0.15\,n)))$ and know why the reference masks
#   3.9% of a 512-token sequence, not 15%.
# - Apply the 80/10/10 rule per token and measure it.
# - Compare BERT's single-piece masking with ALBERT's n-gram masking on the same sequences.

# %% [markdown]
# ## Sequences to mask
#
# Masking works on finished pretraining instances, `[CLS] A [SEP] B [SEP]`, built from the training split of the
# Austen corpus by `albert_mini.text.instances` (sentence-order pairs of at most 128 tokens, as ALBERT's pretraining
# uses them). We tokenize the 220 training chapters once and build one pass of instances with a fixed seed.

# %% tags=["nbval-check-output"]
import numpy as np

from albert_mini import Tokenizer, build_instances, load_corpus
from albert_mini.text.batches import tokenize_documents

tokenizer = Tokenizer.default()
documents = tokenize_documents(load_corpus("austen", "train"), tokenizer)
instances = build_instances(documents, task="sop", max_seq_len=128, seed=0)
lengths = np.array([len(inst.tokens) for inst in instances])
print(
    f"{len(instances):,} instances, {lengths.sum():,} tokens; length min "
    f"{lengths.min()}, "
    f"median {int(np.median(lengths))}, max {lengths.max()}"
)

# %% [markdown]
# The package's `Masker` does everything this chapter describes. It is built once per vocabulary (it needs to
# know which pieces start a word and which ids are special) and then masks one sequence per call, drawing every
# random number from the numpy `Generator` it is given. It returns the model's input, the MLM labels (the
# original id where a prediction is asked for, -100 elsewhere, which the loss ignores) and the spans it chose.

# %% tags=["nbval-check-output"]
from pprint import pprint

from albert_mini import Masker
from albert_mini.specials import IGNORE_INDEX

# the reference's defaults: 15%, at most 20, n <= 3, whole words
masker = Masker.from_tokenizer(tokenizer)
pprint(masker.describe(), width=88, sort_dicts=False)
example = instances[0]
masked = masker(example.tokens, np.random.default_rng(0))
print(
    "tokens",
    example.tokens.shape,
    "-> input_ids",
    masked.input_ids.shape,
    "and labels",
    masked.labels.shape,
)
print(
    "positions to predict:",
    np.count_nonzero(masked.labels != IGNORE_INDEX),
    "in",
    len(masked.spans),
    "spans",
)

# %% [markdown]
# ## Candidates are whole words
#
# A SentencePiece vocabulary cuts rare words into pieces. If the masker could hide one piece of a word and leave
# the others, the model would often guess the hidden piece from the visible ones: after `▁astonish`, the piece
# `ment` is no puzzle. So ALBERT's masker first groups pieces into words and only ever hides whole words.
#
# The reference code decides word boundaries from the pieces alone. A piece **starts a word** when it begins
# with `▁` (SentencePiece's mark for "a space came before me"), is a single punctuation character, or contains
# a character other than a-z and punctuation (so a piece with a digit starts a new word). Any other piece
# continues the word before it. The tokenizer evaluates this rule once for the whole vocabulary and stores it as
# a boolean array, `tokenizer.word_start`:

# %% tags=["nbval-check-output"]
sentence = "Elizabeth's unaffected astonishment -- at 10,000 pounds a year!"
pieces = tokenizer.tokenize(sentence)
flags = [bool(tokenizer.word_start[tokenizer.piece_to_id(p)]) for p in pieces]
print("piece        starts a word")
for piece, flag in zip(pieces, flags):
    print(f"{piece!r:14s} {'yes' if flag else '-- continues'}")
print(
    f"\n{tokenizer.word_start.sum():,} of {tokenizer.vocab_size:,} pieces start a word"
)

# %% [markdown]
# Some consequences worth noticing: a comma or a full stop is a word of its own, so it can be masked and must
# then be predicted; `'` starts a word and `s` continues it, so the possessive `'s` is one word; `--` continues
# the bare `▁` before it; and `▁1` and `0,000` are two words, because a piece with a digit always starts one.
# The rule is crude, but it is the reference's, and it only has to keep a masked span from cutting a word apart.
#
# The masker turns this array into word spans for a particular sequence: `Masker.word_ids` gives every token the
# index of the word it belongs to, and special tokens (which are never masked, and end any word) get -1. We use it
# below to measure what the masker did.

# %%
import inspect

print(inspect.getsource(Masker._word_starts))
print(inspect.getsource(Masker.word_ids))
special = masker.special  # (V,) bool: the special ids of the vocabulary
ids = np.array(
    tokenizer.encode_pair(sentence, "Her feelings were astonishing.")["input_ids"]
)
print(
    list(
        zip([tokenizer.id_to_piece(int(i)) for i in ids], masker.word_ids(ids).tolist())
    )
)

# %% [markdown]
# ## How long is an n-gram?
#
# Once the candidates are words, the masker picks **n-grams**: runs of n consecutive words. The paper draws
# the length n, up to $N = 3$, with a probability $p(n)$ proportional to $1/n$, so a single word is the most
# likely choice and a trigram the least. Turning those weights into probabilities is Exercise 1.

# %% [markdown]
# ### Exercise 1: the span-length law
#
# Write `ngram_probabilities(max_n)`: a list (or array) of $p(1), \dots, p(\text{max\_n})$ with $p(n)$
# proportional to $1/n$ and summing to one.

# %% nbgrader={"grade": false, "grade_id": "ngram_probabilities", "locked": false, "schema_version": 3, "solution": true, "task": false}
def ngram_probabilities(max_n):
    """p(n) for n = 1..max_n, proportional to 1/n."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_ngram_probabilities", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_ngram_probabilities

check_ngram_probabilities(ngram_probabilities);

# %% [markdown]
# The same law in exact fractions, for N = 1 to 4, next to the masker's own probabilities. The weights add up
# to the harmonic number $H_N = \sum_{k \le N} 1/k$ ($H_3 = 11/6$), and the mean length is
# $\sum_n n\,p(n) = N / H_N$, about 1.64 words for $N = 3$:

# %% tags=["nbval-check-output"]
from fractions import Fraction

for N in (1, 2, 3, 4):
    weights = [Fraction(1, n) for n in range(1, N + 1)]
    probabilities = [w / sum(weights) for w in weights]
    mean = sum(n * p for n, p in zip(range(1, N + 1), probabilities))
    print(
        f"N = {N}: p = {', '.join(str(p) for p in probabilities):28s} mean n = {mean} "
        f"= {float(mean):.3f}"
    )
print("the masker's p(n):", masker.ngram_probs.round(4))

# %% [markdown]
# ### Exercise 2: draw a span length
#
# Write `sample_span_length(rng, max_n=3)`: one draw of n from that law, as a Python `int`, using only the numpy
# `Generator` you are given (never `np.random.*` directly, so that a seed fixes the result). The check calls it
# 1,000 times per case and tests whether the counts fit $p(n)$ (a chi-square test). (The first public release of
# the reference code had the logic of its `favor_shorter_ngram` flag inverted, google-research#79; the check
# rejects a sampler that favours long spans, or draws n uniformly.)

# %% nbgrader={"grade": false, "grade_id": "sample_span_length", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sample_span_length(rng, max_n=3):
    """One n in 1..max_n with probability proportional to 1/n, drawn from `rng`."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_sample_span_length", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_sample_span_length

check_sample_span_length(sample_span_length);

# %% [markdown]
# ### What the masker does with the draws
#
# The masker draws an n for *every* word of the sequence, as the start of a candidate n-gram, then visits the
# candidate starts in a random order and takes spans until the budget (next section) is used up. Two things
# happen on the way that change which lengths end up masked:
#
# - a span that would go over the remaining budget **shrinks** word by word until it fits;
# - a span that overlaps one already taken is **skipped**, and long spans overlap more often.
#
# Each `Span` records both numbers: `sampled_n`, the length drawn, and `n`, the length kept. The first span of a
# sequence is never skipped and rarely shrunk, so its `sampled_n` shows the raw draw; all spans together show
# what the model is actually asked to predict. We mask every instance three times with one seeded generator:

# %%
from collections import Counter

rng = np.random.default_rng(0)
passes = 3
drawn_first, kept_all, tokens_per_span = Counter(), Counter(), Counter()
for _ in range(passes):
    for inst in instances:
        spans = masker(inst.tokens, rng).spans
        drawn_first[spans[0].sampled_n] += 1
        kept_all.update(span.n for span in spans)
        tokens_per_span.update(span.end - span.start for span in spans)


def frequencies(counter, values):
    total = sum(counter.values())
    return np.array([counter[v] / total for v in values])


ns = [1, 2, 3]
formula = masker.ngram_probs
first_freq, kept_freq = frequencies(drawn_first, ns), frequencies(kept_all, ns)

# %% tags=["nbval-check-output"]
print(
    f"{'n':>2s} {'p(n) formula':>13s} {'drawn (first span)':>19s} "
    f"{'kept (all spans)':>17s}"
)
for n, p, d, k in zip(ns, formula, first_freq, kept_freq):
    print(f"{n:2d} {p:13.3f} {d:19.3f} {k:17.3f}")
print(
    f"spans: {sum(drawn_first.values()):,} first spans, {sum(kept_all.values()):,} "
    "spans in all"
)
span_tokens = sum(t * c for t, c in tokens_per_span.items())
print(
    "mean words per kept span "
    f"{sum(n * c for n, c in kept_all.items()) / sum(kept_all.values()):.2f}, "
    f"mean tokens per span {span_tokens / sum(tokens_per_span.values()):.2f}"
)

# %%
import matplotlib.pyplot as plt

from albert_mini.paths import save_figure

fig, (left, right) = plt.subplots(2, 1, figsize=(6.8, 8), dpi=110, layout="constrained")
x = np.arange(len(ns))
for offset, values, label, color in (
    (-0.27, formula, "formula: (1/n) / H_3", "gray"),
    (0.0, first_freq, "drawn n (first span of each sequence)", "tab:blue"),
    (0.27, kept_freq, "kept n (all spans, after shrinking/skipping)", "tab:orange"),
):
    bars = left.bar(x + offset, values, width=0.27, label=label, color=color)
    left.bar_label(bars, fmt="%.3f")
left.set_xticks(x, [f"n = {n}" for n in ns])
left.set_xlabel("span length (words)")
left.set_ylabel("fraction of spans")
left.set_title(
    f"n-gram lengths on {len(instances):,} Austen sequences x {passes} maskings"
)
left.legend()
token_lengths = np.arange(1, 9)
right.bar(
    token_lengths, frequencies(tokens_per_span, token_lengths), color="tab:orange"
)
right.set_xlabel("span length (tokens)")
right.set_ylabel("fraction of spans")
right.set_title("The same kept spans, counted in SentencePiece tokens")
for ax in (left, right):
    ax.grid(True, axis="y", alpha=0.3)
save_figure(fig, "06_ngram_lengths.png")
plt.show()

# %% [markdown]
# The drawn lengths follow the formula to within about one percentage point. The small excess of n = 1 comes
# from the ends of segments: where fewer than three words are left before a `[SEP]`, the masker draws only
# among the lengths that fit (the last word of a segment can only start a unigram). The kept lengths lean
# further towards short spans, because long spans are the ones that get shrunk and skipped. Counted in tokens
# (lower panel), spans are a little longer than in words, because some words are several pieces.

# %% [markdown]
# ## A masked sequence, up close
#
# Here is one instance with its spans in «guillemets», then the input the model receives, in which every
# token of a span has been replaced (or not) by the 80/10/10 rule of a later section. `sampled_n` is the length
# drawn, `n` the length kept.

# %%
import textwrap

from albert_mini.text.tokenizer import WORD_BOUNDARY


def render(ids: np.ndarray, spans=(), separate=False) -> str:
    """Readable text of tokens, spans in «»; separate=True spaces out their pieces."""
    starts, ends = {s.start for s in spans}, {s.end - 1 for s in spans}
    inside = {i for s in spans for i in range(s.start, s.end)}
    out = []
    for i, token in enumerate(ids.tolist()):
        piece = tokenizer.id_to_piece(token).replace(WORD_BOUNDARY, " ")
        if token in tokenizer.special_ids or (
            separate and i in inside and not piece.startswith(" ")
        ):
            piece = " " + piece
        if i in starts:
            piece = piece[: len(piece) - len(piece.lstrip())] + "«" + piece.lstrip()
        out.append(piece + ("»" if i in ends else ""))
    return "".join(out).strip()


# %% tags=["nbval-check-output"]
example = instances[5]
masked = masker(example.tokens, np.random.default_rng(0))
print(textwrap.fill("ORIGINAL: " + render(example.tokens, masked.spans), 88), "\n")
print(
    textwrap.fill(
        "MODEL INPUT: " + render(masked.input_ids, masked.spans, separate=True), 88
    ),
    "\n",
)
for span in sorted(masked.spans, key=lambda s: s.start):
    original = [
        tokenizer.id_to_piece(int(t)) for t in example.tokens[span.start : span.end]
    ]
    shown = [
        tokenizer.id_to_piece(int(t)) for t in masked.input_ids[span.start : span.end]
    ]
    print(
        f"tokens {span.start:3d}-{span.end - 1:3d}  sampled_n={span.sampled_n} "
        f"n={span.n}  "
        f"{' '.join(original):28s} -> {' '.join(shown)}"
    )

# %% [markdown]
# Read the list against the text: the spans of two and three words (`live many years`, `meant not`) are whole
# phrases; the comma and `and` are words too; one span drawn as a trigram (`sampled_n=3`) kept a single word,
# because only one prediction was left in the budget when its turn came. In the model input most span tokens
# are `[MASK]`, two became random pieces (`ligence` for `▁many`, `▁convert` for `▁his`), and two were left as
# they were (`▁to`, `▁meant`): the model must still predict all fourteen.
#
# > **Differs from BERT.** The original BERT chose single WordPiece tokens, independently; a later BERT release
# > added whole-word masking. ALBERT masks whole words, and in runs of up to three words. The idea comes from
# > SpanBERT (Joshi et al., 2019), which masks longer spans (lengths from a geometric distribution) to make the
# > model predict a phrase from its context rather than from itself.

# %% [markdown]
# The same masking as a picture, for the first 72 of the sequence's 128 tokens: pieces of one word touch, the
# chosen spans are blue with their length n in words, and under each chosen piece is what the model is given
# (`albert_mini.book.diagrams.masking_diagram`, drawn from `masked` above):

# %%
from albert_mini.book.diagrams import masking_diagram

shown_tokens = 72
fig = masking_diagram(
    [tokenizer.id_to_piece(int(t)) for t in example.tokens[:shown_tokens]],
    masker.word_ids(example.tokens)[:shown_tokens],
    [span for span in masked.spans if span.end <= shown_tokens],
    [tokenizer.id_to_piece(int(t)) for t in masked.input_ids[:shown_tokens]],
)
save_figure(fig, "06_masking_diagram.png")
plt.show()

# %% [markdown]
# ## The prediction budget
#
# How many tokens to predict? BERT and ALBERT say 15%, but the reference code caps the number with
# `max_predictions_per_seq`, which it sets to 20:
#
# $$\text{budget}(n) = \min\bigl(20,\ \max(1,\ \mathrm{round}(0.15 \cdot n))\bigr),$$
#
# where $n$ counts every token of the instance, `[CLS]` and `[SEP]` included (padding is added later and not
# counted), and `round` is Python's (half to even). The masker stops when the budget is used up.
#
# The cap matters. The paper pretrains on 512-token sequences, and $0.15 \times 512 = 76.8$, so the uncapped
# budget would be 77. The reference used 20, which is **3.9%** of a 512-token sequence; asked about it, the
# authors confirmed that 20 is what they used (albert#51). So a reproduction that really masks 15% of 512 tokens
# asks for almost four times as many predictions per sequence as ALBERT was trained with. With this book's
# sequences of at most 128 tokens the question does not arise: the budget reaches 20 only at 133 tokens, and our
# longest instance has 128, so the cap never applies and we mask the full 15%.

# %% tags=["nbval-check-output"]
uncapped = Masker.from_tokenizer(tokenizer, max_predictions=10_000)
print(f"{'tokens':>6s} {'budget':>6s} {'share':>6s} {'without cap':>12s}")
for n in (5, 16, 64, 100, 128, 133, 137, 256, 384, 512):
    print(
        f"{n:6d} {masker.budget(n):6d} {masker.budget(n) / n:6.1%} "
        f"{uncapped.budget(n):12d}"
    )

# %%
all_lengths = np.arange(1, 513)
fig, (left, right) = plt.subplots(
    2, 1, figsize=(6.8, 8), dpi=110, layout="constrained"
)
left.plot(
    all_lengths,
    [uncapped.budget(n) for n in all_lengths],
    color="gray",
    ls="--",
    label="round(0.15 n), no cap",
)
left.plot(
    all_lengths,
    [masker.budget(n) for n in all_lengths],
    color="tab:blue",
    label="reference: capped at 20",
)
right.plot(
    all_lengths,
    [masker.budget(n) / n for n in all_lengths],
    color="tab:blue",
    label="reference: capped at 20",
)
right.axhline(0.15, color="gray", ls="--", label="15%")
for ax in (left, right):
    ax.axvline(
        128, color="tab:green", ls=":", label="128: this book's longest sequence"
    )
    ax.axvline(512, color="tab:red", ls=":", label="512: the paper's sequence length")
    ax.set_xlabel("sequence length (tokens, [CLS] and [SEP] included)")
    ax.grid(True, alpha=0.3)
    ax.legend()
left.set_ylabel("tokens to predict")
left.set_title("Prediction budget")
right.set_ylabel("share of the sequence predicted")
right.set_ylim(0, 0.5)
right.set_title("Budget / length: 15% until the cap, 3.9% at 512")
save_figure(fig, "06_budget.png")
plt.show()

# %% [markdown]
# The jagged start of the lower panel is rounding: a 3-token sequence gets one prediction (33%), a 10-token one
# gets two. Does the masker always spend exactly the budget? Because spans shrink to fit, it falls short only
# when every word still free has more pieces than the predictions left, which takes a sequence made of long
# multi-piece words. On Austen that does not happen once:

# %% tags=["nbval-check-output"]
rng = np.random.default_rng(1)
counts = np.array(
    [
        np.count_nonzero(masker(inst.tokens, rng).labels != IGNORE_INDEX)
        for inst in instances
    ]
)
budgets = np.array([masker.budget(len(inst.tokens)) for inst in instances])
print(
    "sequences whose masked count equals the budget: "
    f"{np.count_nonzero(counts == budgets):,} of {len(counts):,}"
)
print(
    f"tokens predicted: {counts.sum():,} of {lengths.sum():,} = "
    f"{counts.sum() / lengths.sum():.2%}"
)

# %% [markdown]
# ### Exercise 3: the budget
#
# Write `prediction_budget(n_tokens, max_predictions=20, masked_lm_prob=0.15)` by the formula above, and return
# a Python `int`. Use Python's `round`, as the reference does.

# %% nbgrader={"grade": false, "grade_id": "prediction_budget", "locked": false, "schema_version": 3, "solution": true, "task": false}
def prediction_budget(n_tokens, max_predictions=20, masked_lm_prob=0.15):
    """How many tokens to predict in a sequence of n_tokens (specials included)."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_prediction_budget", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_prediction_budget

check_prediction_budget(prediction_budget);

# %% [markdown]
# ## 80% [MASK], 10% random, 10% unchanged
#
# A chosen token is not always replaced by `[MASK]`. BERT's rule, which ALBERT keeps, is: with probability 0.8
# replace it by `[MASK]`, with 0.1 by a random token, and with 0.1 leave it as it is; in every case the model
# must predict the original. The reason is fine-tuning. `[MASK]` never appears in a downstream task, so a model
# that only ever had to predict at `[MASK]` positions could learn to care about a token's representation only
# there. Random and unchanged tokens mean that any position might have to be predicted, and that the visible
# token might be wrong, so the model must build a good representation of every token from its context.
#
# The choice is made **per token**, even inside an n-gram: a 3-word span can come out as
# `[MASK] [MASK] ▁grateful`. Exercise 4 asks you to write this step; the chapter's solutions print the
# package's own version.

# %% [markdown]
# Measured over all masked positions of one pass of the training split, and over the spans of two and three
# tokens (per token, a 2-token span is all `[MASK]` with probability $0.8^2 = 0.64$ and a 3-token span with
# $0.8^3 = 0.512$; per span it would be 0.8 for both):

# %% tags=["nbval-check-output"]
rng = np.random.default_rng(2)
kind_counts = Counter()
all_masked = Counter()  # span length in tokens -> (spans, spans entirely [MASK])
for inst in instances:
    out = masker(inst.tokens, rng)
    where = out.labels != IGNORE_INDEX
    shown, original = out.input_ids[where], inst.tokens[where]
    kind_counts["[MASK]"] += np.count_nonzero(shown == tokenizer.mask_id)
    kind_counts["unchanged"] += np.count_nonzero(shown == original)
    kind_counts["random"] += np.count_nonzero(
        (shown != tokenizer.mask_id) & (shown != original)
    )
    kind_counts["special id as replacement"] += np.count_nonzero(
        special[shown] & (shown != tokenizer.mask_id)
    )
    for span in out.spans:
        size = span.end - span.start
        spans_seen, fully = all_masked.get(size, (0, 0))
        all_mask = bool(
            np.all(out.input_ids[span.start : span.end] == tokenizer.mask_id)
        )
        all_masked[size] = (spans_seen + 1, fully + all_mask)
total = kind_counts["[MASK]"] + kind_counts["unchanged"] + kind_counts["random"]
for kind in ("[MASK]", "random", "unchanged"):
    print(f"{kind:10s} {kind_counts[kind] / total:.3f}")
print(
    "special ids used as random replacements:", kind_counts["special id as replacement"]
)
for size in (2, 3):
    spans_seen, fully = all_masked[size]
    print(
        f"{size}-token spans: {spans_seen:,}, entirely [MASK]: "
        f"{fully / spans_seen:.3f} "
        f"(per token {0.8**size:.3f}, per span 0.800)"
    )

# %% [markdown]
# ### Exercise 4: apply the rule
#
# Write `apply_80_10_10(tokens, spans, rng, mask_id, replacement_ids)`. `tokens` is an int array, `spans` a list
# of `(start, end)` pairs (end exclusive), `replacement_ids` an array of the ids a random replacement may take.
# Return a new array in which every token inside a span, **independently of the others**, becomes `mask_id`
# with probability 0.8, a random element of `replacement_ids` with probability 0.1, or stays as it was; tokens
# outside the spans must not change. Draw only from `rng`. The check calls your function 2,000 times and
# compares the frequencies, including how often two neighbours in a span get the same treatment.

# %% nbgrader={"grade": false, "grade_id": "apply_80_10_10", "locked": false, "schema_version": 3, "solution": true, "task": false}
def apply_80_10_10(tokens, spans, rng, mask_id, replacement_ids):
    """Each span token becomes [MASK] (80%), a random id (10%) or itself (10%)."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_apply_80_10_10", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_apply_80_10_10

check_apply_80_10_10(apply_80_10_10);

# %% [markdown]
# ## BERT's masking and ALBERT's, side by side
#
# The `Masker` does BERT's masking too: `ngram=1` gives unigram masking, of whole words by default, and with
# `whole_word=False` each piece counts as a word, which is what the original BERT did. We mask the same
# sequences, with the same budget, three ways and measure, over all masked positions:
#
# - **partial** (words): the share of masked tokens whose word has other pieces left visible;
# - **next to** (another masked token): the share with a masked neighbour, i.e. inside a masked run;
# - **multi-word** (span): the share inside an n-gram of two or more words.

# %% tags=["nbval-check-output"]
schemes = {
    "BERT (single pieces)": dict(ngram=1, whole_word=False),
    "whole-word unigrams": dict(ngram=1, whole_word=True),
    "ALBERT (n-grams, n <= 3)": dict(ngram=3, whole_word=True),
}
print(
    f"{'scheme':25s} {'masked/seq':>10s} {'partial':>8s} {'next to':>8s} "
    f"{'multi-word':>11s} {'tokens/span':>12s}"
)
for name, options in schemes.items():
    scheme = Masker.from_tokenizer(tokenizer, **options)
    rng = np.random.default_rng(3)
    masked_total = partial = neighbour = multiword = n_spans = 0
    for inst in instances:
        out = scheme(inst.tokens, rng)
        chosen = out.labels != IGNORE_INDEX  # (T,)
        words = masker.word_ids(inst.tokens)
        in_word = np.bincount(words[words >= 0], minlength=words.max() + 1)
        masked_in_word = np.bincount(words[chosen], minlength=words.max() + 1)
        partial += np.count_nonzero(
            masked_in_word[words[chosen]] < in_word[words[chosen]]
        )
        padded = np.concatenate([[False], chosen, [False]])
        neighbour += np.count_nonzero(chosen & (padded[:-2] | padded[2:]))
        multiword += sum(
            s.end - s.start for s in out.spans if words[s.end - 1] != words[s.start]
        )
        masked_total += np.count_nonzero(chosen)
        n_spans += len(out.spans)
    print(
        f"{name:25s} {masked_total / len(instances):10.2f} "
        f"{partial / masked_total:8.1%} {neighbour / masked_total:8.1%} "
        f"{multiword / masked_total:11.1%} {masked_total / n_spans:12.2f}"
    )

# %% [markdown]
# All three ask for the same number of predictions. With single pieces, about one masked token in nine sits in a
# word whose other pieces stay visible: an easy guess that teaches little. Whole words remove those. n-grams go
# further: most masked tokens now have a masked neighbour, and a majority lie in spans of two or three words, so
# the model must reconstruct a phrase from the sentence around it. The paper does not measure n-gram masking on
# its own (its ablations are about the three architectural ideas), so this chapter does not claim a number for
# what it buys; SpanBERT reports that span masking helps, above all on question answering.

# %% [markdown]
# ## Same seed, same mask
#
# Every random choice of the masker (the n drawn for each word, the order of the starts, the 80/10/10 draws and
# the random replacements) comes from the `Generator` passed in. The same seed therefore gives the same mask, to
# the last token, and a different seed a different one:

# %% tags=["nbval-check-output"]
tokens = instances[5].tokens
first, again = (
    masker(tokens, np.random.default_rng(7)),
    masker(tokens, np.random.default_rng(7)),
)
other = masker(tokens, np.random.default_rng(8))
print(
    "seed 7 twice, same input_ids and labels:",
    np.array_equal(first.input_ids, again.input_ids)
    and np.array_equal(first.labels, again.labels),
)
print("seed 7 vs seed 8, same labels:", np.array_equal(first.labels, other.labels))

# %% [markdown]
# The pretraining dataset (`albert_mini.text.batches`) builds on this: example i of epoch e is masked with a
# generator seeded by (seed, e, i), so any batch can be regenerated exactly when a run resumes, and dynamic
# masking (a new mask every epoch) is as reproducible as static masking.
#
# > **Differs from the reference code.** Our masker follows `create_masked_lm_predictions` of
# > `create_pretraining_data.py` ([REFERENCE_NOTES.md](REFERENCE_NOTES.md), section 1) with these deliberate changes:
# > - **Seeded randomness.** The reference draws n with `np.random.choice`, numpy's global generator, which it
# >   never seeds, so its masks cannot be reproduced. Ours come from the generator passed in.
# > - **Random replacements are ordinary tokens.** The reference draws them from the whole vocabulary, so a
# >   masked position can show `<pad>` or `[CLS]`; ours exclude the special ids (the count above is 0).
# > - **Spans stay inside a segment.** `[SEP]` is not a candidate in the reference either, but its n-grams are
# >   built over the list of candidates and can jump across it; ours never cross `[SEP]`.
# > - **Lengths near the end of a segment.** Where fewer than n words remain, the reference keeps the weights of
# >   all three lengths and simply gets a shorter slice; we draw only among the lengths that fit (renormalised
# >   $p(n)$). Either way the last word of a segment can only start a unigram.
# >
# > What we keep: whole-word candidates by the reference's piece rule, the budget (specials counted, Python's
# > rounding, the cap of 20), shrinking a span until it fits, skipping overlaps, and 80/10/10 per token. Note that
# > the first public release of the reference defaulted to `ngram=1` and had `favor_shorter_ngram` inverted
# > (google-research/albert#79 and google-research/albert#81); the numbers here are those of the fixed code.

# %% [markdown]
# ## Summary
#
# - ALBERT masks **whole words**, grouped into **n-grams** of $n \le 3$ words with $p(n) \propto 1/n$, a mean
#   of 1.64 words. On Austen, the drawn lengths match the law; the kept ones lean shorter
#   (0.60 / 0.26 / 0.14), because long spans are the ones shrunk or skipped.
# - Word boundaries come from the pieces alone (`Tokenizer.word_start`): a piece starting with `▁`, a
#   punctuation character or a piece containing a digit starts a word.
# - The budget is $\min(20, \max(1, \mathrm{round}(0.15\,n)))$ with specials counted. The reference's cap of 20
#   means 3.9% of a 512-token sequence (albert#51); at our 128 tokens the cap never applies and 15% are masked.
# - Each chosen token, independently, becomes `[MASK]` (80%), a random ordinary token (10%) or stays (10%).
# - Against BERT's single-piece masking, n-gram masking removes half-masked words (11% of BERT's masked
#   tokens) and puts most masked tokens inside multi-word spans.
#
# ## Further reading / pointers
#
# - The paper, Section 4.1 (experimental setup: n-gram masking, citing Joshi et al., 2019, SpanBERT).
# - Code: `albert_mini/text/masking.py` (`Masker.choose_spans`, `Masker.__call__`), `is_word_start` in
#   `albert_mini/text/tokenizer.py`, and `PretrainingDataset` in `albert_mini/text/batches.py` for static versus
#   dynamic masking.
# - Chapter 2 (`02_tokenization`) for the pieces and the word-start rule; `albert_mini/text/instances.py` for how the
#   `[CLS] A [SEP] B [SEP]` instances are cut from the documents. The next chapter feeds the masked sequences
#   to pretraining.
