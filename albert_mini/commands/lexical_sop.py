"""`albert-mini lexical-sop`: a no-network SOP baseline on the tokens at the segments' edges.

    albert-mini lexical-sop --overwrite   # rewrites the shipped data/results/lexical_sop.json

The baselines are albert_mini.harness.research.lexical_sop's (`lexical_baselines`).
"""

from __future__ import annotations

import json

from ..cli import run as run_cli
from ..errors import UsageError
from ..paths import DATA_ROOT
from ..safe_files import Writes, atomic_write_text
from . import command_parser, docstring_of

WRITES = Writes("lexical-sop", outputs="--out FILE (default data/results/lexical_sop.json; --overwrite to replace "
                "it)", inputs="the Austen corpus", regenerates="data/results/lexical_sop.json, with --overwrite")


def main(argv: list[str] | None = None) -> dict:
    """Command line; bad flags end with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> dict:
    p = command_parser("lexical-sop", description=docstring_of("harness.research.lexical_sop").split("\n")[0])
    p.add_argument("--out", default=str(DATA_ROOT / "results" / "lexical_sop.json"),
                   help="the results file (default data/results/lexical_sop.json, in the checkout)")
    p.add_argument("--steps", type=int, default=400, help="full-batch Adam steps (default 400)")
    p.add_argument("--l2", type=float, default=1e-5, help="L2 penalty on the weights (default 1e-5)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file (the shipped one too)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.l2 < 0:
        raise UsageError(f"--steps must be >= 1 and --l2 >= 0, got {args.steps} and {args.l2}")
    WRITES.check(files=[("--out", args.out)], inputs=[DATA_ROOT / "austen"], overwrite=args.overwrite,
                 regenerates=[DATA_ROOT / "results" / "lexical_sop.json"])
    from ..harness.research import lexical_sop  # torch: once the flags are read

    result = lexical_sop.lexical_baselines(l2=args.l2, steps=args.steps)
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    for r in result["rows"]:
        print(f"seq {r['seq_len']} k={r['k'] or 'all'}: train {r['train_acc']:.3f}, held-out {r['held_out_acc']:.3f} "
              f"[{r['held_out_interval'][0]:.3f}, {r['held_out_interval'][1]:.3f}] on {r['held_out_pairs']} pairs")
    return result
