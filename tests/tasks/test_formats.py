"""Loaders and writers of the official task formats: fixtures load as expected, round trips, bad records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert_mini.tasks.formats import (
    MNLI_LABELS,
    MNLI_TEST_COLUMNS,
    MNLI_TRAIN_COLUMNS,
    Answer,
    ClassificationExample,
    MultipleChoiceExample,
    RecordError,
    SpanExample,
    load_glue_tsv,
    load_race_json,
    load_squad_json,
    write_race_json,
    write_squad_json,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


# --------------------------------------------------------------------------- GLUE
def test_sst2_fixture_loads_labels_and_row_ids():
    examples = load_glue_tsv(FIXTURES / "sst2.tsv", "sst2")
    assert [e.id for e in examples] == ["0", "1", "2", "3", "4"]
    assert [e.label for e in examples] == [1, 0, 1, 0, 1]
    assert examples[2].text_a == 'an "instant classic" it is not , but the cast is charming . '  # quotes kept as text
    assert all(e.text_b is None for e in examples)


def test_mnli_fixture_reads_dev_layout_by_column_name():
    examples = load_glue_tsv(FIXTURES / "mnli.tsv", "mnli")
    assert [e.id for e in examples] == ["101e", "102c", "103n", "104e"]
    assert [MNLI_LABELS[e.label] for e in examples] == ["entailment", "contradiction", "neutral", "entailment"]
    assert examples[1].text_a == "The ferry leaves the harbour at noon every day."
    assert examples[1].text_b == "The ferry never sails."


def test_mnli_label_order_is_documented_constant():
    assert MNLI_LABELS == ("contradiction", "entailment", "neutral")


@pytest.mark.parametrize("task", ["sst2", "mnli"])
def test_glue_round_trip_labelled_and_unlabelled(tmp_path, task):
    pair = task == "mnli"
    labelled = [ClassificationExample(f"r{i}", f"first text {i} .", f"second {i}" if pair else None, i % 2)
                for i in range(5)]
    unlabelled = [ClassificationExample(e.id, e.text_a, e.text_b, None) for e in labelled]
    for examples in (labelled, unlabelled):
        path = tmp_path / f"{task}.tsv"
        path.write_text(glue_tsv(examples, task))
        assert load_glue_tsv(path, task) == examples


def glue_tsv(examples, task):
    """`examples` as GLUE lays them out: SST-2 by index, MNLI in its train or test columns, labels by name."""
    labels = {"sst2": ("0", "1"), "mnli": MNLI_LABELS}[task]
    labelled = examples[0].label is not None
    if task == "sst2":
        header = ["index", "sentence"] + (["label"] if labelled else [])
        rows = [[e.id, e.text_a] + ([labels[e.label]] if labelled else []) for e in examples]
    else:
        header = list(MNLI_TRAIN_COLUMNS if labelled else MNLI_TEST_COLUMNS)
        rows = []
        for i, e in enumerate(examples):
            values = dict.fromkeys(header, "") | {"index": str(i), "pairID": e.id, "sentence1": e.text_a,
                                                  "sentence2": e.text_b}
            if labelled:
                values["label1"] = values["gold_label"] = labels[e.label]
            rows.append([values[c] for c in header])
    return "".join("\t".join(row) + "\n" for row in [header, *rows])


def test_glue_test_file_without_labels_gives_none(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("index\tsentence\n0\tgood .\n1\tbad .\n")
    assert [(e.id, e.label) for e in load_glue_tsv(path, "sst2")] == [("0", None), ("1", None)]


def test_glue_unknown_label_names_record_and_value(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("index\tsentence\tlabel\n0\tfine .\t1\nx7\toops .\tpositive\n")
    with pytest.raises(RecordError, match=r"record 'x7'.*'positive'.*0, 1") as error:
        load_glue_tsv(path, "sst2")
    assert str(path) in str(error.value)


def test_mnli_unknown_label_names_pair_id(tmp_path):
    header = "\t".join(["index", "pairID", "sentence1", "sentence2", "gold_label"])
    path = tmp_path / "bad.tsv"
    path.write_text(f"{header}\n0\t9e\ta\tb\tentailment\n1\t9x\ta\tb\t-\n")
    with pytest.raises(RecordError, match=r"record '9x'.*unknown gold_label '-'"):
        load_glue_tsv(path, "mnli")


def test_glue_wrong_column_count_names_record_and_counts(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("index\tsentence\tlabel\n0\tfine .\t1\n12\ttoo\tmany\t1\n")
    with pytest.raises(RecordError, match=r"record '12'.*4 tab-separated columns but the header has 3"):
        load_glue_tsv(path, "sst2")


def test_glue_missing_header_column(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("index\tpairID\tpremise\thypothesis\tgold_label\n0\t1e\ta\tb\tneutral\n")
    with pytest.raises(RecordError, match=r"lacks column\(s\) sentence1, sentence2"):
        load_glue_tsv(path, "mnli")


def test_glue_empty_text_is_rejected(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("sentence\tlabel\nok .\t1\n \t0\n")
    with pytest.raises(RecordError, match=r"record '1'.*column sentence is empty"):
        load_glue_tsv(path, "sst2")


def test_glue_unknown_task_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown GLUE task 'qqp'"):
        load_glue_tsv(FIXTURES / "sst2.tsv", "qqp")
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        load_glue_tsv(tmp_path / "nope.tsv", "sst2")


# --------------------------------------------------------------------------- RACE
def test_race_folder_loads_every_file_recursively_in_order():
    examples = load_race_json(FIXTURES / "race")
    assert [e.id for e in examples] == ["high1.txt-0", "high1.txt-1", "middle2.txt-0"]
    assert [e.answer for e in examples] == [2, 0, 1]
    assert examples[0].options[2] == "She wanted to learn how bread is made."
    assert examples[2].question == "The twins built _ during the holidays."
    assert load_race_json(FIXTURES / "race" / "middle" / "2.txt") == examples[2:]


def test_race_round_trip_single_article_and_bundle(tmp_path):
    examples = load_race_json(FIXTURES / "race")
    single = write_race_json(examples[:2], tmp_path / "one.txt")
    assert isinstance(json.loads(single.read_text()), dict)  # one article: the RACE release's layout
    assert load_race_json(single) == examples[:2]
    bundle = write_race_json(examples, tmp_path / "all.json")
    assert len(json.loads(bundle.read_text())) == 2
    assert load_race_json(bundle) == examples


def test_race_round_trip_without_answers(tmp_path):
    examples = [MultipleChoiceExample("a-0", "P.", "Q?", ["w", "x", "y", "z"], None)]
    assert load_race_json(write_race_json(examples, tmp_path / "a.json")) == examples


def _race_file(tmp_path: Path, **changes) -> Path:
    article = {"id": "r9.txt", "article": "A short passage.", "questions": ["Q one?", "Q two?"],
               "options": [["a", "b", "c", "d"], ["e", "f", "g", "h"]], "answers": ["A", "D"]}
    article.update(changes)
    path = tmp_path / "r9.txt"
    path.write_text(json.dumps(article))
    return path


def test_race_option_count_other_than_four(tmp_path):
    path = _race_file(tmp_path, options=[["a", "b", "c", "d"], ["e", "f", "g"]])
    with pytest.raises(RecordError, match=r"record 'r9.txt-1'.*found 3 options, but RACE questions have 4"):
        load_race_json(path)


def test_race_option_count_other_than_the_others(tmp_path):
    same = _race_file(tmp_path, options=[["a"] * 5, ["b"] * 5])
    assert [len(e.options) for e in load_race_json(same, num_options=None)] == [5, 5]
    path = _race_file(tmp_path, options=[["a", "b", "c"], ["e", "f", "g", "h", "i"]], answers=["A", "B"])
    with pytest.raises(RecordError, match=r"'r9.txt-1'.*found 5 options, but the first question of this file has 3"):
        load_race_json(path, num_options=None)


def test_race_answer_letter_out_of_range(tmp_path):
    with pytest.raises(RecordError, match=r"record 'r9.txt-1'.*answer 'E' is not one of the letters A, B, C, D"):
        load_race_json(_race_file(tmp_path, answers=["A", "E"]))


def test_race_empty_question(tmp_path):
    with pytest.raises(RecordError, match=r"record 'r9.txt-0'.*question is empty"):
        load_race_json(_race_file(tmp_path, questions=["  ", "Q two?"]))


def test_race_list_lengths_must_agree(tmp_path):
    with pytest.raises(RecordError, match=r"record 'r9.txt'.*found 2 questions, 2 options, 1 answers"):
        load_race_json(_race_file(tmp_path, answers=["A"]))


def test_race_invalid_json_and_missing_paths(tmp_path):
    path = tmp_path / "broken.txt"
    path.write_text('{"id": "x", ')
    with pytest.raises(RecordError, match=r"broken.txt: not valid JSON"):
        load_race_json(path)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_race_json(tmp_path / "missing.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no RACE files"):
        load_race_json(tmp_path / "empty")


def test_race_writer_needs_article_question_ids(tmp_path):
    bad = [MultipleChoiceExample("noquestionnumber", "P.", "Q?", ["a", "b", "c", "d"], 0)]
    with pytest.raises(RecordError, match=r"record 'noquestionnumber'.*<article id>-<question number>"):
        write_race_json(bad, tmp_path / "x.json")


# --------------------------------------------------------------------------- SQuAD
def test_squad_fixture_loads_every_question_with_offsets():
    examples = load_squad_json(FIXTURES / "squad.json")
    assert [e.id for e in examples] == ["lh-1", "lh-2", "lh-3", "or-1", "or-2"]
    two = examples[1]
    assert two.answers == [Answer("twenty miles", 75), Answer("twenty miles away", 75)]
    assert all(e.context[a.start:a.end] == a.text for e in examples for a in e.answers)


def test_squad_round_trip_groups_consecutive_contexts(tmp_path):
    examples = load_squad_json(FIXTURES / "squad.json")
    path = write_squad_json(examples, tmp_path / "s.json", title="fixture")
    content = json.loads(path.read_text())
    assert content["version"] == "1.1"
    assert [len(p["qas"]) for p in content["data"][0]["paragraphs"]] == [2, 1, 2]
    assert load_squad_json(path) == examples
    empty = write_squad_json([], tmp_path / "empty.json")
    assert load_squad_json(empty) == []


def test_squad_question_without_answers_loads_as_test_record(tmp_path):
    examples = [SpanExample("t1", "Who?", "Nobody knows.", [])]
    assert load_squad_json(write_squad_json(examples, tmp_path / "t.json")) == examples


def _squad_file(tmp_path: Path, context: str, question: str, text: str, start: int) -> Path:
    qa = {"id": "q-42", "question": question, "answers": [{"text": text, "answer_start": start}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": [qa]}]}]}))
    return path


def test_squad_answer_not_at_offset_says_what_is_there(tmp_path):
    path = _squad_file(tmp_path, "The cat sat on the mat.", "Where?", "the mat", 14)
    with pytest.raises(RecordError, match=r"record 'q-42'.*'the mat' is not at answer_start 14.*holds ' the ma'"):
        load_squad_json(path)


def test_squad_empty_question_and_context(tmp_path):
    with pytest.raises(RecordError, match=r"record 'q-42'.*question is empty"):
        load_squad_json(_squad_file(tmp_path, "The cat sat.", " ", "cat", 4))
    with pytest.raises(RecordError, match=r"record 'q-42'.*context of paragraph 0 of article 0 is empty"):
        load_squad_json(_squad_file(tmp_path, "", "Who?", "cat", 4))


def test_squad_v2_unanswerable_is_rejected(tmp_path):
    path = tmp_path / "v2.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": "Text.", "qas": [{"id": "u1", "question": "Why?", "answers": [], "is_impossible": True}]}]}]}))
    with pytest.raises(RecordError, match=r"record 'u1'.*SQuAD v1.1 only"):
        load_squad_json(path)


def test_squad_writer_checks_answers_and_ids(tmp_path):
    with pytest.raises(RecordError, match=r"record 'w1'.*'dog' is not at answer_start 4"):
        write_squad_json([SpanExample("w1", "Who?", "The cat.", [Answer("dog", 4)])], tmp_path / "w.json")
    twice = [SpanExample("d", "Who?", "The cat.", [Answer("cat", 4)])] * 2
    with pytest.raises(RecordError, match=r"record 'd'.*appears twice"):
        write_squad_json(twice, tmp_path / "w.json")


def test_squad_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.json"):
        load_squad_json(tmp_path / "absent.json")
