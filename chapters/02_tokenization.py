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
# # Chapter 2: Tokenization with SentencePiece
#
# A transformer reads integers, not text. Before ALBERT can learn anything, every sentence has to become a short
# list of ids from a fixed vocabulary, and every model input has to be laid out the way pretraining laid it out.
# ALBERT does this with SentencePiece, a subword tokenizer learned from the text itself, plus a few fixed rules:
# lower-case everything, strip accents, and reserve five ids for special tokens. This chapter uses the book's
# tokenizer the way ALBERT uses its own: the preprocessing, the special ids, the layout of a model input and the
# word boundaries that masking needs. How SentencePiece learns its pieces, and what the vocabulary size trades
# off, is general tokenizer material; it is in the appendix, chapter 10.
#
# ## Learning goals
#
# - Know where the book's corpus comes from (six Jane Austen novels), how it is split, and how to load it.
# - Apply ALBERT's text preprocessing and predict what it does to accents, case, ligatures and odd characters.
# - Use a SentencePiece tokenizer with ALBERT's special ids, and tell its pieces (`▁` marks a preceding space)
#   from BERT's WordPiece.
# - Lay out model inputs: special ids 0-4, `[CLS] A [SEP] B [SEP]` with token types, truncation and padding.
# - Read word boundaries off the pieces (`▁` and `word_start`), which masking in Chapter 6 builds on.

# %% [markdown]
# ## The corpus: six novels, split by chapter
#
# ALBERT was pretrained on about 16 GB of English Wikipedia and BookCorpus (the paper, section 4.1). A CPU-sized book
# needs a CPU-sized corpus that is free to redistribute, so this book uses the six novels of Jane Austen: about 4 MB of
# coherent, chapter-long narrative, which is what a sentence-order task needs.
#
# The text comes from the Debian package **`r-cran-janeaustenr`** (version 1.0.0-1), which ships the novels as R
# data (one string per line of text) with the Project Gutenberg header and licence already removed. The novels are
# in the public domain; the R package is under the MIT licence. `albert-mini corpus` fetches the
# package with `apt-get download` (or takes a copied `.deb`), reads the R data with a small standard-library
# reader (`albert_mini/harness/data/rdata.py`), and writes `data/austen/`. The build is deterministic: it reproduces the
# committed files byte for byte, and a sha256 manifest (`data/austen/SHA256SUMS`) is checked every time a split
# is read. Nothing is downloaded when you run this chapter.
#
# One document is one chapter. The split is by chapter, never inside one, and every novel contributes to all
# three splits: chapter $c$ of a novel goes to **validation** when $c \bmod 10 = 0$, to **test** when
# $c \bmod 10 = 1$ and $c > 1$ (the chapter right after a validation chapter), and to **train** otherwise. The
# build records its counts in `data/austen/stats.json`:

# %% tags=["nbval-check-output"]
import json

from albert_mini.paths import DATA_ROOT

stats = json.loads((DATA_ROOT / "austen" / "stats.json").read_text())
print(f"source: {stats['source']['package']} {stats['source']['version']}")
print(
    f"{'split':11s}"
    + "".join(
        f"{k:>12s}" for k in ("documents", "paragraphs", "sentences", "words", "bytes")
    )
)
for split, counts in stats["splits"].items():
    print(f"{split:11s}" + "".join(f"{v:>12,}" for v in counts.values()))

# %% [markdown]
# `load_corpus(name, split)` returns the documents of a split as `Document` objects (an id, the novel's title,
# the chapter number and a list of paragraphs); `Document.sentences()` splits the paragraphs into sentences with a
# simple rule-based splitter. The split rule above is easy to verify on what was loaded:

# %% tags=["nbval-check-output"]
import textwrap
from collections import Counter

from albert_mini import load_corpus
from albert_mini.text.corpus import (
    SPLITS,
    split_of,  # the rule the corpus was built with
)

corpus = {split: load_corpus("austen", split) for split in SPLITS}
for split, documents in corpus.items():
    assert all(split_of(doc.chapter) == split for doc in documents)
    per_novel = Counter(doc.novel for doc in documents)
    novels = ", ".join(f"{n} {t}" for t, n in per_novel.items())
    print(
        textwrap.fill(
            f"{split:10s} {len(documents):3d} chapters: {novels}",
            88,
            subsequent_indent=" " * 11,
        )
    )

first = next(doc for doc in corpus["train"] if doc.novel == "Pride and Prejudice")
print(
    f"\n{first.id}: {first.title}, chapter {first.chapter}, {len(first.paragraphs)} "
    "paragraphs, "
    f"{len(first.sentences())} sentences"
)
print(textwrap.fill("first sentence: " + first.sentences()[0], 88))

