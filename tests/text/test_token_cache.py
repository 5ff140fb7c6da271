"""The token cache gives the tokens, instances and batches of the in-memory pipeline, bit for bit, and is safe to
share: keyed by content, written whole or not at all, refused when damaged, reused by later runs."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from albert_mini.text import token_cache
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from albert_mini.text.corpus import CorpusError, load_corpus, load_text_files
from albert_mini.text.instances import SENTENCE_TASKS, build_instances
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.pretrain_inputs import held_out_indices, hold_out


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
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 64)  # and blank lines found across window edges
    cache = prepare(texts, tokenizer, tmp_path, mode, workers=2)
    memory = tokenize_documents(load_text_files(texts, mode=mode), tokenizer)
    assert_same_documents(cache.documents_view(), memory)
    assert len(cache.manifest["shards"]) == (2 if mode == "file" else len(token_cache.cut_pieces(texts, mode)))
    assert np.array_equal(cache.documents_view().token_counts(tokenizer.vocab_size),
                          memory.token_counts(tokenizer.vocab_size))


def test_every_cut_lands_after_a_blank_line(texts):
    data = texts[0].read_bytes()
    pieces = token_cache.cut_pieces([texts[0]], "blank_line", piece_bytes=3_000)
    assert len(pieces) > 5 and pieces[0].start == 0 and pieces[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
    for piece in pieces[:-1]:
        assert token_cache.BLANK_LINE_BYTES.search(data[piece.start:piece.end]).end() <= piece.end - piece.start
        assert data[piece.end - 1:piece.end] == b"\n"


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


def test_a_damaged_cache_is_refused_with_the_folder_to_delete(texts, tokenizer, tmp_path):
    cache = prepare(texts, tokenizer, tmp_path)
    shard = cache.folder / token_cache.shard_name(0)
    shard.write_bytes(shard.read_bytes()[:-2])
    with pytest.raises(token_cache.CacheError, match=f"delete {cache.folder}"):
        token_cache.TokenCache(cache.folder)
    manifest = json.loads((cache.folder / "manifest.json").read_text())
    manifest["version"] = token_cache.PREPARE_VERSION + 1
    (cache.folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(token_cache.CacheError, match="delete that folder"):
        token_cache.TokenCache(cache.folder)


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
    """Line ends are read as LF (issue 33, item 4): the same documents and paragraphs in memory and in the cache,
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
