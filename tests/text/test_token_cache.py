"""The token cache gives the tokens, instances and batches of the in-memory pipeline, bit for bit, and is safe to
share: keyed by content, written whole or not at all, refused when damaged, reused by later runs; it encodes the
bytes it hashed, holds a bounded number of files open, and deletes nothing it did not write."""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from albert_mini.text import token_cache
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from albert_mini.text.corpus import CorpusError, load_corpus, load_text_files, paragraphs_of_text, split_sentences
from albert_mini.text.instances import SENTENCE_TASKS, build_instances
from albert_mini.text.tokenizer import Tokenizer, preprocess_text
from albert_mini.training.run_data import held_out_indices, hold_out
from cli_helpers import REPO


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.default()


def blank_line_text(documents, separators=("\n\n", "\n \n\n", "\n\t\n", "\n\n\n\n")) -> str:
    """Documents one paragraph per line, separated by blank lines of several kinds (spaces, tabs, runs)."""
    parts = []
    for i, doc in enumerate(documents):
        parts.append("\n".join(doc.paragraphs))
        parts.append(separators[i % len(separators)])
    return "".join(parts)


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    """Two files of Austen's validation chapters (with accents, curly quotes and blank-line runs added)."""
    folder = tmp_path_factory.mktemp("texts")
    docs = load_corpus("austen", "validation")
    docs[0].paragraphs[0] = "Caf\u00e9 \u201cna\u00efve\u201d r\u00f4le -- " + docs[0].paragraphs[0]
    (folder / "a.txt").write_text(blank_line_text(docs[:15]), encoding="utf-8")
    (folder / "b.txt").write_text("\n\n\n" + blank_line_text(docs[15:]) + "\n \n", encoding="utf-8")
    return sorted(folder.glob("*.txt"))


def prepare(paths, tokenizer, tmp_path, mode="blank_line", **kwargs):
    return token_cache.prepare(paths, tokenizer, mode, root=tmp_path / "cache", progress=False,
                               say=lambda *a: None, **kwargs)


def assert_same_documents(mapped, memory):
    assert len(mapped) == len(memory)
    for d in range(len(memory)):
        assert np.array_equal(mapped.streams[d], memory.streams[d]), d
        assert np.array_equal(mapped.boundaries[d], memory.boundaries[d]), d
        assert mapped.lengths[d] == memory.lengths[d]
    assert mapped.num_tokens() == memory.num_tokens()
    assert np.array_equal(mapped.sentence_counts(), memory.sentence_counts())


@pytest.mark.parametrize("mode", ["blank_line", "file"])
def test_cache_holds_the_in_memory_tokens_when_cut_into_many_pieces(texts, tokenizer, tmp_path, monkeypatch, mode):
    monkeypatch.setattr(token_cache, "PIECE_BYTES", 5_000)  # dozens of cuts inside every file
    monkeypatch.setattr(token_cache, "MIN_JOB_BYTES", 5_000)  # and as many work items
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 64)  # and blank lines found across window edges
    cache = prepare(texts, tokenizer, tmp_path, mode, workers=2)
    memory = tokenize_documents(load_text_files(texts, mode=mode), tokenizer)
    assert_same_documents(cache.documents_view(), memory)
    pieces = token_cache.cut_pieces(texts, mode)
    assert len(pieces) == 2 if mode == "file" else len(pieces) > 20
    assert np.array_equal(cache.documents_view().token_counts(tokenizer.vocab_size),
                          memory.token_counts(tokenizer.vocab_size))
    # How the pieces are grouped into work items changes nothing written: one worker, one item, the same bytes.
    monkeypatch.setattr(token_cache, "MIN_JOB_BYTES", 1 << 30)
    one = token_cache.prepare(texts, tokenizer, mode, root=tmp_path / "one", workers=1, progress=False,
                              say=lambda *a: None)
    assert one.manifest["contents"] == cache.manifest["contents"] and one.folder.name == cache.folder.name