# %% [markdown]
# ## The book's tokenizer
#
# ALBERT does not split text into words. It uses **SentencePiece** (Kudo and Richardson, 2018), as XLNet did,
# with a vocabulary of 30,000 **pieces** learned from its training text (the paper, section 4.1): frequent words
# are one piece, rare words a few, and anything can be spelled from single characters. SentencePiece works on raw
# text and makes a space part of the piece that follows it, written `▁` (U+2581), so `the cat` is `▁the ▁cat` and
# decoding is concatenation with `▁` turned back into a space.
#
# The book's tokenizer was trained the same way on the Austen training chapters, with 8,000 pieces, and is
# committed as `data/austen/spiece.model`; `Tokenizer.default()` loads it after checking its sha256. The first
# sentence of the chapter printed above, as pieces and as ids:

# %% tags=["nbval-check-output"]
from albert_mini import Tokenizer

tokenizer = Tokenizer.default()
opening = first.sentences()[0]
pieces = tokenizer.tokenize(opening)
print(
    f"{tokenizer.vocab_size:,} pieces in the vocabulary; {len(pieces)} pieces for "
    f"{len(opening.split())} words:"
)
print(textwrap.fill(" ".join(pieces), 88))
print(textwrap.fill(f"ids: {tokenizer.encode(opening)}", 88))
print(textwrap.fill("decoded: " + tokenizer.decode(tokenizer.encode(opening)), 88))

# %% [markdown]
# The same sentence as the model receives it, between `[CLS]` and `[SEP]` (`albert_mini.book.diagrams.pieces_diagram`):
# every word is one piece (blue, after a space), only the punctuation attaches to the word before it (green), and
# under each piece is the id, the row of the embedding table the model looks up.

# %%
import matplotlib.pyplot as plt

from albert_mini.book.diagrams import pieces_diagram
from albert_mini.paths import save_figure

fig = pieces_diagram(tokenizer, opening)
save_figure(fig, "02_pieces_and_ids.png")
plt.show()

# %% [markdown]
# > **Differs from BERT.** BERT uses WordPiece (30,522 pieces for the uncased English models, 28,996 for the
# > cased ones): text is first split on whitespace and punctuation, then each word is cut greedily into the
# > longest pieces in the vocabulary, continuations marked with `##`. SentencePiece needs no language-specific
# > pre-splitting and marks word *starts* (`▁`) instead of continuations.

# %% [markdown]
# ## ALBERT's preprocessing
#
# Before SentencePiece sees a line, ALBERT normalises it. The English ALBERT models are *uncased*, and they do not
# keep accents. The steps, in order:
#
# 1. TeX-style quotes ` `` ` and `''` become `"`;
# 2. Unicode **NFKD** normalisation: every character is decomposed into its base character plus combining marks
#    (é becomes e + ◌́), and "compatibility" characters are replaced by their plain equivalents (the ligature ﬁ
#    becomes f i, ½ becomes 1⁄2);
# 3. the combining marks are dropped, which removes the accents;
# 4. everything is lower-cased;
# 5. runs of whitespace (tabs, newlines, non-breaking spaces) become one space.

# %% [markdown]
# ### Exercise 1: write the preprocessing
#
# Write `albert_preprocess(text)` with the five steps above, using `unicodedata.normalize` and
# `unicodedata.combining`. The check runs it on strings with accents, ligatures, fractions, odd whitespace and
# TeX quotes, and on Austen sentences.

# %% nbgrader={"grade": false, "grade_id": "albert_preprocess", "locked": false, "schema_version": 3, "solution": true, "task": false}
import unicodedata  # noqa: F401 (your solution uses it)


