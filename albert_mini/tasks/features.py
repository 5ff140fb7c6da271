"""Model inputs for fine-tuning: GLUE-style classification, RACE multiple choice, SQuAD v1 span extraction.

Each `*_features` function turns examples (albert_mini.tasks.formats) into features that hold plain Python lists of
ids; each `collate_*` function pads a list of features into a dict of LongTensors that the matching head in
albert_mini.model.heads accepts as keyword arguments. Bookkeeping that is not a tensor (example ids, the character
span of each context token, the max-context flags) stays on the features, so keep the feature list next to the
batches and use `decode_spans` to turn span logits back into answer text.

Layouts (google-research/albert's `classifier_utils.py`, `race_utils.py` and `squad_utils.py`; BERT's
`run_squad.py`; chapters/REFERENCE_NOTES.md, section 3):
- classification: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, longest-first truncation to max_length.
- RACE: per option `[CLS] passage [SEP] qa [SEP]`; qa keeps its LAST max_qa_length tokens, the passage is cut
  at its end to max_length - 3 - len(qa) (each option on its own copy of the passage, as race_utils.py does).
- SQuAD v1: `[CLS] query [SEP] context window [SEP]`; the query keeps its FIRST max_query_length tokens and
  windows of the context slide by doc_stride tokens (BERT's run_squad.py recipe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..specials import CLS_ID, SEP_ID
from ..text.padding import pad_batch
from .formats import ClassificationExample, MultipleChoiceExample, RecordError, SpanExample

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["answer_token_span", "classification_features", "decode_spans", "race_features", "race_pack",
           "race_qa_text", "squad_features", "window_starts"]

if TYPE_CHECKING:  # annotations only: text.tokenizer is also a command, which the package must not import early
    from ..text.tokenizer import Tokenizer

CharSpan = tuple[int, int]


# --------------------------------------------------------------------------- features
@dataclass
class ClassificationFeature:
    """`[CLS] a [SEP] (b [SEP])` for one example; `label` is None for unlabelled data (float for regression)."""

    example_id: str
    input_ids: list[int]
    token_type_ids: list[int]
    label: int | float | None


@dataclass
class MultipleChoiceFeature:
    """One `[CLS] passage [SEP] qa [SEP]` row per option (rows may differ in length until collated)."""

    example_id: str
    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    label: int | None


@dataclass
class SpanFeature:
    """One window `[CLS] query [SEP] context window [SEP]` of a SQuAD example.

    token_to_char[i] is the (start, end) character span in the example's context of token i, or None for
    [CLS], query and [SEP] tokens. token_is_max_context[i] is True when this window gives context token i more
    surrounding context than any other window of the example (only such tokens may start a predicted answer).
    start_position / end_position index the first answer's first and last tokens in this window, 0 and 0
    ([CLS]) when the answer is not wholly inside the window, None when the example has no answers.
    """

    example_id: str
    window_index: int
    input_ids: list[int]
    token_type_ids: list[int]
    token_to_char: list[CharSpan | None]
    token_is_max_context: list[bool]
    start_position: int | None = None
    end_position: int | None = None
    context_start: int = 0  # index of the first context token in input_ids


# --------------------------------------------------------------------------- classification
def classification_features(tokenizer: Tokenizer, examples: Sequence[ClassificationExample],
                            max_length: int) -> list[ClassificationFeature]:
    """`[CLS] a [SEP] (b [SEP])` for each example, cut longest-first to max_length tokens."""
    features = []
    for example in examples:
        encoded = tokenizer.encode_pair(example.text_a, example.text_b, max_length=max_length)
        features.append(ClassificationFeature(example.id, encoded["input_ids"], encoded["token_type_ids"],
                                              example.label))
    return features


# --------------------------------------------------------------------------- RACE
def race_pack(passage_ids: Sequence[int], qa_ids: Sequence[int], max_length: int = 512,
              max_qa_length: int = 128) -> tuple[list[int], list[int]]:
    """`[CLS] passage [SEP] qa [SEP]` in max_length tokens: qa keeps its last max_qa_length, the passage its start.

    Returns (input_ids, token_type_ids) with types 0 for `[CLS] passage [SEP]` and 1 for `qa [SEP]`.
    """
    if max_qa_length < 1 or max_length - 3 - max_qa_length < 1:
        raise ValueError(f"max_length={max_length} and max_qa_length={max_qa_length} leave no room for the passage; "
                         f"need max_qa_length >= 1 and max_length >= max_qa_length + 4")
    qa = list(qa_ids)[-max_qa_length:]  # the end holds the option, which is what is being scored
    passage = list(passage_ids)[:max_length - 3 - len(qa)]
    input_ids = [CLS_ID, *passage, SEP_ID, *qa, SEP_ID]
    token_type_ids = [0] * (len(passage) + 2) + [1] * (len(qa) + 1)
    return input_ids, token_type_ids


def race_qa_text(question: str, option: str) -> str:
    """RACE's question+option text: the option fills every `_` blank, otherwise it follows the question."""
    return question.replace("_", option) if "_" in question else question + " " + option


