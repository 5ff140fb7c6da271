"""Fine-tuning inputs: character offsets of pieces, classification / RACE / SQuAD features, collation, span decoding."""

import random

import pytest
import torch

from albert_mini.specials import CLS_ID, SEP_ID
from albert_mini.tasks.features import (
    answer_token_span,
    classification_features,
    collate_classification,
    collate_multiple_choice,
    collate_spans,
    decode_spans,
    max_context_window,
    race_features,
    race_pack,
    race_qa_text,
    squad_features,
    window_starts,
)
from albert_mini.tasks.formats import Answer, ClassificationExample, MultipleChoiceExample, RecordError, SpanExample
from albert_mini.tasks.squad_metrics import normalize_answer
from albert_mini.text.tokenizer import Tokenizer, TokenizerError, preprocess_text, preprocess_with_origins

# Words chosen to exercise every preprocessing step: accents (composed and decomposed), curly and TeX quotes,
# digits, a ligature, characters the Austen vocabulary does not know (em dash, CJK), punctuation.
WORDS = [
    "Elizabeth", "Darcy,", "Pemberley.", "Mr.", "Bennet's", "the", "of", "a", "and", "ball", "CAFÉ", "naïve",
    "Zoë", "e\u0301te\u0301", "\u201cIndeed\u201d", "\u2018well\u2019", "``quoted''", "1,000", "£20", "1813",
    "\u2014", "\ufb01ne", "(Longbourn)", "Netherfield?", "\u5e73\u6210", "x\u0301", "ﬁfty-two", "Ⅷ", "said",
]
SPACES = [" ", " ", " ", "  ", "\n", " \n\t ", "\u00a0"]


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.default()


def random_context(rng: random.Random, n_words: int) -> tuple[str, list[tuple[int, int]]]:
    """A context of random words and whitespace runs, with the character span of every word."""
    text, spans = rng.choice(["", " ", "\n"]), []
    for k in range(n_words):
        if k:
            text += rng.choice(SPACES)
        word = rng.choice(WORDS)
        spans.append((len(text), len(text) + len(word)))
        text += word
    return text + rng.choice(["", " ", "\n"]), spans


def random_span_example(rng: random.Random, index: int, n_words: int = 60) -> SpanExample:
    context, spans = random_context(rng, n_words)
    first = rng.randrange(n_words)
    last = min(n_words - 1, first + rng.randrange(4))
    start, end = spans[first][0], spans[last][1]
    question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) + "?"
    return SpanExample(f"synthetic-{index}", question, context, [Answer(context[start:end], start)])


# --------------------------------------------------------------------------- encode_with_offsets
OFFSET_TEXTS = [
    "Hello world", "  Caf\u00e9  na\u00efve\n\nZo\u00eb  ", "\u201cCurly\u201d \u2018quotes\u2019 \u2014 and\u2026",
    "``TeX'' quotes and '''triple", "He paid 1,000 pounds; she had 20,000l. in 1813",
    "cafe\u0301 au lait", "x\u0301y \ufb01 \u00bd", "UPPER lower MiXeD\ttab", "\u00c5NGSTR\u00d6M \u00d8re", "",
    "   ", "\u0301 lone accent first", "\u5e73\u6210 and \u2167", "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",
]


@pytest.mark.parametrize("text", OFFSET_TEXTS)
def test_offsets_give_the_ids_of_encode_and_spans_that_read_back(tokenizer, text):
    ids, offsets = tokenizer.encode_with_offsets(text)
    assert ids == tokenizer.encode(text)
    assert len(offsets) == len(ids)
    pieces = tokenizer.sp.encode(preprocess_text(text), return_type="proto").pieces
    previous_start = 0
    for piece, (start, end) in zip(pieces, offsets):
        assert 0 <= start <= end <= len(text) and start >= previous_start
        previous_start = start
        surface = piece.surface.lstrip(" ")  # "▁" stands for a space that the span leaves out
        expanded = preprocess_text(text[start:end])
        if end - start == 1 and len(expanded) > 1:  # a character NFKD expands ("…" -> "...") may be several pieces
            assert surface in expanded
        else:
            assert expanded == surface, (piece.piece, text[start:end])


