"""The R data reader, the Austen build and split, the sha256-checked loader and users' own text files."""

import gzip
import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from albert_mini.harness.data import build_austen_corpus, rdata
from albert_mini.paths import DATA_ROOT, sha256_file
from albert_mini.text.corpus import (
    SPLITS,
    CorpusError,
    Document,
    format_documents,
    load_corpus,
    load_text_files,
    parse_documents,
    split_of,
    split_sentences,
)
from archive_helpers import tar_gz

AUSTEN = DATA_ROOT / "austen"


# --------------------------------------------------------------------------- hand-written R serialization
def xdr_int(*values: int) -> bytes:
    return struct.pack(f">{len(values)}i", *values)


def r_header() -> bytes:
    """XDR format, serialization version 3, written by R 4.2.1, readable by R >= 3.5.0, native encoding UTF-8."""
    return b"X\n" + xdr_int(3, 0x040201, 0x030500, 5) + b"UTF-8"


def r_char(text: str | None) -> bytes:
    if text is None:
        return xdr_int(9, -1)  # NA_character_
    data = text.encode("utf-8")
    return xdr_int(9 | (8 << 12), len(data)) + data  # CHARSXP flagged UTF-8 (levels bit 3)


def r_strings(values, attributes: bytes = b"") -> bytes:
    flags = 16 | (0x200 if attributes else 0)
    return xdr_int(flags, len(values)) + b"".join(r_char(v) for v in values) + attributes


def r_names_attribute(names, first_use: bool = True) -> bytes:
    """A pairlist holding names=...; the symbol `names` is written in full once, then as a reference."""
    tag = xdr_int(1) + r_char("names") if first_use else xdr_int((1 << 8) | 255)  # SYMSXP, or REFSXP to reference 1
    return xdr_int(2 | 0x400) + tag + r_strings(names) + xdr_int(254)


def r_list(items: list[bytes], names=None, first_use: bool = True) -> bytes:
    attributes = r_names_attribute(names, first_use) if names is not None else b""
    flags = 19 | (0x200 if attributes else 0)
    return xdr_int(flags, len(items)) + b"".join(items) + attributes


def write_lazyload_db(folder: Path, objects: dict[str, list]) -> Path:
    """An Rdata.rdx/.rdb pair framed as R writes it: zlib entries after a 4-byte length, a gzipped index."""
    rdb, offsets = b"", []
    for values in objects.values():
        raw = r_header() + r_strings(values)
        entry = struct.pack(">I", len(raw)) + zlib.compress(raw)
        offsets.append((len(rdb), len(entry)))
        rdb += entry
    variables = r_list([xdr_int(13, 2, off, n) for off, n in offsets], names=list(objects))
    references = r_list([], names=[], first_use=False)
    compressed = xdr_int(10, 1, 1)  # logical TRUE: plain zlib
    index = r_header() + r_list([variables, references, compressed],
                                names=["variables", "references", "compressed"], first_use=False)
    (folder / "Rdata.rdb").write_bytes(rdb)
    (folder / "Rdata.rdx").write_bytes(gzip.compress(index))
    return folder / "Rdata.rdx"


def test_unserialize_character_vector_with_utf8_and_na():
    values = ["CHAPTER 1", "", "It is a truth universally acknowledged", "caf\u00e9 \u00a320", None]
    result = rdata.unserialize(r_header() + r_strings(values))
    assert list(result) == values and result.rtype == "character"


def test_unserialize_numbers_named_list_and_compact_sequence():
    na = -(2**31)
    ints = xdr_int(13, 3, 7, na, -2)
    reals = xdr_int(14, 2) + struct.pack(">2d", 0.5, -1e300)
    # ALTREP compact_intseq 1..4: info pairlist (class, package, type), state c(n, start, step), no attributes
    info = xdr_int(2) + xdr_int(1) + r_char("compact_intseq") + xdr_int(2) + xdr_int(1) + r_char("base") \
        + xdr_int(2) + xdr_int(13, 1, 13) + xdr_int(254)
    seq = xdr_int(238) + info + xdr_int(14, 3) + struct.pack(">3d", 4, 1, 1) + xdr_int(254)
    result = rdata.unserialize(r_header() + r_list([ints, reals, seq], names=["i", "x", "s"]))
    assert result.names == ["i", "x", "s"]
    assert list(result[0]) == [7, None, -2] and list(result[1]) == [0.5, -1e300] and list(result[2]) == [1, 2, 3, 4]


def test_lazyload_db_round_trip(tmp_path):
    objects = {"emma": ["EMMA", "", "CHAPTER I", "Emma Woodhouse, handsome"], "persuasion": ["Persuasion", "x"]}
    loaded = rdata.read_lazyload_db(write_lazyload_db(tmp_path, objects))
    assert {k: list(v) for k, v in loaded.items()} == objects


