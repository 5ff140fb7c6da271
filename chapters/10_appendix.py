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
# # Chapter 10 (appendix): tokenizer and fine-tuning machinery, in detail
#
# Some of what ALBERT needs is not specific to ALBERT: how a SentencePiece model learns its pieces, how a SQuAD
# context is cut into windows, how hard a task is without any network. This appendix holds that material, so
# that chapters 2, 4 and 8 can stay with what ALBERT does. Part A belongs to chapter 2 (tokenization), part B to
# chapter 8 (fine-tuning), part C explains the book's statistics, and part D holds details of chapter 4
# (cross-layer sharing). Every cell runs under the tests, like the chapters.
#
# ## Learning goals
#
# - Train a unigram SentencePiece model with ALBERT's special ids, and see how the vocabulary size trades off
#   against the number of pieces per word and against how evenly the pieces are used.
# - Load the book's tokenizer into Hugging Face's `AlbertTokenizer` and know where the two differ.
# - Move a fine-tuned classification head from Hugging Face to `albert_mini`.
# - Follow a SQuAD-format context through overlapping windows, the max-context rule and decoding.
# - Put the fine-tuning comparison of chapter 8 in proportion with three baselines that use no network.
# - Read every verdict of the book: Wilson's interval, the t interval over seeds, McNemar's exact test and the
#   paired bootstrap, each on a small example.

# %%
import numpy as np
import torch

from albert_mini import Tokenizer, load_corpus, preprocess_text
from albert_mini.text.corpus import SPLITS

corpus = {split: load_corpus("austen", split) for split in SPLITS}
tokenizer = Tokenizer.default()
opening = next(
    doc for doc in corpus["train"] if doc.novel == "Pride and Prejudice"
).sentences()[0]

# %% [markdown]
# ## Part A: SentencePiece in detail
#
# ### Subwords
#
# A vocabulary of whole words would be enormous and would still meet unknown words; a vocabulary of characters
# would make sequences long. Subword tokenizers sit in between: frequent words are one piece, rare words are a
# few pieces, and anything can be spelled from single characters. ALBERT uses **SentencePiece** (Kudo and
# Richardson, 2018), as XLNet did, with a vocabulary of 30,000 pieces (the paper, section 4.1); chapter 2
# compares it with BERT's WordPiece.
#
# SentencePiece works on raw text: it does not split on spaces first. Instead a space becomes part of the next
# piece, written as `▁` (U+2581), so `the cat` is `▁the ▁cat` and decoding is just concatenation with `▁` turned
# back into a space. ALBERT uses SentencePiece's **unigram** model: it starts from a large set of candidate
# substrings, fits a probability to each piece so that the training text is likely when each sentence is split
# into independent pieces, and repeatedly prunes the pieces whose removal costs the least likelihood, until the
# requested vocabulary size is left. To tokenize, it picks the most probable segmentation (Viterbi).
#
# `albert_mini.text.tokenizer.train_sentencepiece` trains a model with ALBERT's flags: `<pad>` at id 0, `<unk>` at 1,
# no begin/end-of-sentence ids, and `[CLS]`, `[SEP]`, `[MASK]` as control symbols (ids 2, 3, 4). It is
# deterministic: one thread, a fixed seed, every line in file order. Let us train a small model, 1,000 pieces, on
# the 27,077 sentences of the training split (a few seconds):

# %%
import time

from albert_mini.text.tokenizer import train_sentencepiece, training_texts

sentences = training_texts()  # the sentences of corpus["train"], in order
start = time.perf_counter()
# the bytes of a .model file
small_model = train_sentencepiece(sentences, vocab_size=1000, seed=0)
print(f"trained on {len(sentences):,} sentences in {time.perf_counter() - start:.1f} s")
from albert_mini.devices import cpu_model

print(f"timed on {cpu_model()}")
small = Tokenizer.from_bytes(small_model)

# %% [markdown]
# The book's tokenizer was trained the same way with 8,000 pieces and is committed as `data/austen/spiece.model`
# (rebuild it with `albert-mini tokenizer train --vocab-size 8000 --out data/austen/spiece.model --overwrite`).
# The first sentence of *Pride and Prejudice*, chapter 1, with both:

# %% tags=["nbval-check-output"]
print("committed:", tokenizer.vocab_size, "pieces | small:", small.vocab_size, "pieces")
for name, tk in (("1,000 pieces", small), ("8,000 pieces", tokenizer)):
    pieces = tk.tokenize(opening)
    print(f"\n{name}: {len(pieces)} pieces for {len(opening.split())} words")
    print(" ".join(pieces))

