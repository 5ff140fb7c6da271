"""`albert-mini leak-control`: the sentence path trained on SOP pairs built the reference way (a positive control).

    albert-mini leak-control --steps 300 --every 50 --out data/results/leak_control.json --overwrite  # shipped

The control is albert_mini.harness.research.leak_control's (`run_leak_control`).
"""

from __future__ import annotations

import json

from ..cli import run as run_cli
from ..paths import DATA_ROOT
from ..safe_files import Writes, atomic_write_text
from . import command_parser, docstring_of

WRITES = Writes("leak-control", outputs="--out FILE, the record (--overwrite to replace one)",
                inputs="the Austen corpus", regenerates="data/results/leak_control.json, with --overwrite")


def main(argv: list[str] | None = None):
    """Command line: run the control and write its record."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> dict:
    p = command_parser("leak-control", description=docstring_of("harness.research.leak_control").splitlines()[0])
    p.add_argument("--steps", type=int, default=600, help="updates of the sentence loss (default 600)")
    p.add_argument("--every", type=int, default=50, help="held-out evaluation every this many updates")
    p.add_argument("--nano", action="store_true", help="albert-nano at 64 tokens (seconds, for a quick look)")
    p.add_argument("--out", default=None, help="write the record (JSON) here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    args = p.parse_args(argv)
    from ..harness.experiments.provenance import command_line  # torch: once the flags are read
    from ..harness.research import leak_control
    from ..harness.research.recipe_space import Recipe, nano_recipe

    WRITES.check(files=[("--out", args.out)] if args.out else [], inputs=[DATA_ROOT / "austen"],
                 overwrite=args.overwrite, regenerates=[DATA_ROOT / "results" / "leak_control.json"])
    recipe = nano_recipe(seq_len=64, warmup=10) if args.nano else Recipe.of()
    record = leak_control.run_leak_control(recipe, args.steps, args.every,
                                           command=command_line("leak-control", argv))
    for name in ("constant_answer", "surface_probe", "network"):
        r = record[name]
        print(f"{name:16s} {r['accuracy']:.1%} of {r['total']} held-out pairs "
              f"[{r['interval'][0]:.1%}, {r['interval'][1]:.1%}]")
    for name, c in record["network_vs"].items():
        low, high = c["bootstrap"]["ci95"]
        print(f"network - {name}: {100 * c['bootstrap']['difference']:+.1f} points "
              f"[{100 * low:+.1f}, {100 * high:+.1f}], "
              f"McNemar p = {c['mcnemar_p']:.2g}")
    if args.out:
        atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    return record
