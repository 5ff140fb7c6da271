"""Masked-LM targets: ALBERT's n-gram whole-word masking, and BERT's unigram masking as an option.

Follows `create_masked_lm_predictions` of google-research/albert's `create_pretraining_data.py`
(chapters/REFERENCE_NOTES.md, section 1) with these choices:
- Candidates are whole words: a piece flagged in `word_start` begins a word, the pieces after it continue
  it (`Tokenizer.word_start` follows the reference's rule: a piece starting with U+2581, a punctuation
  character, or a piece with a character outside a-z). Special tokens are never candidates and end a word.
- Budget: min(max_predictions, max(1, round(masked_lm_prob * n_tokens))), where n_tokens counts every token
  of the instance, [CLS] and [SEP] included, as the reference does (padding is added later and not counted).
  `round` is Python's (half to even), as in the reference under Python 3.
- An n-gram is n consecutive words of one segment (it never crosses [SEP]; the reference's may). n <= `ngram`
  is drawn with p(n) proportional to 1/n (6/11, 3/11, 2/11 for n <= 3); near the end of a segment, where
  fewer words remain, p is renormalised over the n that fit. Starts are visited in random order; a span
  shrinks word by word until it fits the remaining budget and is skipped if it overlaps one already taken.
- 80% [MASK], 10% a random token, 10% unchanged, decided per token. Random tokens are drawn from the
  vocabulary without the special ids (the reference draws from the whole vocabulary, [CLS] and <pad> too).
- `ngram=1` gives BERT-style unigram masking: whole words with `whole_word=True`, single pieces with
  `whole_word=False` (original BERT).
Every random choice comes from the numpy Generator passed in; no global RNG is touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..specials import IGNORE_INDEX, MASK_ID

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["Masker", "replace_80_10_10"]


def prediction_budget(n_tokens: int, masked_lm_prob: float = 0.15, max_predictions: int = 20) -> int:
    """The reference's number of tokens to predict: round(masked_lm_prob * n_tokens), at least 1, at most the cap."""
    return min(max_predictions, max(1, round(masked_lm_prob * n_tokens)))


@dataclass(frozen=True, slots=True)
class Span:
    """One masked n-gram: tokens [start, end); `sampled_n` words were drawn, `n` were kept after shrinking."""

    start: int
    end: int
    sampled_n: int
    n: int


@dataclass(frozen=True, slots=True)
class MaskedSequence:
    """An instance after masking: model input, MLM labels, and the spans that were chosen."""

    input_ids: np.ndarray  # (T,) int32
    labels: np.ndarray  # (T,) int32: the original id where predicted, IGNORE_INDEX elsewhere
    spans: tuple[Span, ...]


