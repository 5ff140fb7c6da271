"""A token cache: your text tokenized once, by all cores, and memory-mapped from disk by every later run.

The first `pretrain --corpus PATH...` (or `albert-mini prepare`) reads the text files in pieces cut at blank
lines, and worker processes split each piece into documents and sentences and encode them with SentencePiece.
What they write is the same TokenDocuments that `tokenize_documents(load_text_files(...))` gives, laid out flat:

    <cache>/<key>/
      manifest.json        what the folder holds: version, key, files (sha256 in order), tokenizer, counts, shards
      tokens-00000.bin ... token ids of every sentence, one shard per piece (uint16, or uint32 for vocabularies
                           over 65,535 pieces), read with numpy.memmap
      sentences.npy        (S + 1,) int64: where sentence s starts in the shards laid end to end, then the end
      documents.npy        (D + 1,) int64: the first sentence of document d, then S
      document_sha256.npy  (D, 32) uint8: sha256 of each document's text (the held-out documents are chosen by it)
      unigram.npy          (V,) int64: how often each id occurs (the MLM output bias starts from it)
      passes/              instance rows of the large passes runs have built (`MappedDocuments.store_rows`)

The key is the sha256 of (PREPARE_VERSION, how files are cut into documents, the tokenizer model's sha256, the
sha256 of every text file in order): change a byte of any of them and the text is prepared again into a new
folder; move or rename the files and the cache still applies. A folder appears whole or not at all (written
under a temporary name, then renamed), and a lock file lets one process prepare while the others (DDP ranks,
a second run) wait and then map the result. The cache root is $ALBERT_MINI_CACHE, else `cache/tokens` in the
checkout. Deleting a key folder is always safe: it is rebuilt on demand.

How this compares with the anchors: nanoGPT's `prepare.py` writes one uint16 memmap of a corpus with worker
processes; Megatron-LM's `preprocess_data.py` writes `.bin` token files with an `.idx` of document and sentence
boundaries, and its datasets cache their sample indices as `.npy` files beside them, as `passes/` does here.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from filelock import FileLock

from ..paths import CACHE_ROOT, sha256_file
from ..safe_files import atomic_write_bytes
from ..textfile import read_utf8
from .corpus import TEXT_MODES, CorpusError, paragraphs_of_text, split_sentences
from .instances import ROW_FIELDS, TokenDocuments

# Bump when the reading, splitting or encoding rules change: old folders stop matching and are prepared again.
# 2: CRLF and lone CR line ends are read as LF (textfile.universal_newlines), so a CRLF file's blank lines cut it
# into the documents and paragraphs of its LF twin (version 1 missed those blank lines, merging documents).
PREPARE_VERSION = 2
CACHE_ENV = "ALBERT_MINI_CACHE"
PIECE_BYTES = 8 << 20  # text per work item: small enough to spread 2 cores, large enough to amortise a call
WINDOW_BYTES = 1 << 20  # how far a cut looks for a blank line at a time
# A blank line in the bytes, LF or CRLF (a lone CR file is not cut: one piece). A match ends after an LF, so a
# cut never falls between the CR and the LF of a line end, and every piece reads as it does inside the whole file.
BLANK_LINE_BYTES = re.compile(rb"\r?\n[ \t]*\r?\n")
MANIFEST_NAME = "manifest.json"
# A pass with at least this many instances is kept on disk (building it takes a second or more); smaller ones are
# rebuilt in memory, so a long run over a small text does not fill the disk with one file per epoch.
DISK_PASS_ROWS = 50_000


class CacheError(CorpusError):
    """A cache folder that is damaged or from another version; the message says what to delete."""


def cache_root() -> Path:
    """Where prepared texts live: $ALBERT_MINI_CACHE, else cache/tokens in the checkout (git-ignored)."""
    override = os.environ.get(CACHE_ENV, "").strip()
    return Path(override).expanduser() if override else CACHE_ROOT / "tokens"


def cache_key(file_sha256: Sequence[str], tokenizer_sha256: str, mode: str) -> str:
    """The folder name of a prepared text: what decides its tokens, and nothing else (not the file names)."""
    if mode not in TEXT_MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(TEXT_MODES)}")
    what = {"version": PREPARE_VERSION, "mode": mode, "tokenizer": tokenizer_sha256, "files": list(file_sha256)}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------------------------- preparing
@dataclass(frozen=True)
class Piece:
    """Bytes [start, end) of one file: a whole file (mode "file"), or a run of its documents cut at blank lines."""

    file: str
    start: int
    end: int


def cut_pieces(paths: Sequence[Path], mode: str, piece_bytes: int | None = None) -> list[Piece]:
    """Work items in file order. In mode "blank_line" a file is cut after a blank line near every
    `piece_bytes`, which gives the same documents as reading it whole (see corpus.paragraphs_of_text)."""
    piece_bytes = piece_bytes or PIECE_BYTES
    pieces = []
    for path in paths:
        size = path.stat().st_size
        if mode == "file" or size <= piece_bytes:
            pieces.append(Piece(str(path), 0, size))
            continue
        with open(path, "rb") as f:
            start = 0
            while start < size:
                end = _cut_after(f, start + piece_bytes, size)
                pieces.append(Piece(str(path), start, end))
                start = end
    return pieces


def _cut_after(f, position: int, size: int) -> int:
    """The end of the first blank line at or after `position`, or `size` when none follows."""
    while position < size:
        f.seek(position)
        window = f.read(WINDOW_BYTES)
        found = BLANK_LINE_BYTES.search(window)
        if found:
            return position + found.end()
        if len(window) < WINDOW_BYTES:
            break
        # A blank line may straddle the window's edge: look again from the window's last newline. (A cut may
        # come later than the first blank line; any blank line is a correct place to cut.)
        last_newline = window.rfind(b"\n")
        position += last_newline if last_newline > 0 else len(window)
    return size


def read_piece(piece: Piece) -> str:
    """The text of a piece; a byte that is not UTF-8 (or a NUL) is a CorpusError naming the file and offset."""
    return read_utf8(piece.file, CorpusError, start=piece.start, end=piece.end)


_worker_processor = None  # the SentencePiece model of a worker process, loaded once by `_start_worker`


def _start_worker(model: bytes) -> None:
    """The initializer of a worker process."""
    # Ctrl-C reaches every process of the terminal's group: the parent alone stops the work (cancelling the
    # pieces not started, see _run_jobs) and says so in one line; a worker would print a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _load_processor(model)


def _load_processor(model: bytes) -> None:
    global _worker_processor
    import sentencepiece as spm

    _worker_processor = spm.SentencePieceProcessor(model_proto=model)


def _prepare_piece(job: tuple[Piece, str, str, int, str]) -> dict:
    """Tokenize one piece into its shard file; return its sentence lengths, documents, digests and counts."""
    from .tokenizer import preprocess_text

    piece, mode, folder, index, dtype = job
    sentence_counts, digests = [], []
    shard = Path(folder) / shard_name(index)
    vocab = _worker_processor.get_piece_size()
    sentences, per_document = [], []
    for paragraphs in paragraphs_of_text(read_piece(piece), mode):
        digests.append(hashlib.sha256("\n\n".join(paragraphs).encode("utf-8")).digest())
        before = len(sentences)
        sentences += [preprocess_text(s) for p in paragraphs for s in split_sentences(p)]
        per_document.append(len(sentences) - before)
    # One call for the whole piece, on one thread: the cores are busy with the other pieces.
    encoded = _worker_processor.encode(sentences, num_threads=1)
    position = 0
    for count in per_document:
        kept = sum(1 for ids in encoded[position:position + count] if ids)  # empty sentences are dropped
        sentence_counts.append(kept)
        position += count
    encoded = [ids for ids in encoded if ids]
    sentence_lengths = [len(ids) for ids in encoded]
    flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32, count=sum(sentence_lengths))
    counts = np.bincount(flat, minlength=vocab).astype(np.int64)
    flat.astype(dtype).tofile(shard)
    return {"lengths": np.array(sentence_lengths, dtype=np.int64), "sentences": np.array(sentence_counts, np.int64),
            "digests": np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 32), "counts": counts,
            "bytes": piece.end - piece.start}


def shard_name(index: int) -> str:
    return f"tokens-{index:05d}.bin"


def token_dtype(vocab_size: int) -> str:
    return "uint16" if vocab_size <= np.iinfo(np.uint16).max + 1 else "uint32"


def default_workers() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def prepare(paths: Sequence[Path], tokenizer, mode: str, file_sha256: Sequence[str] | None = None,
            workers: int | None = None, root: Path | None = None, progress: bool = True,
            say: Callable[[str], None] = print) -> TokenCache:
    """The cache of these files, prepared now unless a complete one exists (then it is only opened).

    `file_sha256`: the files' digests when the caller has them already (a run records them anyway)."""
    paths = [Path(p) for p in paths]
    file_sha256 = list(file_sha256) if file_sha256 is not None else [sha256_file(p) for p in paths]
    model = tokenizer.sp.serialized_model_proto()
    key = cache_key(file_sha256, hashlib.sha256(model).hexdigest(), mode)
    root = Path(root) if root is not None else cache_root()
    folder = root / key
    if (folder / MANIFEST_NAME).is_file():
        return TokenCache(folder)
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{key}.lock")):
        if (folder / MANIFEST_NAME).is_file():  # another process prepared it while this one waited
            return TokenCache(folder)
        _write(folder, paths, file_sha256, model, tokenizer, mode, workers, progress, say)
    return TokenCache(folder)


