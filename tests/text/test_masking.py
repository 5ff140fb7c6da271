"""n-gram whole-word masking: budget, span-length law, 80/10/10, whole words, seeds, against a second implementation."""

import random

import numpy as np
import pytest

from albert_mini.specials import CLS_ID, IGNORE_INDEX, MASK_ID, SEP_ID
from albert_mini.text.instances import build_instances
from albert_mini.text.masking import Masker, prediction_budget, replace_80_10_10
from pretraining_helpers import austen_token_documents, tokenizer


@pytest.fixture(scope="module")
def sequences():
    """About 12k SOP sequences of at most 128 tokens from two passes over the Austen training chapters."""
    docs = austen_token_documents()
    instances = [inst for seed in range(2) for inst in build_instances(docs, "sop", 128, seed=seed)]
    assert len(instances) >= 10_000
    return [inst.tokens for inst in instances]


@pytest.fixture(scope="module")
def masker():
    return Masker.from_tokenizer(tokenizer())


@pytest.fixture(scope="module")
def masked(sequences, masker):
    rng = np.random.default_rng(0)
    return [masker(tokens, rng) for tokens in sequences]


def words_left_in_segment(tokens, start, word_start, special):
    """Count the words from `start` to the next special token, read straight off the pieces."""
    count, i = 0, start
    while i < len(tokens) and not special[tokens[i]]:
        if i == start or word_start[tokens[i]]:
            count += 1
        i += 1
    return count


# ---------------------------------------------------------------------------------------------- budget
def test_budget_formula():
    m = Masker.from_tokenizer(tokenizer())
    assert [m.budget(n) for n in (3, 10, 30, 100, 128, 133, 134, 512)] == [1, 2, 4, 15, 19, 20, 20, 20]
    small = Masker.from_tokenizer(tokenizer(), max_predictions=5)
    assert small.budget(128) == 5


def test_masked_count_matches_the_budget(sequences, masked, masker):
    counts = np.array([np.count_nonzero(m.labels != IGNORE_INDEX) for m in masked])
    budgets = np.array([masker.budget(len(t)) for t in sequences])
    assert (counts <= budgets).all()
    assert (counts == budgets).mean() > 0.97  # a few fall short: every word left is longer than what remains
    assert counts.sum() / budgets.sum() > 0.995
    lengths = np.array([len(t) for t in sequences])
    assert abs(counts.sum() / lengths.sum() - 0.15) < 0.01


# ---------------------------------------------------------------------------------------------- spans
def test_sampled_span_lengths_follow_one_over_n(sequences, masked, masker):
    """The first span of a sequence is never shrunk for overlap, so its sampled n is a clean draw of p(n)."""
    word_start, special = masker.word_start, masker.special
    full, by_availability = [], []
    for tokens, m in zip(sequences, masked):
        first = m.spans[0]
        available = min(3, words_left_in_segment(tokens, first.start, word_start, special))
        by_availability.append((available, first.sampled_n))
        if available == 3:
            full.append(first.sampled_n)
    full = np.array(full)
    assert len(full) > 8000
    for n, p in zip((1, 2, 3), (6 / 11, 3 / 11, 2 / 11)):
        assert abs((full == n).mean() - p) <= 0.015
    # Near the end of a segment p is renormalised over the n that fit: never sample more words than remain.
    assert all(n <= available for available, n in by_availability)


def test_spans_are_whole_words_inside_one_segment_and_never_overlap(sequences, masked, masker):
    word_start, special = masker.word_start, masker.special
    for tokens, m in zip(sequences[:3000], masked[:3000]):
        covered = np.zeros(len(tokens), dtype=int)
        for span in m.spans:
            covered[span.start:span.end] += 1
            assert word_start[tokens[span.start]] or special[tokens[span.start - 1]]
            assert span.end == len(tokens) or word_start[tokens[span.end]]  # the next piece starts a word
            assert not special[tokens[span.start:span.end]].any()  # never a special token, never across [SEP]
            assert 1 <= span.n <= span.sampled_n <= 3
            words = 1 + np.count_nonzero(word_start[tokens[span.start + 1:span.end]])
            assert words == span.n
        assert covered.max() <= 1
        assert np.array_equal(np.flatnonzero(covered), np.flatnonzero(m.labels != IGNORE_INDEX))