def race_features(tokenizer: Tokenizer, example: MultipleChoiceExample, max_length: int = 512,
                  max_qa_length: int = 128) -> MultipleChoiceFeature:
    """One row per option, `[CLS] passage [SEP] qa [SEP]` (see `race_pack`); needs at least two options."""
    n_options = len(example.options)
    if n_options < 2:
        raise RecordError(f"example {example.id!r} has {n_options} option(s); multiple choice needs at least 2 "
                          f"(fix or drop this record)")
    if example.answer is not None and not 0 <= example.answer < n_options:
        raise RecordError(f"example {example.id!r}: answer index {example.answer} is not one of its "
                          f"{n_options} options (0..{n_options - 1})")
    passage_ids = tokenizer.encode(example.passage)
    rows = [race_pack(passage_ids, tokenizer.encode(race_qa_text(example.question, option)), max_length,
                      max_qa_length) for option in example.options]
    return MultipleChoiceFeature(example.id, [ids for ids, _ in rows], [types for _, types in rows], example.answer)


# --------------------------------------------------------------------------- SQuAD
def window_starts(n_tokens: int, window: int, stride: int) -> list[int]:
    """Start offsets of the context windows: 0, stride, 2*stride, ... until a window reaches the last token."""
    if window < 1 or stride < 1:
        raise ValueError(f"window ({window}) and stride ({stride}) must both be at least 1")
    starts = [0]
    while starts[-1] + window < n_tokens:
        starts.append(starts[-1] + min(window, stride))  # a stride longer than the window would skip tokens
    return starts


def max_context_window(position: int, starts: Sequence[int], lengths: Sequence[int]) -> int:
    """BERT's rule: the window where context token `position` has the most context on its shorter side.

    Score = min(tokens to its left, tokens to its right) + 0.01 * window length; the first best window wins.
    """
    best, best_score = -1, -1.0
    for index, (start, length) in enumerate(zip(starts, lengths)):
        if start <= position < start + length:
            score = min(position - start, start + length - 1 - position) + 0.01 * length
            if score > best_score:
                best, best_score = index, score
    return best


def answer_token_span(offsets: Sequence[CharSpan], char_start: int, char_end: int) -> tuple[int, int] | None:
    """First and last context tokens covering characters [char_start, char_end), or None if no token does.

    The start token is the first token (with a non-empty span) that ends after char_start, i.e. the one
    containing it or else the first one after it; the end token is the last one that starts before char_end,
    i.e. the one containing char_end - 1 or else the last one before it. Empty-span tokens (a lone "▁") are
    never chosen.
    """
    starts = [i for i, (s, e) in enumerate(offsets) if s < e and e > char_start]
    ends = [i for i, (s, e) in enumerate(offsets) if s < e and s < char_end]
    if not starts or not ends or starts[0] > ends[-1]:
        return None
    return starts[0], ends[-1]


def _check_span_example(example: SpanExample) -> None:
    if not example.question.strip():
        raise RecordError(f"example {example.id!r} has an empty question; fix or drop this record")
    if not example.context.strip():
        raise RecordError(f"example {example.id!r} has an empty context; fix or drop this record")
    for answer in example.answers:
        if not answer.text.strip():
            raise RecordError(f"example {example.id!r} has an empty answer text; fix or drop this record")
        found = example.context[answer.start:answer.end] if answer.start >= 0 else None
        if found != answer.text:
            raise RecordError(
                f"example {example.id!r}: answer {answer.text!r} is not in the context at character {answer.start} "
                f"(the context has {found!r} there); fix the answer's start offset or drop this record"
            )


