"""`albert-mini model-card MODEL_DIR [--compare LABEL=RUN_DIR ...]`: score an exported model and write its card.

The scoring, the curve and the card's text are albert_mini.harness.research.model_card's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..cli import run as run_cli
from ..errors import UsageError
from ..paths import FIGURES_ROOT
from ..safe_files import Writes, atomic_write_text, shipped_folder
from ..training.rundir import MODEL_CARD_FILE, SCORES_FILE, read_run
from . import command_parser, docstring_of

WRITES = Writes("model-card", outputs="MODEL_DIR/README.md and MODEL_DIR/scores.json (not with --reuse-scores), "
                "figures/FIGURE (--overwrite to replace them)",
                inputs="MODEL_DIR's model, run.json and metrics.jsonl (and scores.json with --reuse-scores), the "
                       "--compare runs",
                regenerates="a model's card (README.md, scores.json, the shipped models' too) and its figure under "
                            "figures/ (the one its card links; classroom_model_curve.png for a shipped model), with "
                            "--overwrite")
CLASSROOM_FIGURE = "classroom_model_curve.png"
FIGURE_LINK = re.compile(r"figures/([^/)\s]+)\)")  # how a card links its figure


def card_figures(model_dir: Path) -> list[Path]:
    """The figures an existing card in `model_dir` links (under figures/): the card's own, which it may redraw."""
    card = model_dir / MODEL_CARD_FILE
    text = card.read_text(errors="replace") if card.is_file() and not card.is_symlink() else ""
    return [FIGURES_ROOT / name for name in FIGURE_LINK.findall(text)]


def classroom_figure(model_dir: Path) -> list[Path]:
    """figures/classroom_model_curve.png for a shipped classroom model (under data/), whose card it belongs to."""
    return [FIGURES_ROOT / CLASSROOM_FIGURE] if shipped_folder(model_dir) == "data" else []


def main(argv: list[str] | None = None) -> None:
    """Command line: score the model, draw the curve, write the card."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    p = command_parser("model-card", description=docstring_of("harness.research.model_card").splitlines()[0])
    p.add_argument("model_dir", help="an exported model directory (with run.json and metrics.jsonl)")
    p.add_argument("--compare", nargs="*", default=[], metavar="LABEL=RUN_DIR",
                   help="other run directories (or exported models) to draw beside this one")
    p.add_argument("--figure", default=None, help="file name under figures/ (default: classroom_model_curve.png for "
                   "a shipped model, else MODEL_DIR's name + _curve.png)")
    p.add_argument("--label", default="this model", help="legend label of this model's curve")
    p.add_argument("--machine", default=None,
                   help="where the run trained, as the card states it (default: 2 cores of this machine's CPU)")
    p.add_argument("--reuse-scores", action="store_true",
                   help=f"rewrite the card from MODEL_DIR/{SCORES_FILE} instead of scoring the model again")
    p.add_argument("--strata", action="store_true",
                   help=f"score only SOP on the quote strata and its no-network baselines (Table 5's held-out pairs) "
                        f"into {SCORES_FILE} (key sop_strata) and the card's strata section; nothing else changes")
    p.add_argument("--overwrite", action="store_true",
                   help=f"replace an existing {MODEL_CARD_FILE}, {SCORES_FILE} or figure (a shipped one only when it "
                        "is this card's)")
    args = p.parse_args(argv)
    # Scoring and drawing load torch and matplotlib (seconds): imported once the flags are read.
    import torch

    from ..harness.experiments.provenance import cpu_model
    from ..harness.research import model_card
    from ..training.checkpoint import load_pretrained

    model_dir = Path(args.model_dir)
    if args.figure is None:
        shipped = shipped_folder(model_dir) == "data"
        args.figure = CLASSROOM_FIGURE if shipped else f"{model_dir.resolve().name}_curve.png"
    if args.figure in ("", ".", "..") or Path(args.figure).name != args.figure or "\\" in args.figure:
        raise UsageError(f"--figure {args.figure!r} must be a file name, which goes under figures/ (the card links "
                         "it there), e.g. --figure my_model_curve.png")
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
    if args.strata:
        return strata_only(model_dir, args.overwrite)
    if args.reuse_scores and not (model_dir / SCORES_FILE).is_file():
        raise UsageError(f"{model_dir} has no {SCORES_FILE} to reuse; run without --reuse-scores to score the model")
    card, scores_file, figure = model_dir / MODEL_CARD_FILE, model_dir / SCORES_FILE, FIGURES_ROOT / args.figure
    inputs = [p for p in (model_dir.iterdir() if model_dir.is_dir() else [])
              if p.name != MODEL_CARD_FILE and (args.reuse_scores or p.name != SCORES_FILE)]
    WRITES.check(files=[("MODEL_DIR", card), *([] if args.reuse_scores else [("MODEL_DIR", scores_file)]),
                        ("--figure", figure)],
                 inputs=[*inputs, *(Path(item.partition("=")[2]) for item in args.compare if "=" in item)],
                 overwrite=args.overwrite,
                 regenerates=[card, scores_file, *card_figures(model_dir), *classroom_figure(model_dir)])
    if args.reuse_scores:
        scores = json.loads((model_dir / SCORES_FILE).read_text())
    else:
        torch.manual_seed(0)
        scores = model_card.held_out_scores(load_pretrained(model_dir))
        atomic_write_text(scores_file, json.dumps(scores, indent=2) + "\n")
    model_card.curve_figure(curves, figure)
    machine = args.machine or f"2 cores of {cpu_model()}"
    text = model_card.card_text(model_dir, scores, curves[args.label], args.figure, machine)
    atomic_write_text(card, text)
    print(f"MLM {100 * scores['mlm_acc']:.2f}% of {scores['masked_tokens']}, SOP {100 * scores['sop_acc']:.2f}% of "
          f"{scores['sop_pairs']}; card in {model_dir / MODEL_CARD_FILE}")


def strata_only(model_dir: Path, overwrite: bool) -> None:
    """Add the quote strata and their baselines to an existing card and scores.json, from the model's weights
    (no training, nothing else rescored): the rest of a hand-finished card stays as it is."""
    import torch

    from ..harness.research import model_card
    from ..training.checkpoint import load_pretrained

    card, scores_file = model_dir / MODEL_CARD_FILE, model_dir / SCORES_FILE
    for path in (card, scores_file):
        if not path.is_file():
            raise UsageError(f"{model_dir} has no {path.name}; write the card first (albert-mini model-card "
                             f"{model_dir}), then add the strata with --strata")
    inputs = [p for p in model_dir.iterdir() if p not in (card, scores_file)]
    WRITES.check(files=[("MODEL_DIR", card), ("MODEL_DIR", scores_file)], inputs=inputs, overwrite=overwrite,
                 regenerates=[card, scores_file])
    torch.manual_seed(0)
    strata = model_card.quote_strata_scores(load_pretrained(model_dir))
    scores = json.loads(scores_file.read_text())
    atomic_write_text(scores_file, json.dumps({**scores, "sop_strata": strata}, indent=2) + "\n")
    shown = model_card.display_path(model_dir)
    atomic_write_text(card, model_card.with_strata_section(card.read_text(), strata, shown))
    at = strata["at_64"]
    print(f"SOP at 64 tokens, own head: {100 * at['head']['quote']['accuracy']:.1f}% of "
          f"{at['head']['quote']['pairs']} quote pairs, {100 * at['head']['no_quote']['accuracy']:.1f}% of "
          f"{at['head']['no_quote']['pairs']} quote-free; card and {SCORES_FILE} in {model_dir}")