def test_offsets_by_hand(tokenizer):
    text = "\u201cCaf\u00e9,\u201d  she\n said ``no''"
    ids, offsets = tokenizer.encode_with_offsets(text)
    pieces = [tokenizer.id_to_piece(i) for i in ids]
    # The curly quotes are unknown to the Austen vocabulary: SentencePiece spells a lone "▁" (empty span) before
    # the first; "é" is read back with its accent; each TeX quote pair is one '"' piece spanning two characters.
    assert pieces == ["\u2581", "<unk>", "c", "a", "f", "e", ",", "<unk>", "\u2581she", "\u2581said", '\u2581"', "no",
                      '"']
    assert offsets == [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (9, 12), (14, 18), (19, 21),
                       (21, 23), (23, 25)]
    assert [text[s:e] for s, e in offsets][4:] == ["f", "\u00e9", ",", "\u201d", "she", "said", "``", "no", "''"]


def test_decomposed_accent_stays_with_its_letter(tokenizer):
    text = "cafe\u0301 au lait"
    _, offsets = tokenizer.encode_with_offsets(text)
    ends = [e for _, e in offsets]
    assert 5 in ends and 4 not in ends  # the piece holding "e" ends after U+0301, not before it


def test_preprocess_with_origins_matches_preprocess_text_on_many_characters():
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(chr(rng.choice([rng.randrange(0x20, 0x3000), rng.randrange(0x20, 0x80)]))
                       for _ in range(rng.randint(0, 30)))
        norm, starts, ends = preprocess_with_origins(text)
        assert norm == preprocess_text(text)
        assert len(starts) == len(ends) == len(norm)
        assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends))


def test_offsets_on_random_characters(tokenizer):
    rng = random.Random(1)
    for _ in range(300):
        text = "".join(rng.choice([chr(rng.randrange(0x20, 0x2100)), " ", "a", "E"]) for _ in range(12))
        ids, offsets = tokenizer.encode_with_offsets(text)
        assert ids == tokenizer.encode(text)
        assert all(0 <= s <= e <= len(text) for s, e in offsets)


def test_offsets_reject_non_text(tokenizer):
    with pytest.raises(TokenizerError, match="takes a str"):
        tokenizer.encode_with_offsets(["a list"])


# --------------------------------------------------------------------------- classification
def test_classification_features_and_collate(tokenizer):
    examples = [ClassificationExample("p1", "Elizabeth laughed.", "Darcy did not.", 1),
                ClassificationExample("p2", "A single sentence " * 20, None, 0)]
    features = classification_features(tokenizer, examples, max_length=16)
    assert features[0].input_ids == tokenizer.encode_pair(examples[0].text_a, examples[0].text_b)["input_ids"]
    assert len(features[1].input_ids) == 16 and features[1].input_ids[-1] == SEP_ID
    assert features[0].token_type_ids.count(1) == len(tokenizer.encode("Darcy did not.")) + 1
    batch = collate_classification(features)
    assert batch["input_ids"].shape == (2, 16) and batch["input_ids"].dtype == torch.long
    n0 = len(features[0].input_ids)
    assert batch["attention_mask"][0].tolist() == [1] * n0 + [0] * (16 - n0)
    assert batch["input_ids"][0, n0:].eq(0).all() and batch["token_type_ids"][0, n0:].eq(0).all()
    assert batch["labels"].tolist() == [1, 0]
    assert collate_classification(features, pad_to=20)["input_ids"].shape == (2, 20)
    with pytest.raises(ValueError, match="pad_to=8"):
        collate_classification(features, pad_to=8)


def test_classification_labels_missing_or_float(tokenizer):
    unlabelled = classification_features(tokenizer, [ClassificationExample("t", "Text.", None, None)], 8)
    assert "labels" not in collate_classification(unlabelled)
    regression = classification_features(tokenizer, [ClassificationExample("s", "A.", "B.", 3.5)], 8)
    assert collate_classification(regression)["labels"].dtype == torch.float
    with pytest.raises(ValueError, match="mixes"):
        collate_classification(unlabelled + regression)


# --------------------------------------------------------------------------- RACE
def test_race_pack_by_hand():
    passage, qa = list(range(10, 20)), list(range(20, 30))
    ids, types = race_pack(passage, qa, max_length=12, max_qa_length=4)
    assert ids == [CLS_ID, 10, 11, 12, 13, 14, SEP_ID, 26, 27, 28, 29, SEP_ID]  # last 4 qa, first 5 passage
    assert types == [0] * 7 + [1] * 5
    ids, types = race_pack([10, 11], [20], max_length=12, max_qa_length=4)  # short: nothing is cut
    assert ids == [CLS_ID, 10, 11, SEP_ID, 20, SEP_ID] and types == [0, 0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="no room"):
        race_pack(passage, qa, max_length=7, max_qa_length=4)


