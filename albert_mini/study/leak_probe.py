"""Can the sentence-order label be read off the surface of an instance? A probe with no network.

Features per instance: length of A, length of B, their difference, and whether A and B each end like a
sentence (a piece ending in . ! or ?, closing quotes allowed after it). A logistic regression and the best
single-feature threshold (a decision stump) are fitted on half the instances and scored on the other half:
about 50% means the cues carry no label signal. `reference_style_instances` rebuilds SOP pairs the way the
reference `create_pretraining_data.py` does (truncate after the swap), so the chapter can show the leak.
`type_overlap` is the first of chapter 5's topic features (the NSP shortcut), which ignore order altogether.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from ..text.instances import SPECIALS_PER_PAIR, Instance, as_token_documents, pair_tokens

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["FEATURE_NAMES", "fit_logistic_regression", "probe_order_leak", "reference_style_instances",
           "sentence_end_pieces", "surface_features", "type_overlap"]

SENTENCE_FINAL = ".!?"
CLOSERS = "\"')]\u2019\u201d"  # may follow the final punctuation: ." or ?' or .)
FEATURE_NAMES = ("len_a", "len_b", "len_a_minus_len_b", "a_ends_sentence", "b_ends_sentence")


def sentence_end_pieces(tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """Two bool arrays over the vocabulary: pieces that end a sentence, and pieces made only of closers."""
    final = np.zeros(tokenizer.vocab_size, dtype=bool)
    closing = np.zeros(tokenizer.vocab_size, dtype=bool)
    for i in range(tokenizer.vocab_size):
        text = tokenizer.id_to_piece(i).replace("\u2581", "")
        core = text.rstrip(CLOSERS)
        final[i] = bool(core) and core[-1] in SENTENCE_FINAL
        closing[i] = bool(text) and not core
    return final, closing


def ends_sentence(segment: np.ndarray, final: np.ndarray, closing: np.ndarray) -> bool:
    """Does the last piece, looking through closing quotes and brackets, end a sentence?"""
    for token in segment[::-1]:
        if not closing[token]:
            return bool(final[token])
    return False


def surface_features(instances: Sequence[Instance], final: np.ndarray, closing: np.ndarray) -> np.ndarray:
    """(N, 5) float array of FEATURE_NAMES."""
    rows = []
    for inst in instances:
        a, b = inst.segments()
        rows.append((inst.len_a, inst.len_b, inst.len_a - inst.len_b,
                     ends_sentence(a, final, closing), ends_sentence(b, final, closing)))
    return np.asarray(rows, dtype=np.float64)


def type_overlap(tokens_a, tokens_b) -> float:
    """The fraction of B's distinct tokens (its word types) that also occur in A; 0.0 for an empty B.

    A topic feature that ignores order (chapter 5's NSP shortcut): swapping A and B changes it only through the
    denominator, B's vocabulary.
    """
    types_b = set(int(t) for t in tokens_b)
    if not types_b:
        return 0.0
    return len(types_b & set(int(t) for t in tokens_a)) / len(types_b)


def fit_logistic_regression(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 30):
    """Newton's method on standardized features; returns a predict function giving 0/1."""
    mean, std = x.mean(0), x.std(0) + 1e-12

    def design(v):
        return np.hstack([(v - mean) / std, np.ones((len(v), 1))])  # (N, F + 1)

    xd = design(x)
    w = np.zeros(xd.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-xd @ w))
        gradient = xd.T @ (p - y) + l2 * w
        hessian = (xd * (p * (1 - p))[:, None]).T @ xd + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return lambda v: (design(v) @ w > 0).astype(int)


def fit_stump(x: np.ndarray, y: np.ndarray):
    """The single feature, threshold and direction with the best training accuracy; returns a predict function."""
    best = (-1.0, 0, 0.0, 1)  # (accuracy, feature, threshold, sign)
    for f in range(x.shape[1]):
        order = np.argsort(x[:, f], kind="stable")
        values, labels = x[order, f], y[order]
        ones_left = np.concatenate([[0], np.cumsum(labels)])  # positives at or below each cut
        left = np.arange(len(values) + 1)
        # Predict 1 above the cut: correct = zeros on the left + ones on the right.
        correct_up = (left - ones_left) + (labels.sum() - ones_left)
        valid = np.concatenate([[True], values[1:] != values[:-1], [True]])  # cut only between distinct values
        for sign, correct in ((1, correct_up), (-1, len(values) - correct_up)):
            k = int(np.argmax(np.where(valid, correct, -1)))
            if correct[k] / len(values) > best[0]:
                threshold = values[k - 1] if k > 0 else -np.inf  # predict "above" for x > values[k-1]
                best = (correct[k] / len(values), f, threshold, sign)
    _, f, threshold, sign = best
    return lambda v: ((v[:, f] > threshold) == (sign == 1)).astype(int)