def albert_preprocess(text):
    """ALBERT's normalisation: quotes, NFKD, no accents, lower case, single spaces."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_albert_preprocess", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_albert_preprocess

check_albert_preprocess(albert_preprocess);

# %% [markdown]
# Strings that tell the steps apart, through the package's `preprocess_text` (yours gives the same):

# %% tags=["nbval-check-output"]
from albert_mini import preprocess_text

tricky = [
    "  Caf\u00e9\t\u00c5NGSTR\u00d6M \n ``quoted''  ",
    "na\u00efve r\u00e9sum\u00e9, \u00c9mile Zo\u00eb",
    # a ligature, a fraction, x plus a combining acute accent
    "\ufb01ne \u00bd x\u0301y",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac and \u00a35,000 a year",
    "\u201cCurly quotes\u201d \u2014 and an em dash",
]
for text in tricky:
    print(f"{text!r:50s} -> {preprocess_text(text)!r}")

# %% [markdown]
# Note what is *not* normalised: curly quotes and the em dash pass through unchanged, because NFKD has no decomposition
# for them. Whether that matters depends on the vocabulary: the Austen text is plain ASCII apart from a single `£` (the
# corpus builder would turn curly quotes into straight ones anyway), so our tokenizer has never seen `“` or `—`, and
# maps them to the unknown id. `albert_mini.text.corpus.load_text_files` normalises them for you when you bring your
# own text.
#
# > **Differs from the reference code.** ALBERT's TensorFlow `preprocess_text` does steps 2-5 only; the
# > replacement of ` `` ` and `''` comes from Hugging Face's `AlbertTokenizer`, which we match. The Austen text
# > contains neither, so the two agree on every sentence of the corpus.

# %% [markdown]
# ## Special ids
#
# Five ids are reserved, in the same place as in every ALBERT model:
#
# | id | piece | used for |
# |---|---|---|
# | 0 | `<pad>` | filling a batch to a common length; attention ignores it |
# | 1 | `<unk>` | a character the vocabulary cannot spell |
# | 2 | `[CLS]` | the first token of every input; its final state feeds the sentence-level heads |
# | 3 | `[SEP]` | the end of each segment |
# | 4 | `[MASK]` | a hidden token, in masked-language-model pretraining |
#
# `[CLS]`, `[SEP]` and `[MASK]` are SentencePiece **control symbols**: they have ids, but the segmenter never
# produces them from text. That is deliberate. If the string "[MASK]" in a book could turn into id 4, text could
# forge structure; only the code that builds model inputs may insert these ids. ALBERT's users met this as a
# surprise (albert#247): with ALBERT's own model the text "[CLS]" comes out as ordinary pieces such as `▁[`
# `CLS` `]`. Our vocabulary never saw a square bracket, so here the brackets even become `<unk>` (id 1). (`<pad>`
# is a control symbol too; `<unk>` has a type of its own.)

# %% tags=["nbval-check-output"]
text = "[CLS] Emma said [MASK] [SEP]"
ids = tokenizer.encode(text)
print(textwrap.fill(f"pieces: {tokenizer.tokenize(text)}", 88))
print("ids:   ", ids)
print("special ids produced from text:", sorted(set(ids) & {2, 3, 4}))
print("is_control(0..4):", [tokenizer.sp.is_control(i) for i in range(5)])
print("special_ids:", sorted(tokenizer.special_ids))

# %% [markdown]
# ## Model inputs: `[CLS] A [SEP] B [SEP]`
#
# ALBERT reads one or two segments at a time. Pretraining always feeds two (the sentence-order task asks about
# their order), and fine-tuning feeds one or two depending on the task. The layout is fixed:
#
# ```
# tokens:          [CLS]  a1 a2 ... [SEP]  b1 b2 ... [SEP]
# token_type_ids:    0     0  0  ...  0     1  1  ...  1
# ```
#
# Token types tell the model which segment a token is in; they index a 2-row embedding table (Chapter 3). The
# first `[SEP]` belongs to A, the last one to B.

# %% [markdown]
# ### Exercise 2: the pair layout
#
# Write `pair_layout(ids_a, ids_b=None)` returning `(input_ids, token_type_ids)` as two lists: `[CLS] A [SEP]`
# for a single segment, `[CLS] A [SEP] B [SEP]` for a pair, with the token types above. Use `CLS_ID` and `SEP_ID`,
# and leave the lists you are given unchanged.

# %% nbgrader={"grade": false, "grade_id": "pair_layout", "locked": false, "schema_version": 3, "solution": true, "task": false}
from albert_mini.specials import CLS_ID, SEP_ID  # noqa: F401 (your solution uses it)


def pair_layout(ids_a, ids_b=None):
    """[CLS] A [SEP] (B [SEP]) and its token types."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_pair_layout", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_pair_layout

check_pair_layout(pair_layout);

# %% [markdown]
# The tokenizer's `encode_pair` builds the same layout, from text or from ids, and adds an attention mask (all
# ones until a batch is padded, below):

# %% tags=["nbval-check-output"]
pair = tokenizer.encode_pair("She was gone.", "He smiled.")
print("pieces:", [tokenizer.id_to_piece(i) for i in pair["input_ids"]])
for key, values in pair.items():
    print(f"{key:15s} {values}")

