"""Fine-tuning examples and the official file formats they come in: GLUE-style TSV, RACE JSON, SQuAD v1.1 JSON.

Three record types cover the three heads: `ClassificationExample` (one text or a pair, a label),
`MultipleChoiceExample` (a passage, a question, the options, the index of the right one) and `SpanExample`
(a question, a context, and answers given as text plus the character offset where each starts in the context).
A record that cannot be used raises `RecordError`, whose message names the file, the record and the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MissingFileError, UserError, lookup
from ..safe_files import atomic_write_text
from ..textfile import read_utf8

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["ClassificationExample"]


class RecordError(UserError, ValueError):
    """A task record that cannot be used (wrong option count, answer not in its context, empty question, ...)."""


@dataclass
class ClassificationExample:
    """One text (or a pair) and its label index; `label` is None for unlabelled test files."""

    id: str
    text_a: str
    text_b: str | None
    label: int | None


@dataclass
class MultipleChoiceExample:
    """A passage, a question (a `_` marks a blank the option fills) and its options; `answer` indexes them."""

    id: str
    passage: str
    question: str
    options: list[str]
    answer: int | None


@dataclass
class Answer:
    """An answer span: its text and the character offset where it starts in the context."""

    text: str
    start: int

    @property
    def end(self) -> int:
        """One past the last character of the answer in the context."""
        return self.start + len(self.text)


@dataclass
class SpanExample:
    """A SQuAD-style question over a context; the first answer is the training target, all count for scoring."""

    id: str
    question: str
    context: str
    answers: list[Answer] = field(default_factory=list)


# --------------------------------------------------------------------------- shared helpers
def _require_file(path: str | Path) -> Path:
    """`path` as a Path once it is an existing file; MissingFileError (a FileNotFoundError) naming it otherwise."""
    path = Path(path)
    if path.is_dir():
        raise RecordError(f"task file {path} is a folder; give the file itself (only RACE reads a folder)")
    if path.exists() and not path.is_file():
        raise RecordError(f"task file {path} is not a regular file (a device or a pipe); give a task file")
    if not path.is_file():
        raise MissingFileError(f"task file {path} does not exist (check the path, or download/build the data first)")
    return path


def _record_error(path: Path | str, record: str, problem: str) -> RecordError:
    """A RecordError whose message starts with the file and the record id, so the bad record can be found."""
    return RecordError(f"{path}: record {record!r}: {problem}")


def _check_unique_ids(examples: list, path: Path | str) -> None:
    """Ids must be unique: predictions are matched to examples by id."""
    seen: set[str] = set()
    for example in examples:
        if example.id in seen:
            raise _record_error(path, example.id, "this id appears twice; every record needs its own id")
        seen.add(example.id)


def _read_json(path: Path):
    """The parsed JSON of `path`, or a RecordError giving the position of the syntax error, or naming the string
    that holds a lone UTF-16 surrogate (an escape such as \\ud800 without its pair: not text, and the tokenizer
    cannot take it)."""
    text = read_utf8(path, RecordError, allow_bom=True)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise RecordError(f"{path}: not valid JSON ({error.msg} at {where}); fix the file or download it again") \
            from None
    if "\\ud" in text or "\\uD" in text:  # UTF-8 bytes cannot hold a surrogate: only an escape gives one
        _refuse_surrogates(data, path)
    return data


def _refuse_surrogates(data, path: Path) -> None:
    """RecordError naming a string of the parsed JSON `data` (keys too) that holds a lone surrogate."""
    stack = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack += [(key, f"a key of {where or 'the top level'}") for key in value]
            stack += [(item, f"{where}[{key!r}]") for key, item in value.items()]
        elif isinstance(value, list):
            stack += [(item, f"{where}[{i}]") for i, item in enumerate(value)]
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as err:
                escape = f"\\u{ord(value[err.start]):04x}"
                raise RecordError(f"{path}: {where or 'the top level'} holds a lone UTF-16 surrogate "
                                  f"({escape} at character {err.start}), which is not text; remove that escape or "
                                  "give it its pair, or download the file again") from None


# --------------------------------------------------------------------------- GLUE TSV (SST-2, MNLI)
SST2_LABELS = ("0", "1")  # index 0 = negative, 1 = positive, as in GLUE's SST-2 files
# GLUE's MNLI files spell labels out; the order is the one BERT's and ALBERT's run_classifier use.
MNLI_LABELS = ("contradiction", "entailment", "neutral")
# GLUE's MNLI layouts (all tab-separated, first line a header, no quoting):
#   train.tsv              index promptID pairID genre sentence1_binary_parse sentence2_binary_parse
#                          sentence1_parse sentence2_parse sentence1 sentence2 label1 gold_label      (12 columns)
#   dev_matched.tsv        the same with label1 .. label5 before gold_label                           (16 columns)
#   test_matched.tsv       index .. sentence2, no labels                                              (10 columns)
MNLI_TRAIN_COLUMNS = (
    "index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
    "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label",
)
MNLI_TEST_COLUMNS = MNLI_TRAIN_COLUMNS[:10]


@dataclass(frozen=True)
class GlueFormat:
    """Which columns of a GLUE TSV hold the texts, the label and the id, and the label vocabulary."""

    text_columns: tuple[str, ...]
    label_column: str
    labels: tuple[str, ...]
    id_columns: tuple[str, ...]  # the first one present names each row; without any, the row number does


GLUE_FORMATS = {
    "sst2": GlueFormat(("sentence",), "label", SST2_LABELS, ("index",)),
    "mnli": GlueFormat(("sentence1", "sentence2"), "gold_label", MNLI_LABELS, ("pairID", "index")),
}


def _glue_format(task: str) -> GlueFormat:
    return lookup(GLUE_FORMATS, task, "GLUE task")


def load_glue_tsv(path: str | Path, task: str) -> list[ClassificationExample]:
    """The examples of a GLUE-style TSV file for `task` ("sst2" or "mnli"), labels as indices.

    Columns are found by the header's names, so GLUE's train, dev and test layouts all load (SST-2:
    `sentence<TAB>label`, test files `index<TAB>sentence`; MNLI: see MNLI_TRAIN_COLUMNS). A file without the
    label column gives label None. The id is the `pairID` (MNLI) or `index` column, else the 0-based row number.
    Fields are split on tabs only: GLUE files do not quote, and a quote character is ordinary text.
    """
    spec = _glue_format(task)
    path = _require_file(path)
    lines = read_utf8(path, RecordError, allow_bom=True).split("\n")
    while lines and not lines[-1].strip("\r"):
        lines.pop()
    if not lines:
        raise RecordError(f"{path}: empty file; a GLUE {task} file starts with a header line")
    header = lines[0].rstrip("\r").split("\t")
    missing = [c for c in spec.text_columns if c not in header]
    if missing:
        raise RecordError(
            f"{path}: header lacks column(s) {', '.join(missing)} (found: {', '.join(header)}); a GLUE {task} file "
            f"needs {', '.join(spec.text_columns)} and optionally {spec.label_column}"
        )
    column = {name: i for i, name in enumerate(header)}
    id_column = next((c for c in spec.id_columns if c in column), None)
    examples = []
    for row, line in enumerate(lines[1:]):
        fields = line.rstrip("\r").split("\t")
        record = fields[column[id_column]] if id_column and column[id_column] < len(fields) else str(row)
        if len(fields) != len(header):
            raise _record_error(
                path, record, f"line {row + 2} has {len(fields)} tab-separated columns but the header has "
                f"{len(header)}; a stray or missing tab, or a text containing a tab?"
            )
        texts = [fields[column[c]] for c in spec.text_columns]
        for name, text in zip(spec.text_columns, texts):
            if not text.strip():
                raise _record_error(path, record, f"column {name} is empty (line {row + 2})")
        label = None
        if spec.label_column in column:
            value = fields[column[spec.label_column]].strip()
            if value not in spec.labels:
                raise _record_error(
                    path, record, f"unknown {spec.label_column} {value!r} (line {row + 2}); {task} labels are "
                    f"{', '.join(spec.labels)}"
                )
            label = spec.labels.index(value)
        examples.append(ClassificationExample(record, texts[0], texts[1] if len(texts) > 1 else None, label))
    _check_unique_ids(examples, path)
    return examples


# --------------------------------------------------------------------------- RACE JSON
RACE_OPTIONS = 4
RACE_SUFFIXES = (".txt", ".json")


def _race_files(path: Path) -> list[Path]:
    """A single file, or every *.txt / *.json file under a folder (recursively, sorted by relative path)."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in RACE_SUFFIXES)
        if not files:
            raise MissingFileError(f"folder {path} holds no RACE files (*.txt or *.json, searched recursively)")
        return files
    return [_require_file(path)]


