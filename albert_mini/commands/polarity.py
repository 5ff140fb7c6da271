"""`albert-mini polarity`: download Pang & Lee's 4,000 polarity sentences into cache/ (what `make polarity` runs).

The download and its checks are the harness's albert_mini.harness.data.fetch_polarity, the reading and the splits
albert_mini.tasks.polarity's; the sentences are for personal use only and never committed.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..cli import run as run_cli
from ..harness.data.fetch_polarity import PROVENANCE_FILE, fetch_polarity
from ..paths import sha256_bytes
from ..safe_files import Writes
from ..tasks.polarity import CACHE_DIR, MEMBER_SHA256, SENTENCES_FILE, SPLIT_SIZES, load_polarity
from . import command_parser

WRITES = Writes("polarity", outputs=f"--cache-dir DIR: {SENTENCES_FILE} and {PROVENANCE_FILE} (--force to replace "
                "ones it did not download)", inputs="the download (nothing on disk)")


def main(argv: list[str] | None = None) -> None:
    """Command line: fetch the sentences; a failure ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("polarity", description="Download Pang & Lee's 4,000 polarity sentences into cache/.")
    parser.add_argument("--cache-dir", type=Path, default=CACHE_DIR, help="where to write sentences.csv")
    parser.add_argument("--force", action="store_true", help="download again even if the cache is complete")
    args = parser.parse_args(argv)
    path = args.cache_dir / SENTENCES_FILE
    cached = path.is_file() and not path.is_symlink() and sha256_bytes(path.read_bytes()) == MEMBER_SHA256
    fetch = args.force or not cached
    files = [("--cache-dir", path), ("--cache-dir", args.cache_dir / PROVENANCE_FILE)] if fetch else []
    own = [path, args.cache_dir / PROVENANCE_FILE] if cached else []  # the sentences this command downloaded
    WRITES.check(files=files, folders=[("--cache-dir", args.cache_dir)], overwrite=args.force, own=own,
                 overwrite_flag="--force")  # before the download
    started = time.perf_counter()
    if fetch:
        fetch_polarity(args.cache_dir)
        action = "fetched"
    else:
        action = "already cached"
    counts = {name: len(load_polarity(name, args.cache_dir)) for name in SPLIT_SIZES}
    print(f"{path}: {action} in {time.perf_counter() - started:.1f} s; splits {counts} (personal use only: "
          "never commit it)")
