"""Sentence-order scores that separate the cue from the skill: the quote strata and the no-network baselines.

On the Austen pairs a double quotation mark gives much of the order away: a segment that ends inside a quotation
is followed by one that starts inside it. So every SOP accuracy is reported on all pairs and on two strata, the
pairs whose segments hold a `"` ("quote") and those that hold none ("no_quote"), with pair counts and Wilson
intervals, and beside it what a reader with no network gets on the same pairs:

- the majority label of the training pairs;
- the quote-state rule (`quote_state_rule`): no training at all, it reads whether each segment starts and ends
  inside a quotation and answers only where exactly one order is consistent;
- a logistic regression on surface features of the pair (`surface_features`: lengths, quotation marks at the
  edges, their parity, pronoun and conjunction openers, capitals, chapter starts), fitted on training pairs;
- for NSP, the topic features of chapter 5 (`TopicModel`: word overlap, tf-idf cosine, same-novel probability).

A pair is described by a `PairText` (its two segments decoded, in the order shown to the model, plus what the
token ids no longer say: the tokenizer lower-cases, so capitals come from the source sentences). Labels follow
`albert_mini.text.instances`: SOP 0 = in order, 1 = swapped; NSP 0 = B continues A, 1 = B from elsewhere.
The definitions were fixed before the runs they score (the pre-registered analysis of SOP's plateau).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .leak_probe import fit_logistic_regression, type_overlap
from .stats import wilson_interval

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["PairText", "SURFACE_FEATURES", "TopicModel", "pair_texts", "quote_state_rule", "quote_states",
           "quote_strata", "rule_correctness", "stratified", "surface_features", "surface_regression"]

QUOTE = '"'
# Words that open a segment which leans on what came before (a pronoun's referent, a conjunction's first half).
LEANING_OPENERS = frozenset("he she it they his her their him them its this that these those i we you "
                            "but and yet so then for or nor".split())
SURFACE_FEATURES = (
    "len_a", "len_b", "len_a_minus_len_b", "sentences_a_minus_b",
    "a_starts_with_quote", "b_starts_with_quote", "a_ends_with_quote", "b_ends_with_quote",
    "a_quote_parity", "b_quote_parity", "quote_on_both_sides_of_junction",
    "a_opens_with_pronoun_or_conjunction", "b_opens_with_pronoun_or_conjunction",
    "a_first_word_capitalised", "b_first_word_capitalised", "pair_starts_its_chapter")


@dataclass(frozen=True)
class PairText:
    """One sentence pair as a reader without a network sees it: A and B in the order the model gets them."""

    a: str  # segment A decoded (lower-cased, as the tokenizer leaves it)
    b: str
    tokens_a: int  # word pieces in A
    tokens_b: int
    sentences_a: int
    sentences_b: int
    a_capitalised: bool = False  # whether A's first word starts with a capital letter in the source text
    b_capitalised: bool = False
    starts_chapter: bool = False  # whether either segment begins at its chapter's first token

    @property
    def has_quote(self) -> bool:
        return QUOTE in self.a or QUOTE in self.b


def _first_word_capitalised(sentence: str) -> bool:
    """Whether the first letter of a sentence, past any opening quotes or brackets, is a capital."""
    letters = sentence.lstrip("\"'([ \u2018\u201c-")
    return bool(letters) and letters[0].isupper()


def _sentence_span(bounds: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """(index of the first sentence, number of sentences) of a segment [start, end) cut at sentence boundaries."""
    first = int(np.searchsorted(bounds, start, side="right")) - 1
    last = int(np.searchsorted(bounds, end, side="left"))
    return first, last - first


def pair_texts(instances, token_documents, tokenizer, sentences: Sequence[Sequence[str]] | None = None
               ) -> list[PairText]:
    """A PairText per instance of `albert_mini.text.instances` built from `token_documents` (a TokenDocuments).

    `sentences`, when given, holds each document's source sentences aligned with its tokenized ones (empty ones
    left out), for the capitals the lower-casing tokenizer drops; without it no first word counts as capitalised.
    """
    if sentences is not None and [len(s) for s in sentences] != [token_documents.num_sentences(d)
                                                                  for d in range(len(token_documents))]:
        raise ValueError("`sentences` must hold, per document, the source sentences of its tokenized sentences "
                         "(empty ones left out), in order")
    out = []
    for x in instances:
        spans = [x.source_a, x.source_b]
        counts, capitals = [], []
        for doc, start, end in spans:
            first, count = _sentence_span(token_documents.boundaries[doc], start, end)
            counts.append(count)
            capitals.append(sentences is not None and _first_word_capitalised(sentences[doc][first]))
        a, b = x.segments()
        out.append(PairText(tokenizer.decode(a), tokenizer.decode(b), int(x.len_a), int(x.len_b), counts[0],
                            counts[1], capitals[0], capitals[1], min(x.source_a[1], x.source_b[1]) == 0))
    return out


# ---------------------------------------------------------------------------------------------- the strata
def quote_strata(pairs: Sequence[PairText]) -> dict[str, np.ndarray]:
    """Boolean masks over `pairs`: "quote" (either segment holds a `"`) and "no_quote" (neither does)."""
    quote = np.array([p.has_quote for p in pairs], dtype=bool)
    return {"quote": quote, "no_quote": ~quote}


def _score(correct: np.ndarray) -> dict:
    """Pairs, pairs right (half credit counts half), accuracy and the 95% Wilson interval (None for no pairs)."""
    n, right = len(correct), float(correct.sum())
    if n == 0:
        return {"pairs": 0, "correct": 0.0, "accuracy": None, "wilson": None}
    return {"pairs": n, "correct": right, "accuracy": right / n, "wilson": list(wilson_interval(right, n))}


def stratified(correct, strata: dict[str, np.ndarray]) -> dict[str, dict]:
    """Accuracy on all pairs and on each stratum, with counts and Wilson intervals.

    `correct` is per pair: 0/1, booleans or a string of "0"/"1" (how the experiments store a score), or 0.5 for
    an abstention. With half credits the interval treats them as half a success each: a reading aid, not an
    exact binomial interval."""
    values = np.array([c == "1" for c in correct] if isinstance(correct, str) else correct, dtype=float)
    out = {"all": _score(values)}
    for name, mask in strata.items():
        if len(mask) != len(values):
            raise ValueError(f"stratum {name!r} has {len(mask)} pairs, the score {len(values)}")
        out[name] = _score(values[mask])
    return out


# ---------------------------------------------------------------------------------------------- the quote-state rule
def quote_states(text: str) -> tuple[str | None, str | None]:
    """(start state, end state) of a segment: "inside" or "outside" a quotation, None without a quotation mark.

    A `"` opens a quotation when it starts the text or follows whitespace, else it closes one. A segment starts
    inside a quotation if its first mark closes, and ends inside if its last mark opens."""
    marks = [i == 0 or text[i - 1].isspace() for i, c in enumerate(text) if c == QUOTE]  # True: opening
    if not marks:
        return None, None
    return ("outside" if marks[0] else "inside"), ("inside" if marks[-1] else "outside")


def _follows(first: str, second: str) -> bool | None:
    """Can `second` follow `first` in the book? None when either side has no state to compare."""
    end, start = quote_states(first)[1], quote_states(second)[0]
    return None if end is None or start is None else end == start


def quote_state_rule(pair: PairText) -> int | None:
    """0 (in order), 1 (swapped) or None (abstain), from the quotation state at the junction.

    In the book the earlier segment's end state equals the later one's start state. The rule answers only when
    one order is consistent and the other is not, both checked (every state on the four sides defined);
    otherwise it abstains."""
    forward, backward = _follows(pair.a, pair.b), _follows(pair.b, pair.a)
    if forward is True and backward is False:
        return 0
    if forward is False and backward is True:
        return 1
    return None


def rule_correctness(pairs: Sequence[PairText], labels) -> np.ndarray:
    """Per pair: 1 right, 0 wrong, 0.5 abstained (an abstention is a coin flip, scored as half right)."""
    answers = [quote_state_rule(p) for p in pairs]
    return np.array([0.5 if a is None else float(a == int(y)) for a, y in zip(answers, labels)])


# ---------------------------------------------------------------------------------------------- surface features
def _opening_word(text: str) -> str:
    words = text.lstrip("\"'([ -").split()
    return words[0].strip(".,;:!?\"'()-") if words else ""


def surface_features(pairs: Sequence[PairText]) -> np.ndarray:
    """(N, 16) float array, columns SURFACE_FEATURES: what a pair's surface says without any model of language."""
    rows = []
    for p in pairs:
        a, b = p.a.strip(), p.b.strip()
        rows.append((
            p.tokens_a, p.tokens_b, p.tokens_a - p.tokens_b, p.sentences_a - p.sentences_b,
            a.startswith(QUOTE), b.startswith(QUOTE), a.endswith(QUOTE), b.endswith(QUOTE),
            a.count(QUOTE) % 2, b.count(QUOTE) % 2, a.endswith(QUOTE) and b.startswith(QUOTE),
            _opening_word(a) in LEANING_OPENERS, _opening_word(b) in LEANING_OPENERS,
            p.a_capitalised, p.b_capitalised, p.starts_chapter))
    return np.asarray(rows, dtype=np.float64)