def load_race_json(path: str | Path, num_options: int | None = RACE_OPTIONS) -> list[MultipleChoiceExample]:
    """One MultipleChoiceExample per question of a RACE file, or of every RACE file under a folder.

    A RACE file holds one JSON object with `article`, `questions`, `options` (one list per question), `answers`
    (letters "A", "B", ...) and `id`; the example ids are f"{id}-{q}" with q counting questions from 0. This
    loader also accepts a file holding a JSON list of such objects (the derived Austen task stores a split
    that way). Without `answers` the examples get answer None. `num_options=None` accepts any count as long
    as every question of a file has the same one.
    """
    examples: list[MultipleChoiceExample] = []
    for file in _race_files(Path(path)):
        content = _read_json(file)
        articles = content if isinstance(content, list) else [content]
        for k, article in enumerate(articles):
            if not isinstance(article, dict):
                raise RecordError(f"{file}: item {k} is {type(article).__name__}, not a RACE JSON object")
            default_id = file.name if not isinstance(content, list) else None
            examples.extend(_race_article(article, file, default_id, num_options, len(examples)))
    _check_unique_ids(examples, path)
    return examples


def _race_article(article: dict, file: Path, default_id: str | None, num_options: int | None,
                  offset: int) -> list[MultipleChoiceExample]:
    """The questions of one RACE object, checked; `default_id` names an object that has no `id`."""
    file_id = article.get("id", default_id)
    if not isinstance(file_id, str) or not file_id:
        raise RecordError(f"{file}: the RACE object after {offset} questions has no string `id`")
    for key in ("article", "questions", "options"):
        if key not in article:
            raise _record_error(file, file_id, f"missing key {key!r}; a RACE object has article, questions, options, "
                                f"answers and id")
    questions, options, answers = article["questions"], article["options"], article.get("answers")
    for key, value in (("questions", questions), ("options", options), ("answers", answers)):
        if value is not None and not isinstance(value, list):
            raise _record_error(file, file_id, f"{key!r} is {type(value).__name__}, not a list")
    if not isinstance(article["article"], str) or not article["article"].strip():
        raise _record_error(file, file_id, "the article (passage) is empty")
    counts = {"questions": len(questions), "options": len(options)}
    if answers is not None:
        counts["answers"] = len(answers)
    if len(set(counts.values())) != 1:
        found = ", ".join(f"{n} {key}" for key, n in counts.items())
        raise _record_error(file, file_id, f"found {found}; there must be one options list and one answer per question")
    expected = num_options if num_options is not None else (len(options[0]) if options else 0)
    rule = f"RACE questions have {expected}" if num_options is not None \
        else f"the first question of this file has {expected}"
    return [_race_question(file, f"{file_id}-{q}", article["article"], question, options[q],
                           answers is not None, answers[q] if answers is not None else None, expected, rule)
            for q, question in enumerate(questions)]