def test_race_long_passage_and_question_lengths(tokenizer):
    passage = " ".join(f"Elizabeth walked to Meryton on day {i}." for i in range(120))
    question = " ".join(f"Why did she go there {i} times" for i in range(40)) + " _ ?"
    passage_ids = tokenizer.encode(passage)
    assert len(passage_ids) > 600
    example = MultipleChoiceExample("race-long", passage, question, ["to walk", "b", "c c c", "d"], 2)
    feature = race_features(tokenizer, example)  # max_length 512, max_qa_length 128
    for option, row, types in zip(example.options, feature.input_ids, feature.token_type_ids):
        qa_ids = tokenizer.encode(question.replace("_", option))
        assert len(qa_ids) > 128
        assert len(row) == 512 and len(types) == 512
        assert row[1:1 + 381] == passage_ids[:381] and row[382] == SEP_ID  # 512 - 3 - 128 passage tokens
        assert row[383:511] == qa_ids[-128:] and row[511] == SEP_ID
        assert types == [0] * 383 + [1] * 129
    assert feature.label == 2


def test_race_blank_is_filled_otherwise_option_follows(tokenizer):
    assert race_qa_text("Elizabeth _ Darcy.", "married") == "Elizabeth married Darcy."
    assert race_qa_text("Who wrote it?", "Austen") == "Who wrote it? Austen"
    example = MultipleChoiceExample("race-1", "A short passage.", "She _ him.", ["loved", "hated"], 0)
    feature = race_features(tokenizer, example)
    qa = feature.input_ids[0][feature.token_type_ids[0].index(1):-1]
    assert qa == tokenizer.encode("She loved him.")


def test_race_collate_shapes_and_errors(tokenizer):
    rng = random.Random(0)
    examples = [MultipleChoiceExample(f"race-{i}", random_context(rng, rng.randint(5, 40))[0], "What _ ?",
                                      [random_context(rng, rng.randint(1, 4))[0] for _ in range(4)], i % 4)
                for i in range(3)]
    features = [race_features(tokenizer, e, max_length=48, max_qa_length=8) for e in examples]
    batch = collate_multiple_choice(features)
    longest = max(len(r) for f in features for r in f.input_ids)
    assert batch["input_ids"].shape == batch["attention_mask"].shape == batch["token_type_ids"].shape == (3, 4, longest)
    assert batch["labels"].tolist() == [0, 1, 2]
    lengths = [[len(r) for r in f.input_ids] for f in features]
    assert batch["attention_mask"].sum(-1).tolist() == lengths
    assert batch["input_ids"][1, 2, :lengths[1][2]].tolist() == features[1].input_ids[2]
    with pytest.raises(RecordError, match="race-one"):
        race_features(tokenizer, MultipleChoiceExample("race-one", "P.", "Q?", ["only"], 0))
    with pytest.raises(RecordError, match="race-bad-answer"):
        race_features(tokenizer, MultipleChoiceExample("race-bad-answer", "P.", "Q?", ["a", "b"], 2))
    three = race_features(tokenizer, MultipleChoiceExample("race-three", "P.", "Q?", ["a", "b", "c"], 0))
    with pytest.raises(ValueError, match="option counts"):
        collate_multiple_choice(features + [three])


# --------------------------------------------------------------------------- SQuAD windows
def test_window_starts_and_max_context_by_hand():
    assert window_starts(10, 4, 3) == [0, 3, 6]
    assert window_starts(10, 4, 6) == [0, 4, 8]  # a stride longer than the window is cut to the window
    assert window_starts(3, 4, 2) == [0]
    # Windows [0, 5) and [3, 8): token 3 has 1 token on its short side in the first, 0 in the second.
    assert max_context_window(3, [0, 3], [5, 5]) == 0
    assert max_context_window(4, [0, 3], [5, 5]) == 1
    assert max_context_window(7, [0, 3], [5, 5]) == 1
    assert max_context_window(3, [0, 2], [5, 5]) == 0  # a tie (1 token each side-minimum): the first window
    assert max_context_window(3, [0, 2], [5, 4]) == 0  # 1 + 0.05 beats 1 + 0.04: the longer window wins
    assert max_context_window(3, [0, 2], [4, 5]) == 1


