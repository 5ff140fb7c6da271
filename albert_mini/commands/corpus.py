"""`albert-mini corpus [SOURCE]`: rebuild data/austen/ from the Debian package r-cran-janeaustenr.

The work and the normalisation rules are the harness's albert_mini.harness.data.build_austen_corpus (`build`);
the split rule is the corpus reader's (albert_mini.text.corpus.split_of).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..cli import run as run_cli
from ..harness.data import build_austen_corpus
from ..paths import DATA_ROOT, MANIFEST
from ..safe_files import Writes, manifest_owned
from ..text.corpus import SPLITS
from . import command_parser

WRITES = Writes("corpus", outputs="--out DIR: train.txt, validation.txt, test.txt, stats.json and their SHA256SUMS "
                "lines (other lines kept)", inputs="SOURCE (default: the Debian package, downloaded into cache/)",
                regenerates="data/austen/ (its corpus files), declaredly: the command exists to rebuild it")
SHIPPED = DATA_ROOT / "austen"


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild data/austen; bad input ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("corpus")
    parser.add_argument("source", nargs="?", type=Path, help=f"{build_austen_corpus.PACKAGE} .deb, its extracted "
                        "folder or Rdata.rdx (default: apt-get download into cache/)")
    parser.add_argument("--out", type=Path, default=DATA_ROOT / "austen", help="output folder (default: data/austen)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace corpus files in another --out that this command did not write")
    args = parser.parse_args(argv)
    names = [f"{split}.txt" for split in SPLITS] + ["stats.json"]
    own = manifest_owned(args.out, names)  # what an earlier build wrote there, unchanged since
    regenerating = args.out.resolve() == SHIPPED.resolve()
    WRITES.check(files=[("--out", args.out / name) for name in [*names, MANIFEST]], folders=[("--out", args.out)],
                 inputs=[args.source], overwrite=args.overwrite or regenerating, regenerates=[SHIPPED], own=own)
    start = time.perf_counter()
    stats = build_austen_corpus.build(args.source, args.out)
    print(json.dumps(stats, indent=2))
    print(f"built {args.out} in {time.perf_counter() - start:.2f} s")
