"""The SentencePiece tokenizer: ALBERT's special ids, ids identical to Hugging Face's AlbertTokenizer, determinism."""

import re
import shutil

import numpy as np
import pytest
import sentencepiece as spm
import torch

from albert_mini.commands.tokenizer import main as train_cli
from albert_mini.paths import REPO_ROOT, read_manifest, sha256_file
from albert_mini.text import tokenizer as tok
from albert_mini.text.corpus import load_corpus
from albert_mini.text.tokenizer import Tokenizer, TokenizerError, preprocess_text, train_sentencepiece

transformers = pytest.importorskip("transformers")

EXTRA_TEXTS = [
    "", "   ", "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 Zo\u00eb \u00c5NGSTR\u00d6M \u00d8re",
    "He paid 1,000 pounds; she had 20,000l.", "1,2,3 and 4,5", '"Quoted," said he, \'single\' and ``TeX\'\' quotes.',
    "\u201cCurly\u201d \u2018quotes\u2019 \u2014 and\u2026",
    "x\u0301y \ufb01 \u00bd", "Mr. Darcy--who else?--was there!", "tab\tand\nnewline", "UPPER lower MiXeD",
]


TIE = '"Mary M---.'  # the one corpus sentence where SentencePiece and HF break a score tie differently


@pytest.fixture(scope="module")
def ours():
    return Tokenizer.default()


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf_albert")
    shutil.copy(tok.DEFAULT_DIR / "spiece.model", folder / "spiece.model")
    return transformers.AlbertTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def sentences():
    """About 300 held-out sentences: every 10th of the validation split, plus the edge cases above."""
    corpus = [s for doc in load_corpus("austen", "validation") for s in doc.sentences()]
    return corpus[::10] + EXTRA_TEXTS


def small_corpus(n=1500):
    return [s for doc in load_corpus("austen", "test") for s in doc.sentences()][:n]


