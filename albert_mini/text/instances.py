"""Pretraining instances: pairs of segments for SOP (ALBERT) or NSP (BERT), or single segments for MLM only.

Input is token ids, already tokenized once: a document is a list of sentences, a sentence a list of ids.
Every instance is laid out as `[CLS] A [SEP] B [SEP]` (or `[CLS] A [SEP]` for task "none").

How this differs from `create_pretraining_data.py` of google-research/albert (chapters/REFERENCE_NOTES.md,
section 1), on purpose:
- Segments are cut only at sentence boundaries and nothing is truncated: a chunk holds whole sentences and
  never exceeds `max_seq_len - 3` tokens. The reference truncates after deciding the order, which lets a
  model read the order off surface cues (segment lengths, whether the middle [SEP] follows a full stop).
- A chunk is packed greedily from the start of the document or, with probability 0.5 per document, from its
  end. Packed front to back only, the last sentence of a chunk is the one that had to fit the leftover room,
  so it is shorter on average and B is shorter than A in text order: a probe read the order off the lengths
  58% of the time on Austen. Packing in both directions makes the two ends of a chunk look alike.
- A chunk needs two whole sentences. A sentence that cannot be paired with its neighbour inside the length
  limit (a very long sentence, or the last one of a document) is skipped in this pass. The reference instead
  pairs a one-sentence chunk with a random other document and labels it "swapped", an NSP negative hidden
  inside SOP (albert#234). The price: on Austen one SOP pass uses 88% of the tokens at max_seq_len 128
  (49% at 64, all but 0.1% at 512). Empty sentences and empty documents are skipped.
- The short-sequence target (probability `short_seq_prob`) is drawn per chunk, not once per document.
- NSP: A's extent is drawn before the label and both kinds of B (the true next sentences, or sentences
  from a random other document) grow by the same rule, so B's length does not give the label away either.

Labels: SOP 0 = original order, 1 = swapped; NSP 0 = true next, 1 = B from another document;
task "none" has no sentence label and stores IGNORE_INDEX (-100) (the batch then has no sentence_order_label).
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..choices import SENTENCE_TASK_NAMES
from ..errors import lookup
from ..specials import CLS_ID, IGNORE_INDEX, SEP_ID

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["build_instances"]

SPECIALS_PER_PAIR = 3  # [CLS] A [SEP] B [SEP]
SPECIALS_PER_SINGLE = 2  # [CLS] A [SEP]
# An instance as a row of 7 integers, where its segments lie in the token streams; its tokens are copied out
# only when it is read (`instance_at`), so a pass over any corpus costs 56 bytes per instance.
ROW_FIELDS = ("a_doc", "a_start", "a_end", "b_doc", "b_start", "b_end", "label")  # b_doc -1: no segment B
ROW_MEMO_SIZE = 4  # passes a TokenDocuments keeps, so that counting them and training on them build them once


@dataclass(frozen=True, slots=True)
class Instance:
    """One pretraining sequence before masking, with where its segments came from."""

    tokens: np.ndarray  # (T,) int32: [CLS] A [SEP] B [SEP]
    len_a: int  # tokens in segment A (no specials)
    len_b: int  # tokens in segment B; 0 for task "none"
    label: int  # SOP: 1 = swapped; NSP: 1 = random B; "none": IGNORE_INDEX
    source_a: tuple[int, int, int]  # (document, first token, end token) of A in that document's token stream
    source_b: tuple[int, int, int] | None  # same for B; None for task "none"

    @property
    def token_type_ids(self) -> np.ndarray:
        """0 for [CLS] A [SEP], 1 for B [SEP]."""
        types = np.zeros(len(self.tokens), dtype=np.int32)
        types[self.len_a + 2:] = 1
        return types

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """The token ids of segment A and of segment B, without [CLS] and [SEP] (B is empty for task "none")."""
        return self.tokens[1:1 + self.len_a], self.tokens[2 + self.len_a:2 + self.len_a + self.len_b]


class TokenDocuments:
    """Documents as one token stream each plus sentence boundaries; built once, read by every pass."""

    def __init__(self, documents: Sequence[Sequence[Sequence[int]]]):
        self.streams: list[np.ndarray] = []  # per document: all its tokens in order, int32
        self.boundaries: list[np.ndarray] = []  # per document: sentence start offsets plus the end, int64
        self.lengths: list[list[int]] = []  # per document: sentence lengths as python ints, for the packing loops
        self._rows: dict[tuple, np.ndarray] = {}  # (task, max_seq_len, short_seq_prob, seed) -> rows of a pass
        for doc in documents:
            if isinstance(doc, (str, bytes)) or any(isinstance(s, (str, bytes)) for s in doc):
                raise TypeError("a document must be a list of tokenized sentences (lists of ids), not text; "
                                "tokenize first, e.g. with albert_mini.text.batches.tokenize_documents")
            sentences = [np.asarray(s, dtype=np.int32) for s in doc if len(s)]  # empty sentences are dropped
            lengths = [len(s) for s in sentences]
            self.streams.append(np.concatenate(sentences) if sentences else np.zeros(0, np.int32))
            self.boundaries.append(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]))
            self.lengths.append(lengths)

    def __len__(self) -> int:
        return len(self.streams)

    def num_sentences(self, doc: int) -> int:
        return len(self.lengths[doc])

    def num_tokens(self) -> int:
        return sum(len(s) for s in self.streams)

    def sentence_counts(self) -> np.ndarray:
        """Sentences per document, (D,)."""
        return np.array([len(lengths) for lengths in self.lengths], dtype=np.int64)

    def token_counts(self, vocab_size: int) -> np.ndarray:
        """How often each id occurs, (V,) int64; an id outside the vocabulary is a ValueError."""
        counts = np.zeros(vocab_size, dtype=np.int64)
        for stream in self.streams:
            if len(stream):
                found = np.bincount(stream, minlength=vocab_size)
                if len(found) > vocab_size:
                    raise ValueError(f"token id {len(found) - 1} is outside a vocabulary of {vocab_size}")
                counts += found
        return counts

    def stored_rows(self, key: tuple) -> np.ndarray | None:
        """The rows of a pass built before with these settings, or None."""
        return self._rows.get(key)

    def store_rows(self, key: tuple, rows: np.ndarray) -> np.ndarray:
        """Keep the rows of a pass (the newest ROW_MEMO_SIZE passes); return them."""
        self._rows[key] = rows
        while len(self._rows) > ROW_MEMO_SIZE:
            del self._rows[next(iter(self._rows))]
        return rows


def as_token_documents(documents) -> TokenDocuments:
    """Accept a TokenDocuments or nested lists of ids; nothing else."""
    return documents if isinstance(documents, TokenDocuments) else TokenDocuments(documents)


# ---------------------------------------------------------------------------------------------- packing
def draw_target(max_tokens: int, short_seq_prob: float, rng: random.Random) -> int:
    """Usually fill the sequence; with probability short_seq_prob aim for a random shorter length."""
    return rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens


def grow(lengths: Sequence[int], start: int, target: int, room: int, at_least: int) -> int:
    """End of a run of whole sentences from `start`: it grows until it reaches `target` tokens (and holds
    `at_least` sentences) but never beyond `room` tokens."""
    end, total = start, 0
    while end < len(lengths) and total + lengths[end] <= room and (total < target or end - start < at_least):
        total += lengths[end]
        end += 1
    return end


def pack_chunks(lengths: Sequence[int], max_tokens: int, short_seq_prob: float, min_sentences: int,
                rng: random.Random) -> list[tuple[int, int]]:
    """Group consecutive sentences into chunks `(first, end)` of whole sentences, front to back.

    A chunk grows until it reaches its target length (usually `max_tokens`, sometimes a random shorter
    target) but never beyond `max_tokens`; it takes at least `min_sentences` when they fit. A sentence that
    cannot start such a chunk is skipped.
    """
    chunks, i = [], 0
    while i < len(lengths):
        end = grow(lengths, i, draw_target(max_tokens, short_seq_prob, rng), max_tokens, min_sentences)
        if end - i >= min_sentences:
            chunks.append((i, end))
            i = end
        else:
            i += 1
    return chunks


def pack_chunks_either_way(lengths: Sequence[int], max_tokens: int, short_seq_prob: float, min_sentences: int,
                           rng: random.Random) -> list[tuple[int, int]]:
    """pack_chunks from the front or (probability 0.5) from the back, so neither end is the one cut short."""
    if rng.random() < 0.5:
        return pack_chunks(lengths, max_tokens, short_seq_prob, min_sentences, rng)
    n = len(lengths)
    backward = pack_chunks(list(lengths)[::-1], max_tokens, short_seq_prob, min_sentences, rng)
    return [(n - end, n - first) for first, end in reversed(backward)]


# ---------------------------------------------------------------------------------------------- instances
def pair_tokens(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[CLS] a [SEP] b [SEP] as one int32 array."""
    out = np.empty(len(a) + len(b) + SPECIALS_PER_PAIR, dtype=np.int32)
    out[0] = CLS_ID
    out[1:1 + len(a)] = a
    out[1 + len(a)] = SEP_ID
    out[2 + len(a):-1] = b
    out[-1] = SEP_ID
    return out


