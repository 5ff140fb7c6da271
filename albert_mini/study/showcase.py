"""What a pretrained model does on held-out text: fill in masked words, judge sentence order, with honest intervals.

Chapter 7 shows the shipped classroom model with these; they work for any AlbertForPreTraining and tokenizer.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

import numpy as np
import torch

from ..model.albert import AlbertForPreTraining
from ..specials import MASK_ID
from ..text.batches import tokenize_documents
from ..text.corpus import load_corpus
from ..text.instances import Instance, build_instances
from ..text.padding import pad_batch
from ..text.tokenizer import WORD_BOUNDARY, Tokenizer
from .sop_strata import PairText, pair_texts
from .stats import wilson_interval

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["fill_mask", "held_out_clozes", "held_out_pair_texts", "held_out_pairs", "p_in_order", "pair_text",
           "sop_accuracy", "swapped"]


@functools.cache
def documents(split: str):
    """An Austen split tokenized with the committed tokenizer, once per process."""
    return tokenize_documents(load_corpus("austen", split), Tokenizer.default())


@dataclass
class Cloze:
    """A held-out sentence with one whole word (a single piece) replaced by [MASK]."""

    ids: list[int]  # [CLS] sentence [SEP], with MASK_ID at `position`
    position: int
    answer: str
    text: str  # the sentence with the word shown as [MASK]


def word(tokenizer, piece_id: int) -> str:
    """A piece as a reader sees it: without SentencePiece's word-boundary mark."""
    return tokenizer.id_to_piece(int(piece_id)).replace(WORD_BOUNDARY, "")


def held_out_clozes(tokenizer, count: int = 4, seed: int = 0, split: str = "validation",
                    min_pieces: int = 10, max_pieces: int = 30) -> list[Cloze]:
    """`count` sentences of a held-out split, each with one alphabetic whole word of >= 3 letters masked."""
    docs = documents(split)
    rng = random.Random(seed)
    sentences = [docs.streams[d][docs.boundaries[d][s]:docs.boundaries[d][s + 1]]
                 for d in range(len(docs)) for s in range(docs.num_sentences(d))]
    chosen: list[Cloze] = []
    for index in rng.sample(range(len(sentences)), len(sentences)):
        pieces = [int(t) for t in sentences[index]]
        if not min_pieces <= len(pieces) <= max_pieces:
            continue
        words = [i for i in range(len(pieces) - 1)
                 if tokenizer.word_start[pieces[i]] and tokenizer.word_start[pieces[i + 1]]
                 and word(tokenizer, pieces[i]).isalpha() and len(word(tokenizer, pieces[i])) >= 3]
        if not words:
            continue
        i = rng.choice(words)
        text = tokenizer.decode(pieces[:i]) + " [MASK] " + tokenizer.decode(pieces[i + 1:])
        ids = [tokenizer.cls_id, *pieces[:i], MASK_ID, *pieces[i + 1:], tokenizer.sep_id]
        chosen.append(Cloze(ids, i + 1, word(tokenizer, pieces[i]), " ".join(text.split())))
        if len(chosen) == count:
            break
    return chosen


@torch.no_grad()
def fill_mask(model: AlbertForPreTraining, tokenizer, cloze: Cloze, top: int = 5) -> list[tuple[str, float]]:
    """The model's `top` guesses for the masked word, with their probabilities."""
    model.eval()
    ids = torch.tensor([cloze.ids])
    logits = model(ids, torch.ones_like(ids), torch.zeros_like(ids)).mlm_logits[0, cloze.position]  # (V,)
    probs = logits.softmax(-1)
    best = probs.topk(top)
    return [(word(tokenizer, i), float(p)) for p, i in zip(best.values, best.indices)]


# ---------------------------------------------------------------------------------------------- sentence order
def held_out_pairs(seq_len: int = 128, splits=("validation", "test"), seed: int = 1) -> list[Instance]:
    """Every SOP pair of the held-out chapters (about half swapped), drawn with `seed`."""
    return [x for split in splits for x in build_instances(documents(split), "sop", seq_len, seed=seed)]


def held_out_pair_texts(seq_len: int = 128, splits=("validation", "test"), seed: int = 1) -> list[PairText]:
    """The pairs of `held_out_pairs(seq_len, splits, seed)`, in the same order, as albert_mini.study.sop_strata reads
    them (decoded text: the quote strata and the quote-state rule)."""
    tokenizer = Tokenizer.default()
    return [t for split in splits
            for t in pair_texts(build_instances(documents(split), "sop", seq_len, seed=seed), documents(split),
                                tokenizer)]


def swapped(x: Instance) -> Instance:
    """The same two segments in the other order (the label flips)."""
    a, b = x.segments()
    tokens = np.concatenate([x.tokens[:1], b, x.tokens[1 + x.len_a:2 + x.len_a], a, x.tokens[-1:]])
    return Instance(tokens, x.len_b, x.len_a, 1 - x.label, x.source_b, x.source_a)


@torch.no_grad()
def p_in_order(model: AlbertForPreTraining, instances: list[Instance], chunk: int = 64) -> np.ndarray:
    """The model's probability that segment A comes before segment B (SOP label 0), for each pair."""
    model.eval()
    out = []
    for start in range(0, len(instances), chunk):
        part = instances[start:start + chunk]
        batch = pad_batch({"input_ids": [x.tokens for x in part], "token_type_ids": [x.token_type_ids for x in part]})
        pooled = model.albert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).pooler_output
        out.append(model.sop_classifier(pooled).softmax(-1)[:, 0])  # (chunk,)
    return torch.cat(out).numpy()


def sop_accuracy(model: AlbertForPreTraining, instances: list[Instance]) -> dict:
    """Held-out SOP accuracy with its 95% Wilson interval, how often the model says "in order", and `right`: per
    pair, 1 where the model is right (for albert_mini.study.sop_strata.stratified)."""
    p = p_in_order(model, instances)
    labels = np.array([x.label for x in instances])
    predicted = (p < 0.5).astype(int)  # label 1 = swapped
    correct = int((predicted == labels).sum())
    low, high = wilson_interval(correct, len(instances))
    return {"pairs": len(instances), "correct": correct, "accuracy": correct / len(instances), "interval": (low, high),
            "says_in_order": float((predicted == 0).mean()), "in_order_pairs": float((labels == 0).mean()),
            "right": (predicted == labels).astype(int)}


def pair_text(tokenizer, x: Instance, width: int = 70) -> tuple[str, str]:
    """Segments A and B as text, each cut to `width` characters for display."""
    a, b = x.segments()
    def cut(s):
        return s if len(s) <= width else s[:width - 3] + "..."
    return cut(tokenizer.decode(a.tolist())), cut(tokenizer.decode(b.tolist()))
