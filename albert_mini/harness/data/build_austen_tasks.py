"""Build data/tasks/: two fine-tuning tasks derived from held-out Austen chapters, in the RACE and SQuAD formats.

- austen-mc (RACE JSON): a passage of 2-4 consecutive sentences, the question "Which sentence comes next?" and
  four options: the true next sentence and three sentences from other chapters of the same novel.
- austen-span (SQuAD v1.1 JSON): a passage of 2-4 sentences; the question is one of its sentences with a
  character's name replaced by "___", and the answer is that name where it stands in the passage.

The pretrained models saw only the corpus's "train" chapters, so the fine-tuning train sets come from the
"validation" chapters and the test sets from the "test" chapters. `albert-mini austen-tasks` runs `build_all`,
which rebuilds data/tasks/ byte for byte (a seeded build) with a README giving provenance, counts and sha256s.
The library reads the files back with `albert_mini.tasks.austen_tasks` (`load_austen_mc`, `load_austen_span`).
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from pathlib import Path

from ...paths import MANIFEST, sha256_file
from ...safe_files import UnsafeWriteError, atomic_write_text, check_out_folder, update_manifest
from ...tasks.austen_tasks import REBUILD_COMMAND, SOURCE_SPLITS, TASKS_DIR
from ...tasks.formats import Answer, MultipleChoiceExample, SpanExample, write_race_json, write_squad_json
from ...text.corpus import Document, load_corpus

SEED = 2020
MC_SIZES = {"train": 1200, "test": 400}
SPAN_SIZES = {"train": 2000, "test": 500}

MC_QUESTION = "Which sentence comes next?"
MC_PASSAGE_SENTENCES = (2, 4)
MC_OPTION_WORDS = (4, 30)  # shorter options are mostly exclamations ("Oh!"); longer ones crowd the input
MC_MAX_PASSAGE_WORDS = 70  # with an option, fits the 128 positions pretraining trained
MC_STEPS = {"train": 1, "test": 4}  # every sentence may be a train answer; test answers are 4 sentences apart

SPAN_PASSAGE_SENTENCES = (2, 4)
SPAN_MAX_PASSAGE_WORDS = 80  # about one 128-token window
SPAN_MAX_QUESTION_WORDS = 30
BLANK = "___"
NAMES_PER_NOVEL = 20
MIN_NAME_COUNT = 10
MIN_TAGGED = 3

_TITLES = "Mr|Mrs|Ms|Dr|Miss|Sir|Lady|Lord|Colonel|Captain|Admiral|General"
TITLE_WORDS = frozenset(_TITLES.split("|"))
# A capitalised word is taken for a person when, often enough, a title comes before it ("Mr. Knightley",
# "Lady Russell") or it names the speaker ("said Emma"); that keeps out places such as Hartfield or Bath.
_TITLED = re.compile(rf"\b(?:{_TITLES})\.?\s+([A-Z][a-z]+)\b")
_SPEAKER = re.compile(rf"\b(?:said|replied|cried)\s+(?:(?:{_TITLES})\.?\s+)?([A-Z][a-z]+)\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


def _words(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------- character names
def character_names(documents: list[Document], top: int = NAMES_PER_NOVEL) -> dict[str, list[str]]:
    """Novel -> its most frequent character names, most frequent first.

    A name is a capitalised word counted only where it is not the first word of a sentence (which would be
    capitalised anyway), that is not a title or "I", that occurs at least MIN_NAME_COUNT times and that at least
    MIN_TAGGED times follows a title or a speech verb (see _TITLED, _SPEAKER).
    """
    counts: dict[str, Counter] = defaultdict(Counter)
    tagged: dict[str, Counter] = defaultdict(Counter)
    for doc in documents:
        for sentence in doc.sentences():
            for match in _CAPITALISED.finditer(sentence):
                if re.search(r"\w", sentence[:match.start()]):  # some word comes before it: not sentence-initial
                    counts[doc.title][match.group()] += 1
            for pattern in (_TITLED, _SPEAKER):
                tagged[doc.title].update(pattern.findall(sentence))
    names = {}
    for novel in sorted(counts):
        ranked = sorted(counts[novel].items(), key=lambda item: (-item[1], item[0]))
        names[novel] = [word for word, n in ranked if n >= MIN_NAME_COUNT and tagged[novel][word] >= MIN_TAGGED
                        and word not in TITLE_WORDS][:top]
    return names


# --------------------------------------------------------------------------- austen-mc
def _usable_option(sentence: str) -> bool:
    return MC_OPTION_WORDS[0] <= _words(sentence) <= MC_OPTION_WORDS[1]


def _quote_shape(sentence: str) -> tuple[bool, bool]:
    """Whether the sentence starts and whether it ends with a quote mark (speech opening, closing or inside)."""
    return sentence.startswith(('"', "'")), sentence.endswith(('"', "'"))


def _distractors(answer: str, pool: dict[tuple[bool, bool], list[tuple[str, int]]], passage: str,
                 rng: random.Random) -> list[str] | None:
    """Three sentences from `pool` of about the answer's length that open and close a quotation as it does.

    `pool` maps a quote shape to (sentence, word count) pairs. Matching the length and the quote marks keeps
    the easiest surface cues away from the answer.
    """
    usable = [(s, n) for s, n in pool.get(_quote_shape(answer), []) if s != answer and s not in passage]
    length = _words(answer)
    similar = [s for s, n in usable if 2 * length <= 3 * n and 2 * n <= 3 * length]
    if len(similar) < 3:
        similar = [s for s, n in sorted(usable, key=lambda item: abs(item[1] - length))[:12]]
    return rng.sample(similar, 3) if len(similar) >= 3 else None


def build_austen_mc(documents: list[Document], size: int, seed: str | int, step: int) -> list[MultipleChoiceExample]:
    """Up to `size` next-sentence questions from `documents`, in reading order (see `_build_mc`)."""
    return _build_mc(documents, size, seed, step)[0]


def _build_mc(documents: list[Document], size: int, seed: str | int, step: int
              ) -> tuple[list[MultipleChoiceExample], int]:
    """The examples of `build_austen_mc` and the number of candidates they were sampled from.

    Every `step`-th sentence of a chapter (from the 3rd on) is a candidate answer, preceded by a passage of the
    MC_PASSAGE_SENTENCES (2-4) sentences before it; a sentence is the answer of at most one example. Distractors
    come from the other chapters of the same novel in `documents`, so character names do not reveal the answer.
    The answer's position among the options is uniformly random.
    """
    rng = random.Random(seed)
    sentences = {doc.id: doc.sentences() for doc in documents}
    candidates = []
    for doc in documents:
        pool: dict[tuple[bool, bool], list[tuple[str, int]]] = defaultdict(list)
        for s in dict.fromkeys(s for other in documents if other.title == doc.title and other.id != doc.id
                               for s in sentences[other.id] if _usable_option(s)):
            pool[_quote_shape(s)].append((s, _words(s)))
        chapter = sentences[doc.id]
        for answer_at in range(MC_PASSAGE_SENTENCES[0], len(chapter), step):
            start = answer_at - min(rng.randint(*MC_PASSAGE_SENTENCES), answer_at)
            passage, answer = " ".join(chapter[start:answer_at]), chapter[answer_at]
            # An answer the passage already contains (a repeated line) could be copied rather than inferred.
            if _usable_option(answer) and _words(passage) <= MC_MAX_PASSAGE_WORDS and answer not in passage:
                distractors = _distractors(answer, pool, passage, rng)
                if distractors is not None:
                    candidates.append((f"{doc.id}-s{answer_at:03d}", passage, answer, distractors))
    examples = []
    for index in sorted(rng.sample(range(len(candidates)), min(size, len(candidates)))):
        article_id, passage, answer, distractors = candidates[index]
        position = rng.randrange(4)
        options = distractors[:position] + [answer] + distractors[position:]
        examples.append(MultipleChoiceExample(f"{article_id}-0", passage, MC_QUESTION, options, position))
    return examples, len(candidates)


# --------------------------------------------------------------------------- austen-span
def _span_windows(chapter: list[str], rng: random.Random) -> list[tuple[int, list[str]]]:
    """Consecutive, non-overlapping windows of SPAN_PASSAGE_SENTENCES (2-4), cut short to stay under the word limit."""
    windows, start = [], 0
    while start < len(chapter):
        window = chapter[start:start + rng.randint(*SPAN_PASSAGE_SENTENCES)]
        while len(window) > 1 and _words(" ".join(window)) > SPAN_MAX_PASSAGE_WORDS:
            window = window[:-1]
        windows.append((start, window))
        start += len(window)
    return windows


def build_austen_span(documents: list[Document], names: dict[str, list[str]], size: int, seed: str | int
                      ) -> list[SpanExample]:
    """Up to `size` cloze questions from `documents`, in reading order (see `_build_span`)."""
    return _build_span(documents, names, size, seed)[0]


def _build_span(documents: list[Document], names: dict[str, list[str]], size: int, seed: str | int
                ) -> tuple[list[SpanExample], int]:
    """The examples of `build_austen_span` and the number of candidates they were sampled from.

    Every (sentence, name) pair where one of the novel's `names` occurs exactly once in the sentence is a
    candidate: the question is the sentence with that occurrence replaced by BLANK, the context is the window
    holding the sentence, and the answer is the name at its exact character offset in the context.
    """
    rng = random.Random(seed)
    candidates = []
    for doc in documents:
        for start, window in _span_windows(doc.sentences(), rng):
            context = " ".join(window)
            offset = 0
            for k, sentence in enumerate(window):
                if _words(sentence) <= SPAN_MAX_QUESTION_WORDS:
                    for name in names.get(doc.title, []):
                        matches = list(re.finditer(rf"\b{name}\b", sentence))
                        if len(matches) == 1:
                            at = matches[0].start()
                            question = sentence[:at] + BLANK + sentence[at + len(name):]
                            candidates.append(SpanExample(f"{doc.id}-s{start + k:03d}-{name.lower()}", question,
                                                          context, [Answer(name, offset + at)]))
                offset += len(sentence) + 1  # the space that joins it to the next sentence
    chosen = sorted(rng.sample(range(len(candidates)), min(size, len(candidates))))
    return [candidates[i] for i in chosen], len(candidates)


# --------------------------------------------------------------------------- the committed files
def build_all(out_dir: str | Path = TASKS_DIR, mc_sizes: dict[str, int] | None = None,
              span_sizes: dict[str, int] | None = None, seed: int = SEED,
              corpus: dict[str, list[Document]] | None = None) -> dict[str, dict[str, int]]:
    """Write austen_mc/{train,test}.json, austen_span/{train,test}.json, SHA256SUMS and README.md into `out_dir`.

    `corpus` (split -> documents) defaults to the committed Austen splits; tests pass a few chapters.
    """
    out_dir = Path(out_dir)
    mc_sizes, span_sizes = mc_sizes or MC_SIZES, span_sizes or SPAN_SIZES
    corpus = corpus or {split: load_corpus("austen", split) for split in ("train", "validation", "test")}
    names = character_names([doc for docs in corpus.values() for doc in docs])
    counts: dict[str, dict[str, int]] = {"austen_mc": {}, "austen_span": {}}
    available: dict[str, dict[str, int]] = {"austen_mc": {}, "austen_span": {}}
    files = []
    for split, source in SOURCE_SPLITS.items():
        documents = corpus[source]
        mc, available["austen_mc"][split] = _build_mc(documents, mc_sizes[split], f"{seed}-mc-{split}",
                                                      MC_STEPS[split])
        span, available["austen_span"][split] = _build_span(documents, names, span_sizes[split],
                                                            f"{seed}-span-{split}")
        write_race_json(mc, out_dir / "austen_mc" / f"{split}.json")
        write_squad_json(span, out_dir / "austen_span" / f"{split}.json", title=f"austen-span {split}")
        counts["austen_mc"][split], counts["austen_span"][split] = len(mc), len(span)
        files += [f"austen_mc/{split}.json", f"austen_span/{split}.json"]
    files.sort()
    (out_dir / MANIFEST).unlink(missing_ok=True)
    update_manifest(out_dir, files)
    readme = _readme(out_dir, files, counts, available, names, seed, mc_sizes, span_sizes)
    atomic_write_text(out_dir / "README.md", readme)
    return counts


# --------------------------------------------------------------------------- README
def _shared_sentences(longest_passage: int, step: int) -> str:
    """How many sentences two neighbouring test passages can share, in words for the README."""
    shared = max(0, longest_passage - step)
    return "no two test passages share a sentence" if shared == 0 else \
        f"two test passages share at most {shared} sentence{'s' if shared > 1 else ''}"


def _readme(out_dir: Path, files: list[str], counts: dict[str, dict[str, int]],
            available: dict[str, dict[str, int]], names: dict[str, list[str]], seed: int,
            mc_sizes: dict[str, int], span_sizes: dict[str, int]) -> str:
    """The provenance page of data/tasks, generated so that it always matches the files next to it."""
    rows = []
    for f in files:
        task, split = f.split("/")[0], Path(f).stem
        rows.append(f"| `{f}` | {counts[task][split]:,} | {available[task][split]:,} | "
                    f"{(out_dir / f).stat().st_size:,} | `{sha256_file(out_dir / f)}` |")
    table = "\n".join(rows)
    name_lines = "\n".join(f"  - *{novel}*: {', '.join(words)}" for novel, words in names.items())
    mc_low, mc_high = MC_PASSAGE_SENTENCES
    sizes = (f"austen-mc {mc_sizes['train']:,} train / {mc_sizes['test']:,} test and austen-span "
             f"{span_sizes['train']:,} train / {span_sizes['test']:,} test")
    span_low, span_high = SPAN_PASSAGE_SENTENCES
    return f"""# Derived fine-tuning tasks (Austen)

Generated by `{REBUILD_COMMAND}` (seed {seed}); do not edit by hand. The command rebuilds every
file here byte for byte, including this page. `SHA256SUMS` is checked every time `load_austen_mc` or
`load_austen_span` (in `albert_mini.tasks.austen_tasks`) reads a file.

## Provenance and licence
Derived from the public-domain Austen corpus in `data/austen/` (see `data/README.md`), split by chapter as
`albert_mini.load_corpus` splits it. The pretrained models in this project saw only the **train** chapters,
so each task's **train** split is built from the corpus's **validation** chapters and its **test** split from
the **test** chapters: fine-tuning never sees the chapters it is scored on, and pretraining saw neither. The
novels are in the public domain; these derived files are part of this project and under its licence.

| file | examples | candidates | bytes | sha256 |
|---|---|---|---|---|
{table}

"candidates" counts the questions the chapters offer after the filters below. From them a seeded sample of
{sizes} is drawn and kept in reading order; a split with fewer candidates than its size holds them all.

## austen-mc: which sentence comes next? (RACE format)
Read with `albert_mini.tasks.formats.load_race_json`; each file is a JSON list of RACE objects, one per line, with
one question each. Ids: `<chapter>-s<answer sentence>-0`.
- Passage: the {mc_low}-{mc_high} sentences (at most {MC_MAX_PASSAGE_WORDS} words) before the answer sentence in
  its chapter. Question: "{MC_QUESTION}"
