"""The classroom model's card: held-out MLM and SOP accuracy with 95% intervals, its curve, and how it was trained.

`albert-mini model-card MODEL_DIR [--compare LABEL=RUN_DIR ...]` scores an exported model on every
held-out Austen chapter (validation and test splits, statically masked with a fixed seed, every example counted),
draws held-out accuracy against training tokens for this run and any runs to compare, and writes MODEL_DIR/README.md.
The figure is a file of figures/ (the card links it there); the command replaces an existing card, scores.json or
figure only with --overwrite, and a figure of figures/ only when it is this card's own (the one its README links, or
the shipped classroom model's).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch

from ...paths import REPO_ROOT
from ...safe_files import atomic_write_bytes
from ...study.paper import TABLE5
from ...study.stats import wilson_interval
from ...text.batches import build_pretraining_dataset, collate
from ...text.corpus import load_corpus
from ...text.tokenizer import Tokenizer
from ...training.objectives import metrics_from_sums, pretraining_objective
from ...training.rundir import METRICS_FILE, read_metrics

HELD_OUT_SPLITS = ("validation", "test")



@torch.no_grad()
def held_out_scores(model, splits=HELD_OUT_SPLITS, seq_len: int = 128, seed: int = 0, batch_size: int = 64) -> dict:
    """Masked-token and sentence-order accuracy over every example built from the held-out chapters."""
    documents = [doc for split in splits for doc in load_corpus("austen", split)]
    dataset = build_pretraining_dataset(documents, Tokenizer.default(), task="sop", max_seq_len=seq_len, seed=seed,
                                        dynamic=False)
    model.eval()
    sums = torch.zeros(6, dtype=torch.float64)
    for start in range(0, len(dataset), batch_size):  # the last, smaller batch counts too
        batch = collate([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        _, stats = pretraining_objective(model(**batch), batch, 1.0, 1.0)
        sums += stats
    metrics = metrics_from_sums(sums)
    masked, mlm_correct, pairs, sop_correct = int(sums[2]), int(sums[1]), int(sums[5]), int(sums[4])
    return {"splits": list(splits), "seq_len": seq_len, "seed": seed,
            "masked_tokens": masked, "mlm_correct": mlm_correct, "mlm_acc": metrics["mlm_acc"],
            "mlm_interval": wilson_interval(mlm_correct, masked), "mlm_loss": metrics["mlm_loss"],
            "sop_pairs": pairs, "sop_correct": sop_correct, "sop_acc": metrics["sentence_acc"],
            "sop_interval": wilson_interval(sop_correct, pairs), "sop_loss": metrics["sentence_loss"]}


def curve_plot(curves: dict[str, list[dict]]):
    """Held-out MLM accuracy above SOP accuracy against training tokens, one line per run, chance as a dashed
    line, one legend below: stacked so that the book's column shows them at a readable size."""
    from ...study.figure_style import book_figure, book_style

    fig, (mlm, sop) = book_figure(2, 1, height=7.4, sharex=True)
    with book_style():
        for label, curve in curves.items():
            tokens = [p["tokens"] / 1e6 for p in curve]
            mlm.plot(tokens, [100 * p["mlm_acc"] for p in curve], marker=".", label=label)
            sop.plot(tokens, [100 * p["sentence_acc"] for p in curve], marker=".")
        sop.axhline(50, color="grey", linestyle="--", linewidth=1, label="chance")
        mlm.set(ylabel="masked tokens right (%)")
        mlm.set_title("Held-out masked-language-model accuracy", loc="left")
        sop.set(xlabel="training tokens (millions)", ylabel="SOP pairs right (%)")
        sop.set_title("Held-out sentence-order accuracy (512 pairs per point)", loc="left")
        for ax in (mlm, sop):
            ax.grid(alpha=0.3)
        handles, labels = mlm.get_legend_handles_labels()
        more_handles, more_labels = sop.get_legend_handles_labels()
        fig.legend(handles + more_handles, labels + more_labels, loc="lower center", ncol=2,
                   bbox_to_anchor=(0.5, 0.0))
        rows = -(-(len(labels) + len(more_labels)) // 2)
        fig.tight_layout(rect=(0, (0.25 * rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def curve_figure(curves: dict[str, list[dict]], out: str | Path):
    """`curve_plot` saved to `out` (120 dpi), the figure closed; returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = curve_plot(curves)
    png = io.BytesIO()
    fig.savefig(png, dpi=120, format="png")
    plt.close(fig)
    return atomic_write_bytes(out, png.getvalue())  # whole or not at all


def display_path(folder: Path) -> str:
    """A folder as a reader of the repository names it: relative to the checkout when inside it."""
    try:
        return str(Path(folder).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(folder)


# Runs recorded before the `albert-mini` command named the module they ran: its file, and the command it is now.
_OLD_SCRIPTS = {"albert_mini/training/pretrain.py": "pretrain", "albert_mini/tasks/finetune.py": "finetune"}


def typed_command(command: str) -> str:
    """A recorded command line (sys.argv: the script's path first) as the `albert-mini` command a reader types."""
    script, _, args = command.partition(" ")
    script = script.replace("\\", "/").removesuffix(".exe")
    if script.endswith(("/albert-mini", "albert_mini/__main__.py")) or script == "albert-mini":
        return f"albert-mini {args}".rstrip()
    for old, name in _OLD_SCRIPTS.items():
        if script.endswith(old):
            return f"albert-mini {name} {args}".rstrip()
    return command


# ALBERT's pretraining (Section 4.1): 125,000 steps of 4,096 sequences of 512 tokens.
PAPER_TOKENS = 125_000 * 4096 * 512


def sop_verdict(scores: dict) -> str:
    """What the held-out SOP interval says: better than a coin only when the whole interval clears 50%."""
    lo, hi = scores["sop_interval"]
    paper = TABLE5["sop"]["sop"]
    if lo > 0.5:
        return (f"the sentence-order head orders held-out pairs better than a coin (the 95% interval "
                f"{100 * lo:.1f}-{100 * hi:.1f}% lies above 50%), far below the paper's {paper}% (Table 5, ALBERT "
                f"base trained with SOP)")
    return (f"the sentence-order head is not distinguishable from a coin on held-out pairs (the 95% interval "
            f"{100 * lo:.1f}-{100 * hi:.1f}% contains 50%); the paper's SOP-trained ALBERT base scores {paper}%")


def card_text(model_dir: Path, scores: dict, curve: list[dict], figure: str, machine: str) -> str:
    """The model card (markdown): what the model is, how it was trained, how well it does, and its limits."""
    run = json.loads((model_dir / "run.json").read_text())
    s = run["settings"]
    records = read_metrics(model_dir / METRICS_FILE)[0]  # the one reader: a torn last line is left out
    last = records[-1]
    train_lines = [r for r in records if r.get("type") == "train"]
    tokens, hours = train_lines[-1]["tokens_seen"], train_lines[-1]["elapsed_s"] / 3600
    phase = ""
    if s.get("short_seq_len"):
        phase = (f", the first {round(s['short_fraction'] * s['steps'])} steps on {s['short_seq_len']}-token "
                 f"sequences ({s['batch_size'] * s['seq_len'] // s['short_seq_len']} per batch, BERT's curriculum)")
    lo, hi = scores["mlm_interval"]
    slo, shi = scores["sop_interval"]
    rows = "\n".join(f"| {p['step']} | {p['tokens'] / 1e6:.1f} | {p['minutes']:.1f} | {100 * p['mlm_acc']:.1f} | "
                     f"{100 * p['sentence_acc']:.1f} |" for p in curve)
    return f"""# {model_dir.name}: a classroom model

An `albert-mini` ({run['model']['num_hidden_layers']} layers sharing one set of weights, H = {run['model']['hidden_size']},
E = {run['model']['embedding_size']}, vocabulary {run['model']['vocab_size']}) pretrained with MLM + SOP on the Austen
training chapters (public domain; see `data/austen/`). Load it with
`albert_mini.training.checkpoint.load_pretrained("{display_path(model_dir)}")`; `manifest.json` holds the
sha256 of the weights and config.

## Training
{s['steps']} steps of {run['effective_batch']} x {s['seq_len']} tokens{phase}; {s['optimizer']} at peak learning rate
{s['lr']:g}, warm-up {s['warmup'] if s['warmup'] is not None else round(0.025 * s['steps'])} steps, linear decay to 0,
gradient clipping {s['clip_norm']:g}, no dropout, seed {s['seed']}. {tokens / 1e6:.1f}M training tokens in
{hours:.2f} hours of wall time on {machine}. Command (the run resumes exactly if interrupted):

    {typed_command(run['command'])}

## Held-out quality (every example of the validation and test chapters, {scores['seq_len']} tokens, masking seed {scores['seed']})
- Masked tokens predicted: **{100 * scores['mlm_acc']:.1f}%** of {scores['masked_tokens']:,}
  (95% Wilson interval {100 * lo:.1f}-{100 * hi:.1f}%); loss {scores['mlm_loss']:.3f}.
- Sentence order: **{100 * scores['sop_acc']:.1f}%** of {scores['sop_pairs']:,} pairs
  (95% interval {100 * slo:.1f}-{100 * shi:.1f}%; chance is 50%); loss {scores['sop_loss']:.4f} (ln 2 = 0.6931).

Final in-training evaluation (512 validation sequences): MLM {100 * last.get('mlm_acc', float('nan')):.1f}%,
SOP {100 * last.get('sentence_acc', float('nan')):.1f}%.

![held-out accuracy against training tokens](../../../figures/{figure})

| step | tokens (M) | minutes | held-out MLM % | held-out SOP % |
|---:|---:|---:|---:|---:|
{rows}

## Limits
The paper's models saw about {round(PAPER_TOKENS / tokens, -2):,.0f} times more tokens (Section 4.1: 125,000 steps of 4,096
sequences of 512 tokens). At this scale the model learns frequent words and local grammar, and
{sop_verdict(scores)}. `data/results/recipe_search.json` and chapter 5 show what the sentence path can and cannot
learn at small budgets (it fits its training pairs long before it generalises). Use the model to read the book's
cells, not as a language model.
"""

