"""The counting baselines of the fine-tuning tasks, on examples small enough to score by hand."""

from __future__ import annotations

import json

import pytest

from albert_mini.study.task_baselines import copy_matcher, naive_bayes_predictions, overlap_predictions, task_baselines
from albert_mini.tasks.formats import ClassificationExample, MultipleChoiceExample, SpanExample
from albert_mini.tasks.registry import get_task


def example(i, text, label):
    return ClassificationExample(f"e{i}", text, None, label)


def test_naive_bayes_follows_the_words_and_the_prior():
    train = [example(0, "good fine good", 1), example(1, "bad awful", 0), example(2, "good", 1)]
    # "good": P(good|1) = (3+1)/(4+4), P(good|0) = (0+1)/(2+4); "bad" the other way; an unseen word counts for
    # neither, so an empty test text falls back on the prior (2 of 3 positive).
    test = [example(3, "good", None), example(4, "bad", None), example(5, "unseen", None)]
    assert naive_bayes_predictions(train, test) == [1, 0, 1]


def test_overlap_picks_the_option_with_most_shared_words_and_the_first_on_ties():
    passage = "Emma walked to Hartfield with Harriet."
    picks = overlap_predictions([
        MultipleChoiceExample("a", passage, "_", ["to Hartfield with Harriet", "to London", "Emma", "nobody"], 0),
        MultipleChoiceExample("b", passage, "_", ["rain", "snow", "fog", "sun"], 0)])
    assert picks == [0, 0]


def test_copy_matcher_reads_the_blank_as_one_word():
    context = "It was Mr. Knightley who spoke first. Nobody answered."
    assert copy_matcher(SpanExample("s", "It was Mr. ___ who spoke first.", context)) == "Knightley"
    assert copy_matcher(SpanExample("t", "It was Mrs. ___ who spoke first.", context)) == ""


@pytest.mark.usefixtures("polarity_data")  # tests/conftest.py
def test_shipped_task_baselines_score_whole_test_splits_with_per_example_correctness():
    baselines = task_baselines()
    for task in ("polarity", "austen-mc"):
        row = baselines[task]
        assert row["n"] == len(get_task(task).load("test")) == len(row["correct"])
        assert row["accuracy"] == pytest.approx(row["correct"].count("1") / row["n"])
    assert baselines["austen-span"]["n"] == len(get_task("austen-span").load("test"))
    assert 0 <= baselines["austen-span"]["exact_match"] <= 100


@pytest.mark.usefixtures("polarity_data")  # tests/conftest.py
def test_committed_finetune_results_hold_the_baselines_computed_now():
    from albert_mini.study import results

    committed = results.load("finetune")["baselines"]
    assert committed == json.loads(json.dumps(task_baselines()))