- Options: the true next sentence and 3 distractors drawn from **other chapters of the same novel**: the same
  cast of characters, so a name does not give the answer away. Distractors have about the answer's length
  (within a factor of 1.5) and the same quote marks at start and end (speech or narrative); every option has
  {MC_OPTION_WORDS[0]}-{MC_OPTION_WORDS[1]} words. The answer's position is uniformly random (seeded): always
  picking one letter scores about 25 %.
- Any sentence of a chapter may be a train answer, so train passages overlap; test answers are
  {MC_STEPS["test"]} sentences apart, so {_shared_sentences(mc_high, MC_STEPS["test"])}. No sentence is the
  answer of two examples.
- What it tests: local coherence and narrative continuity (who is speaking, what was just said, pronouns that
  need an antecedent). What it does not: it is not a test of reasoning or world knowledge; some items stay
  ambiguous (a generic line could follow almost anything), and cues such as a reply's opening words remain.

## austen-span: who is missing? (SQuAD v1.1 format)
Read with `albert_mini.tasks.formats.load_squad_json`. Ids: `<chapter>-s<sentence>-<name>`.
- Context: {span_low}-{span_high} consecutive sentences of one chapter (at most {SPAN_MAX_PASSAGE_WORDS} words);
  contexts never overlap.
- Question: one sentence of the context (at most {SPAN_MAX_QUESTION_WORDS} words) in which one character name,
  occurring exactly once in that sentence, is replaced by `{BLANK}`. Answer: that name, with `answer_start`
  at that occurrence in the context.