# %% [markdown]
# ### Truncation
#
# Inputs have a maximum length (512 tokens in the paper, 128 in this book), and the three special tokens count
# towards it. When a pair is too long, which segment loses tokens? ALBERT's fine-tuning code (in
# `classifier_utils.py`, inherited from BERT) removes tokens one at a time from the end of the *longer* segment,
# from B when both are equal. The idea: a token cut from a short segment carries more of its information than one
# cut from a long segment.
#
# ### Exercise 3: longest-first truncation
#
# Write `truncate_longest_first(ids_a, ids_b, max_total)` returning `(a, b)`: while `len(a) + len(b) > max_total`,
# remove the last token of the longer one (of B on a tie). Return new lists and leave `ids_a` and `ids_b` as they
# are: the caller may still need them.

# %% nbgrader={"grade": false, "grade_id": "truncate_longest_first", "locked": false, "schema_version": 3, "solution": true, "task": false}
def truncate_longest_first(ids_a, ids_b, max_total):
    """Cut the longer segment (B on a tie) from its end until both fit in max_total."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_truncate_longest_first", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_truncate_longest_first

check_truncate_longest_first(truncate_longest_first);

# %% [markdown]
# `encode_pair(a, b, max_length=...)` truncates too, but it follows Hugging Face's `truncation="longest_first"`
# (`albert_mini.text.tokenizer.truncate_pair`), so that our inputs equal HF's. The two rules keep the same total and
# almost always the same lengths; they disagree only on which segment keeps the odd token when both have to be
# cut. With the package's version of Exercise 3 (`albert_mini.text.tokenizer.truncate_longest_first`) as ALBERT's
# rule:

# %% tags=["nbval-check-output"]
from albert_mini.text.tokenizer import truncate_longest_first as albert_rule
from albert_mini.text.tokenizer import truncate_pair

for len_a, len_b, budget in [(10, 3, 8), (3, 10, 8), (6, 5, 7), (5, 5, 7), (5, 6, 7)]:
    a, b = list(range(len_a)), list(range(len_b))
    ours = albert_rule(a, b, budget)  # ALBERT's loop, as in Exercise 3
    hf_rule = truncate_pair(a, b, budget)
    print(
        f"A={len_a:2d} B={len_b:2d} budget={budget}: ALBERT's loop keeps "
        f"{len(ours[0])}+{len(ours[1])}, "
        f"HF's longest_first {len(hf_rule[0])}+{len(hf_rule[1])}"
    )
example = tokenizer.encode_pair(opening, "Mr. Bennet made no answer.", max_length=16)
kept = [tokenizer.id_to_piece(i) for i in example["input_ids"]]
print()
print(textwrap.fill(f"max_length=16: {kept}", 88))

# %% [markdown]
# ### Batches and padding
#
# A batch is a rectangle, so shorter rows are padded: `<pad>` (id 0) in `input_ids`, token type 0, and
# `attention_mask` 0, which tells the attention layers to ignore those positions. Calling the tokenizer on lists
# of texts returns `LongTensor`s of shape (B, T), ready for the model:

# %% tags=["nbval-check-output"]
batch = tokenizer(
    ["It is a truth universally acknowledged.", "Yes."], ["She smiled.", "No, indeed."]
)
for key, tensor in batch.items():
    print(f"{key:15s} {tuple(tensor.shape)}")
    print(tensor)

# %% [markdown]
# ## Word starts
#
# The `▁` marker tells where words begin, and Chapter 6 needs exactly that: ALBERT masks whole words, so it must
# know which pieces continue a word. The reference code's rule (`is_word_start`) says a piece **starts a word**
# when it begins with `▁` or `<`, is a single punctuation character, or contains a character other than a-z and
# punctuation (so any piece with a digit starts a word). The tokenizer evaluates the rule once for the whole
# vocabulary into a boolean array, `tokenizer.word_start` (special ids count as word starts):

# %% tags=["nbval-check-output"]
from albert_mini.text.tokenizer import is_word_start

for piece in ["▁the", "ing", ",", "--", "0,000", "▁1", "'", "s"]:
    print(f"{piece!r:9s} starts a word: {is_word_start(piece)}")


def words_of(text: str) -> list[list[str]]:
    """The pieces of `text` grouped into words by `word_start`."""
    words = []
    for piece in tokenizer.tokenize(text):
        if tokenizer.word_start[tokenizer.piece_to_id(piece)] or not words:
            words.append([])
        words[-1].append(piece)
    return words


print()
for word in words_of("Elizabeth's bicycle cost 10,000 pounds--unbelievable!"):
    print(" + ".join(word))
print(
    f"\n{tokenizer.word_start.sum():,} of {tokenizer.vocab_size:,} pieces start a word"
)

# %% [markdown]
# A word that is not in the vocabulary, like *bicycle*, is five pieces but one word: whole-word masking hides all
# five or none. The possessive `'s` is a word of its own. The rule is crude in places: `1` and `0,000` are two
# words because a piece with a digit always starts one, and `--unbelievable` continues `pounds` because `--` is
# not a *single* punctuation character. All masking needs from the rule is never to cut a real word in two.
#
# > **Differs from the reference code.** Our rule is the reference's with one difference in its punctuation set.
# > The official `_is_start_piece` spells its set out by hand, and that set leaves out four of Python's
# > `string.punctuation` characters: the apostrophe and `<`, `=`, `>`. A piece that mixes one of them with other
# > punctuation therefore starts a word there (one of its characters is outside the set) and continues the
# > previous word here (we use all of `string.punctuation`). The cell below finds every such piece in our
# > vocabulary and counts how often they occur in the Austen corpus. We keep our rule: the masking of the
# > committed experiments was computed with it, and a quote mark joined to the word before it is, if anything,
# > the better grouping.

# %% tags=["nbval-check-output"]
import string

import numpy as np

from albert_mini import load_corpus
from albert_mini.text.batches import tokenize_documents

# the reference's own spelling
OFFICIAL_PUNCTUATION = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
print(
    "left out of the reference's set:",
    sorted(set(string.punctuation) - OFFICIAL_PUNCTUATION),
)


def official_word_start(piece: str) -> bool:
    """The reference's `_is_start_piece`, with its own punctuation set."""
    if piece.startswith(("▁", "<")) or piece in OFFICIAL_PUNCTUATION:
        return True
    allowed = set(string.ascii_lowercase) | OFFICIAL_PUNCTUATION
    return not all(c.lower() in allowed for c in piece)


