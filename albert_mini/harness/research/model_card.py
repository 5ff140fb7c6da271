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
import textwrap
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
STRATA_BEGIN, STRATA_END = "<!-- sop-strata: written by albert-mini model-card --strata -->", "<!-- /sop-strata -->"



@torch.no_grad()
def held_out_scores(model, splits=HELD_OUT_SPLITS, seq_len: int = 128, seed: int = 0, batch_size: int = 64) -> dict:
    """Masked-token and sentence-order accuracy over every example built from the held-out chapters."""
    documents = [doc for split in splits for doc in load_corpus("austen", split)]
    dataset = build_pretraining_dataset(documents, Tokenizer.default(), task="sop", max_seq_len=seq_len, seed=seed,
                                        dynamic=False)
    model.eval()
    sums = {}
    for start in range(0, len(dataset), batch_size):  # the last, smaller batch counts too
        batch = collate([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        _, stats = pretraining_objective(model(**batch), batch, 1.0, 1.0)
        sums = {k: sums.get(k, 0.0) + v for k, v in stats.items()}
    sums = {k: float(v) for k, v in sums.items()}
    metrics = metrics_from_sums(sums)
    masked, mlm_correct = int(sums["mlm_count"]), int(sums["mlm_correct"])
    pairs, sop_correct = int(sums["sentence_count"]), int(sums["sentence_correct"])
    return {"splits": list(splits), "seq_len": seq_len, "seed": seed,
            "masked_tokens": masked, "mlm_correct": mlm_correct, "mlm_acc": metrics["mlm_acc"],
            "mlm_interval": wilson_interval(mlm_correct, masked), "mlm_loss": metrics["mlm_loss"],
            "sop_pairs": pairs, "sop_correct": sop_correct, "sop_acc": metrics["sentence_acc"],
            "sop_interval": wilson_interval(sop_correct, pairs), "sop_loss": metrics["sentence_loss"]}


def quote_strata_scores(model) -> dict:
    """SOP on Table 5's held-out pairs (every validation and test pair, unmasked, at 64 and 128 tokens) on all
    pairs and on the quote strata: the model's own head, and a linear probe on its pooled output fitted as Table
    5's are; beside them the no-network baselines on the same pairs. The pair sets are the ones every
    Table 5 model is scored on, so the numbers compare with data/results/sentence_task.json."""
    from ...study.probes import linear_probe, pair_features
    from ...study.sop_strata import stratified
    from ..experiments.strata import baselines, correct_of, strata_of
    from ..experiments.trunk import FULL_TRUNK, LENGTHS, scored_pairs

    model.eval()
    plan = FULL_TRUNK
    out = {"pairs": "Table 5's held-out SOP pairs (every validation and test pair, unmasked), as in "
                    "data/results/sentence_task.json; quote: either segment holds a double quotation mark",
           "probe": f"linear probe on the pooled output, {plan.probe_train} training pairs, {plan.probe_steps} "
                    "steps, seed 0"}
    for T in LENGTHS:
        test_x, test_y, _ = scored_pairs("sop", "held_out", T, False, plan)
        train_x, train_y, _ = scored_pairs("sop", "probe", T, False, plan)
        test, train = pair_features(model, test_x), pair_features(model, train_x)
        masks = strata_of(plan, T)
        probe = linear_probe(train["pooled"], train_y, test["pooled"], plan.probe_steps, seed=0)
        out[f"at_{T}"] = {"head": stratified(correct_of(test["logits"].argmax(-1), test_y), masks),
                          "probe_pooled": stratified(correct_of(probe, test_y), masks),
                          "baselines": baselines("sop", plan, T)}
    return out


def _cell(score: dict) -> str:
    lo, hi = score["wilson"]
    return f"{100 * score['accuracy']:.1f} ({100 * lo:.1f}-{100 * hi:.1f}%)"


def strata_section(strata: dict, model_dir: str) -> str:
    """The card's section on the quote strata (between markers, so that `--strata` can replace it)."""
    rows = []
    for T in (64, 128):
        at = strata[f"at_{T}"]
        base = at["baselines"]
        for name, score in (("the model's SOP head", at["head"]), ("linear probe on the pooled output",
                                                                   at["probe_pooled"]),
                            ("no network: majority training label", base["majority"]),
                            ("no network: quote-state rule", base["quote_state_rule"]),
                            ("no network: surface-feature regression", base["surface_regression"])):
            rows.append(f"| {T} | {name} | {_cell(score['all'])} | {_cell(score['quote'])} | "
                        f"{_cell(score['no_quote'])} |")
    counts = {T: strata[f"at_{T}"]["head"] for T in (64, 128)}
    rule = strata["at_64"]["baselines"]["quote_state_rule"]
    intro = (f"On these pairs a double quotation mark carries order information: in the book a segment that ends "
             f"inside a quotation is followed by one that starts inside it. So SOP is also scored separately on the "
             f"pairs whose segments hold a `\"` (quote) and on those without one (quote-free), on Table 5's held-out "
             f"pairs (every validation and test pair, unmasked: at 64 tokens {counts[64]['quote']['pairs']:,} quote "
             f"and {counts[64]['no_quote']['pairs']:,} quote-free pairs, at 128 tokens "
             f"{counts[128]['quote']['pairs']:,} and {counts[128]['no_quote']['pairs']:,}), beside what a reader "
             f"with no network gets on the same pairs. The quote-state rule answers only where the quotation state "
             f"at the junction allows one order (at 64 tokens {rule['decided']} of {rule['all']['pairs']:,} pairs, "
             f"{rule['right_when_decided']} of them right) and counts the rest as half right (its intervals count an "
             f"abstention as half a success: a reading aid, not an exact interval); the surface regression reads 16 "
             f"features (lengths, quotation marks at the edges and their parity, pronoun and conjunction openers, "
             f"capitals, chapter starts), fitted on the probe's training pairs. Percent right, 95% Wilson intervals:")
    source = (f"Computed by `albert-mini model-card {model_dir} --strata` (albert_mini.study.sop_strata), stored in "
              f"`scores.json` under `sop_strata`.")
    return "\n".join([STRATA_BEGIN, "## Sentence order with and without quotation marks", textwrap.fill(intro, 116),
                      "", "| tokens | scored by | all pairs | quote | quote-free |", "|---:|---|---|---|---|", *rows,
                      "", textwrap.fill(source, 116), STRATA_END])


def with_strata_section(card: str, strata: dict, model_dir: str) -> str:
    """`card` with its quote-strata section replaced, or inserted before "## Limits" (else appended)."""
    section = strata_section(strata, model_dir)
    if STRATA_BEGIN in card and STRATA_END in card:
        before, rest = card.split(STRATA_BEGIN, 1)
        return before + section + rest.split(STRATA_END, 1)[1]
    if "\n## Limits" in card:
        before, after = card.split("\n## Limits", 1)
        return before + "\n" + section + "\n\n## Limits" + after
    return card.rstrip("\n") + "\n\n" + section + "\n"


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
    strata_block = (strata_section(scores["sop_strata"], display_path(model_dir)) + "\n\n"
                    if "sop_strata" in scores else "")
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

{strata_block}## Limits
The paper's models saw about {round(PAPER_TOKENS / tokens, -2):,.0f} times more tokens (Section 4.1: 125,000 steps of 4,096
sequences of 512 tokens). At this scale the model learns frequent words and local grammar, and
{sop_verdict(scores)}. `data/results/recipe_search.json` and chapter 5 show what the sentence path can and cannot
learn at small budgets (it fits its training pairs long before it generalises). Use the model to read the book's
cells, not as a language model.
"""

