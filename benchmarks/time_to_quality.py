"""Time to quality: the old pretraining recipe against the new one, on this machine, side by side.

Old: the 15-minute run of data/results/pretrain_albert_mini_sop_15min (albert-mini, SOP, LAMB 5e-3, warmup 50,
1,200 steps scheduled, batch 32 x 128 tokens). New: the same with BERT's curriculum, the first 90% of the
steps at 64 x 64 tokens (`--short-seq-len 64 --short-fraction 0.9`). Both train in one process, alternating
slices of --slice-minutes, so background load slows both alike; each is evaluated on the same 16 held-out
batches (128 tokens) at the end of every slice. Prints held-out MLM and SOP against training minutes and the
time-to-quality ratio; label every number with the CPU it prints.

    .venv/bin/python benchmarks/time_to_quality.py --minutes 15 --out runs/ttq
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from albert_mini.cli import Parser, run
from albert_mini.harness.research.time_to_quality import race
from albert_mini.study.time_to_quality import report


def _main(argv: list[str]) -> dict:
    p = Parser(prog="benchmarks/time_to_quality.py", description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=15.0, help="training minutes of each recipe (default 15)")
    p.add_argument("--slice-minutes", type=float, default=1.0, help="minutes per turn (default 1)")
    p.add_argument("--out", default="runs/ttq", help="run directories old/ and new/ go here (overwritten)")
    p.add_argument("--json", default=None, help="also write the curves and the summary to this file")
    args = p.parse_args(argv)
    result = race(args.minutes, Path(args.out), args.slice_minutes,
                  command=shlex.join(["python", "benchmarks/time_to_quality.py", *argv]))
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    run(_main)
