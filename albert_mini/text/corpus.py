"""Text corpora as lists of `Document`s: the committed Austen splits, users' own text files, sentence splitting.

Every document is a list of paragraphs; sentences come from a small regex splitter (see `split_sentences`).
The committed corpus lives in `data/<name>/{train,validation,test}.txt` and is checked against the sha256
manifest `data/<name>/SHA256SUMS` every time it is read. The Austen novels are split by chapter (`split_of`);
their builder is the harness's (`albert_mini/harness/data/build_austen_corpus.py`, run by `albert-mini corpus`).

File format of a split: each document starts with a header line `<doc id=emma-07 title="Emma" chapter=7>`,
followed by its paragraphs, one per line; a blank line ends the document.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..paths import DATA_ROOT, MANIFEST, recorded_path, sha256_bytes, sha256_file, verified_path
from ..textfile import read_utf8, universal_newlines

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["SPLITS", "load_corpus", "split_of"]

SPLITS = ("train", "validation", "test")
TEXT_MODES = ("file", "blank_line")  # how load_text_files cuts files into documents
REBUILD_COMMAND = "albert-mini corpus"


class CorpusError(UserError, ValueError):
    """A corpus file that is missing, corrupt or empty; the message names the file and the fix."""


# --------------------------------------------------------------------------- documents and sentences
@dataclass
class Document:
    """One document (an Austen chapter, or a user's file): an id, a title and its paragraphs."""

    id: str
    title: str
    paragraphs: list[str]
    chapter: int | None = None

    @property
    def novel(self) -> str:
        """The novel an Austen chapter belongs to (the same as `title`)."""
        return self.title

    def sentences(self) -> list[str]:
        """All sentences in reading order; a sentence never crosses a paragraph boundary."""
        return [s for paragraph in self.paragraphs for s in split_sentences(paragraph)]

    def text(self) -> str:
        """The whole document as one string, paragraphs separated by a blank line."""
        return "\n\n".join(self.paragraphs)


# A dot after these words does not end a sentence. "No" only counts before a number ("No. 97").
ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr St Messrs Mme Mlle Col Capt Esq Rev Hon Gen Lieut Sgt Prof Sir Jr Sr Vol Chap viz ibid".split()
)
# Candidate boundary: terminal punctuation, optional closing quotes/brackets, then whitespace or a "--" dash,
# then the start of a new sentence (an optional opening quote and a capital letter or digit).
_BOUNDARY = re.compile(r"""[.!?]+["')\]]*(?:\s+|--)(?=["'(\[]*[A-Z0-9])""")


def split_sentences(text: str) -> list[str]:
    """Split one paragraph into sentences with a simple, predictable regex rule.

    A sentence ends at `.`, `!` or `?` (plus any closing quotes) followed by whitespace or `--` and then a
    capital letter or digit, possibly after an opening quote. Not a boundary: a dot after a title such as
    Mr./Mrs./Dr./St. (see ABBREVIATIONS), after a single capital initial ("A. W."), or after "No" before a
    number. `"What?" said she` stays one sentence because "said" is lower-case. Removing whitespace from the
    sentences and from the paragraph gives the same string: nothing is dropped or reordered.
    """
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if _is_abbreviation(text, match):
            continue
        end = match.end()
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _is_abbreviation(text: str, match: re.Match) -> bool:
    """True when the punctuation of `match` is the dot of an abbreviation or an initial, not a sentence end."""
    if text[match.start()] != "." or match.group().startswith(".."):
        return False
    word = _word_before(text, match.start())
    if word in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isupper() and word != "I":  # an initial, as in "A. W." or "F. C."
        return True
    return word == "No" and text[match.end():match.end() + 1].isdigit()


def _word_before(text: str, end: int) -> str:
    """The run of word characters and apostrophes that ends at `end` (the regex `[\\w']*$` on text[:end]).

    Scanned backwards from `end`: the regex on the prefix would copy and rescan the whole paragraph at every
    candidate boundary, quadratic in its length (a 8,000-character paragraph took milliseconds)."""
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_'"):
        start -= 1
    return text[start:end]


# --------------------------------------------------------------------------- normalisation
_ASCII_PUNCTUATION = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "--",
    "\u2026": "...", "\u00a0": " ",
})