def test_answer_token_span_skips_empty_tokens():
    offsets = [(0, 3), (4, 4), (4, 5), (6, 9)]  # the second token is a lone "▁" with an empty span
    assert answer_token_span(offsets, 4, 9) == (2, 3)
    assert answer_token_span(offsets, 1, 2) == (0, 0)  # inside one token
    assert answer_token_span(offsets, 3, 4) is None  # only a space


@pytest.mark.parametrize("max_length,doc_stride,max_query_length", [(40, 7, 8), (64, 16, 12), (384, 128, 64)])
def test_squad_windows_cover_context_and_answers_map_back(tokenizer, max_length, doc_stride, max_query_length):
    rng = random.Random(max_length)
    n_inside = n_outside = 0
    for index in range(40):
        example = random_span_example(rng, index, n_words=rng.randint(3, 90))
        features = squad_features(tokenizer, example, max_length, doc_stride, max_query_length)
        context_ids, offsets = tokenizer.encode_with_offsets(example.context)
        query = tokenizer.encode(example.question)[:max_query_length]
        window = max_length - 3 - len(query)
        seen, starts = set(), []
        max_context_count = [0] * len(context_ids)
        for f in features:
            assert f.input_ids[:len(query) + 2] == [CLS_ID, *query, SEP_ID] and f.input_ids[-1] == SEP_ID
            assert len(f.input_ids) <= max_length
            assert len(f.input_ids) == len(f.token_type_ids) == len(f.token_to_char) == len(f.token_is_max_context)
            first = next(i for i, span in enumerate(f.token_to_char) if span is not None)
            start = 0 if not starts else starts[-1] + min(doc_stride, window)
            assert first == f.context_start == len(query) + 2
            assert f.input_ids[first:-1] == context_ids[start:start + window]
            assert f.token_to_char[first:-1] == offsets[start:start + window]
            starts.append(start)
            seen.update(range(start, start + len(f.input_ids) - first - 1))
            for k, flag in enumerate(f.token_is_max_context[first:-1]):
                max_context_count[start + k] += flag
        assert seen == set(range(len(context_ids)))  # every context token is in some window
        assert starts[-1] + window >= len(context_ids) and (len(starts) == 1 or starts[-2] + window < len(context_ids))
        assert max_context_count == [1] * len(context_ids)  # each token is scored in exactly one window

        answer = example.answers[0]
        gold = [i for i, (s, e) in enumerate(offsets) if s < e and s < answer.end and e > answer.start]
        for f, start in zip(features, starts):
            if start <= gold[0] and gold[-1] < start + window:
                n_inside += 1
                span = f.token_to_char[f.start_position][0], f.token_to_char[f.end_position][1]
                assert example.context[span[0]:span[1]] == answer.text  # whole-word answers map back exactly
                assert normalize_answer(example.context[span[0]:span[1]]) == normalize_answer(answer.text)
            else:
                n_outside += 1
                assert (f.start_position, f.end_position) == (0, 0)
    assert n_inside >= 40 and (n_outside > 0 or max_length == 384)


def test_mid_word_answer_is_covered_by_whole_tokens(tokenizer):
    context = "Elizabeth walked to Netherfield alone."
    example = SpanExample("mid", "Where?", context, [Answer("therfie", context.index("therfie"))])
    (feature,) = squad_features(tokenizer, example)
    span = feature.token_to_char[feature.start_position][0], feature.token_to_char[feature.end_position][1]
    assert "therfie" in context[span[0]:span[1]] and " " not in context[span[0]:span[1]]


def test_out_of_window_answer_points_at_cls(tokenizer):
    context = " ".join(f"Word{i}" for i in range(80)) + " Pemberley is the answer."
    example = SpanExample("far", "Where?", context, [Answer("Pemberley", context.index("Pemberley"))])
    features = squad_features(tokenizer, example, max_length=32, doc_stride=8, max_query_length=4)
    targets = [(f.start_position, f.end_position) for f in features]
    assert targets[0] == (0, 0) and targets[-1] != (0, 0)
    inside = [f for f in features if f.start_position]
    assert all(f.input_ids[f.start_position] == tokenizer.encode("Pemberley")[0] for f in inside)
    batch = collate_spans(features)
    assert batch["start_positions"].tolist() == [s for s, _ in targets]
    assert batch["input_ids"].shape == (len(features), max(len(f.input_ids) for f in features))
    unlabelled = squad_features(tokenizer, SpanExample("test", "Where?", context, []), 32, 8, 4)
    assert all(f.start_position is None for f in unlabelled) and "start_positions" not in collate_spans(unlabelled)