# %% [markdown]
# With 1,000 pieces only the commonest words are whole (`▁truth`, `▁fortune`); `universally` needs six pieces.
# With 8,000 pieces the whole sentence is one piece per word or punctuation mark. The vocabulary itself starts
# with the five special pieces, then the most useful pieces in order of their learned log-probability:

# %% tags=["nbval-check-output"]
for name, tk in (("1,000", small), ("8,000", tokenizer)):
    head = [f"{tk.id_to_piece(i)}({tk.sp.get_score(i):.2f})" for i in range(5, 17)]
    print(f"{name}: ids 0-4 = {[tk.id_to_piece(i) for i in range(5)]}")
    print(f"        ids 5-16 = {' '.join(head)}")
longest = sorted(
    range(5, tokenizer.vocab_size), key=lambda i: -len(tokenizer.id_to_piece(i))
)[:6]
print("longest pieces (8,000):", [tokenizer.id_to_piece(i) for i in longest])

# %% [markdown]
# ### How many pieces per word?
#
# The cost of a small vocabulary is longer sequences. Counted over every paragraph of each split (whitespace
# words, no special tokens), with the number of `<unk>` ids:

# %% tags=["nbval-check-output"]
def piece_counts(tk, documents):
    """(pieces, words, unknown pieces) over all paragraphs of `documents`."""
    pieces = words = unknown = 0
    for doc in documents:
        for paragraph in doc.paragraphs:
            ids = tk.encode(paragraph)
            pieces, words, unknown = (
                pieces + len(ids),
                words + len(paragraph.split()),
                unknown + ids.count(tk.unk_id),
            )
    return pieces, words, unknown


print(
    f"{'vocabulary':>10s} {'split':>11s} {'pieces':>9s} {'words':>8s} {'per word':>9s} "
    f"{'<unk>':>6s}"
)
for name, tk in (("1,000", small), ("8,000", tokenizer)):
    for split, documents in corpus.items():
        pieces, words, unknown = piece_counts(tk, documents)
        print(
            f"{name:>10s} {split:>11s} {pieces:9,} {words:8,} {pieces / words:9.3f} "
            f"{unknown:6d}"
        )

# %% [markdown]
# With 8,000 pieces a word costs 1.23 pieces on average, and the held-out splits are hardly worse than the
# training split (1.24-1.25): the vocabulary generalises across chapters. With 1,000 pieces, sequences are about
# 40% longer. ALBERT's 30,000 pieces for 16 GB of text sit at a similar place: most common words are one piece.
# The two validation `<unk>`s are the square brackets around a letter's heading in *Emma*, characters that the
# training chapters never use.
#
# The figure shows the same trade-off per word (top; words split on whitespace, so `fortune,` with its comma is
# a two-piece word) and how unevenly the pieces are used (bottom): the 51 most frequent pieces make up half of all
# tokens and about 500 make up 80%, while the last 5,300 pieces share 5% of the text between them.

# %%
import matplotlib.pyplot as plt

from albert_mini.paths import save_figure

validation_words = [
    w for doc in corpus["validation"] for p in doc.paragraphs for w in p.split()
]
fig, (left, right) = plt.subplots(
    2, 1, figsize=(6.8, 8), dpi=110, layout="constrained"
)
bins = np.arange(1, 7)
for offset, (name, tk, color) in zip(
    (-0.2, 0.2),
    (("1,000 pieces", small, "tab:orange"), ("8,000 pieces", tokenizer, "tab:blue")),
):
    per_word = np.minimum(
        [
            len(ids)
            for ids in tk.sp.encode([preprocess_text(w) for w in validation_words])
        ],
        6,
    )
    shares = np.array([np.mean(per_word == k) for k in bins])
    left.bar(
        bins + offset,
        shares,
        width=0.4,
        color=color,
        label=f"{name} (mean {np.mean(per_word):.2f})",
    )
left.set_xticks(bins, ["1", "2", "3", "4", "5", "6+"])
left.set_xlabel("pieces per word (validation words)")
left.set_ylabel("fraction of words")
left.set_title("How many pieces a word needs")
left.legend()

train_ids = [
    i for doc in corpus["train"] for p in doc.paragraphs for i in tokenizer.encode(p)
]
# ordinary pieces only
frequency = np.sort(np.bincount(train_ids, minlength=tokenizer.vocab_size)[5:])[::-1]
coverage = np.cumsum(frequency) / frequency.sum()
ranks = np.arange(1, len(coverage) + 1)
right.plot(ranks, coverage, color="tab:blue")
for share in (0.5, 0.8, 0.95):
    k = int(np.searchsorted(coverage, share)) + 1
    right.scatter([k], [coverage[k - 1]], color="tab:red", zorder=3)
    right.annotate(
        f"{share:.0%} of tokens: top {k:,} pieces",
        (k, coverage[k - 1]),
        textcoords="offset points",
        xytext=(8, -12),
    )