# --------------------------------------------------------------------------- layout
def test_special_ids_and_attributes(ours):
    assert (tok.PAD_ID, tok.UNK_ID, tok.CLS_ID, tok.SEP_ID, tok.MASK_ID) == (0, 1, 2, 3, 4)
    assert (ours.pad_id, ours.unk_id, ours.cls_id, ours.sep_id, ours.mask_id) == (0, 1, 2, 3, 4)
    assert [ours.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert ours.vocab_size == len(ours) == 8000
    assert ours.special_ids == frozenset(range(5))
    assert ours.piece_to_id("[MASK]") == 4 and ours.piece_to_id("\u2581the") == ours.encode("the")[0]


def test_control_symbols_are_never_produced_from_text(ours):
    ids = ours.encode("[CLS] [SEP] [MASK] <pad>")
    assert not set(ids) & ours.special_ids - {ours.unk_id}


def test_preprocess_text_matches_albert():
    assert preprocess_text("  Caf\u00e9\t\u00c5NGSTR\u00d6M \n ``x''  ") == 'cafe angstrom "x"'
    assert preprocess_text("") == ""


def test_word_start_rule(ours):
    ws = ours.word_start
    assert isinstance(ws, np.ndarray) and ws.dtype == bool and ws.shape == (ours.vocab_size,)
    assert ws[list(ours.special_ids)].all()
    for i in range(5, ours.vocab_size):
        piece = ours.id_to_piece(i)
        expected = (piece.startswith("\u2581") or len(piece) == 1 and not piece.isalpha()
                    or re.search(r"[^a-z!-/:-@\[-`{-~]", piece) is not None)
        assert ws[i] == expected, piece
    # a rare word splits into several pieces; only the first starts a word
    pieces = ours.tokenize("xylophonists")
    assert len(pieces) > 2 and ws[ours.encode("xylophonists")].tolist() == [True] + [False] * (len(pieces) - 1)


def test_no_piece_triggers_the_digit_comma_quirk(ours):
    """ALBERT's "digit," re-split (which HF 5.x dropped) cannot change our ids: no piece ends in a digit and a comma."""
    assert not [p for p in map(ours.id_to_piece, range(ours.vocab_size)) if re.search(r"\d,$", p)]


# --------------------------------------------------------------------------- parity with Hugging Face
def score(tokenizer, ids):
    return sum(tokenizer.sp.get_score(i) for i in ids)


def test_single_sequences_match_hf(ours, hf, sentences):
    texts = sentences + [TIE]
    theirs = hf(texts)["input_ids"]
    mine = [ours.encode_pair(s)["input_ids"] for s in texts]
    mismatches = [(s, m, t) for s, m, t in zip(texts, mine, theirs) if m != t]
    # The one known kind of difference: two segmentations with exactly equal scores ("--" "-" vs "-" "--").
    assert [s for s, _, _ in mismatches] == [TIE]
    for _, m, t in mismatches:
        assert ours.decode(m) == ours.decode(t) and score(ours, m) == pytest.approx(score(ours, t), abs=1e-6)
    assert ours.encode_pair("")["input_ids"] == [2, 3]


def test_pairs_match_hf(ours, hf, sentences):
    a, b = sentences[:-1], sentences[1:]
    theirs = hf(a, b, return_token_type_ids=True)
    for i in range(len(a)):
        mine = ours.encode_pair(a[i], b[i])
        assert mine["input_ids"] == theirs["input_ids"][i], (a[i], b[i])
        assert mine["token_type_ids"] == theirs["token_type_ids"][i]


def test_padded_truncated_batches_match_hf(ours, hf, sentences):
    a, b = sentences[0:48], sentences[48:96]
    for max_length in (9, 24, 64):
        mine = ours(a, b, max_length=max_length)
        theirs = hf(a, b, max_length=max_length, truncation=True, padding=True, return_token_type_ids=True,
                    return_tensors="pt")
        for key in ("input_ids", "token_type_ids", "attention_mask"):
            assert torch.equal(mine[key], theirs[key]), (key, max_length)
        single = hf(a, max_length=max_length, truncation=True, padding=True, return_tensors="pt")
        assert torch.equal(ours(a, max_length=max_length)["input_ids"], single["input_ids"])


def test_decode_matches_hf(ours, hf, sentences):
    for text in sentences[:50] + EXTRA_TEXTS:
        ids = ours.encode_pair(text, "and more")["input_ids"]
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    assert ours.decode(torch.tensor([2, *ours.encode("it is a truth"), 3, 0, 0])) == "it is a truth"


# --------------------------------------------------------------------------- pairs, batches, errors
def test_encode_pair_layout_and_truncation(ours):
    a, b = ours.encode("one two three four five six"), ours.encode("seven eight")
    pair = ours.encode_pair(a, b)
    assert pair["input_ids"] == [2, *a, 3, *b, 3]
    assert pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert pair["attention_mask"] == [1] * len(pair["input_ids"])
    n = len(b)
    assert len(a) > n + 1 >= 3
    # Only the longer A is cut while that suffices; then both are cut and A, longer at first, keeps the odd token.
    assert ours.encode_pair(a, b, max_length=2 * n + 4)["input_ids"] == [2, *a[:n + 1], 3, *b, 3]
    assert ours.encode_pair(a, b, max_length=2 * n + 3)["input_ids"] == [2, *a[:n], 3, *b, 3]
    assert ours.encode_pair(a, b, max_length=2 * n + 2)["input_ids"] == [2, *a[:n], 3, *b[:n - 1], 3]
    assert ours.encode_pair(a, b, max_length=2 * n + 1)["input_ids"] == [2, *a[:n - 1], 3, *b[:n - 1], 3]
    # Equal lengths: B keeps the odd token.
    assert ours.encode_pair(b, b, max_length=2 * n + 2)["input_ids"] == [2, *b[:n - 1], 3, *b, 3]
    assert len(ours.encode_pair(a, max_length=3)["input_ids"]) == 3
    with pytest.raises(TokenizerError, match="at least 3"):
        ours.encode_pair("text", max_length=2)
    with pytest.raises(TokenizerError, match="at least 5"):
        ours.encode_pair("text", "more", max_length=4)


def test_batch_padding(ours):
    batch = ours(["a short one", "a much longer sentence than the first one"])
    lengths = [len(ours.encode(t)) + 2 for t in ["a short one", "a much longer sentence than the first one"]]
    assert batch["input_ids"].dtype == torch.long and batch["input_ids"].shape == (2, max(lengths))
    assert batch["attention_mask"].sum(1).tolist() == lengths
    assert (batch["input_ids"][0, lengths[0]:] == 0).all() and (batch["token_type_ids"] == 0).all()
    fixed = ours("short", max_length=16, padding="max_length")
    assert fixed["input_ids"].shape == (1, 16)
    with pytest.raises(TokenizerError, match="padding=True"):
        ours(["one", "one two three"], padding=False)
    with pytest.raises(TokenizerError, match="texts_b has 1"):
        ours(["one", "two"], ["three"])


def test_lookup_errors(ours):
    with pytest.raises(TokenizerError, match="not in the vocabulary"):
        ours.piece_to_id("\u2581notapieceatall")
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        ours.id_to_piece(8000)
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        ours.decode([5, -1])


# --------------------------------------------------------------------------- files and layouts
def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(TokenizerError, match=r"nope\.model does not exist"):
        Tokenizer.from_file(tmp_path / "nope.model")
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"this is not a protobuf")
    with pytest.raises(TokenizerError, match=r"junk\.model is not a SentencePiece model"):
        Tokenizer.from_file(junk)


def test_default_checks_its_checksum(tmp_path, monkeypatch):
    copy = tmp_path / "austen"
    shutil.copytree(tok.DEFAULT_DIR, copy)
    data = bytearray((copy / "spiece.model").read_bytes())
    data[-10] ^= 0x01
    (copy / "spiece.model").write_bytes(bytes(data))
    monkeypatch.setattr(tok, "DEFAULT_DIR", copy)
    with pytest.raises(TokenizerError, match=r"spiece\.model is corrupt.*tokenizer train"):
        Tokenizer.default()


