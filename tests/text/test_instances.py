"""Pretraining instances: SOP / NSP / none layouts, labels, provenance, length limits, errors, and no label leak."""

import random

import numpy as np
import pytest

from albert_mini.specials import CLS_ID, IGNORE_INDEX, SEP_ID
from albert_mini.study.leak_probe import probe_order_leak, reference_style_instances, sentence_end_pieces
from albert_mini.text.instances import (
    SENTENCE_TASKS,
    TokenDocuments,
    build_instances,
    pack_chunks,
    pack_chunks_either_way,
    sentence_task,
)
from pretraining_helpers import austen_documents, austen_token_documents, tokenizer


def passes(task, n_passes, max_seq_len=128, **kw):
    """Instances of several passes over the Austen training chapters (each pass its own seed)."""
    docs = austen_token_documents()
    return [inst for seed in range(n_passes) for inst in build_instances(docs, task, max_seq_len, seed=seed, **kw)]


def segments(inst):
    a = inst.tokens[1:1 + inst.len_a]
    b = inst.tokens[2 + inst.len_a:2 + inst.len_a + inst.len_b]
    return a, b


def span_tokens(docs, source):
    doc, start, end = source
    return docs.streams[doc][start:end]


# ---------------------------------------------------------------------------------------------- layout and labels
@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_pair_layout_token_types_and_balanced_labels(task):
    instances = passes(task, 2)
    assert len(instances) >= 10_000
    labels = np.array([inst.label for inst in instances])
    assert set(labels.tolist()) == {0, 1}
    assert abs(labels.mean() - 0.5) <= 0.02
    for inst in instances[:2000]:
        t = inst.tokens
        assert len(t) == inst.len_a + inst.len_b + 3 and inst.len_a >= 1 and inst.len_b >= 1
        assert t[0] == CLS_ID and t[1 + inst.len_a] == SEP_ID and t[-1] == SEP_ID
        assert np.count_nonzero(t == SEP_ID) == 2 and np.count_nonzero(t == CLS_ID) == 1
        types = inst.token_type_ids
        assert types[:inst.len_a + 2].sum() == 0 and types[inst.len_a + 2:].min() == 1


def test_sop_pairs_are_consecutive_whole_sentences_of_one_document():
    docs = austen_token_documents()
    instances = passes("sop", 1)
    for inst in instances:
        a, b = segments(inst)
        assert np.array_equal(a, span_tokens(docs, inst.source_a))
        assert np.array_equal(b, span_tokens(docs, inst.source_b))
        assert inst.source_a[0] == inst.source_b[0]  # never a random segment inside SOP
        first, second = (inst.source_a, inst.source_b) if inst.label == 0 else (inst.source_b, inst.source_a)
        assert first[2] == second[1]  # label 0: A then B in the text; label 1: B then A
        bounds = set(docs.boundaries[first[0]].tolist())
        assert {first[1], first[2], second[2]} <= bounds  # every cut is a sentence boundary


def test_segments_match_an_independent_encoding_of_the_text():
    """Rebuild A and B from the corpus text itself: encode each sentence again and join the right ones."""
    tok, documents = tokenizer(), austen_documents()
    instances = [inst for inst in passes("sop", 1) if inst.source_a[0] < 10]
    assert len(instances) > 100
    encoded = {d: [tok.encode(s) for s in documents[d].sentences()] for d in range(10)}
    for inst in instances:
        doc = encoded[inst.source_a[0]]
        offsets = np.cumsum([0] + [len(s) for s in doc]).tolist()
        for source, segment in zip((inst.source_a, inst.source_b), segments(inst)):
            first, end = offsets.index(source[1]), offsets.index(source[2])
            assert [t for s in doc[first:end] for t in s] == segment.tolist()


def test_nsp_negatives_come_from_another_document_positives_follow_on():
    docs = austen_token_documents()
    instances = passes("nsp", 1)
    negatives = [inst for inst in instances if inst.label == 1]
    positives = [inst for inst in instances if inst.label == 0]
    assert negatives and positives
    assert all(inst.source_b[0] != inst.source_a[0] for inst in negatives)
    for inst in positives:
        assert inst.source_b[0] == inst.source_a[0] and inst.source_a[2] == inst.source_b[1]
    for inst in instances:
        for source, segment in zip((inst.source_a, inst.source_b), segments(inst)):
            assert np.array_equal(segment, span_tokens(docs, source))
            assert {source[1], source[2]} <= set(docs.boundaries[source[0]].tolist())


