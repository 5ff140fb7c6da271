"""`albert-mini recipe-search probe|control|results`: the pretraining-recipe search (albert_mini.harness.research).

    albert-mini recipe-search probe base --tokens 1.6e6 --threads 2 --out cache/recipe
    albert-mini recipe-search control ctl-lamb --set seq_len=64 warmup=50 --steps 400
    albert-mini recipe-search results --records data/results/recipe_search

Probes and controls are albert_mini.harness.research.recipe_search's (`run_probe`, `run_control`), the results
albert_mini.harness.research.recipe_results's (`write_results`).
"""

from __future__ import annotations

from pathlib import Path

from ..cli import Parser
from ..cli import run as run_cli
from ..errors import UsageError
from ..paths import DATA_ROOT, FIGURES_ROOT
from ..safe_files import Writes
from . import command_parser, docstring_of

WRITES = Writes("recipe-search", outputs="probe/control: --out DIR/NAME.json (control-NAME.json); results: --out "
                "FILE and --figure FILE (--overwrite to replace any of them)",
                inputs="the Austen corpus; results: the records in --records",
                regenerates="data/results/recipe_search/ records, data/results/recipe_search.json and "
                            "figures/recipe_search.png, with --overwrite")
SHIPPED = [DATA_ROOT / "results" / "recipe_search", DATA_ROOT / "results" / "recipe_search.json",
           FIGURES_ROOT / "recipe_search.png"]


class FlagsWhenUsed(Parser):
    """A subcommand's parser whose flags `add_flags(parser)` adds when it parses (its --help included): probe's
    and control's name the Recipe's fields and the control's rules, whose modules load torch, which
    `albert-mini recipe-search --help` then does not."""

    add_flags = None

    def parse_known_args(self, args=None, namespace=None):
        if self.add_flags is not None:
            add_flags, self.add_flags = self.add_flags, None
            add_flags(self)
        return super().parse_known_args(args, namespace)


def build_parser() -> Parser:
    p = command_parser("recipe-search", description=docstring_of("harness.research.recipe_search").split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=FlagsWhenUsed)
    probe = sub.add_parser("probe", help="train one recipe for a fixed number of tokens")
    control = sub.add_parser("control", help="train the sentence loss alone on a learnable label")
    for s in (probe, control):
        s.error = p.error  # one-line errors from the subcommands too
    probe.add_flags, control.add_flags = _probe_flags, _control_flags
    results = sub.add_parser("results", help="build data/results/recipe_search.json and its figure from records")
    results.error = p.error
    results.add_argument("--records", default=str(SHIPPED[0]),
                         help="folder of probe/control records (default data/results/recipe_search)")
    results.add_argument("--out", default=str(SHIPPED[1]), help="default data/results/recipe_search.json")
    results.add_argument("--figure", default=str(SHIPPED[2]), help="default figures/recipe_search.png")
    results.add_argument("--overwrite", action="store_true", help="replace existing --out and --figure files")
    return p


def _recipe_flags(s: Parser) -> None:
    """The flags probe and control share."""
    from ..harness.research.recipe_space import RECORD_NAMES

    s.add_argument("name", help="the record's name: <out>/<name>.json (controls: control-<name>.json)")
    s.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                   help=f"Recipe fields to change: {', '.join(RECORD_NAMES)}")
    s.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    s.add_argument("--out", default="cache/recipe", help="folder of the records (default cache/recipe)")
    s.add_argument("--overwrite", action="store_true", help="replace an existing record of the same name")


def _probe_flags(probe: Parser) -> None:
    _recipe_flags(probe)
    probe.add_argument("--tokens", type=float, default=1.6e6, help="training tokens (default 1.6e6)")
    probe.add_argument("--eval-points", type=int, default=8, help="evaluations along the way (default 8)")


def _control_flags(control: Parser) -> None:
    from ..study.collapse import RULES

    _recipe_flags(control)
    control.add_argument("--steps", type=int, default=400, help="updates (default 400)")
    control.add_argument("--rule", default="longer", choices=RULES + ("sop",),
                         help="longer: label = A longer than B (default); sop: the real sentence order")
    control.add_argument("--every", type=int, default=10, help="steps between diagnostics (default 10)")
    control.add_argument("--train-pairs", type=int, default=None,
                         help="revisit this many fixed pairs instead of fresh ones (e.g. 256 with --rule sop)")


def main(argv: list[str] | None = None):
    """Command line (see --help); bad flags end with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]):
    args = build_parser().parse_args(argv)
    # The probes train (torch): imported once the flags are read.
    import torch

    from ..harness.experiments.provenance import command_line
    from ..harness.research import recipe_search
    from ..harness.research.recipe_results import write_results
    from ..harness.research.recipe_space import parse_settings

    if args.command == "results":
        records = Path(args.records)
        if not records.is_dir():
            raise UsageError(f"--records {records} is not a folder of probe records; give the folder the probes "
                             "were written to (--out of the probe command)")
        WRITES.check(files=[("--out", args.out), ("--figure", args.figure)], inputs=[records],
                     overwrite=args.overwrite, regenerates=SHIPPED)
        path = write_results(records, Path(args.out), Path(args.figure), command_line("recipe-search", argv))
        print(f"wrote {path} and {args.figure}")
        return path
    if args.threads is not None:
        if args.threads < 1:
            raise UsageError(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    recipe = parse_settings(args.set)
    record = Path(args.out) / (f"{args.name}.json" if args.command == "probe" else f"control-{args.name}.json")
    WRITES.check(files=[("--out", record)], folders=[("--out", args.out)], inputs=[DATA_ROOT / "austen"],
                 overwrite=args.overwrite, regenerates=SHIPPED)
    if args.command == "probe":
        if args.eval_points < 1:
            raise UsageError(f"--eval-points must be >= 1, got {args.eval_points}")
        return recipe_search.run_probe(args.name, recipe, args.tokens, Path(args.out), args.eval_points,
                                       command=command_line("recipe-search", argv))
    if args.steps < 1 or args.every < 1:
        raise UsageError(f"--steps and --every must be >= 1, got {args.steps} and {args.every}")
    held = None if args.rule == "sop" else 8  # the real label is scored on every held-out pair
    return recipe_search.run_control(args.name, recipe, args.steps, Path(args.out), args.rule, args.every,
                                     args.train_pairs, held_out_batches=held,
                                     command=command_line("recipe-search", argv))