class Masker:
    """Vocabulary facts computed once (word starts, special ids, replacement pool); masks one sequence per call."""

    def __init__(self, word_start: np.ndarray, special_ids: Iterable[int], mask_id: int, *,
                 masked_lm_prob: float = 0.15, max_predictions: int = 20, ngram: int = 3,
                 whole_word: bool = True, favor_shorter_ngram: bool = True):
        word_start = np.asarray(word_start, dtype=bool)
        if word_start.ndim != 1 or not len(word_start):
            raise ValueError("word_start must be a non-empty 1-D bool array over the vocabulary")
        vocab_size = len(word_start)
        special = np.zeros(vocab_size, dtype=bool)
        for i in special_ids:
            if not 0 <= i < vocab_size:
                raise ValueError(f"special id {i} is outside the vocabulary of {vocab_size}")
            special[i] = True
        if not 0 <= mask_id < vocab_size or not special[mask_id]:
            raise ValueError(f"mask_id {mask_id} must be one of the special ids of the vocabulary")
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob}")
        if max_predictions < 1:
            raise ValueError(f"max_predictions must be >= 1, got {max_predictions}")
        if ngram < 1:
            raise ValueError(f"ngram must be >= 1 (1 = unigram masking), got {ngram}")
        self.vocab_size, self.mask_id = vocab_size, mask_id
        self.masked_lm_prob, self.max_predictions = masked_lm_prob, max_predictions
        self.ngram, self.whole_word, self.favor_shorter_ngram = ngram, whole_word, favor_shorter_ngram
        self.special = special
        self.word_start = word_start if whole_word else np.ones(vocab_size, dtype=bool)  # a piece is a word
        self.replacements = np.flatnonzero(~special).astype(np.int32)  # what a "random token" may be
        if not len(self.replacements):
            raise ValueError("the vocabulary has no ordinary (non-special) token to use as a random replacement")
        weights = 1.0 / np.arange(1, ngram + 1) if favor_shorter_ngram else np.ones(ngram)
        # cumulative[k - 1]: cumulative p(n) over n = 1..k, renormalised for when only k words remain
        self.cumulative = [np.cumsum(weights[:k]) / weights[:k].sum() for k in range(1, ngram + 1)]
        self.ngram_probs = weights / weights.sum()

    @classmethod
    def from_tokenizer(cls, tokenizer, mask_id: int = MASK_ID, **options) -> Masker:
        """A Masker for a `albert_mini.text.tokenizer.Tokenizer` (uses its word_start and special_ids)."""
        return cls(tokenizer.word_start, tokenizer.special_ids, mask_id, **options)

    def describe(self) -> dict:
        """The settings as plain values (what a run stores to check it resumes with the same masking)."""
        return {"masked_lm_prob": self.masked_lm_prob, "max_predictions": self.max_predictions,
                "ngram": self.ngram, "whole_word": self.whole_word, "favor_shorter_ngram": self.favor_shorter_ngram,
                "vocab_size": self.vocab_size, "mask_id": self.mask_id,
                "special_ids": np.flatnonzero(self.special).tolist()}

    def _word_starts(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Two (T,) bool arrays: which tokens are special, and which ordinary tokens begin a word."""
        special = self.special[tokens]
        after_special = np.concatenate([[True], special[:-1]])
        return special, ~special & (self.word_start[tokens] | after_special)  # a special token ends a word

    def word_ids(self, tokens: np.ndarray) -> np.ndarray:
        """The index of the word each token belongs to (words counted from 0), -1 for special tokens."""
        special, starts = self._word_starts(np.asarray(tokens))
        ids = np.cumsum(starts) - 1
        ids[special] = -1
        return ids

    def budget(self, n_tokens: int) -> int:
        """How many tokens to predict in a sequence of n_tokens (specials included)."""
        return prediction_budget(n_tokens, self.masked_lm_prob, self.max_predictions)

    def choose_spans(self, tokens: np.ndarray, rng: np.random.Generator) -> list[Span]:
        """The n-gram spans to predict, in the order they were taken."""
        tokens = np.asarray(tokens)
        if len(tokens) and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in 0..{self.vocab_size - 1} (the vocabulary this Masker was "
                             f"built for), got {tokens.min()}..{tokens.max()}; build it from the same tokenizer")
        special, starts = self._word_starts(tokens)
        word_first = np.flatnonzero(starts)
        if not len(word_first):
            return []
        stops = np.flatnonzero(starts | special)
        word_end = np.append(stops, len(tokens))[np.searchsorted(stops, word_first, side="right")]
        # Words left in the segment from each word on (itself included): a run ends where a special follows.
        run_breaks = np.append(word_end[:-1] != word_first[1:], True)
        run_id = np.concatenate([[0], np.cumsum(run_breaks[:-1])])
        run_last = np.flatnonzero(run_breaks)  # index of the last word of every run
        remaining = run_last[run_id] - np.arange(len(word_first)) + 1
        available = np.minimum(remaining, self.ngram)
        draws = rng.random(len(word_first))
        sampled = np.empty(len(word_first), dtype=np.int64)
        for k in range(1, self.ngram + 1):
            where = available == k
            sampled[where] = np.searchsorted(self.cumulative[k - 1], draws[where], side="right") + 1
        sampled = np.minimum(sampled, available)  # guards draws that land on the top edge in floating point
        order = rng.permutation(len(word_first))

        budget = self.budget(len(tokens))
        first, end, sampled = word_first.tolist(), word_end.tolist(), sampled.tolist()
        covered = bytearray(len(tokens))
        spans, count = [], 0
        for w in order.tolist():
            if count >= budget:
                break
            n = sampled[w]
            while n > 0 and count + end[w + n - 1] - first[w] > budget:  # shrink until it fits
                n -= 1
            if n == 0:
                continue
            start, stop = first[w], end[w + n - 1]
            if any(covered[start:stop]):
                continue
            covered[start:stop] = b"\x01" * (stop - start)
            count += stop - start
            spans.append(Span(start, stop, sampled[w], n))
        return spans

    def __call__(self, tokens: np.ndarray, rng: np.random.Generator) -> MaskedSequence:
        """Mask one sequence: choose spans, then replace each chosen token by [MASK] / random / itself (80/10/10)."""
        tokens = np.asarray(tokens, dtype=np.int32)
        spans = self.choose_spans(tokens, rng)
        positions = np.concatenate([np.arange(s.start, s.end) for s in spans]) if spans else np.zeros(0, np.int64)
        positions.sort()
        labels = np.full(len(tokens), IGNORE_INDEX, dtype=np.int32)
        labels[positions] = tokens[positions]
        input_ids = replace_80_10_10(tokens, positions, rng, self.mask_id, self.replacements)
        return MaskedSequence(input_ids, labels, tuple(spans))


def replace_80_10_10(tokens: np.ndarray, positions: np.ndarray, rng: np.random.Generator, mask_id: int,
                     replacements: np.ndarray) -> np.ndarray:
    """A copy of `tokens` where each token at `positions` becomes [MASK] (p 0.8), a random id drawn from
    `replacements` (p 0.1) or stays itself (p 0.1), decided per token with one uniform draw each."""
    out = np.array(tokens, copy=True)
    u = rng.random(len(positions))
    out[positions[u < 0.8]] = mask_id
    randomized = positions[(u >= 0.8) & (u < 0.9)]
    out[randomized] = replacements[rng.integers(len(replacements), size=len(randomized))]
    return out
