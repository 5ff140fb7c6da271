"""`albert-mini model-card MODEL_DIR [--compare LABEL=RUN_DIR ...]`: score an exported model and write its card.

The scoring, the curve and the card's text are albert_mini.research.model_card's.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..cli import run as run_cli
from ..errors import UsageError
from ..paths import FIGURES_ROOT
from ..research import model_card
from ..research.time_to_quality import read_run
from ..study.experiments.provenance import cpu_model
from ..training.checkpoint import load_pretrained
from ..training.rundir import MODEL_CARD_FILE, SCORES_FILE
from . import command_parser


def main(argv: list[str] | None = None) -> None:
    """Command line: score the model, draw the curve, write the card."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    p = command_parser("model-card", description=model_card.__doc__.splitlines()[0])
    p.add_argument("model_dir", help="an exported model directory (with run.json and metrics.jsonl)")
    p.add_argument("--compare", nargs="*", default=[], metavar="LABEL=RUN_DIR",
                   help="other run directories (or exported models) to draw beside this one")
    p.add_argument("--figure", default="classroom_model_curve.png", help="file name under figures/")
    p.add_argument("--label", default="this model", help="legend label of this model's curve")
    p.add_argument("--machine", default=None,
                   help="where the run trained, as the card states it (default: 2 cores of this machine's CPU)")
    p.add_argument("--reuse-scores", action="store_true",
                   help=f"rewrite the card from MODEL_DIR/{SCORES_FILE} instead of scoring the model again")
    args = p.parse_args(argv)
    model_dir = Path(args.model_dir)
    for name in ("run.json", "metrics.jsonl"):
        if not (model_dir / name).is_file():
            raise UsageError(f"{model_dir} has no {name}; export the model from its run directory with "
                             "albert_mini.training.checkpoint.export_pretrained(RUN_DIR, OUT)")
    curves = {args.label: read_run(model_dir)[1]}
    for item in args.compare:
        label, sep, path = item.partition("=")
        if not sep:
            raise UsageError(f"--compare takes LABEL=PATH, got {item!r}")
        curves[label] = read_run(Path(path))[1]
    if args.reuse_scores:
        if not (model_dir / SCORES_FILE).is_file():
            raise UsageError(f"{model_dir} has no {SCORES_FILE} to reuse; "
                             "run without --reuse-scores to score the model")
        scores = json.loads((model_dir / SCORES_FILE).read_text())
    else:
        torch.manual_seed(0)
        scores = model_card.held_out_scores(load_pretrained(model_dir))
        (model_dir / SCORES_FILE).write_text(json.dumps(scores, indent=2) + "\n")
    model_card.curve_figure(curves, FIGURES_ROOT / args.figure)
    machine = args.machine or f"2 cores of {cpu_model()}"
    card = model_card.card_text(model_dir, scores, curves[args.label], args.figure, machine)
    (model_dir / MODEL_CARD_FILE).write_text(card)
    print(f"MLM {100 * scores['mlm_acc']:.2f}% of {scores['masked_tokens']}, SOP {100 * scores['sop_acc']:.2f}% of "
          f"{scores['sop_pairs']}; card in {model_dir / MODEL_CARD_FILE}")
