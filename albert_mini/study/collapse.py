"""Where a training collapse shows: attention entropy, how alike the positions are, q.k logit spread, pooler state.

`diagnose` is taken on every probe and control of the recipe search (albert_mini.harness.research.recipe_search) and
of chapter 11's live control (albert_mini.study.controls); `collapse_figure` draws the AdamW + clipping collapse of
the sentence-loss controls from data/results/recipe_search.json for chapter 11.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..model.albert import AlbertForPreTraining

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["collapse_figure"]

RULES = ("longer",)


def segment_lengths(batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens of segment A and of segment B in each row of a [CLS] A [SEP] B [SEP] batch."""
    types, mask = batch["token_type_ids"], batch["attention_mask"]
    len_b = (types * mask).sum(1) - 1  # B [SEP] carry type 1
    len_a = mask.sum(1) - len_b - 3  # [CLS] A [SEP] B [SEP]
    return len_a, len_b


def relabel(batch: dict, rule: str = "longer") -> dict:
    """A copy of a sentence-pair batch whose label follows `rule`; 'longer' = segment A has more tokens than B.

    A label any encoder can certainly learn (the lengths are visible through the padding mask and the segment
    ids), so a sentence path that cannot fit it has a bug or an unstable optimizer, not a hard task.
    """
    if rule not in RULES:
        raise ValueError(f"unknown control rule {rule!r}; choose one of {', '.join(RULES)}")
    len_a, len_b = segment_lengths(batch)
    return {**batch, "sentence_order_label": (len_a > len_b).long()}


@torch.no_grad()
def diagnose(model: AlbertForPreTraining, batch: dict, weight_norms: bool = False) -> dict:
    """Per-layer attention entropy and mean cosine between positions, the last layer's q.k logit spread, pooler state.

    Entropy is in nats per query, averaged over heads and unpadded queries (uniform attention over n keys is
    ln n). position_cosine near 1 means every position carries the same vector: the encoder has collapsed.
    """
    was = model.training
    model.eval()
    out = model.albert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"],
                       output_hidden_states=True, output_attentions=True)
    keep = batch["attention_mask"].bool()  # (B, T)
    report = {"entropy": [], "position_cosine": []}
    for att in out.attentions:  # (B, nh, T, T)
        p = att.clamp_min(1e-12)
        ent = -(p * p.log()).sum(-1)  # (B, nh, T)
        report["entropy"].append(float(ent.mean(1)[keep].mean()))
    pair = keep[:, :, None] & keep[:, None, :]  # (B, T, T): both positions are real tokens
    for h in out.hidden_states[1:]:
        u = F.normalize(h, dim=-1)
        sims = u @ u.transpose(1, 2)  # (B, T, T)
        report["position_cosine"].append(float(sims[pair].mean()))
    attention = model.albert.encoder.albert_layer_groups[-1].albert_layers[-1].attention
    h = out.hidden_states[-2]  # the input of the last layer
    q, k = attention.query(h), attention.key(h)  # (B, T, H); all heads at once, scaled by one head's width
    head_width = q.shape[-1] // model.config.num_attention_heads
    report["qk_logit_std"] = float((q @ k.transpose(1, 2) / math.sqrt(head_width)).std())
    pooled = out.pooler_output  # (B, H)
    report["pooler_saturated"] = float((pooled.abs() > 0.99).float().mean())
    report["pooler_std_over_batch"] = float(pooled.std(0).mean())
    report["cls_std_over_batch"] = float(out.last_hidden_state[:, 0].std(0).mean())
    report["h0_norm"] = float(out.hidden_states[0].norm(dim=-1)[keep].mean())
    if weight_norms:
        report["weight_norms"] = {name: float(p.norm()) for name, p in model.named_parameters()
                                  if p.dim() == 2 and "decoder" not in name}
    model.train(was)
    return report


def uniform_entropy(batches) -> float:
    """Entropy of attention spread evenly over the keys, ln(unpadded length), averaged over queries as in diagnose."""
    n = torch.cat([b["attention_mask"].sum(1).double() for b in batches])  # (rows,) unpadded lengths
    return float((n * n.log()).sum() / n.sum())  # each row has n queries, each with entropy ln n


def rolling_mean(values: list[float], window: int) -> list[float]:
    """Mean of the last `window` values at each position (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


def collapse_figure(results: dict, names: list[str] | None = None, window: int = 10):
    """The sentence-loss-only controls: training accuracy (rolling mean) above the spread of the attention logits,
    one update axis, the legend below: stacked so that the book's column shows them at a readable size."""
    from .figure_style import book_figure, book_style

    controls = [c for c in results["controls"] if c["rule"] == "longer" and (names is None or c["name"] in names)]
    fig, (acc_ax, qk_ax) = book_figure(2, 1, height=8, sharex=True)
    with book_style():
        for c in controls:
            s = c["settings"]
            clip = "no clipping" if s["clip_norm"] > 1e6 else f"clip {s['clip_norm']:g}"
            label = f"{s['optimizer']} {s['lr']:g}, {s['decay']}, {clip}"
            line, = acc_ax.plot(range(1, len(c["train_acc"]) + 1),
                                [100 * a for a in rolling_mean(c["train_acc"], window)], label=label)
            qk_ax.plot([k["step"] for k in c["checks"]], [k["qk_logit_std"] for k in c["checks"]],
                       color=line.get_color(), label=label)
        acc_ax.axhline(50, color="grey", ls=":", lw=1)
        acc_ax.set(ylabel=f"training accuracy\n(%, {window}-step mean)", ylim=(30, 102))
        acc_ax.set_title("Label 'A longer than B', sentence loss only", loc="left")
        qk_ax.set(xlabel="update", ylabel="std of q.k / sqrt(d)\nlast layer", yscale="log")
        qk_ax.set_title("Attention logits: near 0 = uniform attention", loc="left")
        for ax in (acc_ax, qk_ax):
            ax.grid(alpha=0.3)
        fig.legend(*acc_ax.get_legend_handles_labels(), loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.0))
        rows = math.ceil(len(controls) / 2)
        fig.tight_layout(rect=(0, (0.25 * rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig
