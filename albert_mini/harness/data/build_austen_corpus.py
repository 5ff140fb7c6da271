"""Build data/austen/ from the Debian package r-cran-janeaustenr: `albert-mini corpus [SOURCE]` runs `build`.

SOURCE is the package's .deb, a folder it was extracted into (`dpkg-deb -x`), or its `Rdata.rdx`/`.rdb`. Without
SOURCE the script runs `apt-get download r-cran-janeaustenr` into the git-ignored `cache/` folder (Debian and
Ubuntu only). The .deb is unpacked with the standard library, so any OS can build from a copied .deb.

Normalisation (one chapter = one document):
- drop everything before the first CHAPTER heading (title, author, Northanger Abbey's advertisement) and
  everything from the end marker on (THE END, FINIS, Northanger Abbey's "A NOTE ON THE TEXT");
- drop CHAPTER and VOLUME heading lines; chapters are numbered 1..n within each novel, in reading order
  (Emma restarts its numerals in every volume, the chapter numbers here do not);
- a paragraph is a run of non-blank lines, joined with spaces; whitespace collapsed;
- strip `_italics_` underscores and footnote stars, drop `* * *` separators, the one footnote and the
  editors' "[... edition ...]" volume notes; curly quotes and dashes become ASCII (the source has none).

Split rule (by chapter, per novel): the corpus reader's `albert_mini.text.corpus.split_of`; chapter c goes to
validation when c % 10 == 0, to test when c % 10 == 1 and c > 1 (the chapter after a validation chapter), else
to train.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ...paths import CACHE_ROOT, sha256_bytes
from ...safe_files import update_manifest
from ...text.corpus import SPLITS, CorpusError, Document, format_documents, normalize_paragraph, split_of
from .rdata import read_lazyload_db

PACKAGE = "r-cran-janeaustenr"
RDATA_IN_DEB = "usr/lib/R/site-library/janeaustenr/data/"
DESCRIPTION_IN_DEB = "usr/lib/R/site-library/janeaustenr/DESCRIPTION"
CACHE_DIR = CACHE_ROOT
NOVELS = {  # R object name -> title, in publication order
    "sensesensibility": "Sense and Sensibility",
    "prideprejudice": "Pride and Prejudice",
    "mansfieldpark": "Mansfield Park",
    "emma": "Emma",
    "northangerabbey": "Northanger Abbey",
    "persuasion": "Persuasion",
}
CHAPTER_HEADING = re.compile(r"^(CHAPTER|Chapter) ([IVXLC]+|\d+)\.?$")
VOLUME_HEADING = re.compile(r"^VOLUME [IVX]+$")
END_MARKERS = ("THE END", "FINIS", "Finis", "A NOTE ON THE TEXT")


# --------------------------------------------------------------------------- getting the R data
def download_deb(cache_dir: Path = CACHE_DIR) -> Path:
    """The package's .deb in `cache_dir`, fetched with `apt-get download` when it is not there yet."""
    cached = sorted(cache_dir.glob(f"{PACKAGE}_*.deb"))
    if cached:
        return cached[-1]
    if shutil.which("apt-get") is None:
        raise CorpusError(
            f"apt-get not found: downloading {PACKAGE} needs Debian or Ubuntu. Copy the .deb from such a "
            f"machine (`apt-get download {PACKAGE}`) and run `albert-mini corpus PATH.deb`."
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["apt-get", "download", PACKAGE], cwd=cache_dir, capture_output=True, text=True)
    cached = sorted(cache_dir.glob(f"{PACKAGE}_*.deb"))
    if result.returncode != 0 or not cached:
        raise CorpusError(
            f"`apt-get download {PACKAGE}` failed (exit {result.returncode}): {result.stderr.strip()}\n"
            f"Run `apt-get update` first, or pass the path of a downloaded .deb."
        )
    return cached[-1]


def ar_members(data: bytes) -> dict[str, bytes]:
    """Members of a Unix `ar` archive (the container of a .deb), by name."""
    if not data.startswith(b"!<arch>\n"):
        raise CorpusError("not a .deb file: it does not start with the ar archive magic '!<arch>'")
    members, pos = {}, 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
        members[name] = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size % 2)  # members start on even offsets
    return members


def _open_tar(name: str, blob: bytes) -> tarfile.TarFile:
    if name.endswith(".zst"):
        raise CorpusError(f"{name} is zstd-compressed, which Python's standard library cannot read; "
                         f"extract it with `dpkg-deb -x` and pass the folder instead")
    return tarfile.open(fileobj=io.BytesIO(blob), mode="r:*")


def extract_deb(deb: Path, out_dir: Path) -> dict:
    """Write the package's Rdata.rdx/.rdb into `out_dir`; return the .deb's version and sha256."""
    raw = deb.read_bytes()
    members = ar_members(raw)
    control_name = next((n for n in members if n.startswith("control.tar")), None)
    data_name = next((n for n in members if n.startswith("data.tar")), None)
    if control_name is None or data_name is None:
        raise CorpusError(f"{deb} has no control.tar/data.tar member; is it really a .deb?")
    with _open_tar(control_name, members[control_name]) as tar:
        control = tar.extractfile(tar.getmember("./control")).read().decode()
    fields = dict(re.findall(r"^(\w[\w-]*): (.*)$", control, re.M))
    if fields.get("Package") != PACKAGE:
        raise CorpusError(f"{deb} is the package {fields.get('Package')!r}, expected {PACKAGE}")
    with _open_tar(data_name, members[data_name]) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("./")
            if name.startswith(RDATA_IN_DEB + "Rdata.rd") or name == DESCRIPTION_IN_DEB:
                (out_dir / Path(name).name).write_bytes(tar.extractfile(member).read())
    return {"package": PACKAGE, "version": fields["Version"], "deb": deb.name,
            "deb_sha256": sha256_bytes(raw)}