def reference_reading(text: str, mode: str) -> tuple[list[bytes], list[int], list[str]]:
    """What the workers did before the bulk reader, line by line: the corpus rules themselves, one call per paragraph
    and sentence (the reference the bulk reader must equal)."""
    digests, per_document, sentences = [], [], []
    for paragraphs in paragraphs_of_text(text, mode):
        digests.append(hashlib.sha256("\n\n".join(paragraphs).encode("utf-8")).digest())
        before = len(sentences)
        sentences += [preprocess_text(s) for p in paragraphs for s in split_sentences(p)]
        per_document.append(len(sentences) - before)
    return digests, per_document, sentences


def reference_job(pieces, mode: str, dtype: str, processor) -> dict:
    """token_cache._prepare_job as it was before the bulk reader (per-sentence Python around one batch encode)."""
    digests, per_document, sentences = [], [], []
    for piece in pieces:
        found = reference_reading(token_cache.read_piece(piece), mode)
        digests, per_document, sentences = digests + found[0], per_document + found[1], sentences + found[2]
    encoded = processor.encode(sentences, num_threads=1)
    counts, position = [], 0
    for count in per_document:
        counts.append(sum(1 for ids in encoded[position:position + count] if ids))
        position += count
    encoded = [ids for ids in encoded if ids]
    flat = np.array([i for ids in encoded for i in ids], dtype=np.int32)
    return {"tokens": flat.astype(dtype), "lengths": np.array([len(ids) for ids in encoded], dtype=np.int64),
            "sentences": np.array(counts, np.int64), "counts": np.bincount(flat, minlength=processor.get_piece_size()),
            "digests": np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, 32),
            "bytes": sum(p.end - p.start for p in pieces),
            "edges": []}  # (no piece here is cut inside a document: the cut-document tests below compare those)


# Every character the reading rules look at: line ends and blank lines of every kind, whitespace of every kind,
# sentence marks, closers and openers, dashes, titles, initials (ASCII and not), "No" before a number, "I",
# apostrophes in words, `` and '' pairs, curly quotes, accents and lone combining marks (a sentence of nothing
# once preprocessed), a spacing diaeresis (NFKD makes it a space), capital sigma (its lower case depends on what
# follows), a dotted capital I (two characters lower-cased).
ALPHABET = [*".!?\"')]([-' \n\t\r\xa0\x0b\x0c\x1c\x1f\x85\u2028\u3000\u2019\u201c\u201d\u2013\u2014\u2026`",
            *"AINoMrsxa5_\u00e9\u00c9\u00c0\u0301\u00a8\u03a3\u03c3\u0130\u00a3", "Mr", "Mrs", "No", "Dr", "St",
            "Esq", "Lieut", "Messrs", "viz", "ibid", "I", " ", " ", "\n\n", "...", "\n \n", "``", "''", "--", " 7"]


# Cases random text seldom makes: each rule of split_sentences at a boundary and just off it.
EDGES = ["See No. 5 now. Then", "See No. five. Then", "No.. 5 X", "Mr.! Smith", "Mr.!. Smith", "Mr.. Smith",
         "A. W. Smith. Then", "I. Then", "\u00c9. Then", "\u00e9. Then", "O'Mr. X", "'Mr. X", "_Mr. X", "ibid. X",
         "viz. X", "end.--Next", "end.-- Next", "end.---Next", 'end." Next', "end.\"') (Next", "Dr. No. 7 X",
         "one.\ntwo. Three", "x\u03a3. Y\u03a3", "line \n\n\n\n para", " \xa0 \n\xa0\n x . Y"]


@pytest.mark.parametrize("mode", ["blank_line", "file"])
def test_the_bulk_reader_reads_as_the_corpus_rules(texts, mode):
    """read_sentences (a piece in a few passes over all of it) gives the documents' digests, sentence counts and
    preprocessed sentences the rules give paragraph by paragraph: on Austen, on cases at each rule's edge, and on
    random text of every character the rules look at (8,000 strings, each mixing many of the cases)."""
    for text in [path.read_text(encoding="utf-8") for path in texts] + EDGES + ["\n\n".join(EDGES)]:
        assert token_cache.read_sentences(text, mode) == reference_reading(text, mode), repr(text)
    rng = random.Random(43)
    for _ in range(8000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 50)))
        assert token_cache.read_sentences(text, mode) == reference_reading(text, mode), repr(text)