def test_no_special_token_is_ever_predicted_or_used_as_a_replacement(sequences, masked, masker):
    special = masker.special
    for tokens, m in zip(sequences, masked):
        predicted = m.labels != IGNORE_INDEX
        assert not special[tokens[predicted]].any()
        assert np.array_equal(m.labels[predicted], tokens[predicted])
        changed = m.input_ids != tokens
        assert not special[m.input_ids[changed & (m.input_ids != MASK_ID)]].any()
        assert not (changed & ~predicted).any()  # only predicted positions change
        assert (m.input_ids[tokens == CLS_ID] == CLS_ID).all() and (m.input_ids[tokens == SEP_ID] == SEP_ID).all()


def test_eighty_ten_ten(sequences, masked):
    decisions = []
    for tokens, m in zip(sequences, masked):
        predicted = m.labels != IGNORE_INDEX
        ids, originals = m.input_ids[predicted], tokens[predicted]
        decisions.append(np.where(ids == MASK_ID, 0, np.where(ids == originals, 2, 1)))
    decisions = np.concatenate(decisions)
    assert len(decisions) > 150_000
    shares = np.bincount(decisions, minlength=3) / len(decisions)
    # A random replacement equals the original with probability 1/7995: far below the tolerance.
    assert np.allclose(shares, [0.8, 0.1, 0.1], atol=0.015), shares


# ---------------------------------------------------------------------------------------------- a second implementation
def reference_loop(tokens, word_start, special, budget, rng):
    """The reference algorithm written out plainly (python lists, random.Random): taken span lengths in words."""
    words = []  # (first token, end token, segment number)
    segment = 0
    for i, t in enumerate(tokens):
        if special[t]:
            segment += 1
        elif word_start[t] or special[tokens[i - 1]]:
            words.append([i, i + 1, segment])
        else:
            words[-1][1] = i + 1
    starts = list(range(len(words)))
    rng.shuffle(starts)
    taken, covered, count = [], set(), 0
    for w in starts:
        if count >= budget:
            break
        same_segment = [v for v in range(w, min(w + 3, len(words))) if words[v][2] == words[w][2]]
        weights = [1 / n for n in range(1, len(same_segment) + 1)]
        n = rng.choices(range(1, len(same_segment) + 1), weights)[0]
        while n > 0 and count + words[w + n - 1][1] - words[w][0] > budget:
            n -= 1
        if n == 0:
            continue
        positions = set(range(words[w][0], words[w + n - 1][1]))
        if positions & covered:
            continue
        covered |= positions
        count += len(positions)
        taken.append(n)
    return taken, count


def test_span_lengths_and_counts_agree_with_a_plain_reimplementation(sequences, masked, masker):
    """After shrinking and overlap skips, the taken span lengths match a second, independent implementation."""
    rng = random.Random(1)
    word_start, special = masker.word_start.tolist(), masker.special.tolist()
    theirs, their_count = [], 0
    for tokens in sequences:
        spans, count = reference_loop(tokens.tolist(), word_start, special, masker.budget(len(tokens)), rng)
        theirs += spans
        their_count += count
    ours = [span.n for m in masked for span in m.spans]
    our_count = sum(np.count_nonzero(m.labels != IGNORE_INDEX) for m in masked)
    ours_share = np.bincount(ours, minlength=4)[1:] / len(ours)
    theirs_share = np.bincount(theirs, minlength=4)[1:] / len(theirs)
    assert np.allclose(ours_share, theirs_share, atol=0.015), (ours_share, theirs_share)
    assert abs(our_count / their_count - 1) < 0.005


