"""A text of any lines is prepared in bounded memory: the reading pass holds no more than a piece's budget at once
(MAX_PIECE_BYTES), a document cut inside is joined again, and the tokens are those of the text read whole, but
where the budget holds no boundary: there the sentence is cut in two, and every character is kept."""

import hashlib
import random

import numpy as np
import pytest
from test_token_cache import ALPHABET, EDGES, assert_same_documents, blank_line_text, reference_reading

from albert_mini.text import token_cache
from albert_mini.text.batches import tokenize_documents
from albert_mini.text.corpus import load_corpus, load_text_files, normalize_paragraph
from albert_mini.text.tokenizer import Tokenizer

MOST, LEAST = 2_000, 500  # the budgets of these tests: a piece of at most 2,000 bytes, cut after 500
# Whitespace longer than the random test's budget, where a blank line may straddle a cut
LONG_RUNS = [" " * 45, "\n" + " \t" * 30 + "\n", "\r" * 3, " \r \r " * 10, "\n" + " " * 50, " " * 50 + "\r\n"]


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.default()


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of at most MOST bytes, read 64 bytes at a time, a work item each."""
    monkeypatch.setattr(token_cache, "MAX_PIECE_BYTES", MOST)
    monkeypatch.setattr(token_cache, "PIECE_BYTES", LEAST)
    monkeypatch.setattr(token_cache, "MIN_JOB_BYTES", LEAST)
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 64)


@pytest.fixture(scope="module")
def long_lines(tmp_path_factory):
    """Austen's chapters as one line; as a paragraph a line with no blank line; and in the usual layout."""
    folder = tmp_path_factory.mktemp("long")
    docs = load_corpus("austen", "validation")[:8]
    docs[0].paragraphs[0] = "Caf\u00e9 \u201cna\u00efve\u201d r\u00f4le -- Mr. Smith. " + docs[0].paragraphs[0]
    paragraphs = [p for doc in docs for p in doc.paragraphs]
    (folder / "a-line.txt").write_text(" ".join(paragraphs), encoding="utf-8")
    (folder / "b-lines.txt").write_text("\r\n".join(paragraphs) + "\n", encoding="utf-8")
    (folder / "c-blocks.txt").write_text(blank_line_text(docs), encoding="utf-8")
    return sorted(folder.glob("*.txt"))


def prepare(paths, tokenizer, tmp_path, mode, workers=2):
    return token_cache.prepare(paths, tokenizer, mode, root=tmp_path / "cache", workers=workers, progress=False,
                               say=lambda *a: None)


def document_digests(paths, mode) -> list[str]:
    return [hashlib.sha256("\n\n".join(doc.paragraphs).encode()).hexdigest() for doc in load_text_files(paths, mode)]


@pytest.mark.parametrize("mode", ["file", "blank_line"])
def test_a_document_cut_inside_gives_the_tokens_of_the_text_read_whole(long_lines, tokenizer, tmp_path, small_pieces,
                                                                       mode):
    """Lines and files far longer than a piece are cut inside their documents, at sentence ends (or line ends and
    blank lines), and joined again: the cache holds the documents, sentences and tokens of the text read whole."""
    pieces = token_cache.cut_pieces(long_lines, mode)
    assert all(p.end - p.start <= MOST for p in pieces)
    inside = [p for p in pieces if p.continues]
    assert len(inside) > 3 * len(long_lines)
    assert all(a.continued == b.continues for a, b in zip(pieces, pieces[1:]))
    cache = prepare(long_lines, tokenizer, tmp_path, mode)
    memory = tokenize_documents(load_text_files(long_lines, mode=mode), tokenizer)
    assert_same_documents(cache.documents_view(), memory)
    assert [cache.digest_hex(d) for d in range(len(cache))] == document_digests(long_lines, mode)
    assert np.array_equal(cache.documents_view().token_counts(tokenizer.vocab_size),
                          memory.token_counts(tokenizer.vocab_size))


def test_the_reading_pass_holds_no_more_than_the_budget(long_lines, monkeypatch):
    """However long the line, the reading pass holds one piece's bytes and a window (what `_cut` is shown) and every
    piece, which a worker reads at once, holds at most the budget; together they are the file."""
    monkeypatch.setattr(token_cache, "WINDOW_BYTES", 100)
    held = []
    cut = token_cache._cut
    monkeypatch.setattr(token_cache, "_cut", lambda data, *args, **kwargs: held.append(len(data)) or
                        cut(data, *args, **kwargs))
    line = long_lines[0]
    data = line.read_bytes()
    assert b"\n" not in data and len(data) > 40 * MOST
    pieces = token_cache.cut_pieces([line], "file", piece_bytes=LEAST, max_piece_bytes=MOST)
    assert max(held) <= MOST + 100
    assert max(p.end - p.start for p in pieces) <= MOST
    assert b"".join(data[p.start:p.end] for p in pieces) == data
    assert all(p.crc32 == token_cache.crc32_hex(data[p.start:p.end]) for p in pieces)
    assert not pieces[0].continues and not pieces[-1].continued and all(p.continues for p in pieces[1:])