def squad_features(tokenizer: Tokenizer, example: SpanExample, max_length: int = 384, doc_stride: int = 128,
                   max_query_length: int = 64) -> list[SpanFeature]:
    """The windows `[CLS] query [SEP] context window [SEP]` of one example, with training targets if it has answers.

    Windows hold max_length - 3 - len(query) context tokens and start every doc_stride tokens until one
    reaches the end, so every context token is in at least one window. The target of each window is the
    first answer's token span, or (0, 0) (the [CLS] token) when that answer is not wholly inside the window:
    the standard SQuAD v1 recipe, which trains windows without the answer to point at [CLS].
    """
    _check_span_example(example)
    query = tokenizer.encode(example.question)[:max_query_length]
    if not query:
        raise RecordError(f"example {example.id!r}: the question {example.question!r} has no tokens after "
                          f"preprocessing; fix or drop this record")
    context_ids, context_offsets = tokenizer.encode_with_offsets(example.context)
    window = max_length - 3 - len(query)
    if window < 1:
        raise ValueError(f"max_length={max_length} leaves no room for context after a {len(query)}-token query; "
                         f"use max_length > max_query_length + 3")
    starts = window_starts(len(context_ids), window, doc_stride)
    lengths = [min(window, len(context_ids) - s) for s in starts]
    best_window = [max_context_window(p, starts, lengths) for p in range(len(context_ids))]

    target = None
    if example.answers:
        first = example.answers[0]
        target = answer_token_span(context_offsets, first.start, first.end)
        if target is None:
            raise RecordError(f"example {example.id!r}: answer {first.text!r} at character {first.start} covers no "
                              f"token of the context; fix the answer or drop this record")

    prefix = [CLS_ID, *query, SEP_ID]
    features = []
    for index, (start, length) in enumerate(zip(starts, lengths)):
        stop = start + length
        input_ids = prefix + context_ids[start:stop] + [SEP_ID]
        token_type_ids = [0] * len(prefix) + [1] * (length + 1)
        token_to_char: list[CharSpan | None] = [None] * len(prefix) + list(context_offsets[start:stop]) + [None]
        is_max = [False] * len(prefix) + [best_window[p] == index for p in range(start, stop)] + [False]
        feature = SpanFeature(example.id, index, input_ids, token_type_ids, token_to_char, is_max,
                              context_start=len(prefix))
        if target is not None:
            first_token, last_token = target
            inside = start <= first_token and last_token < stop
            shift = len(prefix) - start
            feature.start_position = first_token + shift if inside else 0
            feature.end_position = last_token + shift if inside else 0
        features.append(feature)
    return features


# --------------------------------------------------------------------------- collation
def _labels(values: Sequence, name: str) -> torch.Tensor | None:
    """All present -> a tensor (float if any is float, for regression); all missing -> None; a mix is an error."""
    missing = [v is None for v in values]
    if all(missing):
        return None
    if any(missing):
        raise ValueError(f"a batch mixes features with and without {name}; keep labelled and unlabelled data apart")
    dtype = torch.float if any(isinstance(v, float) for v in values) else torch.long
    return torch.tensor(list(values), dtype=dtype)


def _require(features: Sequence) -> None:
    if not features:
        raise ValueError("empty batch: pass at least one feature")