def single_tokens(a: np.ndarray) -> np.ndarray:
    """[CLS] a [SEP] as one int32 array."""
    out = np.empty(len(a) + SPECIALS_PER_SINGLE, dtype=np.int32)
    out[0], out[-1] = CLS_ID, SEP_ID
    out[1:-1] = a
    return out


def check_build_arguments(docs: TokenDocuments, task: str, max_seq_len: int, short_seq_prob: float) -> None:
    """Raise ValueError naming the problem and the fix for arguments no instance can come from."""
    pairs = sentence_task(task).pairs
    smallest = 2 + SPECIALS_PER_PAIR if pairs else 1 + SPECIALS_PER_SINGLE
    layout = "[CLS] a [SEP] b [SEP]" if pairs else "[CLS] a [SEP]"
    if max_seq_len < smallest:
        raise ValueError(f"max_seq_len={max_seq_len} cannot hold {layout} with one token per segment; "
                         f"use max_seq_len >= {smallest}")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
    sentence_counts = docs.sentence_counts()
    if not sentence_counts.any():
        raise ValueError("the corpus is empty: no document has a non-empty sentence; pass tokenized documents "
                         "(a list of documents, each a list of sentences, each a list of token ids)")
    if pairs and max(sentence_counts) < 2:
        raise ValueError(f"{task.upper()} needs documents with at least 2 sentences; every document here has "
                         "at most one. Split the text into sentences, or use task='none' for MLM only")
    needed = sentence_task(task).min_documents
    if int((sentence_counts > 0).sum()) < needed:
        raise ValueError(f"{task.upper()} needs at least {needed} non-empty documents to draw a random next segment "
                         "from another document; add documents or use task='sop'")