# ---------------------------------------------------------------------------------------------- options and seeds
def test_unigram_masking_whole_words_and_single_pieces(sequences):
    tok = tokenizer()
    whole = Masker.from_tokenizer(tok, ngram=1)
    pieces = Masker.from_tokenizer(tok, ngram=1, whole_word=False)
    rng = np.random.default_rng(5)
    multi_piece_words = 0
    for tokens in sequences[:2000]:
        for span in whole.choose_spans(tokens, rng):
            assert span.n == span.sampled_n == 1
            multi_piece_words += span.end - span.start > 1
        for span in pieces.choose_spans(tokens, rng):
            assert span.end - span.start == 1
    assert multi_piece_words > 0  # whole-word unigrams do take words of several pieces


def test_same_seed_same_masks_different_seed_different(sequences, masker):
    def run(seed):
        rng = np.random.default_rng(seed)
        return [masker(tokens, rng).input_ids for tokens in sequences[:300]]

    first, again, other = run(11), run(11), run(12)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert sum(not np.array_equal(x, y) for x, y in zip(first, other)) > 250


def test_bad_settings_raise():
    tok = tokenizer()
    with pytest.raises(ValueError, match="masked_lm_prob"):
        Masker.from_tokenizer(tok, masked_lm_prob=0.0)
    with pytest.raises(ValueError, match="ngram"):
        Masker.from_tokenizer(tok, ngram=0)
    with pytest.raises(ValueError, match="max_predictions"):
        Masker.from_tokenizer(tok, max_predictions=0)
    with pytest.raises(ValueError, match="mask_id 7 must be one of the special ids"):
        Masker(tok.word_start, tok.special_ids, 7)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        Masker(tok.word_start, [0, 9000], 0)
    with pytest.raises(ValueError, match="build it from the same tokenizer"):
        Masker.from_tokenizer(tok)(np.array([2, 10, 8000, 3]), np.random.default_rng(0))


def test_word_ids_number_whole_words_and_leave_specials_out(masker):
    ids = np.array(tokenizer().encode_pair("Elizabeth's astonishment!", "Her feelings.")["input_ids"])
    pieces = [tokenizer().id_to_piece(int(i)) for i in ids]
    assert pieces == ["[CLS]", "\u2581elizabeth", "'", "s", "\u2581astonishment", "!", "[SEP]", "\u2581her",
                      "\u2581feelings", ".", "[SEP]"]
    # "'s" is one word (an apostrophe starts a word, "s" continues it); punctuation is a word of its own.
    assert masker.word_ids(ids).tolist() == [-1, 0, 1, 1, 2, 3, -1, 4, 5, 6, -1]


def test_replacement_is_decided_per_token_from_one_draw_each():
    tokens, positions = np.arange(100, 120), np.arange(2, 18)
    out = replace_80_10_10(tokens, positions, np.random.default_rng(5), MASK_ID, np.array([7, 8]))
    u = np.random.default_rng(5).random(len(positions))
    assert (out[positions[u < 0.8]] == MASK_ID).all()
    assert (out[positions[u >= 0.9]] == tokens[positions[u >= 0.9]]).all()
    assert np.isin(out[positions[(u >= 0.8) & (u < 0.9)]], [7, 8]).all()
    outside = np.setdiff1d(np.arange(20), positions)
    assert (out[outside] == tokens[outside]).all() and (tokens == np.arange(100, 120)).all()  # input untouched


def test_prediction_budget_is_the_maskers_rule():
    assert [prediction_budget(n) for n in (1, 3, 128, 133, 137, 512)] == [1, 1, 19, 20, 20, 20]
    assert prediction_budget(100, masked_lm_prob=0.5, max_predictions=80) == 50
    assert Masker.from_tokenizer(tokenizer(), max_predictions=7).budget(100) == prediction_budget(100, 0.15, 7)