def probe_order_leak(instances: Sequence[Instance], final: np.ndarray, closing: np.ndarray, seed: int = 0,
                     test_fraction: float = 0.5) -> dict[str, float]:
    """Held-out accuracy of a logistic regression and of a decision stump predicting the label from the surface."""
    if len(instances) < 100:
        raise ValueError(f"the probe needs at least 100 instances to say anything, got {len(instances)}")
    x = surface_features(instances, final, closing)
    y = np.array([inst.label for inst in instances], dtype=np.float64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    results = {"n_train": len(train), "n_test": len(test), "label_mean": float(y.mean())}
    for name, fit in (("logistic", fit_logistic_regression), ("stump", fit_stump)):
        predict = fit(x[train], y[train])
        results[name] = float((predict(x[test]) == y[test]).mean())
    return results


# ---------------------------------------------------------------------------------------------- the leaky recipe
def reference_style_instances(documents, max_seq_len: int = 128, short_seq_prob: float = 0.1,
                              seed: int = 0) -> list[Instance]:
    """SOP pairs built the reference way: chunks overshoot their target, the order is decided, then truncated.

    Also keeps the reference's one-sentence-chunk rule: such a chunk gets B from a random other document and
    label 1 (albert#234). For demonstrating the leak only; use `instances.build_instances` for training.
    """
    docs = as_token_documents(documents)
    rng = random.Random(seed)
    max_tokens = max_seq_len - SPECIALS_PER_PAIR
    instances = []
    for doc in range(len(docs)):
        bounds, n = docs.boundaries[doc], docs.num_sentences(doc)
        target = rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens  # once per document
        first, i = 0, 0
        while i < n:
            if i == n - 1 or bounds[i + 1] - bounds[first] >= target:
                end = i + 1
                split = rng.randint(first + 1, end - 1) if end - first >= 2 else end
                a = [doc, int(bounds[first]), int(bounds[split])]
                if end - first == 1:  # one sentence: an NSP negative inside SOP
                    b = _reference_random_segment(docs, doc, target - (a[2] - a[1]), rng)
                    label = 1
                else:
                    b = [doc, int(bounds[split]), int(bounds[end])]
                    label = int(rng.random() < 0.5)
                    if label:
                        a, b = b, a
                _truncate_pair(a, b, max_tokens, rng)
                a_ids, b_ids = docs.streams[a[0]][a[1]:a[2]], docs.streams[b[0]][b[1]:b[2]]
                if len(a_ids) and len(b_ids):
                    instances.append(Instance(pair_tokens(a_ids, b_ids), len(a_ids), len(b_ids), label,
                                              tuple(a), tuple(b)))
                first = end
            i += 1
    return instances


def _reference_random_segment(docs, doc: int, target: int, rng: random.Random) -> list[int]:
    """Sentences from a random document (another one when 10 tries find it) until `target` tokens are reached."""
    other = doc
    for _ in range(10):
        other = rng.randrange(len(docs))
        if other != doc and docs.num_sentences(other):
            break
    bounds = docs.boundaries[other]
    if len(bounds) < 2:
        return [other, 0, 0]
    first = rng.randrange(len(bounds) - 1)
    end = first + 1
    while end < len(bounds) - 1 and bounds[end] - bounds[first] < target:
        end += 1
    return [other, int(bounds[first]), int(bounds[end])]


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: random.Random) -> None:
    """Trim the longer span, from the front or the back at random, until both fit (in place)."""
    while (a[2] - a[1]) + (b[2] - b[1]) > max_tokens:
        longer = a if a[2] - a[1] > b[2] - b[1] else b
        if rng.random() < 0.5:
            longer[1] += 1
        else:
            longer[2] -= 1