def _write(folder: Path, paths, file_sha256, model: bytes, tokenizer, mode: str, workers: int | None,
           progress: bool, say) -> None:
    start = time.perf_counter()
    for stale in folder.parent.glob(f"{folder.name}.partial-*"):  # left by a killed preparation; ours alone
        shutil.rmtree(stale, ignore_errors=True)
    partial = folder.parent / f"{folder.name}.partial-{os.getpid()}"
    partial.mkdir()
    try:
        pieces = cut_pieces(paths, mode)
        dtype = token_dtype(tokenizer.vocab_size)
        jobs = [(piece, mode, str(partial), i, dtype) for i, piece in enumerate(pieces)]
        total = sum(p.end - p.start for p in pieces)
        workers = max(1, min(workers or default_workers(), len(pieces)))
        say(f"preparing {total / 1e6:,.1f} MB of text in {len(paths)} file(s) with {workers} worker(s) into "
            f"{folder}")
        results = list(_run_jobs(jobs, model, workers, total, progress))
        took = {"workers": workers, "seconds": round(time.perf_counter() - start, 3)}
        _finish(partial, results, paths, file_sha256, model, tokenizer, mode, dtype, folder.name, took)
        if folder.is_dir():  # a folder of this key without its manifest: damaged (a file deleted by hand)
            shutil.rmtree(folder)
        os.replace(partial, folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    seconds = time.perf_counter() - start
    say(f"prepared in {seconds:.1f} s ({total / 1e6 / max(seconds, 1e-9):.1f} MB/s); later runs map it from disk")


def _run_jobs(jobs, model: bytes, workers: int, total: int, progress: bool):
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, desc="prepare", disable=not progress, leave=False)
    try:
        if workers == 1:
            _load_processor(model)  # in this process, whose Ctrl-C must still stop it
            for job in jobs:
                result = _prepare_piece(job)
                bar.update(result["bytes"])
                yield result
            return
        with ProcessPoolExecutor(workers, mp_context=worker_context(), initializer=_start_worker,
                                 initargs=(model,)) as pool:
            try:
                for result in pool.map(_prepare_piece, jobs):
                    bar.update(result["bytes"])
                    yield result
            except BaseException:  # Ctrl-C or an error: the pieces not started are dropped, not prepared
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        bar.close()


