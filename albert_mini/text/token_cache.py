"""A token cache: your text tokenized once, by all cores, and memory-mapped from disk by every later run.

The first `pretrain --corpus PATH...` (or `albert-mini prepare`) cuts the text files into pieces at blank lines
(a longer document is cut inside and joined again, see `_cut`), and worker processes split and encode them with
SentencePiece: the TokenDocuments of `tokenize_documents(load_text_files(...))`, laid out flat.

    <cache>/<key>/
      manifest.json        version, key, files (sha256 in order), tokenizer, counts, and the size and crc32 of
                           every file below, taken from the bytes as they were written
      tokens.bin           token ids of every sentence, end to end (uint16, or uint32 past 65,536 pieces)
      sentences.npy        (S + 1,) int64: where sentence s starts in tokens.bin, then the end
      documents.npy        (D + 1,) int64: the first sentence of document d, then S
      document_sha256.npy  (D, 32) uint8: sha256 of each document's text (the held-out documents are chosen by it)
      unigram.npy          (V,) int64: how often each id occurs (the MLM output bias starts from it)
      passes/              instance rows of large passes (`MappedDocuments.store_rows`), size and crc32 beside

The key hashes PREPARE_VERSION, the mode, the tokenizer and every file's sha256 (not their names). What is
encoded is what was hashed: the reading pass takes each file's sha256 and each piece's crc32 from the same bytes,
and a worker refuses a piece whose bytes changed since. A folder appears whole or not at all (written under a
temporary name, then renamed), a lock lets one process prepare while the others (DDP ranks) wait, and mapping
checks every manifest field and every file's size and crc32 (0.1 s per 100 MB): damage is one line naming the
folder to delete. Preparing holds a few files open, runs a worker per core at most, and its workers end with it
however it ends (kill -9 included). As nanoGPT's `prepare.py` (a uint16 memmap written by worker processes) and
Megatron-LM's `.bin` tokens with an `.idx` of boundaries and its `.npy` sample-index caches (here `passes/`).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import functools
import gc
import hashlib
import io
import itertools
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from filelock import FileLock

from ..choices import default_workers
from ..parent_watch import end_with_parent
from ..paths import CACHE_ENV, CACHE_ROOT
from ..safe_files import atomic_write_bytes, atomic_write_text
from ..textfile import decode_utf8, universal_newlines
from .corpus import _ASCII_PUNCTUATION, ABBREVIATIONS, BLANK_LINE, TEXT_MODES, CorpusError
from .instances import ROW_FIELDS, TokenDocuments

# Bump when the reading, splitting or encoding rules or the layout change: old folders stop matching and are
# prepared again (a run's record holds the files' sha256, never the key, so finished runs stay valid).
# 2: CRLF and lone CR read as LF. 3: one tokens.bin instead of a shard per piece, and every file's size and crc32
# in the manifest. 4: no piece over MAX_PIECE_BYTES (a sentence with no boundary in 3 MB is cut in two).
PREPARE_VERSION = 4
PIECE_BYTES = 1 << 20  # text per work item: a worker's passes over it stay in its core's cache (8 MB: 8% more CPU)
MAX_PIECE_BYTES = 4 << 20  # bounds a worker's memory (about 15 times a piece's text), whatever the text's lines
MIN_JOB_BYTES = 64 << 10  # small files are grouped into work items of at least this much text (one call each)
WINDOW_BYTES = 1 << 20  # how much the reading pass reads at a time (a blank line may straddle two reads)
# A blank line, LF or CRLF (a lone CR file is one piece): a match ends after an LF, never inside a CRLF.
BLANK_LINE_BYTES = re.compile(rb"\r?\n[ \t]*\r?\n")
MANIFEST_NAME = "manifest.json"
TOKENS_NAME = "tokens.bin"
INDEX_NAMES = ("sentences.npy", "documents.npy", "document_sha256.npy", "unigram.npy")
CONTENT_NAMES = (TOKENS_NAME, *INDEX_NAMES)  # what the manifest records the size and crc32 of
KEY_FILE = re.compile("|".join(map(re.escape, (MANIFEST_NAME, *CONTENT_NAMES))))
PASSES_NAME = "passes"
# A pass's rows (.npy) and record (.json), as `_pass_path` names them, or an atomic write's temp file of either:
# what the cache may delete in passes/, and nothing else.
PASS_FILE = re.compile(r"\.?[a-z_]+-\d+-[-+.0-9a-z_]+-\d+-[0-9a-f]{16}-v\d+\.(npy|json)(\.tmp-\d+)?")
# A pass of at least this many instances is kept on disk (a second or more to build); smaller ones are rebuilt,
# so a long run over a small text does not fill the disk with one file per epoch.
DISK_PASS_ROWS = 50_000
READ_CHUNK = 8 << 20  # how much a crc32 check reads at a time


class CacheError(CorpusError):
    """A cache folder that is damaged or from another version; the message says what to delete."""


class TextChanged(CorpusError):
    """A text file that changed while it was being prepared: its tokens would not be those of its key."""


def cache_root() -> Path:
    """$ALBERT_MINI_CACHE, else cache/tokens in the checkout; a link loop or a dangling link is a CacheError."""
    override = os.environ.get(CACHE_ENV, "").strip()
    root = Path(override).expanduser() if override else CACHE_ROOT / "tokens"
    where = f"${CACHE_ENV}" if override else f"the default (${CACHE_ENV} is not set)"
    try:
        os.stat(root)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise CacheError(f"the token cache folder {root} ({where}) is a loop of symbolic links; set "
                             f"{CACHE_ENV} to a folder you may write to") from None
        if err.errno == errno.ENOENT and os.path.islink(root):
            raise CacheError(f"the token cache folder {root} ({where}) is a symbolic link to nothing "
                             f"({os.readlink(root)}); create that folder, or set {CACHE_ENV} to a folder you may "
                             "write to") from None
        # absent (created when needed), or a path through a file: the write rule's and mkdir's lines say which
    return root


def cache_key(file_sha256: Sequence[str], tokenizer_sha256: str, mode: str) -> str:
    """The folder name of a prepared text: what decides its tokens, and nothing else (not the file names)."""
    if mode not in TEXT_MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(TEXT_MODES)}")
    what = {"version": PREPARE_VERSION, "mode": mode, "tokenizer": tokenizer_sha256, "files": list(file_sha256)}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


def crc32_hex(data, crc: int = 0) -> str:
    return f"{zlib.crc32(data, crc):08x}"


def crc32_file(path: Path) -> str:
    """The crc32 of a file's bytes, read a few MB at a time into one buffer (about 1 GB/s on one core)."""
    crc, buffer = 0, bytearray(READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb") as f:
        while size := f.readinto(buffer):
            crc = zlib.crc32(view[:size], crc)
    return f"{crc:08x}"


# ---------------------------------------------------------------------------------------------- cutting
@dataclass(frozen=True)
class Piece:
    """Bytes [start, end) of one file and their crc32 as the reading pass read them. A document longer than
    MAX_PIECE_BYTES is cut inside: `continues` (its first document goes on from the piece before) and `continued`
    (its last goes on in the next) tell the writer to join the parts."""

    file: str
    start: int
    end: int
    crc32: str
    continues: bool = False
    continued: bool = False


def changed_while_read(path, how: str) -> TextChanged:
    return TextChanged(f"{path} changed while it was being prepared ({how}); nothing was cached: rerun once no "
                       "program writes to it")


def cut_pieces(paths: Sequence[Path], mode: str, piece_bytes: int | None = None,
               file_sha256: Sequence[str] | None = None, max_piece_bytes: int | None = None) -> list[Piece]:
    """The pieces of `cut_and_hash`."""
    return cut_and_hash(paths, mode, piece_bytes, file_sha256, max_piece_bytes)[0]


def cut_and_hash(paths: Sequence[Path], mode: str, piece_bytes: int | None = None,
                 file_sha256: Sequence[str] | None = None,
                 max_piece_bytes: int | None = None) -> tuple[list[Piece], list[str]]:
    """Pieces in file order (see `_cut`) and every file's sha256, from one reading pass (a file a core at once);
    a file whose sha256 is not its `file_sha256` (its cache key's) changed since: a TextChanged."""
    most = max_piece_bytes or MAX_PIECE_BYTES
    least = min(piece_bytes or PIECE_BYTES, most // 2)
    pool = ThreadPoolExecutor(max(1, min(default_workers(), len(paths))), thread_name_prefix="cut-and-hash")
    stop = threading.Event()
    try:
        pieces, digests = [], []
        scanned = pool.map(lambda path: _scan(Path(path), mode, least, most, stop), paths)
        for i, (path, (found, digest)) in enumerate(zip(paths, scanned)):
            if file_sha256 is not None and digest != file_sha256[i]:
                raise changed_while_read(path, "its sha256 is not the one read a moment before")
            pieces += found
            digests.append(digest)
    finally:
        # On an error or a Ctrl-C the other files stop at their next window; every thread has ended before the
        # workers are forked (a fork copies this thread only) and before the error reaches the caller.
        stop.set()
        pool.shutdown(cancel_futures=True)
    return pieces, digests


def _scan(path: Path, mode: str, least: int, most: int, stop: threading.Event) -> tuple[list[Piece], str]:
    """(pieces, sha256) of one file, read once a window at a time (holding at most `most` bytes and a window)."""
    whole, pieces = hashlib.sha256(), []
    held = bytearray()  # the file's bytes from `start`, where the current piece starts, to what was read
    start, continues = 0, False
    with open(path, "rb") as f:
        while not stop.is_set():
            window = f.read(WINDOW_BYTES)
            whole.update(window)
            held += window
            while (cut := _cut(held, mode, least, most)) is not None:
                end, inside = cut
                pieces.append(Piece(str(path), start, start + end, crc32_hex(held[:end]), continues, inside))
                del held[:end]
                start, continues = start + end, inside
            if not window:
                break
    if held or not pieces:  # the rest of the file (or an empty file: one empty piece)
        pieces.append(Piece(str(path), start, start + len(held), crc32_hex(held), continues))
    return pieces, whole.hexdigest()


WHITESPACE_BYTES = b" \t\r\n"  # the whitespace a piece is cut after (others, such as a no-break space, are text)
TEXT_START = rb"[^ \t\r\n\x80-\xbf]"  # a character that is not such whitespace (nor a UTF-8 continuation byte)
LINE_START = re.compile(rb"[\r\n][ \t]*(?=" + TEXT_START + rb")")  # a line's first character after a line end
# A word's first character, after whitespace (looked for as one character: a pattern that starts with the
# whitespace would try every byte of a long run of it)
WORD_START = re.compile(rb"(?<=[ \t\r\n])" + TEXT_START)
CHARACTER_START = re.compile(TEXT_START)
NOT_INSIDE_CHARACTER = re.compile(rb"[^\x80-\xbf]")
# A plain sentence end, lower-case letter, dot, whitespace, capital: split_sentences cuts there unless the word is
# a title of ABBREVIATIONS (`_ends_sentence`). Led by the dot, so re searches for it fast.
SENTENCE_START = re.compile(rb"\.(?<=[a-z]\.)[ \t\r\n]+(?=[A-Z])")
WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_'")
BLANK_LINE_FROM_LF = re.compile(rb"\n[ \t]*\r?\n")  # BLANK_LINE_BYTES from its first LF


def _cut(held: bytearray, mode: str, least: int, most: int) -> tuple[int, bool] | None:
    """Where the piece starting `held` ends, and whether inside a document; None while more bytes are needed.

    In mode "blank_line" a piece ends after the first blank line starting between `least` and `most` bytes in.
    A piece longer than `most` is cut inside its document, after `least` bytes, at the first of, in this order: a
    blank line (a paragraph's end in mode "file"); a line end (a paragraph's end in mode "blank_line"); a plain
    sentence end; a word's start; a character's start. Only the last two change the tokens, where `most - least`
    bytes hold no other boundary: that sentence is cut in two, every character kept. Whitespace alone is cut
    after `least` bytes too (`_Documents` joins it as the whole text reads). The cut depends on the bytes alone,
    never on how they were read."""
    limit = min(len(held), most + 1)  # a boundary at `most` may look at the byte after it
    if mode == "blank_line":
        found = _blank_line(held, least, limit)
        if found is not None and found[0] < most:
            return found[1], False
    if len(held) <= most:
        return None
    if mode == "file":
        found = _blank_line(held, least, limit)
        if found is not None and found[0] < most:
            return found[1], True
    if not bytes(held[least:limit]).strip(WHITESPACE_BYTES):  # whitespace alone (seen at once, not by patterns)
        return _cut_whitespace(held, least, limit)
    # Where the whitespace before byte `least` starts: a boundary after it may begin there.
    back = len(bytes(held[:least]).rstrip(WHITESPACE_BYTES))
    has_line_end = held.find(b"\n", back, limit) >= 0 or held.find(b"\r", back, limit) >= 0  # (seen at once)
    if mode == "blank_line" and has_line_end and (found := LINE_START.search(held, back, limit)) is not None:
        return found.end(), True
    for found in SENTENCE_START.finditer(held, max(back - 1, 0), limit):
        if found.end() >= least and _ends_sentence(held, found.start()):
            return found.end(), True
    if (found := WORD_START.search(held, back, limit)) is not None:
        return found.start(), True
    if (found := CHARACTER_START.search(held, least, limit)) is not None:
        return found.start(), True
    return _cut_whitespace(held, least, limit)


def _cut_whitespace(held: bytearray, least: int, limit: int) -> tuple[int, bool]:
    """The cut where only whitespace lies past `least` (or the rest of a character, or bytes that are not UTF-8,
    which the worker refuses naming the offset): at the first character's start, never inside a CRLF."""
    at = found.start() if (found := NOT_INSIDE_CHARACTER.search(held, least, limit)) is not None else least
    return at + (held[at - 1:at + 1] == b"\r\n"), True


def _blank_line(held: bytearray, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) of BLANK_LINE_BYTES' first match in held[start:end], searched from its LF (fast, unlike \r?)."""
    found = BLANK_LINE_FROM_LF.search(held, start, end)
    if found is None:
        return None
    crlf = found.start() > start and held[found.start() - 1] == ord("\r")
    return found.start() - crlf, found.end()


def _ends_sentence(held: bytearray, dot: int) -> bool:
    """Whether the dot at `held[dot]` ends a sentence: its whole ASCII word is no title of ABBREVIATIONS."""
    start = dot
    while start > 0 and held[start - 1] in WORD_BYTES:
        start -= 1
    if start == 0 or held[start - 1] >= 0x80:  # the word may go on before the piece, or in a character not ASCII
        return False
    return bytes(held[start:dot]).decode("ascii") not in ABBREVIATIONS


def read_piece(piece: Piece) -> str:
    """The text of a piece whose bytes match the reading pass's crc32 (else a TextChanged), decoded as UTF-8."""
    with open(piece.file, "rb") as f:
        f.seek(piece.start)
        data = f.read(piece.end - piece.start)
    if len(data) != piece.end - piece.start or crc32_hex(data) != piece.crc32:
        raise changed_while_read(piece.file, f"its bytes {piece.start:,} to {piece.end:,} are not those read first")
    return decode_utf8(data, piece.file, CorpusError, start=piece.start)


def group_pieces(pieces: Sequence[Piece], workers: int) -> list[list[Piece]]:
    """Consecutive pieces grouped into work items: at least 4 per worker, at least MIN_JOB_BYTES each unless a
    piece is smaller (100,000 small files are a few hundred calls). The grouping changes nothing written."""
    total = sum(p.end - p.start for p in pieces)
    target = min(PIECE_BYTES, max(MIN_JOB_BYTES, -(-total // (4 * workers))))
    jobs, job, size = [], [], 0
    for piece in pieces:
        if job and size + piece.end - piece.start > target:
            jobs.append(job)
            job, size = [], 0
        job.append(piece)
        size += piece.end - piece.start
    return jobs + ([job] if job else [])


# ---------------------------------------------------------------------------------------------- worker processes
_worker_processor = None  # the SentencePiece model of a worker process, loaded once by `_start_worker`
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt(3)


def _start_worker(model: bytes, parent: int) -> None:
    """The initializer of a worker process."""
    # Ctrl-C reaches every process of the terminal's group: the parent alone stops the work and says so in one
    # line; a worker would print a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    # A full collection writes to every object it visits, and each write copies a page the fork shared.
    gc.freeze()
    if sys.platform.startswith("linux"):
        # glibc maps an array of a few MB from the system and hands it back when freed, so each work item faulted
        # its pages in anew (a tenth of a worker's CPU time): keep freed memory for the next item.
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None)
            libc.mallopt(M_MMAP_THRESHOLD, 64 << 20)
            libc.mallopt(M_TRIM_THRESHOLD, 256 << 20)
    _load_processor(model)


def die_with_parent(parent: int) -> None:
    """End this process when process `parent` ends, even by kill -9 (which runs no cleanup in the parent)."""
    end_with_parent(parent, signal.SIGKILL)


def _load_processor(model: bytes) -> None:
    global _worker_processor
    import sentencepiece as spm

    _worker_processor = spm.SentencePieceProcessor(model_proto=model)


def worker_context():
    """fork on Linux, as torch's DataLoader does (a worker starts in milliseconds and never runs torch); spawn
    elsewhere, where a script that prepares text needs the `if __name__ == "__main__":` guard."""
    return get_context("fork" if sys.platform.startswith("linux") else "spawn")


# ---------------------------------------------------------------------------------------------- reading in bulk
# A worker applies the rules of corpus.paragraphs_of_text, corpus.split_sentences and tokenizer.preprocess_text
# to a whole piece at once: a few passes of str.replace, re and NumPy over megabytes instead of Python calls per
# line, sentence and word (half of each worker's time). A NUL ends each document (decode_utf8 refuses a NUL in a
# file), a line end each paragraph, then each sentence. tests/text/test_token_cache.py checks the result against
# those three functions on Austen's text and on random text made of the characters their rules look at.
DOCUMENT_END = "\0"
# normalize_paragraph's replacements but the no-break space's: that is whitespace, which every rule collapses
# (replaced before the blank lines are found, a line of it would become a blank line).
PUNCTUATION = {chr(code): plain for code, plain in _ASCII_PUNCTUATION.items() if not chr(code).isspace()}
# Every character str.isspace() names but " ", "\n" and "\r", the ASCII ones first; and those of them
# str.splitlines() ends a line at. test_the_bulk_reader_knows_every_space checks both.
SPACES = ("\t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
          "\u200a\u2028\u2029\u202f\u205f\u3000")
ASCII_SPACES = 7
LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
SEPARATORS = np.array([0, ord(" "), ord("\n"), ord(DOCUMENT_END)], dtype=np.uint8)  # by rank (see below)
# What a run of whitespace becomes once collapsed, by rank: nothing, a space, a line end (a paragraph's end in
# mode "blank_line"), a blank line (a document's end in mode "blank_line", a paragraph's in mode "file"); and what
# joins two parts of one document that a run of that rank separates, in its sha256's text.
SPACE, LINE_END, BLANK_LINE_RANK = 1, 2, 3
JOINS = {0: b"", SPACE: b" ", LINE_END: b"\n\n", BLANK_LINE_RANK: b"\n\n"}
OPENS_LINE = re.compile(r"[ \t]*\n")  # a run that starts with the end of a blank line begun before it
CLOSES_LINE = re.compile(r"\n[ \t]*\Z")  # a run that ends inside a blank line the next one may end
ASCII_INITIALS = "A-HJ-Z"  # the capitals that make a one-letter word an initial ("I" is a word), as a class


def read_sentences(text: str, mode: str) -> tuple[list[bytes], list[int], list[str]]:
    """Each document's sha256 (`document_sha256`) and number of sentences, and every sentence, preprocessed."""
    documents, per_document, sentences = read_documents(text, mode)
    return [document_sha256(doc) for doc in documents], per_document, sentences


def read_documents(text: str, mode: str) -> tuple[list[bytes], list[int], list[str]]:
    """`read_sentences` with each document's text (UTF-8, a paragraph a line) in place of its sha256."""
    text, data = _paragraph_lines(text, mode)
    if not text:
        return [], [], []
    documents = data.split(DOCUMENT_END.encode())
    data = _sentence_lines(text, data).encode("utf-8")
    counts = [part.count(b"\n") + 1 for part in data.split(DOCUMENT_END.encode())]  # a sentence a line, none empty
    return documents, counts, _preprocessed(data)


def document_sha256(paragraph_lines: bytes, digest=None):
    """The sha256 of a document's paragraphs joined by blank lines; or `digest` updated with them (part by part)."""
    text = paragraph_lines.replace(b"\n", b"\n\n")
    if digest is not None:
        digest.update(text)
        return digest
    return hashlib.sha256(text).digest()


def separator_rank(run: str, mode: str) -> int:
    """The rank of a run of whitespace (where a piece starts or ends): what the reading rules make of it."""
    if not run:
        return 0
    run = universal_newlines(run)
    if BLANK_LINE.search(run):
        return BLANK_LINE_RANK
    if mode == "blank_line" and any(end in run for end in "\n" + LINE_ENDS):
        return LINE_END
    return SPACE


def _edge(piece: Piece, text: str, mode: str, documents: list[bytes], first: int) -> dict:
    """What the writer needs to join a piece cut inside a document to its neighbours: the whitespace it starts and
    ends with (rank, and whether a blank line may straddle the cut), and its first and last documents' text."""
    lead, trail = len(text) - len(text.lstrip()), len(text.rstrip())
    starts, ends = universal_newlines(text[:lead]), universal_newlines(text[trail:])
    return {"first": first, "documents": len(documents), "continues": piece.continues, "continued": piece.continued,
            "lead": separator_rank(starts, mode), "trail": separator_rank(ends, mode),
            "lead_opens": OPENS_LINE.match(starts) is not None, "trail_closes": CLOSES_LINE.search(ends) is not None,
            "spaces_only": not text.strip(" \t"),
            "head": documents[0] if piece.continues and documents else None,
            "tail": documents[-1] if piece.continued and documents else None}


def _paragraph_lines(text: str, mode: str) -> tuple[str, bytes]:
    """A piece's paragraphs normalized, a line each, DOCUMENT_END between documents; as text and as UTF-8."""
    text = universal_newlines(text)
    for char, plain in PUNCTUATION.items():
        if char in text:
            text = text.replace(char, plain)
    text = BLANK_LINE.sub(DOCUMENT_END, text)  # ends a document (mode "blank_line") or a paragraph ("file")
    line_ends = LINE_ENDS if mode == "blank_line" else ""
    for char in SPACES if not text.isascii() else SPACES[:ASCII_SPACES]:
        if char in text:
            text = text.replace(char, "\n" if char in line_ends else " ")
    if mode == "file":
        text = text.replace("\n", " ")  # a block's lines are one paragraph
    text, data = _collapse_separators(text)
    if mode == "file":  # one document, of the blocks
        return text.replace(DOCUMENT_END, "\n"), data.replace(DOCUMENT_END.encode(), b"\n")
    return text, data


def _collapse_separators(text: str) -> tuple[str, bytes]:
    """`text` with each run of spaces, line ends and DOCUMENT_ENDs as the highest ranked of them, and none at either
    end: what normalizing every line, then leaving out empty lines and documents gives. Done on the UTF-8 bytes
    with NumPy (str.replace() searches slowly for a needle of two characters with a space)."""
    text = text.strip(" \n" + DOCUMENT_END)
    data = text.encode("utf-8")
    codes = np.frombuffer(data, dtype=np.uint8)
    low = codes <= SEPARATORS[1]  # the three, and control characters (rare in text): a quick first look
    if not np.any(low[1:] & low[:-1]):
        return text, data  # every separator stands alone, as it would be written
    found = [codes == byte for byte in SEPARATORS[1:]]
    separator = found[0] | found[1] | found[2]
    if not np.any(separator[1:] & separator[:-1]):
        return text, data
    rank = np.zeros(len(codes), dtype=np.uint8)  # (uint8 throughout: mixing in Python ints makes int64 arrays)
    for value, where in enumerate(found, start=1):
        rank[where] = value
    first = separator.copy()  # the first byte of every run
    first[1:] &= ~separator[:-1]
    starts = np.flatnonzero(first)
    collapsed = codes.copy()
    collapsed[starts] = SEPARATORS[np.maximum.reduceat(rank, starts)]  # (a run's bytes, then others' of rank 0)
    keep = ~separator
    keep[starts] = True
    data = collapsed[keep].tobytes()
    return data.decode("utf-8"), data


def _sentence_lines(text: str, data: bytes) -> str:
    """Paragraph lines (`text`, and `data`, its UTF-8) cut into sentence lines where `split_sentences` cuts."""
    initials = ASCII_INITIALS
    if not data.isascii():  # other capitals the text holds, read from its bytes of other characters
        codes = np.frombuffer(data, dtype=np.uint8)
        others = set(codes[codes >= 0x80].tobytes().decode("utf-8"))
        initials += "".join(sorted(c for c in others if c.isupper() and c.isalnum()))
    for mark, boundary in zip(".!?", _sentence_boundaries(initials)):
        if mark in text:
            parts = boundary.split(text)  # text, the end of a sentence, text, ...
            parts[1::2] = [end + "\n" for end in parts[1::2]]
            text = "".join(parts)
    return text


@functools.lru_cache(maxsize=64)
def _sentence_boundaries(initials: str) -> list[re.Pattern]:
    """split_sentences' boundary (corpus._BOUNDARY on normalized text) and its exceptions, as three patterns led
    by a dot, "!" or "?" (a literal re finds fast); `initials`: the capitals that make a one-letter word an initial.

    Group 1 ends the sentence (the marks, closing quotes or brackets, and a "--"); the space after it is the rest
    of the match. A run of marks is matched from its first mark only, as split_sentences' finditer does."""
    by_length = {}
    for word in sorted(ABBREVIATIONS):
        by_length.setdefault(len(word), []).append(word)  # a lookbehind has one width
    # A dot not followed by another, after a whole word (the word characters and apostrophes _word_before
    # finds) that is a title, an initial, or "No" before a number.
    titles = "|".join(rf"(?<=(?<![\w'])(?:{'|'.join(words)})\.)" for words in by_length.values())
    skip = (rf"(?!\.)(?:{titles}|(?<=(?<![\w'])[{initials}]\.)"
            r"""|(?<=(?<![\w'])No\.)[.!?]*["')\]]*(?: |--)[0-9])""")
    after = r"""[.!?]*["')\]]*(?:--)?"""  # the rest of group 1
    rest = rf"""{after})(?:(?<=--)|(?<!--) )(?=["'(\[]*[A-Z0-9])"""
    # Most dots end no sentence (a paragraph's last, one before a lower-case word): the same rest, tried first as
    # a lookahead, turns them down before the abbreviations' lookbehinds are tried. It changes no match.
    ahead = rf"""(?={after}(?:(?<=--)|(?<!--) )["'(\[]*[A-Z0-9])"""
    return [re.compile(rf"(\.{ahead}(?<![.!?]\.)(?!{skip}){rest}"), re.compile(rf"(!(?<![.!?]!){rest}"),
            re.compile(rf"(\?(?<![.!?]\?){rest}")]


def _preprocessed(data: bytes) -> list[str]:
    """`preprocess_text` of every sentence of `data`: ASCII ones in bulk (it only replaces `` and '' and lowers
    them; bytes.lower() lowers ASCII letters only), the others one by one."""
    from .tokenizer import preprocess_text

    # A needle of two bytes is searched for slowly, and an apostrophe is common: look for a pair first.
    lowered = data.replace(b"``", b'"') if b"`" in data else data  # (one byte is found fast)
    codes = np.frombuffer(data, dtype=np.uint8)
    quotes = codes == ord("'")
    if np.any(quotes[1:] & quotes[:-1]):
        lowered = lowered.replace(b"''", b'"')
    sentences = lowered.replace(DOCUMENT_END.encode(), b"\n").lower().decode("utf-8").split("\n")
    if data.isascii():
        return sentences
    ends = np.flatnonzero((codes == SEPARATORS[2]) | (codes == SEPARATORS[3]))  # of every sentence but the last
    starts = np.concatenate([[0], ends + 1])
    for i in np.unique(np.searchsorted(ends, np.flatnonzero(codes >= 0x80))).tolist():
        end = int(ends[i]) if i < len(ends) else len(data)
        sentences[i] = preprocess_text(data[starts[i]:end].decode("utf-8"))
    return sentences


def _prepare_job(job: tuple[list[Piece], str, str]) -> dict:
    """Tokenize some pieces: their tokens end to end, sentence lengths, documents, digests, counts and edges."""
    pieces, mode, dtype = job
    # A job makes about one Python object per token and no reference cycles: the cyclic collector would walk the
    # young ones again every 700 allocations, for nothing it could free.
    collecting = gc.isenabled()
    gc.disable()
    try:
        digests, per_document, sentences, edges = [], [], [], []
        for piece in pieces:  # one file open at a time
            text = read_piece(piece)
            documents, counts, found = read_documents(text, mode)
            if piece.continues or piece.continued:  # a document cut inside: the writer joins its parts
                edges.append(_edge(piece, text, mode, documents, len(per_document)))
            digests += [document_sha256(doc) for doc in documents]
            del text, documents
            per_document += counts
            sentences += found
        # One call for the whole job, on one thread: the cores are busy with the other jobs.
        encoded = _worker_processor.encode(sentences, num_threads=1)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=dtype, count=int(lengths.sum()))
        # Empty sentences (nothing left once preprocessed) are dropped; their document counts the others.
        kept = np.concatenate([[0], np.cumsum(lengths > 0)])
        ends = np.cumsum(per_document, dtype=np.int64)
        return {"tokens": flat, "lengths": lengths[lengths > 0],
                "sentences": kept[ends] - kept[ends - np.asarray(per_document, dtype=np.int64)],
                "counts": np.bincount(flat, minlength=_worker_processor.get_piece_size()),
                "digests": np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 32),
                "bytes": sum(p.end - p.start for p in pieces), "edges": edges}
    finally:
        if collecting:
            gc.enable()


# ---------------------------------------------------------------------------------------------- writing
def token_dtype(vocab_size: int) -> str:
    return "uint16" if vocab_size <= np.iinfo(np.uint16).max + 1 else "uint32"


def _key_folder(file_sha256: Sequence[str], model: bytes, mode: str, root: Path | None) -> Path:
    root = Path(root) if root is not None else cache_root()
    return root / cache_key(file_sha256, hashlib.sha256(model).hexdigest(), mode)


def prepared_cache(paths: Sequence[Path], tokenizer, mode: str, root: Path | None = None) -> TokenCache | None:
    """The complete cache of these files with this tokenizer, or None; writes nothing (read-only caches work)."""
    _, file_sha256 = cut_and_hash([Path(p) for p in paths], mode)
    folder = _key_folder(file_sha256, tokenizer.sp.serialized_model_proto(), mode, root)
    return TokenCache(folder) if (folder / MANIFEST_NAME).is_file() else None


def prepare(paths: Sequence[Path], tokenizer, mode: str, file_sha256: Sequence[str] | None = None,
            workers: int | None = None, root: Path | None = None, progress: bool = True,
            say: Callable[[str], None] = print) -> TokenCache:
    """The cache of these files, prepared now unless a complete one exists (then it is opened, and checked).

    `file_sha256`: the files' digests, if the caller has them (a run records them): a file changed since is refused."""
    paths = [Path(p) for p in paths]
    pieces = None
    if file_sha256 is None:
        pieces, file_sha256 = cut_and_hash(paths, mode)
    file_sha256 = list(file_sha256)
    model = tokenizer.sp.serialized_model_proto()
    folder = _key_folder(file_sha256, model, mode, root)
    if (folder / MANIFEST_NAME).is_file():
        return TokenCache(folder)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CacheError(f"the token cache folder {folder.parent} is not a folder (a file, or a link to none); set "
                         f"{CACHE_ENV} to a folder you may write to") from None
    with FileLock(str(folder.parent / f"{folder.name}.lock")):
        if (folder / MANIFEST_NAME).is_file():  # another process prepared it while this one waited
            return TokenCache(folder)
        _write(folder, paths, file_sha256, model, tokenizer, mode, workers, progress, say, pieces)
    return TokenCache(folder)


def _write(folder: Path, paths, file_sha256, model: bytes, tokenizer, mode: str, workers: int | None,
           progress: bool, say, pieces: list[Piece] | None = None) -> None:
    start = time.perf_counter()
    for stale in folder.parent.glob(f"{folder.name}.partial-*"):  # left by a killed preparation of this key
        if stale.is_dir() and not stale.is_symlink():
            clear_folder(stale)  # what the cache wrote there (anything else stays, harmless under that name)
    if folder.is_symlink():  # (to no complete cache: `prepare` maps one)
        raise CacheError(f"{folder} is a symbolic link, not a token cache folder; delete the link and rerun, and the "
                         "text is prepared again")
    if folder.is_dir():  # a folder of this key without its manifest: damaged (a file deleted by hand)
        left = clear_folder(folder)
        if left:
            raise CacheError(f"{folder} is an incomplete token cache (no {MANIFEST_NAME}) holding files the cache "
                             f"does not write ({', '.join(left[:3])}{', ...' if len(left) > 3 else ''}); move them "
                             "out of it and rerun, and the text is prepared again")
    # A name no other process uses (pids are reused across machines sharing the cache), with the usual
    # permissions (mkdtemp's 0700 would keep other users of a shared cache out of the finished folder).
    partial = folder.parent / f"{folder.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    partial.mkdir()
    try:
        if pieces is None:
            pieces = cut_pieces(paths, mode, file_sha256=file_sha256)
        dtype = token_dtype(tokenizer.vocab_size)
        cores = default_workers()
        asked = workers or cores
        workers = max(1, min(asked, cores, len(pieces)))
        capped = f" ({asked} asked: at most one per core, {cores} here)" if asked > cores else ""
        jobs = [(job, mode, dtype) for job in group_pieces(pieces, workers)]
        workers = min(workers, len(jobs))
        total = sum(p.end - p.start for p in pieces)
        say(f"preparing {total / 1e6:,.1f} MB of text in {len(paths)} file(s) with {workers} worker(s){capped} "
            f"into {folder}")
        results = _run_jobs(jobs, model, workers, total, progress)
        try:
            summary = _collect(results, partial, tokenizer.vocab_size, mode)
        finally:
            results.close()  # an error while writing ends the workers now, not when the generator is collected
        took = {"workers": workers, "seconds": round(time.perf_counter() - start, 3)}
        _finish(partial, summary, paths, file_sha256, model, tokenizer, mode, dtype, folder.name, took)
        os.replace(partial, folder)
    except BaseException:
        if partial.is_dir():  # (not once renamed into place: then the cache is whole)
            clear_folder(partial)
        raise
    seconds = time.perf_counter() - start
    say(f"prepared in {seconds:.1f} s ({total / 1e6 / max(seconds, 1e-9):.1f} MB/s); later runs map it from disk")


def clear_folder(folder: Path, ours: re.Pattern = KEY_FILE) -> list[str]:
    """Delete the cache's own files in a key folder (and passes/), then the folder if empty; the names of anything
    else, which stay (no command deletes a file it did not write). Symbolic links are never followed."""
    left = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if ours is KEY_FILE and entry.name == PASSES_NAME and entry.is_dir(follow_symlinks=False):
            left += [f"{PASSES_NAME}/{name}" for name in clear_folder(Path(entry.path), PASS_FILE)]
        elif ours.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
        else:
            left.append(entry.name)
    if not left:
        folder.rmdir()
    return left


def _run_jobs(jobs, model: bytes, workers: int, total: int, progress: bool):
    """The jobs' results in order, at most two a worker queued or held; a Ctrl-C or an error ends the workers."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, desc="prepare", disable=not progress, leave=False)
    try:
        if workers == 1:
            _load_processor(model)  # in this process, whose Ctrl-C must still stop it
            for job in jobs:
                result = _prepare_job(job)
                bar.update(result["bytes"])
                yield result
            return
        with ProcessPoolExecutor(workers, mp_context=worker_context(), initializer=_start_worker,
                                 initargs=(model, os.getpid())) as pool:
            waiting, upcoming = collections.deque(), iter(jobs)
            try:
                for job in itertools.islice(upcoming, 2 * workers):
                    waiting.append(pool.submit(_prepare_job, job))
                while waiting:
                    result = waiting.popleft().result()
                    for job in itertools.islice(upcoming, 1):
                        waiting.append(pool.submit(_prepare_job, job))
                    bar.update(result["bytes"])
                    yield result
            except BrokenProcessPool:
                raise CacheError("a worker process of the preparation died (out of memory, or killed); rerun, or "
                                 "if memory is short prepare the text with `albert-mini prepare --workers 1`") from None
            except BaseException:  # Ctrl-C, an error or an abandoned generator: no piece more is prepared
                _end_workers(pool)
                raise
    finally:
        bar.close()


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel the pieces not started and kill the pool's workers now, rather than wait for the pieces they encode.
    What Python 3.14's `kill_workers` does, by hand before it: the workers are listed first (shutdown forgets
    them), and the pool's own thread cancels the futures (one cancelled here could be failed there too once the
    killed workers break the pool: InvalidStateError, a traceback in that thread)."""
    manager = getattr(pool, "_executor_manager_thread", None)  # (shutdown forgets it too)
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
    else:
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.kill()  # (one that has ended already is left alone)
    if manager is not None:
        # Wait for the pool's thread to see its workers gone and close its wake-up pipe. Left running, it can
        # close that pipe while Python's exit hook for pools writes to it (Python 3.11 checks, then writes):
        # `OSError: Bad file descriptor`, a traceback printed after the one line a Ctrl-C gets.
        manager.join(timeout=30)


class _Recorded:
    """A file being written whose size and crc32 follow every write: the manifest records what was written."""

    def __init__(self, path: Path):
        self.path = path
        self.file, self.size, self.crc = open(path, "wb"), 0, 0

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self.crc = zlib.crc32(view, self.crc)
        self.size += view.nbytes
        return self._named(self.file.write, view)

    def close(self) -> dict:
        self._named(self.file.close)
        return {"bytes": self.size, "crc32": f"{self.crc:08x}"}

    def _named(self, call, *args):
        """A write error names this file: a full disk or `ulimit -f` (EFBIG) raise an OSError without a name."""
        try:
            return call(*args)
        except OSError as error:
            if error.filename is not None:
                raise
            raise OSError(error.errno, error.strerror, str(self.path)) from error


def _collect(results, partial: Path, vocab_size: int, mode: str) -> dict:
    """Write the jobs' tokens to tokens.bin as they come, in order; keep their boundaries, digests and counts."""
    lengths, documents, text_bytes = [], _Documents(mode), 0
    counts = np.zeros(vocab_size, dtype=np.int64)
    tokens = _Recorded(partial / TOKENS_NAME)
    try:
        for result in results:
            tokens.write(np.ascontiguousarray(result["tokens"]))
            lengths.append(result["lengths"])
            documents.add(result)
            counts[:len(result["counts"])] += result["counts"]
            text_bytes += result["bytes"]
    finally:
        written = tokens.close()
    per_document, digests = documents.finish()
    return {"lengths": np.concatenate(lengths), "per_document": per_document, "digests": digests, "counts": counts,
            "text_bytes": text_bytes, TOKENS_NAME: written}


class _Documents:
    """The documents of the jobs' results, in order, with a document cut into pieces one again: its parts' sentence
    counts summed and its sha256 taken over their text, joined as the whole text's reading joins them (a space,
    or a blank line between paragraphs; in mode "blank_line" a blank line ends the document instead)."""

    def __init__(self, mode: str):
        self.mode, self.counts, self.digests = mode, [], []
        self.open = None  # [sha256 object, sentences] of the last document, which the next piece goes on with
        self.rank = 0  # the whitespace since the open document's last text (a piece of whitespace only adds to it)
        self.in_line = False  # whether that whitespace ends with a line end and spaces (a blank line's beginning)

    def add(self, result: dict) -> None:
        counts, digests, at = result["sentences"], result["digests"], 0
        for edge in result["edges"]:
            self._whole(counts[at:edge["first"]], digests[at:edge["first"]])
            self._join(edge, counts, digests)
            at = edge["first"] + edge["documents"]
        self._whole(counts[at:], digests[at:])

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        self._close()
        if not self.counts:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 32), dtype=np.uint8)
        return np.concatenate(self.counts).astype(np.int64), np.concatenate(self.digests)

    def _whole(self, counts: np.ndarray, digests: np.ndarray) -> None:
        if len(counts):
            self._close()
            self.counts.append(np.asarray(counts, dtype=np.int64))
            self.digests.append(digests)

    def _close(self) -> None:
        if self.open is not None:
            digest, sentences = self.open
            self.open = None
            self._whole(np.array([sentences], dtype=np.int64),
                        np.frombuffer(digest.digest(), dtype=np.uint8).reshape(1, 32))

    def _join(self, edge: dict, counts: np.ndarray, digests: np.ndarray) -> None:
        first, end = edge["first"], edge["first"] + edge["documents"]
        if edge["continues"] and self.open is not None:
            # A blank line may straddle the cut (inside a run of whitespace): a line end and spaces before it,
            # spaces and a line end after it.
            rank = max(self.rank, edge["lead"], BLANK_LINE_RANK if self.in_line and edge["lead_opens"] else 0)
            if first == end:  # whitespace only: the document stays open, the whitespace adds to what follows
                self.rank = rank
                self.in_line = edge["trail_closes"] or (self.in_line and edge["spaces_only"])
            elif self.mode == "blank_line" and rank == BLANK_LINE_RANK:
                self._close()  # the cut fell after a blank line: the next document starts here
            else:
                self.open[0].update(JOINS[rank])
                document_sha256(edge["head"], self.open[0])
                self.open[1] += int(counts[first])
                first += 1
        for d in range(first, end):
            self._close()
            if d == end - 1 and edge["continued"]:
                self.open = [document_sha256(edge["tail"], hashlib.sha256()), int(counts[d])]
            else:
                self._whole(counts[d:d + 1], digests[d:d + 1])
        if not edge["continued"]:
            self._close()
        elif edge["documents"]:  # (a piece of whitespace only set the rank above)
            self.rank, self.in_line = edge["trail"], edge["trail_closes"]