right.set_xscale("log")
right.set_xlabel("the k most frequent pieces (log scale)")
right.set_ylabel("share of all training tokens")
right.set_title("Vocabulary coverage, 8,000-piece model, training split")
for ax in (left, right):
    ax.grid(True, alpha=0.3)
save_figure(fig, "10_pieces_per_word.png")
plt.show()

# %% [markdown]
# > **Differs from the reference.** ALBERT's `30k-clean.model` has 30,000 pieces learned from Wikipedia and
# > BookCorpus; ours has 8,000 learned from Austen, which suits a 4 MB corpus and a small embedding table. ALBERT
# > also declared eight **user-defined symbols**, `( ) " - . – £ €`, which SentencePiece always keeps as single
# > pieces; ours has none, so that Hugging Face's converter reproduces our model exactly (below). The special ids
# > 0-4 are the same as ALBERT's.

# %% [markdown]
# ### The same tokenizer in Hugging Face
#
# Hugging Face's `AlbertTokenizer` can load our model: put it in a folder as `spiece.model` and call
# `from_pretrained(folder)`. Then the ids agree with ours: on 32,839 of the corpus's 32,840 sentences
# (`data/README.md`), and on pairs, truncation and padding (`tests/text/test_tokenizer.py`). This cell needs
# `transformers`; it is skipped if it is not installed.

# %%
import shutil
import tempfile
from pathlib import Path

from albert_mini.text.tokenizer import DEFAULT_DIR

try:
    import transformers
except ImportError:
    print("transformers is not installed: skipping the comparison")
else:
    folder = Path(tempfile.mkdtemp())
    shutil.copy(DEFAULT_DIR / "spiece.model", folder / "spiece.model")
    hf = transformers.AlbertTokenizer.from_pretrained(folder)
    held_out = [s for doc in corpus["validation"] for s in doc.sentences()]
    same = sum(
        hf(s)["input_ids"] == tokenizer.encode_pair(s)["input_ids"] for s in held_out
    )
    print(
        f"transformers {transformers.__version__}: same ids on {same:,} of "
        f"{len(held_out):,} validation sentences"
    )
    hf_pair = hf("She was gone.", "He smiled.", return_token_type_ids=True)
    pair = tokenizer.encode_pair("She was gone.", "He smiled.")
    print("pair, token types:", hf_pair["token_type_ids"] == pair["token_type_ids"])
    print(
        "HF on the text '[MASK]':",
        hf("Emma said [MASK]")["input_ids"],
        "| ours:",
        tokenizer.encode_pair("Emma said [MASK]")["input_ids"],
    )
    naive = transformers.AlbertTokenizer(vocab_file=str(DEFAULT_DIR / "spiece.model"))
    print(
        "AlbertTokenizer(vocab_file=...):",
        naive("She was gone.")["input_ids"],
        "<- <unk> ids",
    )
    shutil.rmtree(folder)

# %% [markdown]
# > **Differs from Hugging Face.** Four things to know when you mix the two:
# > - **Loading.** In transformers 5.x, `AlbertTokenizer(vocab_file=...)` does not take the pieces of a
# >   self-trained model: every word comes out as `<unk>` (id 1). Use `from_pretrained(folder)`.
# > - **Token types.** HF 5.x returns `token_type_ids` only when asked (`return_token_type_ids=True`).
# > - **Special tokens in text.** HF finds `[MASK]` written in raw text and turns it into id 4; here text is always
# >   just text, and special ids are inserted only by `encode_pair` and `__call__`.
# > - **Ties.** When two segmentations score exactly the same, SentencePiece and HF's unigram implementation may
# >   choose differently. On the whole corpus this happens in 1 of 32,840 sentences (`"Mary M---.`).
# >
# > **Differs from the reference code.** ALBERT's `tokenization.py` re-splits any piece that ends in a digit
# > followed by a comma, so that the comma becomes its own piece (albert#249). HF 5.x no longer does this, and
# > neither do we; our vocabulary has no piece ending in "digit," so it could not change any id:

# %% tags=["nbval-check-output"]
digit_comma = [
    tokenizer.id_to_piece(i)
    for i in range(tokenizer.vocab_size)
    if len(tokenizer.id_to_piece(i)) > 1
    and tokenizer.id_to_piece(i)[-1] == ","
    and tokenizer.id_to_piece(i)[-2].isdigit()
]
print("pieces ending in a digit and a comma:", digit_comma)
print("'10,000 pounds' ->", tokenizer.tokenize("10,000 pounds"))