def worker_context():
    """fork on Linux, as torch's DataLoader does: a worker starts in milliseconds and runs only SentencePiece and
    NumPy, never torch. Elsewhere spawn (fork is unsafe on macOS and absent on Windows): each worker imports the
    package first, a second or two, and a script that prepares text needs the `if __name__ == "__main__":` guard.
    """
    return get_context("fork" if sys.platform.startswith("linux") else "spawn")


def _finish(partial: Path, results: list[dict], paths, file_sha256, model: bytes, tokenizer, mode: str,
            dtype: str, key: str, took: dict) -> None:
    lengths = np.concatenate([r["lengths"] for r in results])
    per_document = np.concatenate([r["sentences"] for r in results])
    if not len(per_document):
        names = ", ".join(str(p) for p in paths)
        raise CorpusError(f"no text found in {names}: every file is empty or holds only whitespace")
    sentences = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    documents = np.concatenate([[0], np.cumsum(per_document)]).astype(np.int64)
    np.save(partial / "sentences.npy", sentences)
    np.save(partial / "documents.npy", documents)
    np.save(partial / "document_sha256.npy", np.concatenate([r["digests"] for r in results]))
    np.save(partial / "unigram.npy", sum(r["counts"] for r in results))
    (partial / "passes").mkdir()
    shards = [int(r["lengths"].sum()) for r in results]
    manifest = {
        "version": PREPARE_VERSION, "key": key, "mode": mode, "dtype": dtype,
        "tokenizer_sha256": hashlib.sha256(model).hexdigest(), "vocab_size": tokenizer.vocab_size,
        "files": [{"name": Path(p).name, "sha256": sha} for p, sha in zip(paths, file_sha256)],
        "documents": int(len(per_document)), "sentences": int(len(lengths)), "tokens": int(sentences[-1]),
        "text_bytes": int(sum(r["bytes"] for r in results)), "shards": shards,
        "prepared": took,  # how long reading, splitting and encoding took, with how many worker processes
    }
    (partial / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")


# ---------------------------------------------------------------------------------------------- reading
class TokenCache:
    """A prepared text, memory-mapped: token shards, sentence and document boundaries, digests, counts."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        try:
            self.manifest = json.loads((self.folder / MANIFEST_NAME).read_text())
        except (OSError, ValueError) as err:
            raise CacheError(f"{self.folder} is not a complete token cache ({err}); delete that folder and rerun, "
                             "and the text is prepared again") from None
        if self.manifest.get("version") != PREPARE_VERSION:
            raise CacheError(f"{self.folder} was prepared by version {self.manifest.get('version')} of the token "
                             f"cache, this is {PREPARE_VERSION}; delete that folder and rerun")
        self.sentences = np.load(self.folder / "sentences.npy", mmap_mode="r")  # (S + 1,)
        self.documents = np.load(self.folder / "documents.npy", mmap_mode="r")  # (D + 1,)
        self.digests = np.load(self.folder / "document_sha256.npy", mmap_mode="r")  # (D, 32)
        sizes = self.manifest["shards"]
        self.shard_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        itemsize = np.dtype(self.manifest["dtype"]).itemsize
        self.shards = []
        for i, size in enumerate(sizes):
            path = self.folder / shard_name(i)
            if not path.is_file() or path.stat().st_size != size * itemsize:
                raise CacheError(f"{path} is missing or has the wrong size; delete {self.folder} and rerun")
            # an empty shard cannot be mapped; it holds no document's tokens, so nothing reads it
            self.shards.append(np.memmap(path, dtype=self.manifest["dtype"], mode="r") if size else
                               np.zeros(0, self.manifest["dtype"]))
        if int(self.sentences[-1]) != int(self.shard_starts[-1]) or len(self.documents) != len(self.digests) + 1:
            raise CacheError(f"{self.folder}: its index and its shards disagree; delete that folder and rerun")

    def __len__(self) -> int:
        return len(self.digests)

    def tokens(self, start: int, end: int) -> np.ndarray:
        """Tokens [start, end) of the shards laid end to end; a range never spans two shards (no document does)."""
        shard = int(np.searchsorted(self.shard_starts, start, side="right")) - 1
        offset = int(self.shard_starts[shard])
        return self.shards[shard][start - offset:end - offset]

    def digest_hex(self, doc: int) -> str:
        return bytes(self.digests[doc]).hex()

    def documents_view(self, selection: Sequence[int] | None = None) -> MappedDocuments:
        """The documents (all, or these, in this order) as TokenDocuments read from the map."""
        return MappedDocuments(self, np.arange(len(self)) if selection is None else np.asarray(selection))


class _DocumentStreams:
    """`docs.streams[d]`: document d's tokens, a view of the shard (no copy)."""

    def __init__(self, docs: MappedDocuments):
        self.docs = docs

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, d: int) -> np.ndarray:
        first, end = self.docs.sentence_range(d)
        cache = self.docs.cache
        return cache.tokens(int(cache.sentences[first]), int(cache.sentences[end]))

    def __iter__(self):
        return (self[d] for d in range(len(self)))