def read_novels(source: Path | None) -> tuple[dict[str, list[str]], dict]:
    """Each novel's lines (object name -> list of str) and a provenance record, from any accepted SOURCE."""
    if source is None:
        source = download_deb()
    source = Path(source)
    if not source.exists():
        raise CorpusError(f"{source} does not exist; pass a {PACKAGE} .deb, its extracted folder or Rdata.rdx")
    with tempfile.TemporaryDirectory() as tmp:
        if source.suffix == ".deb":
            provenance = extract_deb(source, Path(tmp))
            rdx = Path(tmp) / "Rdata.rdx"
        elif source.is_dir():
            found = sorted(source.rglob("janeaustenr/data/Rdata.rdx")) or sorted(source.rglob("Rdata.rdx"))
            if not found:
                raise CorpusError(f"no janeaustenr/data/Rdata.rdx under {source}")
            rdx = found[0]
            provenance = {"package": PACKAGE, "version": None, "deb": None, "deb_sha256": None}
        elif source.suffix in (".rdx", ".rdb"):  # either file of the pair names both
            rdx = source.with_suffix(".rdx")
            provenance = {"package": PACKAGE, "version": None, "deb": None, "deb_sha256": None}
        else:
            raise CorpusError(f"{source}: expected a .deb, a folder, or the Rdata.rdx/Rdata.rdb file")
        description = rdx.parent / "DESCRIPTION"
        if not description.is_file():
            description = rdx.parent.parent / "DESCRIPTION"
        if description.is_file():
            match = re.search(r"^Version: (.*)$", description.read_text(), re.M)
            provenance["r_package_version"] = match.group(1) if match else None
        objects = read_lazyload_db(rdx)
    missing = sorted(set(NOVELS) - set(objects))
    if missing:
        raise CorpusError(f"{rdx} lacks the novel(s) {missing}; is it janeaustenr's Rdata.rdx?")
    return {key: list(objects[key]) for key in NOVELS}, provenance


# --------------------------------------------------------------------------- normalisation
def chapters_of(lines: list[str]) -> list[list[str]]:
    """The lines of each chapter, headings and front/back matter removed."""
    chapters: list[list[str]] = []
    for line in lines:
        stripped = line.strip()
        if stripped in END_MARKERS:
            break
        if CHAPTER_HEADING.match(stripped):
            chapters.append([])
        elif VOLUME_HEADING.match(stripped):
            if chapters:
                chapters[-1].append("")  # a heading between chapters still ends a paragraph
        elif chapters:
            chapters[-1].append(line)
    return chapters


def clean_paragraph(lines: list[str]) -> str | None:
    """One paragraph as a single normalised line, or None for separators, footnotes and editors' notes."""
    text = normalize_paragraph(" ".join(lines))
    if re.fullmatch(r"[*\s]+", text):
        return None  # "* * * * *" section separators
    if text.startswith("*"):
        return None  # the footnote text at the end of Northanger Abbey
    if text.startswith("[") and "edition" in text:
        return None  # "[End volume one of this edition. ...]", "[At this point in the first and second editions ...]"
    text = text.replace("_", "")  # _italics_
    text = re.sub(r"(?<=\S)\*", "", text)  # footnote markers such as "declared,*"
    return " ".join(text.split()) or None


def paragraphs_of(lines: list[str]) -> list[str]:
    """Group lines into paragraphs at blank lines and clean each one."""
    paragraphs, current = [], []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
        elif current:
            paragraph = clean_paragraph(current)
            if paragraph:
                paragraphs.append(paragraph)
            current = []
    return paragraphs


def novel_documents(key: str, lines: list[str]) -> list[Document]:
    """One Document per chapter, ids like "emma-07"."""
    documents = []
    for number, chapter_lines in enumerate(chapters_of(lines), start=1):
        paragraphs = paragraphs_of(chapter_lines)
        if not paragraphs:
            raise CorpusError(f"{key} chapter {number} came out empty; the source format changed")
        documents.append(Document(f"{key}-{number:02d}", NOVELS[key], paragraphs, number))
    return documents


def split_counts(documents: list[Document], file_bytes: int) -> dict:
    return {
        "documents": len(documents),
        "paragraphs": sum(len(d.paragraphs) for d in documents),
        "sentences": sum(len(d.sentences()) for d in documents),
        "words": sum(len(p.split()) for d in documents for p in d.paragraphs),
        "bytes": file_bytes,
    }


# --------------------------------------------------------------------------- main
def build(source: Path | None, out_dir: Path) -> dict:
    """Write the three split files, stats.json and their manifest entries; return the stats."""
    novels, provenance = read_novels(source)
    splits: dict[str, list[Document]] = {split: [] for split in SPLITS}
    chapters_per_novel = {}
    for key, lines in novels.items():
        documents = novel_documents(key, lines)
        chapters_per_novel[NOVELS[key]] = len(documents)
        for doc in documents:
            splits[split_of(doc.chapter)].append(doc)
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = {"source": provenance, "chapters_per_novel": chapters_per_novel, "splits": {}}
    for split, documents in splits.items():
        data = format_documents(documents).encode("utf-8")
        (out_dir / f"{split}.txt").write_bytes(data)
        stats["splits"][split] = split_counts(documents, len(data))
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    update_manifest(out_dir, [f"{split}.txt" for split in SPLITS] + ["stats.json"])
    return stats