def normalize_paragraph(text: str) -> str:
    """Curly quotes and dashes to plain ASCII, then all runs of whitespace (wrapped lines too) to one space."""
    return " ".join(text.translate(_ASCII_PUNCTUATION).split())


# --------------------------------------------------------------------------- the split file format
_HEADER = re.compile(r"^<doc (.*)>$")
_FIELD = re.compile(r'(\w+)=("[^"]*"|\S+)')


def format_documents(documents: list[Document]) -> str:
    """The text of a split file: a header line per document, one paragraph per line, a blank line after."""
    blocks = []
    for doc in documents:
        if '"' in doc.title or any(not p or "\n" in p or p.startswith("<doc ") for p in doc.paragraphs):
            raise CorpusError(f"document {doc.id!r} cannot be stored: empty/multi-line paragraph or quote in title")
        chapter = f" chapter={doc.chapter}" if doc.chapter is not None else ""
        header = f'<doc id={doc.id} title="{doc.title}"{chapter}>'
        blocks.append("\n".join([header, *doc.paragraphs]) + "\n")
    return "\n".join(blocks)


def parse_documents(text: str, source: str = "<text>") -> list[Document]:
    """Inverse of `format_documents`; `source` names the file in error messages."""
    documents: list[Document] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            fields = {k: v.strip('"') for k, v in _FIELD.findall(header.group(1))}
            if "id" not in fields or "title" not in fields:
                raise CorpusError(f"{source}:{line_number}: document header without id= and title=: {line!r}")
            chapter = int(fields["chapter"]) if "chapter" in fields else None
            documents.append(Document(fields["id"], fields["title"], [], chapter))
        elif line.strip():
            if not documents:
                raise CorpusError(f"{source}:{line_number}: text before the first <doc ...> header")
            documents[-1].paragraphs.append(line)
    return documents


# --------------------------------------------------------------------------- loaders
def split_of(chapter: int) -> str:
    """The split of chapter `chapter` (1-based, within its novel): every 10th to validation, the next to test.

    The rule the committed Austen corpus was cut with (`albert-mini corpus` builds it); every chapter of a
    split file satisfies it.
    """
    if chapter % 10 == 0:
        return "validation"
    if chapter % 10 == 1 and chapter > 1:
        return "test"
    return "train"


def load_corpus(name: str = "austen", split: str = "train", data_dir: str | Path | None = None) -> list[Document]:
    """The documents of one split ("train", "validation" or "test") of a committed corpus, sha256-checked."""
    if split not in SPLITS:
        raise CorpusError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    data_dir = Path(data_dir) if data_dir is not None else DATA_ROOT / name
    if not data_dir.is_dir():
        available = sorted(p.parent.name for p in DATA_ROOT.glob(f"*/{MANIFEST}"))
        raise CorpusError(f"no corpus folder {data_dir}; available corpora: {', '.join(available) or 'none'}")
    path = verified_path(data_dir, f"{split}.txt", REBUILD_COMMAND, CorpusError)
    documents = parse_documents(path.read_text(encoding="utf-8"), source=str(path))
    if not documents:
        raise CorpusError(f"{path} holds no documents; rebuild it with `{REBUILD_COMMAND}`")
    return documents


def load_text_files(paths_or_dir, mode: str = "file", pattern: str = "*.txt") -> list[Document]:
    """Documents from your own UTF-8 text files.

    `paths_or_dir` is a file, a folder (its `pattern` files, sorted by name), a glob pattern ("texts/**/*.txt")
    or a list of these (see `expand_text_paths`).
    mode="file": each file is one document; blank lines separate paragraphs, wrapped lines are joined.
    mode="blank_line": blank lines separate documents and each line is one paragraph (BERT's input format).
    Whitespace is collapsed and curly quotes/dashes become ASCII (`normalize_paragraph`). A file that is not
    UTF-8 raises CorpusError naming the file and the byte offset.
    """
    if mode not in TEXT_MODES:
        raise CorpusError(f"unknown mode {mode!r}; use mode='file' (one document per file) or 'blank_line'")
    paths = expand_text_paths(paths_or_dir, pattern)
    documents = []
    for path in paths:
        for paragraphs in paragraphs_of_text(read_utf8(path, CorpusError), mode):
            name = path.stem if mode == "file" else f"{path.stem}-{len(documents)}"
            documents.append(Document(name, path.stem, paragraphs))
    if not documents:
        names = ", ".join(str(p) for p in paths)
        raise CorpusError(f"no text found in {names}: every file is empty or holds only whitespace")
    return documents