- Names: capitalised words counted only where they do not start a sentence, titles excluded, that occur at
  least {MIN_NAME_COUNT} times in the novel and at least {MIN_TAGGED} times after a title ("Mr.", "Lady", ...)
  or a speech verb ("said Emma"), which keeps out places such as Hartfield; the top {NAMES_PER_NOVEL} per novel,
  counted over all its chapters (text only, no labels):
{name_lines}
- What it tests: finding the sentence of the context that the question copies and reading off the word at
  the blank. What it does not: the question is a verbatim copy with one word removed, so there is no
  paraphrase, no reasoning and no inference across sentences; a lexical matcher gets far. It checks span
  extraction (offsets, the start/end heads, scoring) on real prose; it is not a reading-comprehension
  benchmark.
"""


OWN_ENTRIES = {"README.md", MANIFEST, "austen_mc", "austen_span"}  # what build_all writes into its folder


def check_tasks_folder(out: Path) -> None:
    """Refuse an --out that cannot be written, or that holds files this command does not write."""
    check_out_folder(out)
    foreign = sorted(p.name for p in out.iterdir() if p.name not in OWN_ENTRIES) if out.is_dir() else []
    if foreign:
        raise UnsafeWriteError(f"--out {out} holds files this command does not write ({', '.join(foreign[:5])}); "
                               "give an empty or new folder, or data/tasks to rebuild the shipped tasks")

