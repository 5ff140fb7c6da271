"""The quote strata, the quote-state rule and the no-network baselines (albert_mini.study.sop_strata), on hand-made
pairs and planted cues; the harness's reading of them from Table 5's records."""

from __future__ import annotations

import math

import numpy as np
import pytest

from albert_mini.study.sop_strata import (
    SURFACE_FEATURES,
    PairText,
    TopicModel,
    pair_texts,
    quote_state_rule,
    quote_states,
    quote_strata,
    rule_correctness,
    stratified,
    surface_features,
    surface_regression,
)
from albert_mini.text.batches import tokenize_documents
from albert_mini.text.instances import Instance, TokenDocuments, build_instances, pair_tokens
from albert_mini.text.tokenizer import Tokenizer


def pair(a: str, b: str, **fields) -> PairText:
    defaults = {"tokens_a": len(a.split()), "tokens_b": len(b.split()), "sentences_a": 1, "sentences_b": 1}
    return PairText(a, b, **{**defaults, **fields})


# ---------------------------------------------------------------------------------------------- the rule
def test_a_mark_opens_at_the_start_or_after_a_space_and_closes_elsewhere():
    assert quote_states('"Yes," said he. "No') == ("outside", "inside")  # opens, closes, opens
    assert quote_states('he said." Then "all of it."') == ("inside", "outside")  # closes first, closes last
    assert quote_states("no marks at all.") == (None, None)


def test_the_quote_state_rule_answers_only_where_one_order_is_consistent():
    speech_opens = 'no," she said, "i cannot'  # starts and ends inside a quotation
    speech_closes = 'go," said she.'  # starts inside, ends outside
    in_order = pair(speech_opens, speech_closes)
    swapped = pair(speech_closes, speech_opens)
    assert quote_state_rule(in_order) == 0 and quote_state_rule(swapped) == 1
    # Abstain: a segment without marks has no state, and two narrative segments fit either way round.
    assert quote_state_rule(pair("she sat down.", speech_closes)) is None
    assert quote_state_rule(pair('"i cannot,', 'said she."')) is None  # both orders consistent
    assert quote_state_rule(pair('"yes."', '"no."')) is None  # both orders consistent (outside -> outside)
    assert quote_state_rule(pair('"yes', '"no')) is None  # neither order consistent (inside -> outside)


def test_rule_correctness_scores_an_abstention_as_half_right():
    opens, closes = 'no," she said, "i cannot', 'go," said she.'
    pairs = [pair(opens, closes), pair(closes, opens), pair("a.", "b."), pair(opens, closes)]
    labels = [0, 1, 1, 1]  # right, right, abstained, wrong
    correct = rule_correctness(pairs, labels)
    assert correct.tolist() == [1.0, 1.0, 0.5, 0.0]
    assert correct.mean() == pytest.approx((2 + 0.5 * 1) / 4)  # closed form: (right + abstained / 2) / pairs


# ---------------------------------------------------------------------------------------------- strata
def test_the_strata_split_pairs_by_a_quotation_mark_in_either_segment():
    pairs = [pair('"yes."', "b."), pair("a.", "b."), pair("a.", 'he said "no."'), pair("c.", "d.")]
    masks = quote_strata(pairs)
    assert masks["quote"].tolist() == [True, False, True, False]
    assert masks["no_quote"].tolist() == [False, True, False, True]
    split = stratified("1011", masks)
    assert (split["all"]["pairs"], split["all"]["correct"]) == (4, 3.0)
    assert (split["quote"]["pairs"], split["quote"]["accuracy"]) == (2, 1.0)  # pairs 0 and 2: both right
    assert (split["no_quote"]["pairs"], split["no_quote"]["accuracy"]) == (2, 0.5)  # pairs 1 and 3: one right
    with pytest.raises(ValueError, match="stratum"):
        stratified("11", masks)