BLANK_LINE = re.compile(r"\n[ \t]*\n")  # what separates paragraphs (mode "file") or documents ("blank_line")


def paragraphs_of_text(text: str, mode: str):
    """The documents of one file's text as lists of normalized paragraphs (empty documents left out).

    The one reading rule behind `load_text_files` and the token cache (albert_mini.text.token_cache), which
    applies it to pieces of a file cut at blank lines: in mode "blank_line" a piece gives the same documents
    as the whole file, because a separator can only lie inside a run of blank lines. CRLF and lone CR line ends
    are read as LF first (textfile.universal_newlines)."""
    blocks = BLANK_LINE.split(universal_newlines(text))
    if mode == "file":
        paragraphs = [normalize_paragraph(b) for b in blocks if b.strip()]
        if paragraphs:
            yield paragraphs
        return
    for block in blocks:
        paragraphs = [normalize_paragraph(line) for line in block.splitlines() if line.strip()]
        if paragraphs:
            yield paragraphs


def expand_text_paths(paths_or_dir, pattern: str = "*.txt") -> list[Path]:
    """The files named by a file, a folder (its `pattern` files), a glob pattern, or a list of these.

    Files keep the order they are named in (a folder's or a pattern's files sorted by name); a file named twice
    is read once. Anything that names no file is a CorpusError, and so is a file whose path is not UTF-8.
    """
    specs = [paths_or_dir] if isinstance(paths_or_dir, (str, Path)) else list(paths_or_dir)
    if not specs:
        raise CorpusError("no input files given; pass a file, a folder or a non-empty list of files")
    paths: dict[Path, None] = {}  # insertion-ordered set
    for spec in specs:
        for path in _files_of(spec, pattern):
            paths.setdefault(path.resolve(), None)
    for path in paths:
        check_utf8_name(path)
    return list(paths)