class _DocumentBoundaries(_DocumentStreams):
    """`docs.boundaries[d]`: where each sentence of document d starts in its stream, then its end, int64."""

    def __getitem__(self, d: int) -> np.ndarray:
        first, end = self.docs.sentence_range(d)
        starts = np.asarray(self.docs.cache.sentences[first:end + 1], dtype=np.int64)
        return starts - starts[0]


class _DocumentLengths(_DocumentStreams):
    """`docs.lengths[d]`: the sentence lengths of document d as Python ints (the packing loops read them)."""

    def __getitem__(self, d: int) -> list[int]:
        first, end = self.docs.sentence_range(d)
        return np.diff(self.docs.cache.sentences[first:end + 1]).tolist()


class MappedDocuments(TokenDocuments):
    """Some documents of a TokenCache, read as TokenDocuments: the same streams, boundaries and lengths that
    `tokenize_documents` would give, so instances and batches come out the same, bit for bit. Nothing of the
    text is held in memory but the document selection; passes of instance rows are kept in the cache folder."""

    def __init__(self, cache: TokenCache, selection: np.ndarray):
        self.cache, self.selection = cache, np.asarray(selection, dtype=np.int64)
        if len(np.unique(self.selection)) != len(self.selection):
            raise ValueError("a document selection names a document twice; select distinct documents")
        self.streams, self.boundaries, self.lengths = (
            _DocumentStreams(self), _DocumentBoundaries(self), _DocumentLengths(self))
        self.selection_sha256 = hashlib.sha256(self.selection.tobytes()).hexdigest()[:16]
        self._rows = {}

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
        for d in range(len(left_out) + 1):  # bincount the left-out documents a few million tokens at a time
            if d == len(left_out) or size > (1 << 24):
                if pending:
                    counts -= np.bincount(np.concatenate(pending), minlength=vocab_size)
                pending, size = [], 0
            if d < len(left_out):
                pending.append(left_out.streams[d])
                size += len(pending[-1])
        return counts

    def _pass_path(self, key: tuple) -> Path:
        task, max_seq_len, short_seq_prob, seed = key
        name = f"{task}-{max_seq_len}-{short_seq_prob!r}-{seed}-{self.selection_sha256}-v{PREPARE_VERSION}.npy"
        return self.cache.folder / "passes" / name

    def stored_rows(self, key: tuple) -> np.ndarray | None:
        """A pass built before, by this process or an earlier run on the same text and selection."""
        if key in self._rows:
            return self._rows[key]
        path = self._pass_path(key)
        if not path.is_file():
            return None
        try:
            rows = np.load(path, mmap_mode="r")
        except (OSError, ValueError):
            return None  # a damaged file is rebuilt (and replaced) below
        if rows.ndim != 2 or rows.shape[1] != len(ROW_FIELDS):
            return None
        self._rows[key] = rows
        return rows

    def store_rows(self, key: tuple, rows: np.ndarray) -> np.ndarray:
        """Write a large pass beside the tokens (atomically) and map it, so resumes and DDP ranks skip building it;
        keep a small one in memory."""
        if len(rows) < DISK_PASS_ROWS:
            return super().store_rows(key, rows)
        path = self._pass_path(key)
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(rows))
        try:
            atomic_write_bytes(path, buffer.getvalue())
            rows = np.load(path, mmap_mode="r")
        except OSError:
            pass  # a read-only cache still trains: the pass stays in memory
        self._rows = {key: rows}  # one pass in memory (mapped); the others are on disk
        return rows