def _race_question(file: Path, record: str, passage: str, question, choices, labelled: bool, letter, expected: int,
                   rule: str) -> MultipleChoiceExample:
    """One RACE question, checked: its text, `expected` string options and, when `labelled`, its answer letter."""
    if not isinstance(question, str) or not question.strip():
        raise _record_error(file, record, "the question is empty")
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise _record_error(file, record, "options must be a list of strings")
    if len(choices) != expected:
        raise _record_error(file, record, f"found {len(choices)} options, but {rule}")
    answer = None
    if labelled:
        letters = [chr(ord("A") + i) for i in range(expected)]
        if not isinstance(letter, str) or letter.strip().upper() not in letters:
            raise _record_error(file, record, f"answer {letter!r} is not one of the letters {', '.join(letters)}")
        answer = letters.index(letter.strip().upper())
    return MultipleChoiceExample(record, passage, question, list(choices), answer)


def write_race_json(examples: list[MultipleChoiceExample], path: str | Path) -> Path:
    """Write examples as RACE objects; `load_race_json` reads back the same examples.

    Ids must have the form f"{article_id}-{q}" with q = 0, 1, ... within an article, which is what the loader
    makes; consecutive examples with the same article id (and the same passage) become one object. One
    article gives one RACE object, as in the RACE release; several give a JSON list, one object per line.
    """
    path = Path(path)
    _check_unique_ids(examples, path)
    objects: list[dict] = []
    labelled = [e.answer is not None for e in examples]
    if any(labelled) and not all(labelled):
        first = examples[labelled.index(False)]
        raise _record_error(path, first.id, "has no answer while others do; a file is all answered or none")
    for example in examples:
        article_id, _, q = example.id.rpartition("-")
        if not article_id or not q.isdigit():
            raise _record_error(path, example.id, "a RACE example id must look like '<article id>-<question number>'")
        if not objects or objects[-1]["id"] != article_id:
            objects.append({"id": article_id, "article": example.passage, "questions": [], "options": [],
                            "answers": []})
        current = objects[-1]
        if int(q) != len(current["questions"]) or current["article"] != example.passage:
            raise _record_error(
                path, example.id, f"expected question number {len(current['questions'])} of article {article_id!r} "
                "with the same passage; keep an article's questions together and numbered from 0"
            )
        if not example.question.strip():
            raise _record_error(path, example.id, "the question is empty")
        if example.answer is not None and not 0 <= example.answer < len(example.options):
            raise _record_error(path, example.id, f"answer {example.answer} is out of range for "
                                f"{len(example.options)} options")
        current["questions"].append(example.question)
        current["options"].append(list(example.options))
        current["answers"].append(chr(ord("A") + example.answer) if example.answer is not None else None)
    for obj in objects:
        if not all(labelled):
            del obj["answers"]
    if len(objects) == 1:
        text = json.dumps(objects[0], ensure_ascii=False) + "\n"
    else:
        text = "[\n" + ",\n".join(json.dumps(obj, ensure_ascii=False) for obj in objects) + "\n]\n"
    atomic_write_text(path, text)
    return path