def test_the_bulk_reader_knows_every_space():
    """Its lists of whitespace and line ends are Python's (str.isspace, str.splitlines), and its punctuation
    replacements neither make nor take whitespace (they run before the blank lines are found)."""
    every = [chr(c) for c in range(sys.maxunicode + 1)]
    assert token_cache.SPACES == "".join(c for c in every if c.isspace() and c not in " \n\r")
    assert token_cache.SPACES[:token_cache.ASCII_SPACES].isascii()
    assert not token_cache.SPACES[token_cache.ASCII_SPACES:].isascii()
    assert token_cache.LINE_ENDS == "".join(c for c in every if len(f"a{c}b".splitlines()) == 2 and c not in "\n\r")
    assert not any(c.isspace() for pair in token_cache.PUNCTUATION.items() for c in "".join(pair))


def test_prepared_jobs_are_those_of_the_line_by_line_worker(texts, tokenizer, tmp_path):
    """A work item comes out as the line-by-line worker made it, array for array: Austen, the random text of
    the bulk reader's test (sentences of nothing once preprocessed included), in both modes and cut in pieces."""
    rng = random.Random(7)
    odd = tmp_path / "odd.txt"
    odd.write_text("".join(rng.choice(ALPHABET) for _ in range(20_000)) + "\n\n\u0301\n\nEnd.\n", encoding="utf-8")
    token_cache._load_processor(tokenizer.sp.serialized_model_proto())
    for mode in ("blank_line", "file"):
        pieces = token_cache.cut_pieces([*texts, odd], mode, piece_bytes=4_000)
        assert len(pieces) > 10 or mode == "file"
        assert not any(piece.continues or piece.continued for piece in pieces)  # (reference_job's "edges")
        read = kept = 0
        for job in token_cache.group_pieces(pieces, 2):
            made = token_cache._prepare_job((job, mode, "uint16"))
            expected = reference_job(job, mode, "uint16", token_cache._worker_processor)
            assert made.keys() == expected.keys()
            for key, value in expected.items():
                assert np.array_equal(made[key], value) and np.asarray(made[key]).dtype == np.asarray(value).dtype, key
            read += sum(len(reference_reading(token_cache.read_piece(piece), mode)[2]) for piece in job)
            kept += int(made["sentences"].sum())
        assert read > kept  # some sentences were dropped as empty: that path is compared too


@pytest.mark.parametrize("window", [7, 64, 1 << 20])
def test_every_cut_lands_after_a_blank_line(texts, monkeypatch, tmp_path, window):
    """The reading pass reads `window` bytes at a time: blank lines straddling two reads (a run of spaces longer
    than a read, a CRLF split between reads) are found; each piece carries the crc32 of its bytes."""
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", window)
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"One. Two.\r\n" + b" " * 40 + b"\r\nThree.\n\n\n\nFour.\r\r\nFive.\n \t \nSix.\n" * 30)
    for path in (texts[0], odd):
        data = path.read_bytes()
        pieces = token_cache.cut_pieces([path], "blank_line", piece_bytes=3_000 if path == texts[0] else 50)
        assert len(pieces) > 5 and pieces[0].start == 0 and pieces[-1].end == len(data)
        assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
        for piece in pieces:
            assert piece.crc32 == token_cache.crc32_hex(data[piece.start:piece.end])
        for piece in pieces[:-1]:
            found = token_cache.BLANK_LINE_BYTES.search(data, piece.start + 3_000 if path == texts[0] else
                                                        piece.start + 50)
            assert found.end() == piece.end  # the first blank line at or after the piece's size, exactly
            assert data[piece.end - 1:piece.end] == b"\n"
    assert token_cache.cut_pieces([odd], "file")[0].end == odd.stat().st_size