def test_none_task_single_segments_cover_every_token_once():
    docs = austen_token_documents()
    instances = build_instances(docs, "none", 64, short_seq_prob=0.0, seed=3)
    covered = [np.zeros(len(s), dtype=int) for s in docs.streams]
    for inst in instances:
        assert inst.label == IGNORE_INDEX and inst.source_b is None and inst.len_b == 0
        assert inst.tokens[0] == CLS_ID and inst.tokens[-1] == SEP_ID and len(inst.tokens) <= 64
        assert inst.token_type_ids.sum() == 0
        doc, start, end = inst.source_a
        assert np.array_equal(inst.tokens[1:-1], docs.streams[doc][start:end])
        covered[doc][start:end] += 1
    assert all((c == 1).all() for c in covered)  # long sentences are cut into windows, nothing is lost


@pytest.mark.parametrize("task", ["sop", "nsp", "none"])
@pytest.mark.parametrize("max_seq_len", [5, 16, 48, 512])
def test_lengths_never_exceed_max_seq_len(task, max_seq_len):
    docs = austen_token_documents()
    if max_seq_len == 5:  # only one-token segments fit: use made-up documents
        docs = TokenDocuments([[[10], [11], [12], [13, 14]], [[20], [21], [22]]])
    instances = build_instances(docs, task, max_seq_len, seed=1)
    assert instances
    assert max(len(inst.tokens) for inst in instances) <= max_seq_len
    if max_seq_len == 512:
        assert max(len(inst.tokens) for inst in instances) > 400  # long sequences are actually filled


def test_short_seq_prob_gives_short_sequences():
    """A short target still takes two whole sentences and is reached, not cut, so the effect is moderate."""
    long_only = np.array([len(inst.tokens) for inst in passes("sop", 1, short_seq_prob=0.0)])
    mixed = np.array([len(inst.tokens) for inst in passes("sop", 1, short_seq_prob=0.5)])
    assert mixed.mean() < long_only.mean() - 8
    assert (mixed < 64).mean() > 3 * (long_only < 64).mean()


# ---------------------------------------------------------------------------------------------- packing
@pytest.mark.parametrize("pack", [pack_chunks, pack_chunks_either_way])
def test_packed_chunks_are_disjoint_ordered_and_within_the_limit(pack):
    rng = random.Random(0)
    lengths = [rng.choice([1, 3, 8, 20, 40, 90]) for _ in range(3000)]
    chunks = pack(lengths, 100, 0.1, 2, random.Random(1))
    assert chunks
    ends = [0]
    for first, end in chunks:
        assert first >= ends[-1] and end - first >= 2 and sum(lengths[first:end]) <= 100
        ends.append(end)
    used = sum(end - first for first, end in chunks)
    assert used > 0.8 * len(lengths)


def test_a_sentence_that_cannot_be_paired_is_skipped_not_turned_into_a_random_pair():
    long = list(range(100, 160))  # 60 tokens: never fits next to another sentence in 32
    docs = TokenDocuments([
        [[5, 6, 7]],  # a one-sentence document: no SOP instance can come from it
        [[10, 11], long, [12, 13], [14, 15, 16], [17]],
    ])
    for seed in range(20):
        for inst in build_instances(docs, "sop", 32, seed=seed):
            assert inst.source_a[0] == inst.source_b[0] == 1
            assert not set(long) & set(inst.tokens.tolist())
    pairs = {(inst.source_a[1], inst.source_b[2]) for seed in range(20) for inst in build_instances(docs, "sop", 32,
                                                                                                  seed=seed)}
    assert pairs  # the short sentences after the long one still make instances


# ---------------------------------------------------------------------------------------------- seeds and errors
def test_same_seed_same_instances_different_seed_different():
    docs = austen_token_documents()
    first = build_instances(docs, "sop", 128, seed=7)
    again = build_instances(docs, "sop", 128, seed=7)
    other = build_instances(docs, "sop", 128, seed=8)
    assert len(first) == len(again)
    assert all(np.array_equal(x.tokens, y.tokens) and x.label == y.label for x, y in zip(first, again))
    assert [x.label for x in first[:200]] != [y.label for y in other[:200]]