# --------------------------------------------------------------------------- SQuAD v1.1 JSON
def load_squad_json(path: str | Path) -> list[SpanExample]:
    """One SpanExample per question of a SQuAD v1.1 file, every answer checked against its context.

    Layout: {"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
    "answers": [{"text", "answer_start"}]}]}]}]}. A question with an empty answer list loads with no answers
    (a test file); SQuAD v2's unanswerable questions (`is_impossible: true`) are rejected.
    """
    path = _require_file(path)
    content = _read_json(path)
    if not isinstance(content, dict) or not isinstance(content.get("data"), list):
        raise RecordError(f"{path}: not a SQuAD file: expected an object with a 'data' list")
    examples = []
    layout = "see the layout in `help(albert_mini.tasks.formats.load_squad_json)`"
    for a, article in enumerate(content["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs", []), list):
            raise RecordError(f"{path}: data[{a}] is {type(article).__name__}, not an article object with a "
                              f"'paragraphs' list; {layout}")
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("qas", []), list):
                raise RecordError(f"{path}: paragraph {p} of article {a} is not an object with a 'context' and a "
                                  f"'qas' list; {layout}")
            context, qas = paragraph.get("context"), paragraph.get("qas", [])
            bad = next((k for k, qa in enumerate(qas) if not isinstance(qa, dict)), None)
            if bad is not None:
                raise RecordError(f"{path}: question {bad} of paragraph {p} of article {a} is "
                                  f"{type(qas[bad]).__name__}, not an object with 'id', 'question' and 'answers'")
            where = qas[0].get("id", f"paragraph {p}") if qas else f"article {a} paragraph {p}"
            if not isinstance(context, str) or not context.strip():
                raise _record_error(path, where, f"the context of paragraph {p} of article {a} is empty or missing")
            for qa in qas:
                examples.append(_squad_question(qa, context, path))
    _check_unique_ids(examples, path)
    return examples