# %% [markdown]
# ## Part B: fine-tuning machinery in detail
#
# ### The reference code's recipes
#
# The recipes of the reference code (`run_glue.sh`, `run_race.py`, `run_squad_*.py`; [REFERENCE_NOTES.md](REFERENCE_NOTES.md), section 3)
# all use AdamW with a linear warmup and decay:
#
# | task | input length | learning rate | batch | steps | warmup |
# |---|---|---|---|---|---|
# | GLUE, e.g. MNLI | 512 | 3e-5 (GLUE: 1e-5 to 5e-5) | 128 | 10,000 | 1,000 |
# | RACE | 512 (question + option: last 128) | 1e-5 | 32 | 12,000 | 1,000 |
# | SQuAD v1.1 | 384 (doc stride 128, query 64) | 5e-5 | 48 | - | 10% |
#
# Chapter 8 fine-tunes albert-mini with a peak rate of 3e-4, a few hundred steps and 128 tokens instead.

# %% [markdown]
# ### How the reference code's heads differ
#
# - **Initialization.** The TF heads draw their output weights from a *truncated* normal (standard deviation
#   0.02, values beyond two standard deviations drawn again); ours, like HF's, use a plain normal with the
#   same standard deviation and zero bias. Only the head's starting point differs.
# - **SQuAD 2.0.** The reference's SQuAD v2 model is not the simple span head: it has an XLNet-style head (an
#   end scorer that sees the start token's state, and an "answerable?" classifier, with a beam over start and
#   end). HF never ported it, and neither do we: this book does SQuAD v1 spans only.
# - **Dropout.** ALBERT v2 models were pretrained without dropout (albert#23), and the reference's v2 RACE
#   recipe fine-tunes them without it too ("0 ALBERT DR"). The TF classifiers have a fixed dropout of 0.1 in
#   front of the output layer; HF made it a config field, `classifier_dropout_prob`, after users found v2
#   models not training well on some tasks (transformers#2679). We keep that field. The shipped encoder's
#   values are printed below.

# %% tags=["nbval-check-output"]
from pprint import pprint

from albert_mini import AlbertConfig
from albert_mini.paths import PRETRAINED_MODEL

encoder_config = AlbertConfig.from_json(PRETRAINED_MODEL / "config.json")
shown = ("hidden_dropout_prob", "attention_probs_dropout_prob",
         "classifier_dropout_prob", "initializer_range")
pprint({k: getattr(encoder_config, k) for k in shown}, width=88, sort_dicts=False)

# %% [markdown]
# ### A head from Hugging Face
#
# The heads of `albert_mini.model.heads` keep Hugging Face's class and parameter names (chapter 8), so a head
# fine-tuned with HF can be loaded here and the other way round. One check, on a small random HF model
# (transformers is a test dependency, installed by `make`):

# %% tags=["nbval-check-output"]
try:
    import transformers

    from albert_mini.model.hf import from_hf

    torch.manual_seed(0)
    hf_config = transformers.AlbertConfig(
        vocab_size=120,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_act="gelu_new",
        num_labels=3,
    )
    hf_head = transformers.AlbertForSequenceClassification(hf_config).eval()
    ours = from_hf(hf_head).eval()
    token_ids = torch.randint(
        5, 120, (4, 10), generator=torch.Generator().manual_seed(1)
    )
    labels = torch.tensor([0, 2, 1, 2])
    with torch.no_grad():
        hf_out, our_out = (
            hf_head(input_ids=token_ids, labels=labels),
            ours(token_ids, labels=labels),
        )
    print(
        f"HF {type(hf_head).__name__} -> albert_mini {type(ours).__name__} with "
        f"{ours.num_labels} labels"
    )
    print(
        "logits agree within 1e-5:",
        bool((hf_out.logits - our_out.logits).abs().max() < 1e-5),
    )
    print(
        "loss agrees within 1e-5:", abs(hf_out.loss.item() - our_out.loss.item()) < 1e-5
    )
except ImportError:
    print(
        "transformers is not installed: this optional cell needs it (pip install "
        "transformers)"
    )

# %% [markdown]
# ### SQuAD windows at work
#
# Chapter 8 describes how a long SQuAD context becomes overlapping windows with a document stride, and how a
# window without the whole answer is trained to point at `[CLS]`. Here is the same test example of austen-span,
# its answer mapped from characters to tokens as in chapter 8's Exercise B:

# %% tags=["nbval-check-output"]
from albert_mini.tasks import features as task_inputs
from albert_mini.tasks.registry import get_task