def test_wrong_special_layout_is_rejected(tmp_path):
    """SentencePiece's own defaults put <unk> at 0 and <s>, </s> at 1, 2: not ALBERT's layout."""
    prefix = tmp_path / "default_flags"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(small_corpus()), model_prefix=str(prefix),
                                   vocab_size=300, num_threads=1, minloglevel=2)
    with pytest.raises(TokenizerError, match=r"ids 0-4 hold <unk> <s> </s> .*missing: <pad> \[CLS\] \[SEP\] \[MASK\]"):
        Tokenizer.from_file(f"{prefix}.model")


def test_albert_30k_clean_layout_is_accepted(tmp_path):
    """A model trained with the flags of ALBERT's 30k-clean.model, user-defined symbols included."""
    prefix = tmp_path / "albert_flags"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(preprocess_text(s) for s in small_corpus()), model_prefix=str(prefix),
        vocab_size=300, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1, control_symbols="[CLS],[SEP],[MASK]",
        user_defined_symbols='(,),",-,.,\u2013,\u00a3,\u20ac', num_threads=1, minloglevel=2,
    )
    official = Tokenizer.from_file(f"{prefix}.model")
    assert official.vocab_size == 300 and official.special_ids == frozenset(range(5))
    assert official.piece_to_id("(") == 5 and official.word_start[official.piece_to_id(".")]


# --------------------------------------------------------------------------- determinism
def test_training_is_deterministic():
    texts = small_corpus()
    first, second = train_sentencepiece(texts, vocab_size=400), train_sentencepiece(texts, vocab_size=400)
    assert first == second
    small = Tokenizer.from_bytes(first)
    assert small.vocab_size == 400 and small.id_to_piece(4) == "[MASK]"


def test_training_errors():
    with pytest.raises(TokenizerError, match="no training text"):
        train_sentencepiece(["", "   "], vocab_size=100)
    with pytest.raises(TokenizerError, match="smaller --vocab-size"):
        train_sentencepiece(["tiny text"], vocab_size=5000)


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_retraining_reproduces_the_committed_model():
    # Byte-exact only with the sentencepiece the model was trained with: the version constraints.txt pins.
    pinned = next(line.split("==")[1].strip() for line in (REPO_ROOT / "constraints.txt").read_text().splitlines()
                  if line.startswith("sentencepiece=="))
    assert spm.__version__ == pinned == "0.2.3", f"install the pinned sentencepiece {pinned} (make venv)"
    model = train_sentencepiece(tok.training_texts("austen"), vocab_size=8000)
    assert model == (tok.DEFAULT_DIR / "spiece.model").read_bytes()
    assert sha256_file(tok.DEFAULT_DIR / "spiece.model") == read_manifest(tok.DEFAULT_DIR)["spiece.model"]


# --------------------------------------------------------------------------- the command line never loses a file
def test_train_writes_only_where_out_says_and_replaces_only_with_overwrite(tmp_path, capsys):
    from cli_helpers import cli_error

    text = tmp_path / "texts" / "a.txt"
    text.parent.mkdir()
    text.write_text("\n\n".join(small_corpus()[:400]))
    shipped = {p.name: p.read_bytes() for p in tok.DEFAULT_DIR.iterdir()}
    assert "required: --out" in cli_error(train_cli, ["train", "--text", str(text), "--vocab-size", "60"], capsys)
    out = tmp_path / "t.model"
    out.write_bytes(b"an older model")
    error = cli_error(train_cli, ["train", "--text", str(text), "--vocab-size", "60", "--out", str(out)], capsys)
    assert "already exists" in error and "--overwrite" in error and out.read_bytes() == b"an older model"
    error = cli_error(train_cli, ["train", "--text", str(text), "--out", str(text), "--overwrite"], capsys)
    assert "is one of this command's input files" in error and text.read_text().startswith(small_corpus()[0][:20])
    train_cli(["train", "--text", str(text), "--vocab-size", "60", "--out", str(out), "--overwrite"])
    assert Tokenizer.from_file(out).vocab_size == 60 and out.with_suffix(".vocab").is_file()
    assert {p.name: p.read_bytes() for p in tok.DEFAULT_DIR.iterdir()} == shipped


def test_a_full_disk_while_saving_keeps_the_old_model_whole(tmp_path, monkeypatch):
    import errno

    from albert_mini import safe_files

    out = tmp_path / "t.model"
    out.write_bytes(b"the previous model")
    model = train_sentencepiece(small_corpus()[:400], vocab_size=60)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_files.os, "fsync", full)
    with pytest.raises(OSError):
        tok.save_model(model, out)
    assert out.read_bytes() == b"the previous model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.model"]  # no temp file left behind


def test_a_model_file_whose_name_is_not_utf8_loads(tmp_path):
    import os
    import shutil

    from albert_mini.paths import DATA_ROOT

    name = os.path.join(os.fsencode(tmp_path), b"tok\xe9.model")  # a Latin-1 name, as Linux allows
    shutil.copy(DATA_ROOT / "austen" / "spiece.model", name)
    loaded = Tokenizer.from_file(os.fsdecode(name))
    assert loaded.encode("It is a truth.") == Tokenizer.default().encode("It is a truth.")