def test_a_stratum_interval_is_wilsons_closed_form():
    masks = {"quote": np.array([True] * 10 + [False] * 5), "no_quote": np.array([False] * 10 + [True] * 5)}
    split = stratified([1] * 8 + [0] * 2 + [0] * 5, masks)
    z, n, p = 1.959964, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert split["quote"]["wilson"] == pytest.approx([centre - half, centre + half])
    assert split["quote"]["wilson"] == pytest.approx([0.4902, 0.9433], abs=1e-4)  # 8 of 10, the textbook value
    assert split["no_quote"]["accuracy"] == 0.0 and split["no_quote"]["wilson"][0] == pytest.approx(0.0, abs=1e-12)


# ---------------------------------------------------------------------------------------------- the regression
def test_the_surface_regression_learns_a_planted_cue_and_nothing_without_one():
    rng = np.random.default_rng(0)

    def pairs(n, cue: bool):
        out, labels = [], []
        for _ in range(n):
            label = int(rng.random() < 0.5)
            opener = "she" if (label if cue else rng.random() < 0.5) else "the"  # B opens with a pronoun
            out.append(pair(" ".join(["word"] * int(rng.integers(3, 20))), f"{opener} went out.",
                            sentences_a=int(rng.integers(1, 3))))
            labels.append(label)
        return out, np.array(labels)

    train, train_y = pairs(400, cue=True)
    test, test_y = pairs(400, cue=True)
    assert (surface_regression(train, train_y, test) == test_y).mean() > 0.97
    train, train_y = pairs(400, cue=False)
    test, test_y = pairs(400, cue=False)
    assert abs((surface_regression(train, train_y, test) == test_y).mean() - 0.5) < 0.1


def test_surface_features_read_the_edges_of_each_segment():
    x = surface_features([pair('"but why?" she asked.', 'he said "no', starts_chapter=True, b_capitalised=True)])
    row = dict(zip(SURFACE_FEATURES, x[0]))
    assert x.shape == (1, 16)
    assert row["a_starts_with_quote"] == 1 and row["a_ends_with_quote"] == 0 and row["a_quote_parity"] == 0
    assert row["b_starts_with_quote"] == 0 and row["b_quote_parity"] == 1
    assert row["a_opens_with_pronoun_or_conjunction"] == 1  # "but", past the quotation mark
    assert row["b_opens_with_pronoun_or_conjunction"] == 1 and row["b_first_word_capitalised"] == 1
    assert row["pair_starts_its_chapter"] == 1 and row["quote_on_both_sides_of_junction"] == 0


# ---------------------------------------------------------------------------------------------- from instances
def test_pair_texts_decode_the_segments_and_keep_what_the_ids_lose():
    tokenizer = Tokenizer.default()
    sentences = ['"Come in," said she.', "He came in.", "It was late.", "Nobody spoke."]
    docs = tokenize_documents([sentences], tokenizer)
    instances = build_instances(docs, "sop", 64, seed=0)
    texts = pair_texts(instances, docs, tokenizer, [sentences])
    for x, text in zip(instances, texts):
        assert (text.tokens_a, text.tokens_b) == (x.len_a, x.len_b)
        assert text.sentences_a + text.sentences_b <= len(sentences)
        assert text.a == tokenizer.decode(x.segments()[0]) and text.a == text.a.lower()  # the ids are lower-cased
        assert text.a_capitalised and text.b_capitalised  # every Austen sentence starts with a capital
    first = min(texts, key=lambda t: 0 if '"' in t.a + t.b else 1)
    assert first.has_quote and first.starts_chapter
    with pytest.raises(ValueError, match="source sentences"):
        pair_texts(instances, docs, tokenizer, [sentences[:2]])