def pieces(ids) -> str:
    """Token ids as their pieces, separated by spaces ([CLS], [SEP] as such)."""
    return " ".join(tokenizer.id_to_piece(int(i)) for i in ids)


austen_span = get_task("austen-span")
span_example = austen_span.load("test")[3]
answer = span_example.answers[0]
context_ids, offsets = tokenizer.encode_with_offsets(span_example.context)
first, last = task_inputs.answer_token_span(offsets, answer.start, answer.end)
print("QUESTION:", span_example.question)
print(
    f"ANSWER: {answer.text!r}, context tokens {first}-{last}: "
    f"{pieces(context_ids[first : last + 1])}"
)

# %% [markdown]
# A SQuAD context is often longer than the input. BERT's recipe, which
# ALBERT's code keeps, cuts the context into overlapping windows: each holds `max_length - 3 - len(query)`
# context tokens, and each starts `doc_stride` tokens after the previous one, until a window reaches the end.
# Every window is a separate feature `[CLS] query [SEP] window [SEP]` with the same question. For training, a
# window that contains the whole answer gets its token positions as targets; a window that does not gets
# start = end = 0, the `[CLS]` token: "the answer is not here".
#
# Our contexts fit into one 128-token window, so to see several we use a tiny input of 48 tokens, a stride of
# 16 and a query of at most 24 tokens:

# %% tags=["nbval-check-output"]
tiny = dict(max_length=48, doc_stride=16, max_query_length=24)
windows = task_inputs.squad_features(tokenizer, span_example, **tiny)
# input = [CLS] query [SEP] context... [SEP]
query_length = windows[0].context_start - 2
window_size = tiny["max_length"] - 3 - query_length
print(
    f"context {len(context_ids)} tokens, query {query_length} tokens -> windows of "
    f"{window_size} context tokens"
)
starts = task_inputs.window_starts(len(context_ids), window_size, tiny["doc_stride"])
print("window starts:", starts)
print(f"the answer is context tokens {first}-{last}\n")
for w, start in zip(windows, starts):
    # the window's context tokens, before the final [SEP]
    n_context = len(w.input_ids) - w.context_start - 1
    if start <= first and last < start + n_context:
        max_context = w.token_is_max_context[w.context_start + first - start]
        target = (
            f"{pieces(w.input_ids[w.start_position : w.end_position + 1])}, max "
            f"context: {max_context}"
        )
    else:
        target = "[CLS]"
    print(
        f"window {w.window_index}: context tokens "
        f"{start:2d}-{start + n_context - 1:2d}, "
        f"target ({w.start_position}, {w.end_position}) = {target}"
    )

# %% [markdown]
# The answer's token sits in two windows. At prediction time both may propose it, so BERT's rule decides which
# window may *start* an answer at a given token: the one where the token has the most context on its shorter
# side (`token_is_max_context`), which keeps predictions away from the edges of a window. With the book's
# setting, 128 tokens and a stride of 64, some training examples still need two windows:

# %% tags=["nbval-check-output"]
train_span = austen_span.load("train")
features = austen_span.features(tokenizer, train_span)
per_example = np.bincount(
    np.unique([f.example_id for f in features], return_inverse=True)[1]
)
targets_cls = sum(f.start_position == 0 for f in features)
print(
    f"{len(train_span)} training examples -> {len(features)} features; "
    f"{np.sum(per_example > 1)} examples need "
    f"two or more windows; {targets_cls} windows are trained to point at [CLS]"
)

# %% [markdown]
# **From logits back to text.** The head gives each token of each window a start and an end score.
# `decode_spans` pairs the best starts with the best ends in each window (end not before start, at most
# `max_answer_length` tokens, the start a max-context token), keeps the pair with the highest start + end score
# over all windows of the example, and cuts its characters out of the original context. Here we make the logits
# by hand: every window that holds the answer scores its tokens highest.

# %% tags=["nbval-check-output"]
width = max(len(w.input_ids) for w in windows)
start_logits, end_logits = (
    torch.zeros(len(windows), width),
    torch.zeros(len(windows), width),
)
for row, w in enumerate(windows):
    if w.start_position:
        start_logits[row, w.start_position] = end_logits[row, w.end_position] = 5.0
predicted = task_inputs.decode_spans(
    windows, start_logits, end_logits, {span_example.id: span_example.context}
)
print(predicted)

# %% [markdown]
# ### Baselines without a network
#
# **How hard are the tasks without any neural network?** Three simple baselines, a few lines each in
# `albert_mini/study/task_baselines.py` (no training beyond counting words), put chapter 8's comparison in
# proportion: a bag-of-words naive Bayes classifier for polarity; "choose the option that shares the most words
# with the passage" for austen-mc; and for austen-span a string matcher that turns the question into a pattern
# (`___` becomes "one word") and looks it up in the context. `make experiments-finetune` records the same three
# scores in `data/results/finetune.json`, where chapter 8 reads them.

