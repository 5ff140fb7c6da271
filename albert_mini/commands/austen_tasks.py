"""`albert-mini austen-tasks`: rebuild data/tasks/ (austen-mc, austen-span) byte for byte from the Austen corpus.

The tasks, their seeded build and their README are the harness's albert_mini.harness.data.build_austen_tasks
(`build_all`); the library reads them back with albert_mini.tasks.austen_tasks.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..cli import run as run_cli
from ..cli import seed as seed_type
from ..harness.data.build_austen_tasks import SEED, build_all, check_tasks_folder
from ..paths import DATA_ROOT, MANIFEST
from ..safe_files import Writes, manifest_owned
from ..tasks.austen_tasks import SOURCE_SPLITS, TASKS_DIR
from . import command_parser

WRITES = Writes("austen-tasks", outputs="--out DIR: austen_mc/ and austen_span/ {train,test}.json, README.md, "
                "SHA256SUMS", inputs="the Austen corpus, data/austen/{validation,test}.txt",
                regenerates="data/tasks/, declaredly: the command exists to rebuild it")


def main(argv: list[str] | None = None) -> None:
    """Command line: rebuild data/tasks; bad input ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("austen-tasks",
                            description="Rebuild data/tasks/ (austen-mc, austen-span) from the Austen corpus.")
    parser.add_argument("--out", type=Path, default=TASKS_DIR, help="output folder (default: data/tasks)")
    parser.add_argument("--seed", type=seed_type, default=SEED)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace task files in another --out that this command did not write")
    args = parser.parse_args(argv)
    check_tasks_folder(args.out)  # before the tasks are built: nothing but the tasks' own entries
    tasks = [f"{task}/{split}.json" for task in ("austen_mc", "austen_span") for split in SOURCE_SPLITS]
    own = manifest_owned(args.out, tasks)
    if args.out / MANIFEST in own:
        own.append(args.out / "README.md")  # written with the manifest
    corpus = [DATA_ROOT / "austen" / f"{split}.txt" for split in SOURCE_SPLITS.values()]
    WRITES.check(files=[("--out", args.out / name) for name in [*tasks, "README.md", MANIFEST]],
                 folders=[("--out", args.out)], inputs=corpus,
                 overwrite=args.overwrite or args.out.resolve() == TASKS_DIR.resolve(), regenerates=[TASKS_DIR],
                 own=own)
    started = time.perf_counter()
    counts = build_all(args.out, seed=args.seed)
    print(f"wrote {args.out} in {time.perf_counter() - started:.1f} s: {counts}")
