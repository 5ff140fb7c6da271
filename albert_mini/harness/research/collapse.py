"""Where a training collapse shows: attention entropy, how alike the positions are, q.k logit spread, pooler state.

Used by the recipe search (albert_mini.harness.research.recipe_search) on every probe and control, and by chapter 7 to
read the AdamW + clipping collapse of the sentence-loss control.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...model.albert import AlbertForPreTraining

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