# %% tags=["nbval-check-output"]
from albert_mini.book.optional_data import polarity_or_none
from albert_mini.study.task_baselines import (
    copy_matcher,
    naive_bayes_predictions,
    overlap_predictions,
)
from albert_mini.tasks.squad_metrics import squad_scores

# None, after a note on how to fetch them, when cache/ has no polarity sentences.
polarity, austen_mc = polarity_or_none(), get_task("austen-mc")
if polarity:
    polarity_test = polarity.load("test")
    polarity_right = np.equal(
        naive_bayes_predictions(polarity.load("train"), polarity_test),
        [e.label for e in polarity_test],
    )
    print(
        "polarity    naive Bayes (bag of words) test accuracy: "
        f"{polarity_right.mean():.1%} (chance 50%)"
    )
mc_test = austen_mc.load("test")
mc_right = np.equal(overlap_predictions(mc_test), [e.answer for e in mc_test])
print(
    f"austen-mc   word overlap with the passage, test accuracy: {mc_right.mean():.1%} "
    "(chance 25%)"
)
span_test = austen_span.load("test")
scores = squad_scores({e.id: copy_matcher(e) for e in span_test}, span_test)
print(
    f"austen-span string matcher, test exact match {scores['exact_match']:.1f}, F1 "
    f"{scores['f1']:.1f}"
)

# %% [markdown]
# The string matcher's score is the point of the last line: austen-span's question is a verbatim copy of a context
# sentence with one name removed, so it checks that the span machinery works (offsets, windows, the start and end
# scores, decoding, scoring) on real prose, and a model can learn it by lexical matching. It is not a test of
# reading comprehension, and it says nothing about SQuAD. austen-mc is closer to a real test: it needs local
# coherence (who speaks, what answers what, which pronoun has an antecedent), though some items stay ambiguous
# and surface cues such as a reply's opening words remain. Polarity is the one task whose text the encoder has
# never seen anything like: modern, lower-cased movie-review snippets against Austen's novels.

# %% [markdown]
# ## Part C: reading the statistics
#
# Every verdict in the book ("above chance", "no clear difference", "the pretrained encoder is ahead") comes from
# one of four calculations in `albert_mini/study/stats.py`. Each answers one question about noise: how far
# could this number move if we had measured it on other examples, or with other seeds? Below, each with a
# small example you can change.
#
# ### One accuracy: Wilson's interval
#
# A model answers 60 of 100 held-out pairs correctly. Had the test set been another 100 pairs from the same
# source, the accuracy would differ; a 95% interval is a range that, computed this way on many test sets,
# contains the true accuracy 95% of the time. The textbook interval $p \pm 1.96\sqrt{p(1-p)/n}$ misbehaves
# near 0 and 1 and for small $n$; Wilson's interval (the book uses it for every single accuracy, e.g. "SOP above
# chance") solves the same normal approximation for the true accuracy instead, and never leaves [0, 1].
# "Above chance" means the whole interval lies above 50%.

# %% tags=["nbval-check-output"]
import math

from albert_mini.study.stats import (
    compare_paired,
    mcnemar_exact,
    paired_bootstrap,
    seed_summary,
    wilson_interval,
)

for correct, total in ((60, 100), (600, 1000), (3, 4)):
    low, high = wilson_interval(correct, total)
    p = correct / total
    half = 1.96 * math.sqrt(p * (1 - p) / total)
    print(
        f"{correct:4d} of {total:4d}: Wilson [{low:.1%}, {high:.1%}]   "
        f"textbook [{p - half:.1%}, {p + half:.1%}]"
    )

# %% [markdown]
# Ten times the examples, about a third of the width ($1/\sqrt{10}$). With 3 of 4 the textbook interval runs
# past 100%; Wilson's does not.
#
# ### A mean over seeds: the t interval
#
# Pretraining the same model with another seed (another initialisation, another data order) gives another
# score. With three seeds the book reports the mean and a 95% interval from Student's t distribution:
# mean $\pm\, t_{0.975,\,n-1} \cdot s/\sqrt{n}$, where $s$ is the standard deviation over seeds. With
# $n = 3$ the factor $t$ is 4.30, not 1.96: three seeds say little about the spread, and the interval is wide
# to account for that. With one seed no interval is given at all.