def build_instances(documents, task: str = "sop", max_seq_len: int = 128, short_seq_prob: float = 0.1,
                    seed: int = 0, allow_empty: bool = False) -> list[Instance]:
    """One pass over the corpus: instances in document order, every random choice drawn from `seed`.

    No instance at all is a ValueError, unless `allow_empty` (for counting what other settings would give).
    """
    docs = as_token_documents(documents)
    rows = instance_rows(docs, task, max_seq_len, short_seq_prob, seed, allow_empty)
    return [instance_at(docs, row) for row in rows]


def instance_rows(documents, task: str = "sop", max_seq_len: int = 128, short_seq_prob: float = 0.1,
                  seed: int = 0, allow_empty: bool = False) -> np.ndarray:
    """`build_instances` as rows (N, 7) int64 (ROW_FIELDS): where each instance's segments lie, and its label.

    The documents keep the rows of their last few passes (a token cache keeps them on disk), so the checks
    that count a pass and the dataset that trains on it build it once."""
    docs = as_token_documents(documents)
    check_build_arguments(docs, task, max_seq_len, short_seq_prob)
    key = (task, int(max_seq_len), float(short_seq_prob), int(seed))
    rows = docs.stored_rows(key)
    if rows is None:
        kind = sentence_task(task)
        flat = kind.build(docs, max_seq_len - (SPECIALS_PER_PAIR if kind.pairs else SPECIALS_PER_SINGLE),
                          short_seq_prob, random.Random(seed))
        rows = docs.store_rows(key, np.frombuffer(flat, dtype=np.int64).reshape(-1, len(ROW_FIELDS)))
    if not len(rows) and not allow_empty:
        raise ValueError(f"no {task.upper()} instance fits in max_seq_len={max_seq_len}: no two consecutive "
                         "sentences fit together; raise max_seq_len or split long sentences")
    return rows