def _save(path: Path, array: np.ndarray) -> dict:
    """np.save, with the size and crc32 of the bytes written."""
    out = _Recorded(path)
    try:
        np.save(out, np.ascontiguousarray(array))
    finally:
        written = out.close()
    return written


def _finish(partial: Path, summary: dict, paths, file_sha256, model: bytes, tokenizer, mode: str,
            dtype: str, key: str, took: dict) -> None:
    lengths, per_document = summary["lengths"], summary["per_document"]
    if not len(per_document):
        names = ", ".join(str(p) for p in paths)
        raise CorpusError(f"no text found in {names}: every file is empty or holds only whitespace")
    sentences = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    documents = np.concatenate([[0], np.cumsum(per_document)]).astype(np.int64)
    contents = {TOKENS_NAME: summary[TOKENS_NAME]}
    for name, array in zip(INDEX_NAMES, (sentences, documents, summary["digests"], summary["counts"])):
        contents[name] = _save(partial / name, array)
    (partial / PASSES_NAME).mkdir()
    manifest = {
        "version": PREPARE_VERSION, "key": key, "mode": mode, "dtype": dtype,
        "tokenizer_sha256": hashlib.sha256(model).hexdigest(), "vocab_size": tokenizer.vocab_size,
        "files": [{"name": Path(p).name, "sha256": sha} for p, sha in zip(paths, file_sha256)],
        "documents": int(len(per_document)), "sentences": int(len(lengths)), "tokens": int(sentences[-1]),
        "text_bytes": int(summary["text_bytes"]), "contents": contents,
        "prepared": took,  # how long reading, splitting and encoding took, with how many worker processes
    }
    (partial / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")


# ---------------------------------------------------------------------------------------------- reading
class TokenCache:
    """A prepared text, memory-mapped: token ids, sentence and document boundaries, digests, counts.

    Opening one proves what it maps: every manifest field is checked, the folder's name is the key its fields
    make, every file has the size and crc32 recorded when it was written, and the arrays agree. Anything else is a
    CacheError naming the folder to delete (nothing is rebuilt silently: a damaged cache may mean a failing disk)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        try:
            self.manifest = json.loads((self.folder / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise self.damaged(f"has no readable {MANIFEST_NAME} ({getattr(err, 'strerror', None) or err})") from None
        if not isinstance(self.manifest, dict):
            raise self.damaged(f"has a {MANIFEST_NAME} that is not a JSON object")
        if self.manifest.get("version") != PREPARE_VERSION:
            raise self.damaged(f"was prepared by version {self.manifest.get('version')!r} of the token cache, this is "
                               f"{PREPARE_VERSION}")
        problem = manifest_problem(self.manifest, self.folder.name)
        if problem:
            raise self.damaged(f"has a {MANIFEST_NAME} whose {problem}")
        m = self.manifest
        for name, recorded in m["contents"].items():
            try:
                size = os.stat(self.folder / name).st_size
            except OSError:
                raise self.damaged(f"has no {name}") from None
            if size != recorded["bytes"]:
                raise self.damaged(f"has a {name} of {size:,} bytes where {recorded['bytes']:,} were written")
            crc = crc32_file(self.folder / name)
            if crc != recorded["crc32"]:
                raise self.damaged(f"has a {name} whose bytes changed since they were written (crc32 {crc}, "
                                   f"written {recorded['crc32']})")
        self.sentences = self._load("sentences.npy", (m["sentences"] + 1,), np.int64)  # (S + 1,)
        self.documents = self._load("documents.npy", (m["documents"] + 1,), np.int64)  # (D + 1,)
        self.digests = self._load("document_sha256.npy", (m["documents"], 32), np.uint8)  # (D, 32)
        counts = self._load("unigram.npy", (m["vocab_size"],), np.int64)  # (V,)
        dtype = np.dtype(m["dtype"])
        if m["contents"][TOKENS_NAME]["bytes"] != m["tokens"] * dtype.itemsize:
            raise self.damaged(f"has a {TOKENS_NAME} of {m['contents'][TOKENS_NAME]['bytes']:,} bytes, not "
                               f"{m['tokens']:,} {m['dtype']} ids")
        # an empty file cannot be mapped; it holds no document's tokens, so nothing reads it
        self.ids = np.memmap(self.folder / TOKENS_NAME, dtype=dtype, mode="r") if m["tokens"] else np.zeros(0, dtype)
        for problem, wrong in (
                ("sentences.npy that does not start at 0 and end at the last token",
                 self.sentences[0] != 0 or self.sentences[-1] != m["tokens"]),
                ("sentences.npy with a sentence of no tokens (or going back)",
                 bool(np.any(np.diff(self.sentences) < 1))),
                ("documents.npy that does not start at 0 and end at the last sentence",
                 self.documents[0] != 0 or self.documents[-1] != m["sentences"]),
                ("documents.npy that goes back", bool(np.any(np.diff(self.documents) < 0))),
                ("unigram.npy with a negative count", bool(np.any(counts < 0))),
                ("unigram.npy that does not count every token once", int(counts.sum()) != m["tokens"])):
            if wrong:
                raise self.damaged(f"has a {problem}")

    def damaged(self, problem: str) -> CacheError:
        return CacheError(f"the token cache {self.folder} {problem}; delete {self.folder} and rerun, and the text is "
                          "prepared again")

    def _load(self, name: str, shape: tuple, dtype) -> np.ndarray:
        try:
            array = np.load(self.folder / name, mmap_mode="r")
        except (OSError, ValueError, EOFError) as err:
            raise self.damaged(f"has a {name} that is not a NumPy array file ({err})") from None
        if array.shape != shape or array.dtype != np.dtype(dtype):
            raise self.damaged(f"has a {name} of shape {array.shape} and dtype {array.dtype}, not {shape} "
                               f"{np.dtype(dtype)}")
        return array

    def __len__(self) -> int:
        return len(self.digests)

    def tokens(self, start: int, end: int) -> np.ndarray:
        """Tokens [start, end) of the text, a view of the map (no copy)."""
        return self.ids[start:end]

    def digest_hex(self, doc: int) -> str:
        return bytes(self.digests[doc]).hex()

    def documents_view(self, selection: Sequence[int] | None = None) -> MappedDocuments:
        """The documents (all, or these, in this order) as TokenDocuments read from the map."""
        return MappedDocuments(self, np.arange(len(self)) if selection is None else np.asarray(selection))


HEX = re.compile(r"[0-9a-f]+")
MANIFEST_FIELDS = ("version", "key", "mode", "dtype", "tokenizer_sha256", "vocab_size", "files", "documents",
                   "sentences", "tokens", "text_bytes", "contents", "prepared")


def manifest_problem(m: dict, folder_name: str) -> str | None:
    """What is wrong with a manifest's fields (ending "a manifest whose ..."), or None; the key is its folder's."""
    def count(value, least: int = 0) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= least

    def hex_of(value, length: int) -> bool:
        return isinstance(value, str) and len(value) == length and HEX.fullmatch(value) is not None

    def fields(names: list[str]) -> str:
        return f"field {names[0]} is" if len(names) == 1 else f"fields {', '.join(names)} are"

    missing = [name for name in MANIFEST_FIELDS if name not in m]
    if missing:
        return f"{fields(missing)} missing"
    unknown = sorted(set(m) - set(MANIFEST_FIELDS))
    if unknown:
        return f"{fields(unknown)} unknown to this version"
    checks = [
        ("mode", m["mode"] in TEXT_MODES, f"one of {', '.join(TEXT_MODES)}"),
        ("tokenizer_sha256", hex_of(m["tokenizer_sha256"], 64), "a sha256 (64 hex digits)"),
        ("vocab_size", count(m["vocab_size"], 1), "a whole number >= 1"),
        ("dtype", count(m["vocab_size"], 1) and m["dtype"] == token_dtype(m["vocab_size"]),
         "the token type of its vocabulary (uint16 up to 65,536 ids, else uint32)"),
        ("files", isinstance(m["files"], list) and len(m["files"]) > 0 and all(
            isinstance(f, dict) and set(f) == {"name", "sha256"} and isinstance(f["name"], str)
            and hex_of(f["sha256"], 64) for f in m["files"]), "a list of {name, sha256} (one per text file)"),
        ("documents", count(m["documents"], 1), "a whole number >= 1"),
        ("sentences", count(m["sentences"]), "a whole number >= 0"),
        ("tokens", count(m["tokens"]), "a whole number >= 0"),
        ("text_bytes", count(m["text_bytes"]), "a whole number >= 0"),
        ("contents", isinstance(m["contents"], dict) and set(m["contents"]) == set(CONTENT_NAMES) and all(
            isinstance(c, dict) and set(c) == {"bytes", "crc32"} and count(c["bytes"]) and hex_of(c["crc32"], 8)
            for c in m["contents"].values()), f"the size and crc32 of each of {', '.join(CONTENT_NAMES)}"),
        ("prepared", isinstance(m["prepared"], dict), "an object"),
        ("key", hex_of(m["key"], 32), "a key (32 hex digits)"),
    ]
    for name, good, should in checks:
        if not good:
            shown = json.dumps(m[name])
            return f"{name} is {shown if len(shown) <= 60 else shown[:57] + '...'}, not {should}"
    made = cache_key([f["sha256"] for f in m["files"]], m["tokenizer_sha256"], m["mode"])
    if m["key"] != folder_name:
        return f"key is {m['key']}, not the folder's name {folder_name}: the folder holds another text's tokens"
    if made != folder_name:
        return (f"files, tokenizer and mode make the key {made}, not the folder's name: the folder holds another "
                "text's tokens")
    return None


class _PerDocument:
    """A list of what `read(first sentence, end sentence)` gives for each selected document, read when asked."""

    def __init__(self, docs: MappedDocuments, read: Callable[[int, int], object]):
        self.docs, self.read = docs, read

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, d: int):
        return self.read(*self.docs.sentence_range(d))

    def __iter__(self):
        return (self[d] for d in range(len(self)))


class MappedDocuments(TokenDocuments):
    """Some documents of a TokenCache as the TokenDocuments `tokenize_documents` gives, read from the map."""

    def __init__(self, cache: TokenCache, selection: np.ndarray):
        self.cache, self.selection = cache, np.asarray(selection, dtype=np.int64)
        if len(np.unique(self.selection)) != len(self.selection):
            raise ValueError("a document selection names a document twice; select distinct documents")
        self.streams = _PerDocument(self, self._stream)  # tokens, a view of the map (no copy)
        self.boundaries = _PerDocument(self, self._boundaries)  # where each sentence starts, then the end, int64
        self.lengths = _PerDocument(self, self._lengths)  # sentence lengths as Python ints (the packing loops)
        self.selection_sha256 = hashlib.sha256(self.selection.tobytes()).hexdigest()[:16]
        self._rows = {}

    def _stream(self, first: int, end: int) -> np.ndarray:
        return self.cache.tokens(int(self.cache.sentences[first]), int(self.cache.sentences[end]))

    def _boundaries(self, first: int, end: int) -> np.ndarray:
        starts = np.asarray(self.cache.sentences[first:end + 1], dtype=np.int64)
        return starts - starts[0]

    def _lengths(self, first: int, end: int) -> list[int]:
        return np.diff(self.cache.sentences[first:end + 1]).tolist()

    def sentence_range(self, d: int) -> tuple[int, int]:
        doc = int(self.selection[d])
        return int(self.cache.documents[doc]), int(self.cache.documents[doc + 1])

    def __len__(self) -> int:
        return len(self.selection)

    def num_sentences(self, doc: int) -> int:
        first, end = self.sentence_range(doc)
        return end - first

    def sentence_counts(self) -> np.ndarray:
        documents = self.cache.documents
        return np.asarray(documents[self.selection + 1] - documents[self.selection], dtype=np.int64)

    def num_tokens(self) -> int:
        documents, sentences = self.cache.documents, self.cache.sentences
        return int((sentences[documents[self.selection + 1]] - sentences[documents[self.selection]]).sum())

    def token_counts(self, vocab_size: int) -> np.ndarray:
        """Counts of the selected documents: the whole text's (stored) less those of the documents left out."""
        counts = np.load(self.cache.folder / "unigram.npy")
        if len(counts) > vocab_size:
            raise ValueError(f"the cache's vocabulary has {len(counts)} ids, more than {vocab_size}")
        counts = np.pad(counts, (0, vocab_size - len(counts)))
        left_out = self.cache.documents_view(np.setdiff1d(np.arange(len(self.cache)), self.selection))
        pending, size = [], 0
        for d, stream in enumerate(left_out.streams, 1):  # bincount the left-out documents 16 M tokens at a time
            pending.append(stream)
            size += len(stream)
            if size > (1 << 24) or d == len(left_out):
                counts -= np.bincount(np.concatenate(pending), minlength=vocab_size)
                pending, size = [], 0
        return counts

    def _pass_path(self, key: tuple) -> Path:
        task, max_seq_len, short_seq_prob, seed = key
        name = f"{task}-{max_seq_len}-{short_seq_prob!r}-{seed}-{self.selection_sha256}-v{PREPARE_VERSION}.npy"
        return self.cache.folder / PASSES_NAME / name

    def stored_rows(self, key: tuple) -> np.ndarray | None:
        """A pass built before, by this process or an earlier run on the same text and selection."""
        if key in self._rows:
            return self._rows[key]
        path = self._pass_path(key)
        if not path.is_file():
            return None
        try:  # the rows as they were written, by their size and crc32 (recorded beside them), else rebuilt
            recorded = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
            if recorded != {"bytes": path.stat().st_size, "crc32": crc32_file(path)}:
                return None
            rows = np.load(path, mmap_mode="r")
        except (OSError, ValueError, EOFError):
            return None  # a damaged or unrecorded file is rebuilt (and replaced) below
        if rows.ndim != 2 or rows.shape[1] != len(ROW_FIELDS):
            return None
        self._rows[key] = rows
        return rows

    def store_rows(self, key: tuple, rows: np.ndarray) -> np.ndarray:
        """Write a large pass to passes/ and map it (resumes and DDP ranks skip building it); keep a small one."""
        if len(rows) < DISK_PASS_ROWS:
            return super().store_rows(key, rows)
        path = self._pass_path(key)
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(rows))
        data = buffer.getvalue()
        try:  # the record last: rows without their record (a kill in between) are rebuilt, never trusted
            atomic_write_bytes(path, data)
            atomic_write_text(path.with_suffix(".json"), json.dumps({"bytes": len(data), "crc32": crc32_hex(data)}))
            rows = np.load(path, mmap_mode="r")
        except OSError:
            pass  # a read-only cache still trains: the pass stays in memory
        self._rows = {key: rows}  # one pass in memory (mapped); the others are on disk
        return rows