# %% tags=["nbval-check-output"]
for values in ([24.1, 24.6, 23.9], [24.1, 24.6, 23.9, 24.3, 24.0]):
    summary = seed_summary(values)
    low, high = summary["ci95"]
    print(
        f"{len(values)} seeds: mean {summary['mean']:.2f}, std {summary['std']:.2f}, "
        f"95% t interval [{low:.2f}, {high:.2f}]"
    )

# %% [markdown]
# ### Two models on the same examples: McNemar's exact test
#
# To compare two models, do not check whether their two intervals overlap: both were scored on the same
# examples, and the examples both get right (or both get wrong) say nothing about which is better. Only the
# **discordant** examples count: those only model A gets right, and those only model B gets right. If the two
# models were equally good, each discordant example would be a fair coin between them. McNemar's exact test
# asks how surprising the split is for a fair coin: the p-value is twice the smaller binomial tail. A small p
# (below 0.05, say) says the split is unlikely for equal models.

# %% tags=["nbval-check-output"]
for only_a, only_b in ((12, 4), (30, 22), (9, 0)):
    p_value = mcnemar_exact(only_a, only_b)
    print(
        f"only A right on {only_a:2d}, only B on {only_b:2d}: McNemar p = {p_value:.3f}"
    )

# %% [markdown]
# 12 against 4 looks lopsided, yet a fair coin splits 16 tosses that unevenly about 8% of the time; 9 against 0
# it almost never does. 30 against 22 puts A ahead by as many examples as 12 against 4, with a larger p: the
# more discordant examples, the larger the gap a fair coin produces by chance.
#
# ### How large is the difference: the paired bootstrap
#
# McNemar says whether there is a difference; the paired bootstrap says how large it is. Resample the test
# examples with replacement 2,000 times, keep the pairs together (one example brings both models' answers),
# and take the accuracy difference each time: the middle 95% of those differences is the interval. A verdict
# line such as "+4.9 points [-0.7, +10.6], no clear difference" means: A is ahead by 4.9 points on this test
# set, and the interval contains zero, so another test set could well reverse the order. With several seeds,
# every resample uses one set of examples for all seeds, and the difference is averaged over seeds.

# %% tags=["nbval-check-output"]
rng = np.random.default_rng(0)
truth = rng.random(400)
model_a = (truth < 0.62).astype(int)  # right on about 62% of 400 examples
model_b = np.where(rng.random(400) < 0.8, model_a, 1 - model_a)  # agrees with A on 80%
result = compare_paired(model_a, model_b)
low, high = result["bootstrap"]["ci95"]
print(
    f"accuracy A {model_a.mean():.1%}, B {model_b.mean():.1%}; only A right on "
    f"{result['only_a']}, only B on {result['only_b']}"
)
print(
    f"difference {100 * result['bootstrap']['difference']:+.1f} points, 95% paired "
    f"bootstrap [{100 * low:+.1f}, {100 * high:+.1f}], McNemar p = "
    f"{result['mcnemar_p']:.3f}"
)
same = paired_bootstrap(model_a, model_a)
print(
    f"a model against itself: {same['difference']:+.3f} [{same['ci95'][0]:+.3f}, "
    f"{same['ci95'][1]:+.3f}]"
)

# %% [markdown]
# The two tests usually agree, as here; when they do not, the difference is near the edge of what the test
# set can resolve. Each verdict line in chapters 3 to 8 names the test it used; this part is where to look up
# what it means.

# %% [markdown]
# ## Part D: cross-layer sharing in detail
#
# Details of chapter 4 that its argument does not need.
#
# ### A floating-point quirk in the original formula
#
# The TensorFlow code picks the group with `int(i / L * G)`, floating-point arithmetic. It looks equivalent to
# $\lfloor iG/L \rfloor$, but rounding can land a hair *below* an integer and the truncation then drops to the
# previous group. Hugging Face's port writes `int(i / (L / G))`. A brute-force search over every L up to 48 and
# every G that divides L finds where each formula disagrees with the exact integer one:

# %% tags=["nbval-check-output"]
from albert_mini import AlbertConfig


def exact_group(i: int, L: int, G: int) -> int:
    """The package's rule, AlbertConfig.layer_to_group: i * G // L in integers."""
    return AlbertConfig(num_hidden_layers=L, num_hidden_groups=G).layer_to_group(i)


def tf_group(i: int, L: int, G: int) -> int:
    return int(i / L * G)


def hf_group(i: int, L: int, G: int) -> int:
    return int(i / (L / G))