def check_utf8_name(path: Path) -> None:
    """Refuse a path that is not UTF-8 (a Latin-1 byte in a file name): run records, messages and the cache's
    manifest hold names as UTF-8 text, so it could be read but never recorded."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise CorpusError(f"the path {shown} is not UTF-8 (a byte such as Latin-1's \\xe9 in a name); rename it to "
                          "a UTF-8 name, e.g. with `convmv -f latin1 -t utf-8 --notest FILE`") from None


def _files_of(spec: str | Path, pattern: str) -> list[Path]:
    path = Path(spec)
    if path.is_dir():
        # pathlib's "**" (in a pattern= of the library) never follows a symbolic link, so no loop can hold it.
        found = sorted(p for p in path.glob(pattern) if p.is_file())
        if not found:
            raise CorpusError(f"folder {path} has no files matching {pattern!r}; pass pattern= or a list of files")
        return found
    if path.is_file():
        return [path]
    if glob.has_magic(str(spec)):
        found = sorted(set(Path(p) for p in _glob(str(spec)) if Path(p).is_file()))
        if not found:
            raise CorpusError(f"the pattern {str(spec)!r} matches no file")
        return found
    if path.exists():
        raise CorpusError(f"{path} is not a regular file (a device, a pipe or a socket); pass text files or a folder")
    raise CorpusError(f"text file {path} does not exist")


def _glob(pattern: str):
    """The paths `glob.glob(pattern, recursive=True)` gives, found by a walk that ends on any folder tree.

    glob.glob follows symbolic links to folders, so "**" under a folder holding two links to one of its own
    ancestors never ends (2 ** 40 paths before the system's link limit stops it). Here "**" (any number of
    folders, hidden ones left out, as in glob) still follows links but enters a real folder (st_dev, st_ino)
    at most once per "**" of the pattern: the files found are the same files, named by the first path (in
    sorted order) that reaches them, and every folder is read a bounded number of times. Other components match
    one name each, as in glob (fnmatch; a name starting with "." only when the pattern's does).
    """
    drive, rest = os.path.splitdrive(pattern)
    parts = re.split(r"[\\/]+" if os.sep == "\\" else "/+", rest)
    root = drive + (os.sep if parts[0] == "" else "")
    if parts[-1] == "":  # a pattern ending in a separator matches folders only, never a file
        return
    parts = [part for part in parts if part]
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    base = os.path.join(root, *parts[:first]) if root or first else ""
    visited: set[tuple[int, int, int]] = set()  # (index of the "**" in the pattern, st_dev, st_ino)
    yield from _glob_from(base, parts, first, visited)


def _glob_from(folder: str, parts: list[str], i: int, visited: set):
    """Paths under `folder` (a path string, "" for the working directory) matching parts[i:]."""
    if i == len(parts):
        yield folder
        return
    part = parts[i]
    if part == "**":
        for sub in _folders_below(folder, i, visited):
            yield from _glob_from(sub, parts, i + 1, visited)
        return
    if not glob.has_magic(part):
        path = os.path.join(folder, part)
        if os.path.lexists(path):
            yield from _glob_from(path, parts, i + 1, visited)
        return
    for name in _names(folder):
        if (not name.startswith(".") or part.startswith(".")) and fnmatch.fnmatchcase(name, part):
            path = os.path.join(folder, name)
            if i + 1 == len(parts) or os.path.isdir(path):
                yield from _glob_from(path, parts, i + 1, visited)


def _folders_below(folder: str, index: int, visited: set):
    """`folder` and every folder below it (links followed, hidden names left out), each real folder once, in
    sorted order; with "**" last in the pattern, the files below too (glob gives them; they are kept). A loop,
    not a recursion, so that no depth of folders can exhaust Python's stack."""
    if not os.path.isdir(folder or os.curdir):
        return
    stack = [(folder, True)]
    while stack:
        path, is_folder = stack.pop()
        if not is_folder:
            yield path  # a file (matched only when "**" ends the pattern: nothing lies below a file)
            continue
        try:
            stat = os.stat(path or os.curdir)
        except OSError:  # gone meanwhile, or a path too long for the system
            continue
        if (index, stat.st_dev, stat.st_ino) in visited:
            continue
        visited.add((index, stat.st_dev, stat.st_ino))
        yield path
        below = []
        for name in _names(path):
            child = os.path.join(path, name)
            if name.startswith("."):
                continue
            if os.path.isdir(child):
                below.append((child, True))
            elif os.path.lexists(child):
                below.append((child, False))
        stack.extend(reversed(below))  # popped in sorted order


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder or os.curdir))
    except OSError:  # unreadable, or gone meanwhile: glob skips it too
        return []


# --------------------------------------------------------------------------- fingerprints
def fingerprint_files(paths, digests: dict | None = None) -> dict:
    """What a run records of its text: the sha256 of every file, and one sha256 over the sorted list of both; a
    file inside the repository is named relative to its root, any other by its absolute path
    (`paths.recorded_path`), so a record holds no path of the machine's checkout. `digests`: {path: sha256} of
    files already read (each file is hashed once per run)."""
    digests = digests or {}
    files = {recorded_path(Path(p).resolve()): digests.get(p) or sha256_file(p) for p in paths}
    listing = "".join(f"{files[name]}  {name}\n" for name in sorted(files))
    return {"sha256": sha256_bytes(listing.encode("utf-8")), "files": files}


def fingerprint_changes(old: dict, new: dict) -> list[str]:
    """One `path (modified|new|missing)` entry per file that differs between two fingerprints."""
    before, after = old.get("files", {}), new.get("files", {})
    changes = [f"{name} (modified)" for name in sorted(before.keys() & after.keys()) if before[name] != after[name]]
    changes += [f"{name} (new)" for name in sorted(after.keys() - before.keys())]
    changes += [f"{name} (missing)" for name in sorted(before.keys() - after.keys())]
    if not changes and old.get("sha256") != new.get("sha256"):
        changes.append("the fingerprint differs though every listed file matches (a different fingerprint format)")
    return changes