def instance_at(docs: TokenDocuments, row) -> Instance:
    """The Instance a row describes, its tokens copied out of the documents' streams."""
    a_doc, a_start, a_end, b_doc, b_start, b_end, label = (int(x) for x in row)
    a_ids = docs.streams[a_doc][a_start:a_end]
    if b_doc < 0:
        return Instance(single_tokens(a_ids), a_end - a_start, 0, label, (a_doc, a_start, a_end), None)
    b_ids = docs.streams[b_doc][b_start:b_end]
    return Instance(pair_tokens(a_ids, b_ids), a_end - a_start, b_end - b_start, label, (a_doc, a_start, a_end),
                    (b_doc, b_start, b_end))


def row_length(row) -> int:
    """Tokens in the instance a row describes, specials included, without building it."""
    a_len, b_len = int(row[2]) - int(row[1]), int(row[5]) - int(row[4])
    return a_len + b_len + (SPECIALS_PER_PAIR if row[3] >= 0 else SPECIALS_PER_SINGLE)


def _sop_instances(docs: TokenDocuments, max_tokens: int, short_seq_prob: float, rng: random.Random) -> array:
    """Chunks of whole sentences split at a random sentence boundary; the two halves swapped half the time."""
    rows = array("q")
    for doc in range(len(docs)):
        if docs.num_sentences(doc) < 2:
            continue  # nothing to pair inside this document
        bounds = docs.boundaries[doc]
        for first, end in pack_chunks_either_way(docs.lengths[doc], max_tokens, short_seq_prob, 2, rng):
            split = rng.randint(first + 1, end - 1)  # A = sentences [first, split), B = [split, end)
            a = (doc, int(bounds[first]), int(bounds[split]))
            b = (doc, int(bounds[split]), int(bounds[end]))
            label = int(rng.random() < 0.5)
            if label:
                a, b = b, a
            rows.extend((*a, *b, label))
    return rows


def _nsp_instances(docs: TokenDocuments, max_tokens: int, short_seq_prob: float, rng: random.Random) -> array:
    """A grows from a sentence; B grows by the same rule from the next sentence or from another document.

    A's extent is decided before the label, both kinds of B grow by one rule (towards the target, within
    the room A leaves) from a first sentence that fits, so the lengths do not tell the labels apart.
    """
    others = [d for d in range(len(docs)) if docs.num_sentences(d)]
    rows = array("q")
    for doc in range(len(docs)):
        lengths, bounds = docs.lengths[doc], docs.boundaries[doc]
        i = 0
        while i < len(lengths) - 1:  # the last sentence has no true next one
            target = draw_target(max_tokens, short_seq_prob, rng)
            split = grow(lengths, i, rng.randint(1, max(1, target - 1)), max_tokens - 1, 1)
            if split == i or split == len(lengths):  # A does not fit, or A ends the document
                i += 1
                continue
            a = (doc, int(bounds[i]), int(bounds[split]))
            room = max_tokens - (a[2] - a[1])
            if lengths[split] > room:  # the true next sentence does not fit: skip before drawing the label
                i += 1
                continue
            target_b = max(1, target - (a[2] - a[1]))
            label = int(rng.random() < 0.5)
            if label:
                b = _random_segment(docs, others, doc, target_b, room, rng)
                next_i = split  # the true next sentences were not used: the next chunk starts with them
            else:
                b_end = grow(lengths, split, target_b, room, 1)
                b = (doc, int(bounds[split]), int(bounds[b_end]))
                next_i = b_end
            rows.extend((*a, *b, label))
            i = next_i
    return rows