cases = [
    (i, L, G)
    for L in range(1, 49)
    for G in range(1, L + 1)
    if L % G == 0
    for i in range(L)
]
tf_wrong = [(i, L, G) for i, L, G in cases if tf_group(i, L, G) != exact_group(i, L, G)]
hf_wrong = [(i, L, G) for i, L, G in cases if hf_group(i, L, G) != exact_group(i, L, G)]
print(f"checked {len(cases)} (i, L, G) cases")
print(f"TF formula wrong in {len(tf_wrong)} cases, e.g. (i, L, G) = {tf_wrong[:2]}")
print(f"HF formula wrong in {len(hf_wrong)} cases")
print(
    "L = 22, G = 22, i = 15:",
    f"15 / 22 * 22 = {15 / 22 * 22!r} -> group {tf_group(15, 22, 22)} (exact: 15)",
)
print(
    "wrong cases with L in (6, 12, 24, 48):",
    [c for c in tf_wrong if c[1] in (6, 12, 24, 48)],
)

# %% [markdown]
# Every released model has G = 1 and L in {12, 24}, so nothing released is affected; the quirk only bites an
# unusual config such as one group per layer with L = 22. `albert_mini` uses the integer form `i * G // L`
# (`AlbertConfig.layer_to_group`, which `exact_group` above calls) and its config refuses any G that does not
# divide L, so that every group serves the same number of applications.

# %% [markdown]
# ### Which LayerNorm `sharing="ffn"` shares
#
# The paper does not say which LayerNorm belongs to "the FFN". In
# `albert_mini`, `sharing="ffn"` shares the two FFN matrices *and* the LayerNorm that closes the FFN block
# (`full_layer_layer_norm`), mirroring `"attention"`, which shares the attention block with its own LayerNorm.
# The LayerNorm holds only 2H parameters, so Table 4's counts do not depend on this choice. The official
# TensorFlow code and the Hugging Face port have no shared-attention or shared-FFN mode at all (only whole layers
# in groups), so `albert_mini.model.hf.to_hf` refuses to export these two strategies.

# %% [markdown]
# ### How the smoothness of Figure 1 is measured
#
# The paper does not say how it averages. `albert_mini.study.smoothness.layer_smoothness` makes these choices, and
# chapter 4's measurements use them:
#
# - $h_0$ is the embedding **after** the E→H projection (`hidden_states[0]`); layer $l$ maps $h_{l-1}$ to $h_l$.
#   With K inner layers a "layer" here is one application of a group.
# - For every token separately: $d_l = \lVert h_l - h_{l-1} \rVert_2$ and $\theta_l$ = the angle between
#   $h_l$ and $h_{l-1}$ in degrees.
# - Both are averaged over every **non-pad** token of the batches (the attention mask says which are pad).
# - The angle is computed as $2\,\mathrm{atan2}(\lVert u - v\rVert, \lVert u + v\rVert)$ for the unit vectors $u, v$:
#   equal to $\arccos(u \cdot v)$ but accurate near 0°, where arccos of a cosine rounded to 1 loses all precision.

# %%
import inspect

from albert_mini.study.smoothness import layer_distances

print(inspect.getsource(layer_distances))

# %% [markdown]
# ## Summary
#
# - A unigram SentencePiece model learns its pieces from the text with ALBERT's special ids at 0-4; a smaller
#   vocabulary means more pieces per word, and a few hundred pieces cover most of the tokens (the table and
#   figure of part A measure both on Austen).
# - Hugging Face's `AlbertTokenizer` loads the book's model through `from_pretrained(folder)` and gives the same
#   ids, except for the differences listed in part A.
# - Heads move between Hugging Face and `albert_mini` with `from_hf` and `to_hf`, because the names agree.
# - A SQuAD context longer than the input becomes overlapping windows; a window without the answer points at
#   `[CLS]`, and the max-context rule picks which window may start an answer at a token.
# - Baselines without a network show what the derived fine-tuning tasks can be solved by; read chapter 8's
#   comparison next to them.
# - One accuracy gets Wilson's interval, a mean over seeds a t interval; two models on the same examples are
#   compared pair by pair, with McNemar's exact test (is there a difference?) and the paired bootstrap (how
#   large is it?).
# - Chapter 4's details: the floating-point group formula of the reference code, the LayerNorm that
#   `sharing="ffn"` shares, and how the smoothness of Figure 1 is averaged.
#
# ## Further reading / pointers
#
# - Kudo and Richardson (2018) for SentencePiece, Kudo (2018) for the unigram model; `albert_mini/text/tokenizer.py`.
# - `albert_mini/model/hf.py`; `albert_mini/tasks/features.py` (windows, max context, `decode_spans`);
#   `data/tasks/README.md` for how the derived tasks are built.
# - Back to chapter 2 (tokenization) or chapter 8 (fine-tuning).