def test_a_sentence_longer_than_the_budget_is_cut_at_a_word_and_nothing_is_lost(tokenizer, tmp_path, small_pieces):
    """A line of words with no sentence end (and one word longer than the budget) is cut where the budget says: a
    sentence per piece, cut at a word's start (a character's, inside the long word), whose tokens decode to the
    whole line; the document stays one, with the sha256 of the whole line."""
    rng = random.Random(5)
    words = [rng.choice(["the", "of", "her", "emma", "letter", "very", "kind", "said", "and", "had"])
             for _ in range(4_000)]
    words[1_500] = "ab" * 1_600  # 3,200 characters with no whitespace: more than MOST - LEAST
    path = tmp_path / "words.txt"
    path.write_text("  ".join(words), encoding="utf-8")
    pieces = token_cache.cut_pieces([path], "blank_line")
    assert len(pieces) > 10 and all(p.end - p.start <= MOST for p in pieces)
    texts = [path.read_bytes()[p.start:p.end].decode() for p in pieces]
    inside_words = [p.start for a, b, p in zip(texts, texts[1:], pieces[1:])
                    if not a[-1].isspace() and not b[0].isspace()]
    long_word = path.read_text(encoding="utf-8").index("ab" * 1_600)
    assert inside_words and all(long_word < at < long_word + 3_200 for at in inside_words)  # only the long word's
    cache = prepare([path], tokenizer, tmp_path, "blank_line")
    assert len(cache) == 1 and cache.manifest["sentences"] == len(pieces)
    assert cache.digest_hex(0) == hashlib.sha256(normalize_paragraph(" ".join(words)).encode()).hexdigest()
    sentences = [tokenizer.decode(cache.tokens(int(a), int(b)).tolist())
                 for a, b in zip(cache.sentences[:-1], cache.sentences[1:])]
    assert sentences == [normalize_paragraph(text) for text in texts]
    assert "".join(sentences).replace(" ", "") == "".join(words)  # every character, in order


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("mode", ["file", "blank_line"])
def test_whitespace_longer_than_the_budget_is_cut_and_read_as_the_whole_run(tokenizer, tmp_path, small_pieces,
                                                                           newline, mode):
    """A blank line of 5,000 spaces (LF, CRLF or lone CR line ends) is cut like any text, into pieces of whitespace
    alone, and still ends a document (mode "blank_line") or a paragraph (mode "file"): the tokens of the text
    read whole. 5,000 spaces inside a sentence are a sentence longer than the budget: cut in two there, the
    document the same."""
    path = tmp_path / "gap.txt"
    path.write_bytes(("First one. " * 100 + newline + " " * 5_000 + newline + "Second one. " * 100).encode())
    spaced = tmp_path / "spaced.txt"
    spaced.write_bytes(("Then" + " \t" * 2_500 + "two words." + newline).encode())
    for text in (path, spaced):
        data, pieces = text.read_bytes(), token_cache.cut_pieces([text], mode)
        assert all(p.end - p.start <= MOST for p in pieces)
        assert sum(1 for p in pieces if not data[p.start:p.end].strip()) >= 2  # whitespace alone, cut inside
        assert all(data[p.end - 1:p.end + 1] != b"\r\n" for p in pieces)
    cache = prepare([path], tokenizer, tmp_path, mode)
    memory = tokenize_documents(load_text_files([path], mode=mode), tokenizer)
    assert_same_documents(cache.documents_view(), memory)
    assert [cache.digest_hex(d) for d in range(len(cache))] == document_digests([path], mode)
    assert len(cache) == (2 if mode == "blank_line" else 1)
    cache = token_cache.prepare([spaced], tokenizer, mode, root=tmp_path / "spaced", progress=False,
                                say=lambda *a: None)
    assert [cache.digest_hex(d) for d in range(len(cache))] == document_digests([spaced], mode)
    sentences = [tokenizer.decode(cache.tokens(int(a), int(b)).tolist())
                 for a, b in zip(cache.sentences[:-1], cache.sentences[1:])]
    assert sentences == ["then", "two words."]


@pytest.mark.parametrize("mode", ["file", "blank_line"])
def test_documents_cut_anywhere_are_joined_as_the_whole_text_reads_them(tokenizer, tmp_path, monkeypatch, mode):
    """Random text of every character the reading rules look at (line ends, blank lines and whitespace of every
    kind), cut into pieces of at most 40 bytes: the documents and their sha256 are those of each file read whole,
    whatever whitespace each cut falls next to."""
    monkeypatch.setattr(token_cache, "MAX_PIECE_BYTES", 40)
    monkeypatch.setattr(token_cache, "PIECE_BYTES", 10)
    monkeypatch.setattr(token_cache, "MIN_JOB_BYTES", 50)
    rng = random.Random(11)
    paths = []
    for i in range(40):
        text = "".join(rng.choice(ALPHABET + EDGES + LONG_RUNS) for _ in range(rng.randint(20, 120)))
        paths.append(tmp_path / f"{i:02d}.txt")
        paths[-1].write_bytes(text.encode("utf-8"))
    paths = [p for p in paths if p.read_text(encoding="utf-8").strip()]
    pieces = token_cache.cut_pieces(paths, mode)
    assert sum(p.continues for p in pieces) > 100
    cache = prepare(paths, tokenizer, tmp_path, mode, workers=1)
    expected = [digest.hex() for p in paths for digest in reference_reading(p.read_text(encoding="utf-8"), mode)[0]]
    assert [cache.digest_hex(d) for d in range(len(cache))] == expected