def _random_segment(docs: TokenDocuments, others: list[int], doc: int, target: int, room: int,
                    rng: random.Random, attempts: int = 10_000) -> tuple[int, int, int]:
    """Whole sentences from a random other document, starting at a random sentence that fits in `room`,
    grown like a true next segment."""
    for _ in range(attempts):
        other = others[rng.randrange(len(others))]
        if other == doc:
            continue
        lengths, bounds = docs.lengths[other], docs.boundaries[other]
        first = rng.randrange(len(lengths))
        if lengths[first] <= room:
            return other, int(bounds[first]), int(bounds[grow(lengths, first, target, room, 1)])
    raise ValueError(f"found no sentence of at most {room} tokens in another document after {attempts} tries; "
                     "raise max_seq_len or split long sentences")


def _single_segment_instances(docs: TokenDocuments, max_tokens: int, short_seq_prob: float,
                              rng: random.Random) -> array:
    """Task "none": chunks of whole sentences; a sentence longer than the limit is first cut into windows."""
    rows = array("q")
    for doc in range(len(docs)):
        if not docs.num_sentences(doc):
            continue
        # With no sentence task there is no order to leak, so cutting inside a long sentence is harmless.
        cuts = [np.arange(start, end, max_tokens) for start, end in zip(docs.boundaries[doc][:-1],
                                                                         docs.boundaries[doc][1:])]
        bounds = np.concatenate(cuts + [docs.boundaries[doc][-1:]])
        for first, end in pack_chunks(np.diff(bounds).tolist(), max_tokens, short_seq_prob, 1, rng):
            rows.extend((doc, int(bounds[first]), int(bounds[end]), -1, 0, 0, IGNORE_INDEX))
    return rows


# ---------------------------------------------------------------------------------------------- the sentence tasks
@dataclass(frozen=True)
class SentenceTask:
    """A sentence-level pretraining task beside MLM: how one pass over the corpus builds its instances.

    `build(docs, max_tokens, short_seq_prob, rng)` returns the instances as flat rows (ROW_FIELDS), where
    max_tokens is what the segments may hold once the special tokens are counted. `pairs`: `[CLS] A [SEP] B [SEP]`
    with a sentence label, else one segment and no label (the model's pooler and sentence head then get no gradient).
    """

    name: str
    build: Callable[[TokenDocuments, int, float, random.Random], array]
    pairs: bool
    min_documents: int  # non-empty documents a pass needs
    description: str

    @property
    def labelled(self) -> bool:
        """Whether batches carry a sentence_order_label."""
        return self.pairs


# Adding a sentence task: write its `build` function above, name it in SENTENCE_TASK_NAMES (albert_mini/choices.py,
# where the command line reads the names without numpy) and register it here under that name; the CLI, the data
# pipeline, the pretraining recipe and the experiments read this table.
_SOP, _NSP, _NONE = SENTENCE_TASK_NAMES
SENTENCE_TASKS: dict[str, SentenceTask] = {
    _SOP: SentenceTask(_SOP, _sop_instances, pairs=True, min_documents=1,
                       description="sentence-order prediction (ALBERT): two consecutive segments, half swapped"),
    _NSP: SentenceTask(_NSP, _nsp_instances, pairs=True, min_documents=2,
                       description="next-sentence prediction (BERT): B follows A, or comes from another document"),
    _NONE: SentenceTask(_NONE, _single_segment_instances, pairs=False, min_documents=1,
                        description="MLM only: single segments, no sentence label"),
}


def sentence_task(name: str) -> SentenceTask:
    """The registered sentence task `name`; an unknown name is an error that lists the known ones."""
    return lookup(SENTENCE_TASKS, name, "task")
