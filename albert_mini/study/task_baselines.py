"""How far the fine-tuning tasks go without a network: one counting baseline per shipped task, scored on its test
split, to read the fine-tuned scores against (chapter 8, chapter 10, `data/results/finetune.json`).

- polarity: multinomial naive Bayes with add-one smoothing on lower-cased words;
- austen-mc: the option that shares the most distinct words with the passage;
- austen-span: the question read as a pattern (`___` = one word) and looked up in the context.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from ..tasks.registry import get_task
from ..tasks.squad_metrics import squad_scores

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["copy_matcher", "naive_bayes_predictions", "overlap_predictions"]


def naive_bayes_predictions(train, test) -> list[int]:
    """Multinomial naive Bayes with add-one smoothing on lower-cased words: a label per test example."""
    counts = [Counter(), Counter()]
    for e in train:
        counts[e.label].update(e.text_a.lower().split())
    vocabulary = set(counts[0]) | set(counts[1])
    priors = np.log(np.bincount([e.label for e in train], minlength=2) / len(train))
    totals = [sum(c.values()) + len(vocabulary) for c in counts]
    predictions = []
    for e in test:
        scores = [priors[k] + sum(math.log((counts[k][w] + 1) / totals[k]) for w in e.text_a.lower().split()
                                  if w in vocabulary) for k in (0, 1)]
        predictions.append(int(np.argmax(scores)))
    return predictions


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def overlap_predictions(examples) -> list[int]:
    """The option sharing the most distinct lower-cased words with the passage (the first one on ties)."""
    return [int(np.argmax([len(_words(o) & _words(e.passage)) for o in e.options])) for e in examples]


def copy_matcher(example) -> str:
    """The word of the context where the question, read as a pattern with `___` as one word, matches."""
    pattern = re.escape(example.question).replace("___", r"(\w+)")
    found = re.search(pattern, example.context)
    return found.group(1) if found else ""


def _bits(right: list[bool]) -> str:
    return "".join("1" if r else "0" for r in right)


def task_baselines() -> dict[str, dict]:
    """Each shipped task's counting baseline on its whole test split: its name, score and per-example correctness
    (a string of 0/1 in test order, the form the experiments store for paired tests)."""
    polarity, mc, span = get_task("polarity"), get_task("austen-mc"), get_task("austen-span")
    test = polarity.load("test")
    right = [p == e.label for p, e in zip(naive_bayes_predictions(polarity.load("train"), test), test)]
    out = {"polarity": {"method": "naive Bayes on a bag of words", "accuracy": float(np.mean(right)),
                        "n": len(test), "correct": _bits(right)}}
    test = mc.load("test")
    right = [p == e.answer for p, e in zip(overlap_predictions(test), test)]
    out["austen-mc"] = {"method": "the option with the most words in common with the passage",
                        "accuracy": float(np.mean(right)), "n": len(test), "correct": _bits(right)}
    test = span.load("test")
    scores = squad_scores({e.id: copy_matcher(e) for e in test}, test)
    out["austen-span"] = {"method": "the question as a pattern, matched in the context",
                          "exact_match": scores["exact_match"], "f1": scores["f1"], "n": len(test)}
    return out