def test_squad_errors_name_the_example(tokenizer):
    with pytest.raises(RecordError, match="q-offset"):
        squad_features(tokenizer, SpanExample("q-offset", "Who?", "Jane and Lizzy", [Answer("Lizzy", 3)]))
    with pytest.raises(RecordError, match="q-empty.*empty question"):
        squad_features(tokenizer, SpanExample("q-empty", "  ", "Jane and Lizzy", [Answer("Jane", 0)]))
    with pytest.raises(RecordError, match="q-past-end"):
        squad_features(tokenizer, SpanExample("q-past-end", "Who?", "Jane", [Answer("Jane", 10)]))


# --------------------------------------------------------------------------- decoding
def one_hot_logits(features, width):
    starts, ends = torch.zeros(len(features), width), torch.zeros(len(features), width)
    for row, f in enumerate(features):
        if f.start_position:
            starts[row, f.start_position] = 10.0
            ends[row, f.end_position] = 10.0
    return starts, ends


def test_decode_spans_recovers_gold_answers(tokenizer):
    rng = random.Random(7)
    examples = [random_span_example(rng, i, n_words=rng.randint(5, 70)) for i in range(30)]
    features = [f for e in examples for f in squad_features(tokenizer, e, 48, 12, 10)]
    width = collate_spans(features)["input_ids"].shape[1]
    starts, ends = one_hot_logits(features, width)
    predicted = decode_spans(features, starts, ends, {e.id: e.context for e in examples})
    assert predicted == {e.id: e.answers[0].text for e in examples}


def test_decode_spans_limits(tokenizer):
    context = "Mr. Bennet of Longbourn had five daughters, said Mrs. Bennet."
    example = SpanExample("lim", "Who?", context, [Answer("five daughters", context.index("five"))])
    (feature,) = squad_features(tokenizer, example)
    starts, ends = one_hot_logits([feature], len(feature.input_ids))
    contexts = {"lim": context}
    assert decode_spans([feature], starts, ends, contexts) == {"lim": "five daughters"}
    n_tokens = feature.end_position - feature.start_position + 1
    assert n_tokens >= 2
    # With a cap shorter than the gold span the pair is not allowed; the best allowed pair uses one 10.
    capped = decode_spans([feature], starts, ends, contexts, max_answer_length=n_tokens - 1)["lim"]
    assert capped != "five daughters" and ("five" in capped or "daughters" in capped)
    # Logits on [CLS] and the query are never decoded.
    starts[0, 0] = ends[0, 0] = 100.0
    assert decode_spans([feature], starts, ends, contexts) == {"lim": "five daughters"}
    with pytest.raises(ValueError, match="rows"):
        decode_spans([feature, feature], starts, ends, contexts)


def test_decode_spans_needs_max_context_start(tokenizer):
    context = " ".join(f"Word{i}" for i in range(40))
    example = SpanExample("mc", "Where?", context, [])
    features = squad_features(tokenizer, example, max_length=24, doc_stride=6, max_query_length=4)
    assert len(features) > 2
    width = max(len(f.input_ids) for f in features)
    starts, ends = torch.zeros(len(features), width), torch.zeros(len(features), width)
    # Window 0's last context token has its max context in a later window: a high logit there must be ignored.
    f0, f1 = features[0], features[1]
    last = len(f0.input_ids) - 2
    assert not f0.token_is_max_context[last]
    starts[0, last] = ends[0, last] = 50.0
    chosen = next(i for i in range(f1.context_start, len(f1.input_ids) - 1)
                  if f1.token_is_max_context[i] and f1.token_to_char[i] != f0.token_to_char[last]
                  and f1.token_to_char[i][0] < f1.token_to_char[i][1])
    starts[1, chosen] = ends[1, chosen] = 20.0
    span = f1.token_to_char[chosen]
    predicted = decode_spans(features, starts, ends, {"mc": context}, max_answer_length=1)
    assert predicted == {"mc": context[span[0]:span[1]]}
