"""Chapter 5's exercise checks: they pass the references, and reject stubs and plausible wrong answers."""

import numpy as np
import pytest

from albert_mini.book.exercises import (
    ExerciseFailed,
    ch05,
    check_nsp_label_from_sources,
    check_overlap_feature,
    check_sop_pair,
)
from albert_mini.text.instances import build_instances


def not_written(*args):
    raise NotImplementedError("write your solution here")


def toy_documents(seed=0, n_docs=6):
    """Documents of 4-12 sentences, each sentence 2-9 random ids, so instances have varied sources."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(5, 200, size=int(rng.integers(2, 10))).tolist() for _ in range(int(rng.integers(4, 13)))]
            for _ in range(n_docs)]


# ------------------------------------------------------------------ the references agree with the instance builder
def test_sop_reference_rebuilds_every_sop_instance():
    """Undo each instance's swap from its sources, then sop_pair must rebuild exactly its A, B and label."""
    docs = toy_documents()
    streams = [np.concatenate([np.asarray(s) for s in doc]) for doc in docs]
    instances = build_instances(docs, "sop", max_seq_len=32, seed=3)
    assert {inst.label for inst in instances} == {0, 1}
    for inst in instances:
        (doc, a0, a1), (_, b0, b1) = inst.source_a, inst.source_b
        swapped = b1 == a0  # B ends where A starts: B is the earlier text
        earlier, later = (streams[doc][b0:b1], streams[doc][a0:a1]) if swapped else \
            (streams[doc][a0:a1], streams[doc][b0:b1])
        first, second, label = ch05.sop_pair(earlier.tolist(), later.tolist(), swapped)
        assert label == inst.label
        assert first == inst.tokens[1:1 + inst.len_a].tolist()
        assert second == inst.tokens[2 + inst.len_a:-1].tolist()


def test_nsp_reference_recovers_every_nsp_label():
    instances = build_instances(toy_documents(1), "nsp", max_seq_len=32, seed=4)
    assert {inst.label for inst in instances} == {0, 1}
    assert all(ch05.nsp_label_from_sources(i.source_a, i.source_b) == i.label for i in instances)


def test_overlap_reference_on_hand_computed_cases():
    assert ch05.overlap_feature([5, 6, 7], [6, 7, 8, 9]) == 0.5
    assert ch05.overlap_feature([5, 6, 7], [5, 5, 5, 9]) == 0.5  # types, not occurrences
    assert ch05.overlap_feature([5, 11], [5, 6, 7, 8, 9, 10]) == pytest.approx(1 / 6)
    assert ch05.overlap_feature([1], []) == 0.0


# ------------------------------------------------------------------ the checks accept right answers
def test_checks_pass_the_references(capsys):
    assert check_sop_pair(ch05.sop_pair)
    assert check_nsp_label_from_sources(ch05.nsp_label_from_sources)
    assert check_overlap_feature(ch05.overlap_feature)
    assert "Well done" in capsys.readouterr().out


def test_checks_pass_independent_learner_answers():
    def pair_with_lists(a, b, swap):
        pair = [list(a), list(b)]
        return (pair[1], pair[0], 1) if swap else (pair[0], pair[1], 0)

    def label_by_comparison(source_a, source_b):
        return int(not (source_a[0] == source_b[0] and source_a[2] == source_b[1]))

    def overlap_with_numpy(a, b):
        b_types = np.unique(np.asarray(b, dtype=np.int64))
        return float(np.isin(b_types, np.asarray(a)).mean()) if len(b_types) else 0.0

    assert check_sop_pair(pair_with_lists)
    assert check_nsp_label_from_sources(label_by_comparison)
    assert check_overlap_feature(overlap_with_numpy)


# ------------------------------------------------------------------ the checks reject stubs and wrong answers
@pytest.mark.parametrize("check", [check_sop_pair, check_nsp_label_from_sources, check_overlap_feature])
def test_checks_report_the_stub(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


def test_sop_rejects_the_flipped_label_meaning():
    """The swap is right but label 1 means 'in order': the mistake the issue names."""
    with pytest.raises(ExerciseFailed):
        check_sop_pair(lambda a, b, swap: (list(b), list(a), 0) if swap else (list(a), list(b), 1))


def test_sop_rejects_ignoring_the_swap():
    with pytest.raises(ExerciseFailed):
        check_sop_pair(lambda a, b, swap: (list(a), list(b), int(swap)))


def test_sop_rejects_a_bool_label():
    with pytest.raises(ExerciseFailed):
        check_sop_pair(lambda a, b, swap: (list(b), list(a), swap) if swap else (list(a), list(b), swap))


def test_nsp_rejects_checking_only_the_document():
    with pytest.raises(ExerciseFailed):
        check_nsp_label_from_sources(lambda a, b: int(a[0] != b[0]))


def test_nsp_rejects_the_flipped_label_meaning():
    with pytest.raises(ExerciseFailed):
        check_nsp_label_from_sources(lambda a, b: 1 - ch05.nsp_label_from_sources(a, b))


def test_overlap_rejects_counting_occurrences():
    def occurrences(a, b):
        return sum(t in set(a) for t in b) / len(b) if len(b) else 0.0

    with pytest.raises(ExerciseFailed):
        check_overlap_feature(occurrences)


def test_overlap_rejects_dividing_by_a():
    def over_a(a, b):
        types_a = set(int(t) for t in a)
        return len(types_a & set(int(t) for t in b)) / len(types_a) if len(b) else 0.0

    with pytest.raises(ExerciseFailed):
        check_overlap_feature(over_a)


def test_overlap_rejects_jaccard():
    def jaccard(a, b):
        sa, sb = set(int(t) for t in a), set(int(t) for t in b)
        return len(sa & sb) / len(sa | sb) if sb else 0.0

    with pytest.raises(ExerciseFailed):
        check_overlap_feature(jaccard)