@pytest.mark.parametrize("task", list(SENTENCE_TASKS))
@pytest.mark.parametrize("dynamic", [True, False])
def test_batches_from_the_cache_are_bit_identical(texts, tokenizer, tmp_path, task, dynamic):
    cache = prepare(texts, tokenizer, tmp_path)
    memory = tokenize_documents(load_text_files(texts, mode="blank_line"), tokenizer)
    options = dict(task=task, max_seq_len=64, seed=7, dynamic=dynamic, dupe_factor=1 if dynamic else 2)
    sources = [PretrainingBatches(build_pretraining_dataset(docs, tokenizer, **options), 8)
               for docs in (cache.documents_view(), memory)]
    for epoch in (0, 1):
        count = sources[1].batches_in_epoch(epoch)
        assert sources[0].batches_in_epoch(epoch) == count
        for index in (0, count // 2, count - 1):
            mapped, expected = (s.batch(epoch, index) for s in sources)
            assert mapped.keys() == expected.keys()
            assert all(torch.equal(mapped[k], expected[k]) for k in expected)


def test_instances_of_a_selection_match_those_of_the_same_documents_in_memory(texts, tokenizer, tmp_path):
    cache = prepare(texts, tokenizer, tmp_path)
    documents = load_text_files(texts, mode="blank_line")
    kept, held = hold_out(documents, 0.2, "blank-line")
    indices = held_out_indices([cache.digest_hex(d) for d in range(len(cache))], 0.2, "blank-line")
    mapped_held = cache.documents_view(indices)
    mapped_kept = cache.documents_view(np.setdiff1d(np.arange(len(cache)), indices))
    assert_same_documents(mapped_held, tokenize_documents(held, tokenizer))
    assert_same_documents(mapped_kept, tokenize_documents(kept, tokenizer))
    expected = build_instances(tokenize_documents(kept, tokenizer), "nsp", 64, seed=3)
    got = build_instances(mapped_kept, "nsp", 64, seed=3)
    assert [(i.tokens.tolist(), i.label, i.source_a, i.source_b) for i in got] == \
           [(i.tokens.tolist(), i.label, i.source_a, i.source_b) for i in expected]
    assert np.array_equal(mapped_kept.token_counts(tokenizer.vocab_size),
                          tokenize_documents(kept, tokenizer).token_counts(tokenizer.vocab_size))


def test_the_key_follows_the_content_not_the_names(texts, tokenizer, tmp_path):
    first = prepare(texts, tokenizer, tmp_path)
    moved = tmp_path / "moved"
    moved.mkdir()
    copies = [moved / f"renamed-{i}.txt" for i in range(len(texts))]
    for source, copy in zip(texts, copies):
        copy.write_bytes(source.read_bytes())
    said = []
    again = token_cache.prepare(copies, tokenizer, "blank_line", root=tmp_path / "cache", progress=False,
                                say=said.append)
    assert again.folder == first.folder and said == []  # mapped, not prepared again
    copies[1].write_bytes(copies[1].read_bytes() + b"\n\nOne more sentence. And another one.\n")
    changed = prepare(copies, tokenizer, tmp_path)
    assert changed.folder != first.folder and len(changed) == len(first) + 1
    other_mode = prepare(texts, tokenizer, tmp_path, mode="file")
    assert other_mode.folder not in (first.folder, changed.folder)
    keys = {token_cache.cache_key(["a"], "t", "file"), token_cache.cache_key(["a"], "u", "file"),
            token_cache.cache_key(["b"], "t", "file"), token_cache.cache_key(["a", "b"], "t", "file")}
    assert len(keys) == 4


def test_a_killed_preparation_leaves_nothing_a_later_run_trusts(texts, tokenizer, tmp_path, monkeypatch):
    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(token_cache, "_finish", killed)
    with pytest.raises(KeyboardInterrupt):
        prepare(texts, tokenizer, tmp_path)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]  # no folder, whole or partial
    monkeypatch.undo()
    stale = tmp_path / "cache" / f"{prepare(texts, tokenizer, tmp_path).folder.name}.partial-99999"
    stale.mkdir()  # as a kill -9 would leave it: the next preparation of that key removes it
    (prepare(texts, tokenizer, tmp_path).folder / token_cache.MANIFEST_NAME).unlink()
    rebuilt = prepare(texts, tokenizer, tmp_path)  # a folder without its manifest is prepared again
    assert (rebuilt.folder / token_cache.MANIFEST_NAME).is_file() and not stale.exists()