differ = {
    i
    for i in range(5, tokenizer.vocab_size)
    if official_word_start(tokenizer.id_to_piece(i))
    != is_word_start(tokenizer.id_to_piece(i))
}
print(
    "pieces the two rules disagree on:",
    [tokenizer.id_to_piece(i) for i in sorted(differ)],
)
counts, total = 0, 0
for split in ("train", "validation", "test"):
    streams = tokenize_documents(load_corpus("austen", split), tokenizer).streams
    total += sum(len(stream) for stream in streams)
    counts += sum(int(np.isin(stream, list(differ)).sum()) for stream in streams)
print(f"their occurrences in the Austen corpus: {counts:,} of {total:,} tokens")

# %% [markdown]
# ## Summary
#
# - The book's corpus is Austen's six novels from the Debian package `r-cran-janeaustenr`: 269 chapters split by
#   chapter (train 220, validation 25, test 24), rebuilt byte for byte by `albert-mini corpus`
#   and sha256-checked on every load.
# - ALBERT's preprocessing lower-cases, strips accents through NFKD and collapses whitespace; characters it does not
#   normalise (curly quotes, dashes) must be in the vocabulary or become `<unk>`.
# - ALBERT tokenizes with SentencePiece; `▁` marks a preceding space, and a rare word is several pieces. The book's
#   tokenizer has 8,000 pieces learned from Austen (chapter 10 trains one and measures pieces per word).
# - Ids 0-4 are `<pad>`, `<unk>`, `[CLS]`, `[SEP]`, `[MASK]`; the last three are control symbols that text can
#   never produce (albert#247). Inputs are `[CLS] A [SEP] B [SEP]` with token types 0 then 1, truncated longest
#   first and padded with id 0 and attention mask 0.
# - `word_start` marks the pieces that begin a word by the reference's rule (its punctuation set aside);
#   whole-word masking is built on it.
#
# ## Further reading / pointers
#
# - The paper, Section 4.1 (SentencePiece vocabulary of 30,000, as in XLNet); Kudo and Richardson (2018) for
#   SentencePiece and Kudo (2018) for the unigram model.
# - Code: `albert_mini/text/corpus.py`, `albert_mini/text/tokenizer.py`; the corpus's builder
#   `albert_mini/harness/data/build_austen_corpus.py`; `data/README.md` for its provenance, normalisation and counts.
# - Chapter 10 (appendix), part A: training a SentencePiece model, vocabulary size against pieces per word, and
#   the comparison with Hugging Face's `AlbertTokenizer`.
# - Next: Chapter 3 (`03_factorized_embeddings`), where these ids meet ALBERT's first idea, the factorized
#   embedding table; and Chapter 6 (`06_ngram_masking`) for the masking that uses `word_start`.