def surface_regression(train: Sequence[PairText], train_labels, test: Sequence[PairText]) -> np.ndarray:
    """Predicted labels of `test` from a logistic regression on standardised surface features fitted on `train`
    (the Newton fit of study.leak_probe)."""
    predict = fit_logistic_regression(surface_features(train), np.asarray(train_labels, dtype=np.float64))
    return predict(surface_features(test))


# ---------------------------------------------------------------------------------------------- NSP's topic cue
class TopicModel:
    """Chapter 5's three topic features of a pair, fitted on training chapters: B's word-type overlap with A, the
    tf-idf cosine of A and B, and the probability that A and B come from the same novel (add-one unigram models
    per novel). None of them looks at order, so they read NSP's topic cue and nothing of SOP's."""

    def __init__(self, token_documents, novels: Sequence[str], vocab_size: int):
        if len(novels) != len(token_documents):
            raise ValueError(f"one novel per document: got {len(novels)} for {len(token_documents)} documents")
        doc_freq = np.zeros(vocab_size)
        names = sorted(set(novels))
        counts = np.ones((len(names), vocab_size))  # add-one smoothing
        for stream, novel in zip(token_documents.streams, novels):
            doc_freq[np.unique(stream)] += 1
            counts[names.index(novel)] += np.bincount(stream, minlength=vocab_size)
        self.vocab_size = vocab_size
        self.idf = np.log(len(token_documents) / (1 + doc_freq))  # rare tokens (names, places) weigh most
        self.log_p = np.log(counts / counts.sum(1, keepdims=True))  # (novels, V)

    def novel_posterior(self, ids: np.ndarray) -> np.ndarray:
        """p(novel | segment) under the per-novel unigram models, uniform prior."""
        log_likelihood = self.log_p[:, ids].sum(1)
        p = np.exp(log_likelihood - log_likelihood.max())
        return p / p.sum()

    def features(self, instances) -> np.ndarray:
        """(N, 3): overlap, tf-idf cosine, same-novel probability of each instance's segments."""
        rows = []
        for x in instances:
            a, b = x.segments()
            wa = np.bincount(a, minlength=self.vocab_size) * self.idf
            wb = np.bincount(b, minlength=self.vocab_size) * self.idf
            norm = np.linalg.norm(wa) * np.linalg.norm(wb)
            cosine = float(wa @ wb / norm) if norm > 0 and math.isfinite(norm) else 0.0
            rows.append((type_overlap(a, b), cosine, float(self.novel_posterior(a) @ self.novel_posterior(b))))
        return np.asarray(rows, dtype=np.float64)

    def regression(self, train, train_labels, test) -> np.ndarray:
        """Predicted labels of `test` instances from a logistic regression on the three features, fitted on
        `train` instances."""
        predict = fit_logistic_regression(self.features(train), np.asarray(train_labels, dtype=np.float64))
        return predict(self.features(test))