def _squad_question(qa: dict, context: str, path: Path) -> SpanExample:
    """One checked SQuAD question: it has an id and a question, and every answer sits at its offset."""
    record = qa.get("id")
    if not isinstance(record, str) or not record:
        raise RecordError(f"{path}: a question has no string 'id' (question: {qa.get('question')!r})")
    question = qa.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _record_error(path, record, "the question is empty")
    if qa.get("is_impossible"):
        raise _record_error(path, record, "is a SQuAD v2 unanswerable question; this loader reads SQuAD v1.1 only")
    answers = []
    if not isinstance(qa.get("answers", []), list):
        raise _record_error(path, record, "'answers' must be a list of {'text', 'answer_start'} objects")
    for item in qa.get("answers", []):
        if not isinstance(item, dict):
            raise _record_error(path, record, f"answer {item!r} is not an object; an answer is "
                                              "{'text': ..., 'answer_start': ...}")
        text, start = item.get("text"), item.get("answer_start")
        if not isinstance(text, str) or not text or not isinstance(start, int) or isinstance(start, bool):
            raise _record_error(path, record, f"answer {item!r} needs a non-empty 'text' and an integer 'answer_start'")
        answers.append(Answer(text, start))
    example = SpanExample(record, question, context, answers)
    _check_answers(example, path)
    return example


def _check_answers(example: SpanExample, path: Path | str) -> None:
    """Every answer's text must be exactly what the context holds at its offset."""
    for answer in example.answers:
        found = example.context[answer.start:answer.end] if answer.start >= 0 else ""
        if answer.start < 0 or found != answer.text:
            raise _record_error(
                path, example.id, f"answer {answer.text!r} is not at answer_start {answer.start} of its context; "
                f"the context holds {found!r} there (context length {len(example.context)})"
            )


def write_squad_json(examples: list[SpanExample], path: str | Path, title: str = "untitled") -> Path:
    """Write examples as a SQuAD v1.1 file; `load_squad_json` reads back the same examples.

    Consecutive examples with the same context share one paragraph (so the order of examples is kept); all
    paragraphs go under one article called `title`. One paragraph per line keeps the file diffable.
    """
    path = Path(path)
    _check_unique_ids(examples, path)
    paragraphs: list[dict] = []
    for example in examples:
        if not example.question.strip():
            raise _record_error(path, example.id, "the question is empty")
        if not example.context.strip():
            raise _record_error(path, example.id, "the context is empty")
        _check_answers(example, path)
        if not paragraphs or paragraphs[-1]["context"] != example.context:
            paragraphs.append({"context": example.context, "qas": []})
        answers = [{"text": a.text, "answer_start": a.start} for a in example.answers]
        paragraphs[-1]["qas"].append({"id": example.id, "question": example.question, "answers": answers})
    head = json.dumps({"version": "1.1", "data": [{"title": title, "paragraphs": []}]}, ensure_ascii=False)
    body = ",\n".join(json.dumps(p, ensure_ascii=False) for p in paragraphs)
    # Put the paragraphs, one per line, inside the empty list that ends the header: `...[]}]}` -> `...[\n...\n]}]}`.
    text = head[:-4] + ("\n" + body + "\n" if body else "") + head[-4:] + "\n"
    atomic_write_text(path, text)
    return path