def collate_classification(features: Sequence[ClassificationFeature],
                           pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """input_ids, attention_mask, token_type_ids (B, T) padded with 0, and labels (B,) when every feature has one."""
    _require(features)
    batch = pad_batch({"input_ids": [f.input_ids for f in features],
                       "token_type_ids": [f.token_type_ids for f in features]}, pad_to)
    labels = _labels([f.label for f in features], "labels")
    if labels is not None:
        batch["labels"] = labels
    return batch


def collate_multiple_choice(features: Sequence[MultipleChoiceFeature],
                            pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """input_ids, attention_mask, token_type_ids (B, C, T) padded with 0, and labels (B,) when all are labelled."""
    _require(features)
    counts = {len(f.input_ids) for f in features}
    if len(counts) > 1:
        raise ValueError(f"a batch mixes option counts {sorted(counts)} "
                         f"({', '.join(f'{f.example_id!r}: {len(f.input_ids)}' for f in features[:4])}, ...); "
                         f"batch examples with the same number of options together")
    n_choices = counts.pop()
    rows = [r for f in features for r in f.input_ids]
    flat = pad_batch({"input_ids": rows, "token_type_ids": [r for f in features for r in f.token_type_ids]}, pad_to)
    batch = {key: value.view(len(features), n_choices, -1) for key, value in flat.items()}  # (B * C, T) -> (B, C, T)
    labels = _labels([f.label for f in features], "labels")
    if labels is not None:
        batch["labels"] = labels
    return batch


def collate_spans(features: Sequence[SpanFeature], pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """input_ids, attention_mask, token_type_ids (B, T) padded with 0; start_positions, end_positions (B,) if known."""
    _require(features)
    batch = pad_batch({"input_ids": [f.input_ids for f in features],
                       "token_type_ids": [f.token_type_ids for f in features]}, pad_to)
    starts = _labels([f.start_position for f in features], "start_position")
    ends = _labels([f.end_position for f in features], "end_position")
    if starts is not None and ends is not None:
        batch["start_positions"], batch["end_positions"] = starts, ends
    return batch


# --------------------------------------------------------------------------- decoding
def _as_rows(logits, n_rows: int, name: str) -> list[np.ndarray]:
    if isinstance(logits, torch.Tensor):
        logits = logits.detach().float().cpu().numpy()
    rows = [np.asarray(row, dtype=np.float64) for row in logits]
    if len(rows) != n_rows:
        raise ValueError(f"{name} has {len(rows)} rows but there are {n_rows} features; pass one row per feature, "
                         f"in the same order")
    return rows


def decode_spans(features: Sequence[SpanFeature], start_logits, end_logits, contexts: Mapping[str, str],
                 max_answer_length: int = 30, n_best: int = 20) -> dict[str, str]:
    """Predicted answer text per example id from per-window start/end logits (BERT's SQuAD v1 decoding).

    start_logits / end_logits: (N, T) tensors or arrays (or lists of rows), one row per feature, T >= each
    feature's length (padding positions are ignored). In each window the n_best highest start and end logits
    among context tokens are paired; a pair counts when end >= start, it spans at most max_answer_length
    tokens and its start token has max context in this window. The best start + end logit over all windows of
    an example wins; its text is cut from the ORIGINAL context with the tokens' character spans. An example
    with no valid pair gets "". `contexts` maps example id to context text.
    """
    starts_rows = _as_rows(start_logits, len(features), "start_logits")
    ends_rows = _as_rows(end_logits, len(features), "end_logits")
    best: dict[str, tuple[float, str]] = {}
    for feature, start_row, end_row in zip(features, starts_rows, ends_rows):
        if feature.example_id not in contexts:
            raise KeyError(f"no context for example {feature.example_id!r}; contexts must map every feature's "
                           f"example id to its context text")
        context = contexts[feature.example_id]
        length = len(feature.input_ids)
        if len(start_row) < length or len(end_row) < length:
            raise ValueError(f"logit rows of length {min(len(start_row), len(end_row))} are shorter than feature "
                             f"{feature.example_id!r} window {feature.window_index} ({length} tokens)")
        # Empty-span tokens (a lone "▁") cannot hold an answer; neither can the query or special tokens.
        candidates = np.array([i for i, span in enumerate(feature.token_to_char)
                               if span is not None and span[0] < span[1]], dtype=np.int64)
        best.setdefault(feature.example_id, (-np.inf, ""))
        if candidates.size == 0:
            continue
        top_starts = candidates[np.argsort(-start_row[candidates], kind="stable")[:n_best]]
        top_ends = candidates[np.argsort(-end_row[candidates], kind="stable")[:n_best]]
        for s in top_starts:
            if not feature.token_is_max_context[s]:
                continue
            for e in top_ends:
                if e < s or e - s + 1 > max_answer_length:
                    continue
                score = float(start_row[s] + end_row[e])
                if score > best[feature.example_id][0]:
                    text = context[feature.token_to_char[s][0]:feature.token_to_char[e][1]]
                    best[feature.example_id] = (score, text)
    return {example_id: text for example_id, (_, text) in best.items()}