def test_reader_errors_are_clear(tmp_path):
    with pytest.raises(rdata.RDataError, match="not XDR"):
        rdata.unserialize(b"A\n3\n")
    with pytest.raises(rdata.RDataError, match="closure"):
        rdata.unserialize(r_header() + xdr_int(3))
    with pytest.raises(rdata.RDataError, match="ends early"):
        rdata.unserialize(r_header() + xdr_int(16, 2) + r_char("only one"))
    raw = r_header() + r_strings(["a"])
    with pytest.raises(rdata.RDataError, match="header says"):
        rdata.decompress_rdb_entry(struct.pack(">I", len(raw) + 1) + zlib.compress(raw), 1)
    with pytest.raises(FileNotFoundError, match="Rdata.rdx"):
        rdata.read_lazyload_db(tmp_path / "Rdata.rdx")


# --------------------------------------------------------------------------- the build, on a hand-made .deb
def ar_archive(members: dict[str, bytes]) -> bytes:
    out = b"!<arch>\n"
    for name, data in members.items():
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        out += header + data + (b"\n" if len(data) % 2 else b"")
    return out


FAKE_NOVEL = [
    "TITLE", "", "By Jane Austen", "", "VOLUME I", "", "CHAPTER I", "", "First  _paragraph_ is", "wrapped here.", "",
    "                          * * * * *", "", "Second one, declared,* with \u201cquotes\u201d.", "",
    "VOLUME II", "", "CHAPTER I", "", "[At this point in the first edition, Volume I ends.]", "",
    "Only paragraph of chapter two.", "", "", "THE END", "", "Editor's afterword.",
]