def damage_tokens(folder):  # every id replaced by one valid id: the size is right, the tokens are not
    ids = np.fromfile(folder / "tokens.bin", dtype=json.loads((folder / "manifest.json").read_text())["dtype"])
    ids[:] = 5
    ids.tofile(folder / "tokens.bin")


def edit_manifest(**changes):
    def edit(folder):
        manifest = json.loads((folder / "manifest.json").read_text())
        for name, value in changes.items():
            if value is None:
                del manifest[name]
            else:
                manifest[name] = value
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return edit


def save_array(name, make):
    def edit(folder):
        np.save(folder / name, make(np.load(folder / name)))
    return edit


# (id, damage to a prepared folder, a phrase of the one-line refusal)
DAMAGES = [
    ("ids-replaced", damage_tokens, "has a tokens.bin whose bytes changed since they were written"),
    ("manifest-shards-string", edit_manifest(shards="602"), "field shards is unknown to this version"),
    ("manifest-bogus-dtype", edit_manifest(dtype="bogus"), 'dtype is "bogus", not the token type'),
    ("manifest-missing-key", edit_manifest(key=None), "field key is missing"),
    ("manifest-tokens-string", edit_manifest(tokens="602"), 'tokens is "602", not a whole number'),
    ("manifest-contents-list", edit_manifest(contents=[]), "contents is [], not the size and crc32"),
    ("manifest-not-json", lambda f: (f / "manifest.json").write_text("{not json"), "has no readable manifest.json"),
    ("manifest-a-list", lambda f: (f / "manifest.json").write_text("[]"), "that is not a JSON object"),
    ("manifest-other-version", edit_manifest(version=token_cache.PREPARE_VERSION + 1), "was prepared by version"),
    ("garbage-sentences", lambda f: (f / "sentences.npy").write_bytes(os.urandom(5000)),
     "has a sentences.npy of 5,000 bytes"),
    ("unigram-longer", save_array("unigram.npy", lambda u: np.concatenate([u, [1, 2, 3]])), "unigram.npy of"),
    ("unigram-negative", save_array("unigram.npy", lambda u: np.where(np.arange(len(u)) == 7, -1000, u)),
     "has a unigram.npy whose bytes changed"),
    ("tokens-missing", lambda f: (f / "tokens.bin").unlink(), "has no tokens.bin"),
    ("tokens-truncated", lambda f: (f / "tokens.bin").write_bytes((f / "tokens.bin").read_bytes()[:-2]),
     "has a tokens.bin of"),
]


@pytest.fixture(scope="module")
def pristine(texts, tokenizer, tmp_path_factory):
    """A prepared folder that each damage case copies."""
    root = tmp_path_factory.mktemp("pristine")
    return token_cache.prepare(texts, tokenizer, "blank_line", root=root, progress=False, say=lambda *a: None).folder


