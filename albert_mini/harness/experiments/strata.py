"""The quote strata and the no-network baselines of Table 5's pair sets (the SOP plateau study's first step).

Every Table 5 score is stored pair by pair (`correct`, a string of 0/1 over the held-out pairs, in order), and the
pairs are rebuilt deterministically from the corpus (trunk.scored_pairs). So the strata of any finished run are
read from its record without its weights and without training: `strata_values` splits a record's per-pair
correctness into the quote and quote-free strata. `baselines` scores the no-network readers of
albert_mini.study.sop_strata on the same held-out pairs, fitted on the same probe-training pairs as the linear
probe. Nothing here is part of a run's cache key: adding the strata changes no finished run.
"""

from __future__ import annotations

import functools

import numpy as np

from ...study.sop_strata import (
    TopicModel,
    pair_texts,
    quote_strata,
    rule_correctness,
    stratified,
    surface_regression,
)
from ...text.corpus import load_corpus
from ...text.instances import build_instances
from ...text.tokenizer import Tokenizer, preprocess_text
from .data import token_documents
from .trunk import LENGTHS, PAIR_SEED, PROBE_SEED, TrunkPlan, scored_pairs

HELD_OUT_SPLITS, PROBE_SPLITS = ("validation", "test"), ("train",)


def source_sentences(split: str, max_documents: int | None) -> list[list[str]]:
    """Each chapter's source sentences as token_documents keeps them (a sentence that tokenizes to nothing is
    dropped there, and here): the capitals the lower-casing tokenizer loses."""
    return [[s for s in doc.sentences() if preprocess_text(s)] for doc in load_corpus("austen", split)[:max_documents]]


@functools.cache
def texts(task: str, which: str, seq_len: int, plan: TrunkPlan) -> tuple:
    """The PairTexts of scored_pairs(task, which, seq_len, masked, plan), in the same order (the pairs are built per
    split as data.pair_set builds them, then drawn by the same permutation); checked token for token."""
    splits, seed, limit = ((HELD_OUT_SPLITS, PAIR_SEED, plan.held_out) if which == "held_out"
                           else (PROBE_SPLITS, PROBE_SEED, plan.probe_train))
    tokenizer, pairs, instances = Tokenizer.default(), [], []
    for split in splits:
        docs = token_documents(split, plan.max_documents)
        found = build_instances(docs, task, seq_len, seed=seed)
        pairs += pair_texts(found, docs, tokenizer, source_sentences(split, plan.max_documents))
        instances += found
    if limit:
        order = np.random.default_rng(seed).permutation(len(pairs))[:limit]
        pairs, instances = [pairs[i] for i in order], [instances[i] for i in order]
    scored = scored_pairs(task, which, seq_len, False, plan)[2]
    if len(scored) != len(instances) or any(not np.array_equal(a.tokens, b.tokens) for a, b in zip(scored, instances)):
        raise RuntimeError(f"the {which} {task} pairs at {seq_len} tokens rebuilt here differ from the scored ones")
    return tuple(pairs)


def strata_of(plan: TrunkPlan, seq_len: int) -> dict[str, np.ndarray]:
    """The quote / quote-free masks over the held-out SOP pairs at `seq_len`."""
    return quote_strata(texts("sop", "held_out", seq_len, plan))


# ---------------------------------------------------------------------------------------------- a record's strata
SCORES = (("probe_pooled", ""), ("head", "_head"))  # the primary score, and a row's own SOP head where it has one


def strata_values(record: dict, plan: TrunkPlan) -> dict:
    """SOP per stratum of one scored record (a branch, the trunk at a scoring point, a scratch row): the metrics
    `sop_quote`, `sop_no_quote` (primary score: pooled probe, unmasked pairs, 64 tokens), the same at 128 and for
    the own head where there is one, and `strata` with each one's pair counts, pairs right and Wilson interval."""
    values, detail = {}, {}
    for T in LENGTHS:
        if f"sentence_{T}" not in record:
            continue
        scores, tail = record[f"sentence_{T}"]["sop_unmasked"], "" if T == 64 else f"_{T}"
        masks = strata_of(plan, T)
        for score, name in SCORES:
            if score not in scores:
                continue
            correct = scores[score]["correct"]
            if len(correct) != len(masks["quote"]):
                raise ValueError(f"a record scores {len(correct)} SOP pairs at {T} tokens; the plan has "
                                 f"{len(masks['quote'])}")
            split = stratified(correct, masks)
            detail[f"sop{name}{tail}"] = split
            for stratum in ("quote", "no_quote"):
                values[f"sop{name}_{stratum}{tail}"] = split[stratum]["accuracy"]
    return {**values, "strata": detail}


# ---------------------------------------------------------------------------------------------- the baselines
@functools.cache
def topic_model(max_documents: int | None) -> TopicModel:
    """Chapter 5's topic features fitted on the training chapters (idf, a unigram model per novel)."""
    novels = [doc.novel for doc in load_corpus("austen", "train")[:max_documents]]
    return TopicModel(token_documents("train", max_documents), novels, Tokenizer.default().vocab_size)


def correct_of(predictions, labels) -> np.ndarray:
    return (np.asarray(predictions) == np.asarray(labels)).astype(float)


def baselines(task: str, plan: TrunkPlan, seq_len: int = 64) -> dict:
    """The no-network readers of `task`'s held-out pairs at `seq_len`, each fitted (where it fits anything) on the
    probe's training pairs: the majority training label, and for SOP the quote-state rule and the surface-feature
    regression, for NSP chapter 5's topic features. Each is scored on all pairs and on the SOP quote strata."""
    _, test_y, test = scored_pairs(task, "held_out", seq_len, False, plan)
    _, train_y, train = scored_pairs(task, "probe", seq_len, False, plan)
    test_y, train_y = test_y.numpy(), train_y.numpy()
    test_texts = texts(task, "held_out", seq_len, plan)
    masks = quote_strata(test_texts)
    majority = int(train_y.mean() > 0.5)
    out = {"pairs": len(test_y), "majority_label": majority,
           "majority": stratified(correct_of(np.full(len(test_y), majority), test_y), masks)}
    if task == "sop":
        rule = rule_correctness(test_texts, test_y)
        out["quote_state_rule"] = {**stratified(rule, masks), "decided": int((rule != 0.5).sum()),
                                   "right_when_decided": int((rule == 1).sum())}
        predicted = surface_regression(texts(task, "probe", seq_len, plan), train_y, test_texts)
        out["surface_regression"] = stratified(correct_of(predicted, test_y), masks)
    else:
        predicted = topic_model(plan.max_documents).regression(train, train_y, test)
        out["topic_regression"] = stratified(correct_of(predicted, test_y), masks)
    return out