def test_bad_input_errors_name_the_problem():
    docs = [[[10, 11], [12]], [[13], [14, 15]]]
    with pytest.raises(ValueError, match="max_seq_len=4 cannot hold"):
        build_instances(docs, "sop", 4)
    with pytest.raises(ValueError, match="max_seq_len=2 cannot hold"):
        build_instances(docs, "none", 2)
    with pytest.raises(ValueError, match="corpus is empty"):
        build_instances([], "sop")
    with pytest.raises(ValueError, match="corpus is empty"):
        build_instances([[], [[]]], "none")
    with pytest.raises(ValueError, match="SOP needs documents with at least 2 sentences"):
        build_instances([[[10, 11]], [[12]]], "sop")
    with pytest.raises(ValueError, match="NSP needs at least 2 non-empty documents"):
        build_instances([[[10], [11]], []], "nsp")
    with pytest.raises(ValueError, match="unknown task"):
        build_instances(docs, "mlm")
    with pytest.raises(ValueError, match="no SOP instance fits"):
        build_instances([[[1] * 10, [2] * 10]], "sop", 12)
    with pytest.raises(ValueError, match="short_seq_prob"):
        build_instances(docs, "sop", short_seq_prob=1.5)
    with pytest.raises(TypeError, match="not text"):
        build_instances([["It is a truth.", "Universally acknowledged."]], "sop")


def test_empty_sentences_and_documents_are_skipped():
    docs = TokenDocuments([[], [[], [10, 11], [], [12, 13]], [[]]])
    assert [docs.num_sentences(d) for d in range(3)] == [0, 2, 0]
    instances = build_instances(docs, "sop", 16, short_seq_prob=0.0, seed=0)
    assert len(instances) == 1 and sorted(instances[0].tokens.tolist()) == sorted([CLS_ID, SEP_ID, SEP_ID,
                                                                                   10, 11, 12, 13])


# ---------------------------------------------------------------------------------------------- no label leak
@pytest.fixture(scope="module")
def end_pieces():
    return sentence_end_pieces(tokenizer())


@pytest.mark.parametrize("task", ["sop", "nsp"])
def test_surface_cues_do_not_predict_the_label(task, end_pieces):
    """Lengths of A and B and whether each ends like a sentence: a fitted probe stays within 2 points of 50%."""
    instances = passes(task, 2)
    assert len(instances) >= 10_000
    result = probe_order_leak(instances, *end_pieces, seed=0)
    assert abs(result["logistic"] - 0.5) <= 0.02, result
    assert abs(result["stump"] - 0.5) <= 0.02, result


def test_reference_style_truncation_after_the_swap_does_leak(end_pieces):
    """The same probe reads the order off the reference recipe, so the test above could fail."""
    docs = austen_token_documents()
    instances = [inst for seed in range(2) for inst in reference_style_instances(docs, 128, seed=seed)]
    assert len(instances) >= 10_000
    result = probe_order_leak(instances, *end_pieces, seed=0)
    assert result["logistic"] > 0.53 and result["stump"] > 0.53, result


def test_every_registered_sentence_task_builds_instances_that_match_its_entry():
    docs = [[[10, 11, 12], [13, 14], [15, 16, 17]], [[20, 21], [22, 23, 24]]]
    for name, task in SENTENCE_TASKS.items():
        instances = build_instances(docs, name, max_seq_len=16, seed=1)
        assert instances and task.name == name and task.description
        for inst in instances:
            a, b = inst.segments()
            assert len(a) == inst.len_a and len(b) == inst.len_b
            assert (len(b) > 0) == task.pairs == (inst.label != IGNORE_INDEX)
            layout = [CLS_ID, *a, SEP_ID, *b, SEP_ID] if task.pairs else [CLS_ID, *a, SEP_ID]
            assert inst.tokens.tolist() == layout
    with pytest.raises(ValueError, match="unknown task 'mlm'; choose one of sop, nsp, none"):
        sentence_task("mlm")