@pytest.mark.parametrize("damage", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_a_damaged_cache_is_refused_with_the_folder_to_delete(pristine, tmp_path, damage):
    _, damaged, phrase = damage
    folder = shutil.copytree(pristine, tmp_path / pristine.name)
    token_cache.TokenCache(folder)  # the copy maps
    damaged(folder)
    with pytest.raises(token_cache.CacheError) as refused:
        token_cache.TokenCache(folder)
    message = str(refused.value)
    assert phrase in message and f"delete {folder} and rerun" in message and "\n" not in message, message


def test_a_consistent_but_forged_index_is_refused_by_its_meaning(pristine, tmp_path):
    """Arrays rewritten with their new crc32 in the manifest (a forgery, not damage) still have to agree."""
    for name, make, phrase in (("unigram.npy", lambda u: u - (np.arange(len(u)) == 7) * (u[7] + 1),
                                "has a unigram.npy with a negative count"),
                               ("sentences.npy", lambda s: s[::-1].copy(),
                                "has a sentences.npy that does not start at 0")):
        folder = shutil.copytree(pristine, tmp_path / name / pristine.name)
        np.save(folder / name, make(np.load(folder / name)))
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["contents"][name] = {"bytes": (folder / name).stat().st_size,
                                      "crc32": token_cache.crc32_file(folder / name)}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(token_cache.CacheError, match=phrase):
            token_cache.TokenCache(folder)


def test_a_key_folder_holding_another_texts_tokens_is_refused(texts, tokenizer, tmp_path):
    mine = prepare(texts, tokenizer, tmp_path)
    other = prepare(texts[:1], tokenizer, tmp_path)
    shutil.rmtree(mine.folder)
    shutil.copytree(other.folder, mine.folder)  # the other text's folder, under this text's key
    with pytest.raises(token_cache.CacheError, match="the folder holds another text's tokens"):
        prepare(texts, tokenizer, tmp_path)
    manifest = json.loads((mine.folder / "manifest.json").read_text())
    manifest["key"] = mine.folder.name  # its key field made to match too: the files' sha256 still tell
    (mine.folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(token_cache.CacheError, match=f"make the key {other.folder.name}, not the folder's name"):
        prepare(texts, tokenizer, tmp_path)


def test_a_text_edited_while_it_is_prepared_is_refused_and_never_cached(texts, tokenizer, tmp_path, monkeypatch):
    """The key is the sha256 of the bytes the reading pass read, and the workers encode only those bytes;
    a file edited after that pass (and restored later) stops the preparation, and nothing is cached."""
    text = tmp_path / "edited.txt"
    original = texts[0].read_bytes()
    text.write_bytes(original)
    group = token_cache.group_pieces

    def edit_after_the_reading_pass(pieces, workers):
        text.write_bytes(original.replace(b"the", b"XQZ"))
        return group(pieces, workers)

    monkeypatch.setattr(token_cache, "group_pieces", edit_after_the_reading_pass)
    with pytest.raises(token_cache.TextChanged, match=f"{text} changed while it was being prepared"):
        prepare([text], tokenizer, tmp_path, workers=2)
    text.write_bytes(original)  # restored
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    monkeypatch.undo()
    cache = prepare([text], tokenizer, tmp_path)  # the original's tokens, under the original's key
    assert_same_documents(cache.documents_view(), tokenize_documents(load_text_files([text], "blank_line"),
                                                                     tokenizer))
    with pytest.raises(token_cache.TextChanged, match="its sha256 is not the one read a moment before"):
        token_cache.prepare([text], tokenizer, "file", file_sha256=["0" * 64], root=tmp_path / "cache",
                            progress=False, say=lambda *a: None)


def test_a_refused_file_stops_the_reading_of_the_others(tmp_path, monkeypatch):
    """The files are read on a thread per core. When one is refused (here its sha256 is not the one given), the
    others stop at their next window instead of being read to the end, and no reading thread outlives the error:
    a Ctrl-C ends the command at once, and a later preparation forks no worker beside a reading thread."""
    refused, long = tmp_path / "refused.txt", tmp_path / "long.txt"
    refused.write_text("One.\n\nTwo.\n")
    long.write_bytes(b"x" * 4_000)
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 4)  # the long file: 1,000 windows of 5 ms, 5 s to read whole
    monkeypatch.setattr(token_cache, "default_workers", lambda: 2)
    windows = []

    class SlowFile:
        def __init__(self, path, mode):
            self.file, self.long = open(path, mode), Path(path) == long

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def read(self, size):
            if self.long:
                windows.append(size)
                time.sleep(0.005)
            else:  # the refused file is read once the long one is under way
                while len(windows) < 3:
                    time.sleep(0.001)
            return self.file.read(size)

    monkeypatch.setattr(token_cache, "open", SlowFile, raising=False)
    with pytest.raises(token_cache.TextChanged, match="refused.txt"):
        token_cache.cut_and_hash([refused, long], "blank_line", file_sha256=["0" * 64, "0" * 64])
    assert 3 <= len(windows) < 1_000  # begun, and stopped before its end
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("cut-and-hash")]


