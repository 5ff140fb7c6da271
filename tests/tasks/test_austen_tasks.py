"""Derived Austen tasks: the committed files are sound, and a small rebuild is deterministic byte for byte."""

from __future__ import annotations

import hashlib
import re
from functools import cache

import pytest

from albert_mini import load_corpus
from albert_mini.harness.data.build_austen_tasks import (
    BLANK,
    MC_QUESTION,
    build_all,
    build_austen_mc,
    build_austen_span,
    character_names,
)
from albert_mini.tasks.austen_tasks import TASKS_DIR, load_austen_mc, load_austen_span
from albert_mini.tasks.formats import load_race_json, load_squad_json
from albert_mini.text.corpus import CorpusError

FILES = ["austen_mc/test.json", "austen_mc/train.json", "austen_span/test.json", "austen_span/train.json"]


@cache
def _small_corpus() -> tuple[tuple[str, tuple], ...]:
    """Two chapters per novel from each held-out split (and train for the name counts): a fast, real corpus."""
    corpus = []
    for split in ("train", "validation", "test"):
        docs, per_novel = [], {}
        for doc in load_corpus("austen", split):
            if per_novel.get(doc.title, 0) < 2:
                docs.append(doc)
                per_novel[doc.title] = per_novel.get(doc.title, 0) + 1
        corpus.append((split, tuple(docs)))
    return tuple(corpus)


def _corpus() -> dict:
    return {split: list(docs) for split, docs in _small_corpus()}


# --------------------------------------------------------------------------- the committed files
def test_committed_files_match_manifest_and_readme():
    readme = (TASKS_DIR / "README.md").read_text()
    for name in FILES:
        digest = hashlib.sha256((TASKS_DIR / name).read_bytes()).hexdigest()
        assert f"`{name}`" in readme and digest in readme
        assert (TASKS_DIR / name).stat().st_size < 2_000_000
    assert "validation" in readme and "public domain" in readme


@pytest.mark.parametrize("split", ["train", "test"])
def test_committed_mc_examples_have_four_distinct_options(split):
    examples = load_austen_mc(split)
    assert len(examples) == {"train": 1200, "test": 331}[split]  # test: every candidate the chapters offer
    for e in examples:
        assert len(e.options) == 4 and len(set(e.options)) == 4, e.id
        assert e.question == MC_QUESTION and 0 <= e.answer < 4
        assert e.options[e.answer] not in e.passage  # the right answer is not already in the passage
    counts = [sum(e.answer == k for e in examples) for k in range(4)]
    assert min(counts) > len(examples) / 4 * 0.7  # positions are spread, not stuck on one letter


@pytest.mark.parametrize("split", ["train", "test"])
def test_committed_span_answers_sit_at_their_offsets(split):
    examples = load_austen_span(split)
    assert len(examples) >= {"train": 700, "test": 500}[split]
    for e in examples:
        (answer,) = e.answers
        assert e.context[answer.start:answer.end] == answer.text
        assert e.question.count(BLANK) == 1
        # the question is the sentence at the answer with the name blanked out
        before, after = e.question.split(BLANK)
        assert e.context[answer.start - len(before):answer.start] == before
        assert e.context[answer.end:answer.end + len(after)] == after


def test_train_and_test_come_from_different_chapters():
    chapter = re.compile(r"^(.*)-s\d{3}-")
    mc = {split: {chapter.match(e.id).group(1) for e in load_austen_mc(split)} for split in ("train", "test")}
    span = {split: {chapter.match(e.id).group(1) for e in load_austen_span(split)} for split in ("train", "test")}
    validation = {d.id for d in load_corpus("austen", "validation")}
    test = {d.id for d in load_corpus("austen", "test")}
    assert mc["train"] <= validation and span["train"] <= validation
    assert mc["test"] <= test and span["test"] <= test


def test_loaders_reject_unknown_split_and_edited_file(tmp_path):
    with pytest.raises(ValueError, match="unknown split 'validation'"):
        load_austen_mc("validation")
    build_all(tmp_path, {"train": 4, "test": 4}, {"train": 4, "test": 4}, corpus=_corpus())
    (tmp_path / "austen_span" / "test.json").write_text('{"version": "1.1", "data": []}\n')
    with pytest.raises(CorpusError, match="corrupt or was edited"):
        load_austen_span("test", tasks_dir=tmp_path)


# --------------------------------------------------------------------------- building
def test_rebuild_is_byte_for_byte_deterministic(tmp_path):
    sizes = {"train": 30, "test": 20}
    counts = build_all(tmp_path / "a", sizes, sizes, corpus=_corpus())
    build_all(tmp_path / "b", sizes, sizes, corpus=_corpus())
    for name in FILES + ["README.md", "SHA256SUMS"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert counts["austen_mc"] == {"train": 30, "test": 20}
    assert load_race_json(tmp_path / "a" / "austen_mc" / "test.json") == load_austen_mc("test", tmp_path / "a")
    assert len(load_squad_json(tmp_path / "a" / "austen_span" / "train.json")) == counts["austen_span"]["train"]
    build_all(tmp_path / "c", sizes, sizes, seed=7, corpus=_corpus())
    assert (tmp_path / "c" / FILES[0]).read_bytes() != (tmp_path / "a" / FILES[0]).read_bytes()


def test_mc_distractors_come_from_other_chapters_of_the_same_novel():
    documents = _corpus()["test"]
    sentences = {d.id: set(d.sentences()) for d in documents}
    novel = {d.id: d.title for d in documents}
    examples = build_austen_mc(documents, 40, seed=1, step=4)
    assert len(examples) == 40
    for e in examples:
        chapter = e.id.rsplit("-s", 1)[0]
        for k, option in enumerate(e.options):
            homes = {doc_id for doc_id, found in sentences.items() if option in found}
            if k == e.answer:
                assert chapter in homes
            else:
                assert homes and chapter not in homes
                assert {novel[h] for h in homes} == {novel[chapter]}


def test_span_names_are_people_and_questions_blank_one_of_them():
    corpus = _corpus()
    names = character_names([d for docs in corpus.values() for d in docs])
    assert "Elizabeth" in names["Pride and Prejudice"] and "Mr" not in names["Pride and Prejudice"]
    examples = build_austen_span(corpus["test"], names, 25, seed=1)
    assert len(examples) == 25
    for e in examples:
        novel = next(d.title for d in corpus["test"] if e.id.startswith(d.id + "-"))
        assert e.answers[0].text in names[novel]
        assert e.context[e.answers[0].start:e.answers[0].end] == e.answers[0].text


def test_character_names_skip_sentence_initial_words_and_places():
    from albert_mini.text.corpus import Document

    text = ('"Pray," said Anne, "walk with me." Walking is good. Mr. Elliot came. Anne and Mr. Elliot walked to '
            'Bath. They saw Bath.')
    doc = Document("x-1", "X", [text] * 10)
    names = character_names([doc])["X"]
    assert names == ["Elliot", "Anne"]  # "Bath" is frequent but never titled or speaking; "Walking" starts a sentence