def test_topic_features_see_shared_words_and_novels():
    # Four chapters, two per novel: a token in one chapter of four gets idf log(4 / 2) > 0.
    docs = TokenDocuments([[[5, 6, 7], [8, 9]], [[10, 11]], [[20, 21, 22], [23, 24]], [[25, 26]]])
    model = TopicModel(docs, ["emma", "emma", "persuasion", "persuasion"], vocab_size=30)

    def instance(a, b):
        a, b = np.array(a, dtype=np.int32), np.array(b, dtype=np.int32)
        return Instance(pair_tokens(a, b), len(a), len(b), 0, (0, 0, len(a)), (0, 0, len(b)))

    same, other = model.features([instance([5, 6, 7], [5, 8, 9]), instance([5, 6, 7], [20, 21, 22])])
    assert same[0] == pytest.approx(1 / 3) and other[0] == 0.0  # B's word types also in A
    assert same[1] > 0 and other[1] == 0.0  # tf-idf cosine
    assert same[2] > 0.7 and other[2] < 0.3  # the probability that A and B share a novel


# ---------------------------------------------------------------------------------------------- Table 5's records
def test_a_records_per_pair_scores_split_into_the_strata_of_its_pairs():
    from albert_mini.harness.experiments import strata
    from albert_mini.harness.experiments.trunk import FAST_TRUNK, scored_pairs

    texts = strata.texts("sop", "held_out", 64, FAST_TRUNK)  # rebuilt and checked token for token
    assert len(texts) == len(scored_pairs("sop", "held_out", 64, False, FAST_TRUNK)[1])
    masks = strata.strata_of(FAST_TRUNK, 64)
    bits = "".join("1" if q else "0" for q in masks["quote"])  # right on every quote pair, wrong elsewhere
    record = {"sentence_64": {"sop_unmasked": {"probe_pooled": {"correct": bits}, "head": {"correct": bits}}}}
    values = strata.strata_values(record, FAST_TRUNK)
    assert values["sop_quote"] == 1.0 and values["sop_no_quote"] == 0.0
    assert values["sop_head_quote"] == 1.0 and "sop_quote_128" not in values  # only the lengths scored
    assert values["strata"]["sop"]["quote"]["pairs"] == int(masks["quote"].sum())
    with pytest.raises(ValueError, match="scores"):
        strata.strata_values({"sentence_64": {"sop_unmasked": {"probe_pooled": {"correct": "1"}}}}, FAST_TRUNK)


def test_the_card_section_is_replaced_not_repeated():
    from albert_mini.harness.research.model_card import STRATA_BEGIN, with_strata_section

    score = {"pairs": 10, "correct": 8.0, "accuracy": 0.8, "wilson": [0.49, 0.94]}
    split = {"all": score, "quote": score, "no_quote": score}
    baselines = {"majority": split, "surface_regression": split,
                 "quote_state_rule": {**split, "decided": 3, "right_when_decided": 3}}
    strata = {f"at_{T}": {"head": split, "probe_pooled": split, "baselines": baselines} for T in (64, 128)}
    card = "# model\n\ntext\n\n## Limits\nsmall.\n"
    once = with_strata_section(card, strata, "m")
    assert once.index(STRATA_BEGIN) < once.index("## Limits") and "80.0 (49.0-94.0%)" in once
    assert with_strata_section(once, strata, "m") == once  # a second run replaces its own section


def test_the_showcase_pair_texts_follow_its_held_out_pairs_pair_for_pair():
    from albert_mini.study.showcase import held_out_pair_texts, held_out_pairs

    pairs, texts = held_out_pairs(64, splits=("validation",)), held_out_pair_texts(64, splits=("validation",))
    tokenizer = Tokenizer.default()
    assert len(pairs) == len(texts) > 100
    for x, t in zip(pairs, texts):
        a, b = x.segments()
        assert (t.tokens_a, t.tokens_b, t.a, t.b) == (x.len_a, x.len_b, tokenizer.decode(a), tokenizer.decode(b))
    assert 0 < quote_strata(texts)["quote"].sum() < len(texts)