def test_build_from_a_deb(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    novels = {key: FAKE_NOVEL for key in build_austen_corpus.NOVELS}
    write_lazyload_db(pkg, novels)
    data = {f"./{build_austen_corpus.RDATA_IN_DEB}Rdata.{ext}": (pkg / f"Rdata.{ext}").read_bytes()
            for ext in ("rdx", "rdb")}
    data[f"./{build_austen_corpus.DESCRIPTION_IN_DEB}"] = b"Package: janeaustenr\nVersion: 9.9.9\n"
    control = tar_gz({"./control": b"Package: r-cran-janeaustenr\nVersion: 9.9.9-1\nArchitecture: all\n"})
    deb = tmp_path / "r-cran-janeaustenr_9.9.9-1_all.deb"
    deb.write_bytes(ar_archive({"debian-binary": b"2.0\n", "control.tar.gz": control, "data.tar.gz": tar_gz(data)}))

    stats = build_austen_corpus.build(deb, tmp_path / "out")
    assert stats["source"]["version"] == "9.9.9-1" and stats["source"]["r_package_version"] == "9.9.9"
    assert stats["source"]["deb_sha256"] == sha256_file(deb)
    train = load_corpus(split="train", data_dir=tmp_path / "out")
    emma = [d for d in train if d.id.startswith("emma-")]
    assert [d.chapter for d in emma] == [1, 2]  # Emma-style numerals restarting per volume still count 1, 2
    assert emma[0].paragraphs == ["First paragraph is wrapped here.", 'Second one, declared, with "quotes".']
    assert emma[1].paragraphs == ["Only paragraph of chapter two."]
    assert stats["splits"]["train"]["documents"] == 12 and stats["splits"]["validation"]["documents"] == 0


def test_build_fails_clearly_on_a_non_deb(tmp_path):
    bad = tmp_path / "x.deb"
    bad.write_bytes(b"not an archive")
    with pytest.raises(CorpusError, match="not a .deb"):
        build_austen_corpus.build(bad, tmp_path / "out")


# --------------------------------------------------------------------------- the committed corpus and its split
@pytest.fixture(scope="module")
def austen():
    return {split: load_corpus("austen", split) for split in SPLITS}


def test_split_rule_is_by_chapter_disjoint_and_complete(austen):
    stats = json.loads((AUSTEN / "stats.json").read_text())
    seen = {}
    for split, documents in austen.items():
        assert len(documents) == stats["splits"][split]["documents"]
        for doc in documents:
            assert doc.id not in seen, f"{doc.id} appears in {seen.get(doc.id)} and {split}"
            seen[doc.id] = split
            assert split_of(doc.chapter) == split
            assert doc.paragraphs and all(p.strip() == p and "\n" not in p for p in doc.paragraphs)
    for title, n in stats["chapters_per_novel"].items():
        chapters = sorted(d.chapter for docs in austen.values() for d in docs if d.title == title)
        assert chapters == list(range(1, n + 1)), title
        assert any(d.title == title for d in austen["validation"]) and any(d.title == title for d in austen["test"])
    assert len(seen) == 269  # 50 + 61 + 48 + 55 + 31 + 24 chapters


def test_split_function_is_deterministic():
    assert [split_of(c) for c in range(1, 24)] == [split_of(c) for c in range(1, 24)]
    assert [c for c in range(1, 62) if split_of(c) == "validation"] == [10, 20, 30, 40, 50, 60]
    assert [c for c in range(1, 62) if split_of(c) == "test"] == [11, 21, 31, 41, 51, 61]


def test_corpus_text_is_clean(austen):
    text = "\n".join(p for docs in austen.values() for d in docs for p in d.paragraphs)
    for leftover in ("_", "CHAPTER", "VOLUME", "* *", "THE END", "FINIS", "\u201c", "\u2019", "  "):
        assert leftover not in text, leftover
    first = next(d for d in austen["train"] if d.id == "prideprejudice-01")
    assert first.paragraphs[0].startswith("It is a truth universally acknowledged, that a single man")


def test_file_format_round_trip(austen):
    documents = austen["validation"]
    assert parse_documents(format_documents(documents)) == documents
    assert format_documents(documents).encode() == (AUSTEN / "validation.txt").read_bytes()


# --------------------------------------------------------------------------- loader errors
def test_corrupt_copy_is_caught(tmp_path):
    copy = tmp_path / "austen"
    shutil.copytree(AUSTEN, copy)
    data = bytearray((copy / "test.txt").read_bytes())
    data[1000] ^= 0x01
    (copy / "test.txt").write_bytes(bytes(data))
    assert load_corpus(split="validation", data_dir=copy)  # untouched files still load
    with pytest.raises(CorpusError, match=r"test\.txt is corrupt.*albert-mini corpus"):
        load_corpus(split="test", data_dir=copy)


def test_missing_file_and_bad_split(tmp_path):
    copy = tmp_path / "austen"
    shutil.copytree(AUSTEN, copy)
    (copy / "train.txt").unlink()
    with pytest.raises(CorpusError, match=r"train\.txt is missing.*albert-mini corpus"):
        load_corpus(split="train", data_dir=copy)
    with pytest.raises(CorpusError, match="unknown split 'dev'"):
        load_corpus(split="dev")
    with pytest.raises(CorpusError, match="no corpus folder"):
        load_corpus("shakespeare")


# --------------------------------------------------------------------------- users' own text
def test_text_files_one_document_per_file(tmp_path):
    (tmp_path / "a.txt").write_text("First line\nwrapped \u201cquoted\u201d.\n\n  Second   paragraph.\n")
    (tmp_path / "b.txt").write_text("Just one.")
    (tmp_path / "notes.md").write_text("ignored by the *.txt pattern")
    docs = load_text_files(tmp_path)
    assert [d.id for d in docs] == ["a", "b"]
    assert docs[0].paragraphs == ['First line wrapped "quoted".', "Second paragraph."]
    assert load_text_files([tmp_path / "b.txt"]) == [Document("b", "b", ["Just one."])]


def test_text_files_blank_line_mode(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("Doc one, line one.\nDoc one, line two.\n\n\n \nDoc two.\n")
    docs = load_text_files(path, mode="blank_line")
    assert [d.paragraphs for d in docs] == [["Doc one, line one.", "Doc one, line two."], ["Doc two."]]
    assert docs[0].id != docs[1].id


def test_text_files_clear_errors(tmp_path):
    (tmp_path / "empty.txt").write_text(" \n\n")
    with pytest.raises(CorpusError, match="empty"):
        load_text_files(tmp_path / "empty.txt")
    with pytest.raises(CorpusError, match="does not exist"):
        load_text_files(tmp_path / "nope.txt")
    with pytest.raises(CorpusError, match="no input files"):
        load_text_files([])
    with pytest.raises(CorpusError, match="unknown mode"):
        load_text_files(tmp_path, mode="lines")
    with pytest.raises(CorpusError, match="no files matching"):
        load_text_files(tmp_path, pattern="*.md")


# --------------------------------------------------------------------------- sentences
def test_sentence_splitter_handles_titles_initials_and_quotes():
    text = ('"Mr. Darcy is here." She smiled. Mrs. Bennet and Dr. Perry came. "What?" said he. '
            'A. W. wrote it. See No. 97, Vol. II. No. It was over.--Then she left!')
    assert split_sentences(text) == [
        '"Mr. Darcy is here."', "She smiled.", "Mrs. Bennet and Dr. Perry came.", '"What?" said he.',
        "A. W. wrote it.", "See No. 97, Vol. II.", "No.", "It was over.--", "Then she left!",
    ]


def test_sentences_keep_every_character(austen):
    for doc in austen["test"][:5]:
        assert "".join(doc.sentences()).replace(" ", "") == "".join(doc.paragraphs).replace(" ", "")