def test_a_users_file_in_a_key_folder_is_never_deleted(texts, tokenizer, tmp_path):
    """A key folder without its manifest is prepared again, deleting only the cache's own files; one that holds
    a user's file too is refused, naming it, and the file stays. A partial folder is cleaned the same way."""
    folder = prepare(texts, tokenizer, tmp_path).folder
    (folder / "manifest.json").unlink()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(token_cache.CacheError, match=r"holding files the cache does not write \(notes.txt\)"):
        prepare(texts, tokenizer, tmp_path)
    assert (folder / "notes.txt").read_text() == "mine"
    (folder / "notes.txt").rename(tmp_path / "notes.txt")
    stale = tmp_path / "cache" / f"{folder.name}.partial-12345"
    (stale / "passes").mkdir(parents=True)
    (stale / "tokens.bin").write_bytes(b"12")
    (stale / "passes" / "mine.npy").write_bytes(b"mine")
    assert (prepare(texts, tokenizer, tmp_path).folder / "manifest.json").is_file()
    assert sorted(p.relative_to(stale).as_posix() for p in stale.rglob("*")) == ["passes", "passes/mine.npy"]


def test_workers_are_capped_at_the_cores(texts, tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(token_cache, "PIECE_BYTES", 2_000)
    monkeypatch.setattr(token_cache, "MIN_JOB_BYTES", 2_000)  # hundreds of work items: enough for 1,000 workers
    said = []
    cache = token_cache.prepare(texts, tokenizer, "blank_line", root=tmp_path, workers=1000, progress=False,
                                say=said.append)
    cores = token_cache.default_workers()
    assert cache.manifest["prepared"]["workers"] == cores
    assert f"with {cores} worker(s) (1000 asked: at most one per core, {cores} here)" in said[0]


MANY_FILES = """
import resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
from albert_mini.commands import main
main(sys.argv[2:])
"""


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_more_files_than_the_open_file_limit_prepare_and_train(tokenizer, tmp_path):
    """1,500 files under a limit of 1,024 open files (the usual soft limit), in prepare and in a first
    pretrain --corpus: a bounded number of files is open at a time, whatever the corpus."""
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1500):
        (folder / f"{i:05d}.txt").write_text(f"File {i} says one thing. It says another.\n\nAnd {i} more.\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ALBERT_MINI_CACHE": str(tmp_path / "cache")}
    common = ["--corpus", str(folder), "--tokenizer", str(tokenizer.path), "--split-by", "blank-line"]
    for argv in (["prepare", *common, "--workers", "2", "--quiet"],
                 ["pretrain", *common, "--preset", "albert-nano", "--steps", "1", "--seq-len", "16", "--batch-size",
                  "2", "--eval-batches", "1", "--quiet", "--out", str(tmp_path / "run")]):
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        done = subprocess.run([sys.executable, "-c", MANY_FILES, "1024", *argv], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (argv[0], done.stderr[-2000:])
        manifest = json.loads(next((tmp_path / "cache").glob("*/manifest.json")).read_text())
        assert len(manifest["files"]) == 1500 and manifest["documents"] == 3000


def test_a_pass_is_built_once_and_then_read_from_the_cache(texts, tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(token_cache, "DISK_PASS_ROWS", 500)  # passes over 500 instances go to disk
    assert len(build_instances(prepare(texts, tokenizer, tmp_path).documents_view(), "sop", 512, seed=0)) < 500
    assert not list((prepare(texts, tokenizer, tmp_path).folder / "passes").glob("sop-512-*"))  # kept in memory
    rows = build_instances(prepare(texts, tokenizer, tmp_path).documents_view(), "sop", 64, seed=11)
    stored = list((prepare(texts, tokenizer, tmp_path).folder / "passes").glob("sop-64-*.npy"))
    assert len(stored) == 1

    def never(*args):
        raise AssertionError("the pass was built again")

    monkeypatch.setitem(SENTENCE_TASKS, "sop", SENTENCE_TASKS["sop"].__class__(
        **{**SENTENCE_TASKS["sop"].__dict__, "build": never}))
    fresh = token_cache.TokenCache(stored[0].parent.parent).documents_view()  # as a later run would open it
    again = build_instances(fresh, "sop", 64, seed=11)
    assert [i.tokens.tolist() for i in again] == [i.tokens.tolist() for i in rows]
    with pytest.raises(AssertionError, match="built again"):
        build_instances(fresh, "sop", 64, seed=12)  # another seed is another pass
    # Rows changed on disk (a valid file, other values) no longer match their recorded crc32: built again.
    tampered = np.load(stored[0])
    tampered[:, -1] = 1 - tampered[:, -1]  # every sentence-order label flipped
    np.save(stored[0], tampered)
    with pytest.raises(AssertionError, match="built again"):
        build_instances(token_cache.TokenCache(stored[0].parent.parent).documents_view(), "sop", 64, seed=11)


def test_text_that_is_not_utf8_names_the_file_and_its_byte_offset(tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(token_cache, "PIECE_BYTES", 50)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"First document. It is fine.\n\n" * 5 + b"Caf\xe9 ends here.\n")
    with pytest.raises(CorpusError, match=f"{bad}.*byte 0xe9 at byte offset {5 * 29 + 3}"):
        prepare([bad], tokenizer, tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n\n")
    with pytest.raises(CorpusError, match="no text found"):
        prepare([empty], tokenizer, tmp_path)


def test_the_cache_root_is_the_environment_variable_else_the_checkout(monkeypatch, tmp_path):
    monkeypatch.setenv(token_cache.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert token_cache.cache_root() == tmp_path / "elsewhere"
    monkeypatch.delenv(token_cache.CACHE_ENV)
    assert token_cache.cache_root().parts[-2:] == ("cache", "tokens")
    assert os.fspath(token_cache.cache_root()).startswith(os.fspath(token_cache.CACHE_ROOT))


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
@pytest.mark.parametrize("mode", ["blank_line", "file"])
def test_crlf_and_cr_text_gives_the_documents_of_its_lf_twin(texts, tokenizer, tmp_path, monkeypatch, newline, mode):
    """Line ends are read as LF: the same documents and paragraphs in memory and in the cache,
    whose cuts (CRLF files are cut too; lone-CR files stay whole) never fall between a CR and its LF."""
    monkeypatch.setattr(token_cache, "PIECE_BYTES", 5_000)
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 64)
    folder = tmp_path / "windows"
    folder.mkdir()
    for path in texts:
        (folder / path.name).write_bytes(path.read_bytes().replace(b"\n", newline.encode()))
    twins = sorted(folder.glob("*.txt"))
    lf = load_text_files(texts, mode=mode)
    assert [(d.id, d.paragraphs) for d in load_text_files(twins, mode=mode)] == [(d.id, d.paragraphs) for d in lf]
    cache = prepare(twins, tokenizer, tmp_path, mode, workers=2)
    assert_same_documents(cache.documents_view(), tokenize_documents(lf, tokenizer))
    pieces = token_cache.cut_pieces(twins, mode)
    if mode == "blank_line" and newline == "\r\n":
        assert len(pieces) > 2 * len(twins)
        for piece in pieces:
            data = Path(piece.file).read_bytes()
            assert piece.end == len(data) or data[piece.end - 2:piece.end] == b"\r\n"
    else:
        assert len(pieces) == len(twins)


def test_the_cache_version_covers_the_newline_rule():
    assert token_cache.PREPARE_VERSION >= 2
    assert token_cache.BLANK_LINE_BYTES.search(b"a\r\n\r\nb").end() == 5
    assert token_cache.BLANK_LINE_BYTES.search(b"a\r\rb") is None


def test_ended_workers_leave_no_pool_thread_for_the_exit_hook():
    """After a Ctrl-C ends the preparation's workers, the pool's own thread has ended and closed its wake-up pipe:
    Python's exit hook for pools then has nothing to write to (left running, the thread could close the pipe
    under the hook's write, and a Ctrl-C printed a traceback after its one line)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=token_cache.worker_context()) as pool:
        busy = pool.submit(time.sleep, 60)
        deadline = time.monotonic() + 60
        while not busy.running():
            assert time.monotonic() < deadline, "the worker never started"
            time.sleep(0.01)
        manager = pool._executor_manager_thread
        wakeup = pool._executor_manager_thread_wakeup
        started = time.monotonic()
        token_cache._end_workers(pool)
    assert not manager.is_alive()
    assert wakeup._closed
    assert time.monotonic() - started < 60, "the sleeping worker was waited for, not killed"
