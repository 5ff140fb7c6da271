"""Probing a frozen encoder: its pooled outputs, and a linear classifier fitted on them."""

from __future__ import annotations

import torch

from ..model.albert import AlbertForPreTraining


@torch.no_grad()
def pair_features(model: AlbertForPreTraining, inputs: dict, chunk: int = 256) -> dict[str, torch.Tensor]:
    """On the CPU: the pooled [CLS] output (N, H), the mean of the last layer over real tokens (N, H) and the
    model's sentence logits (N, 2) of every row of `inputs` (moved to the model's device in chunks)."""
    device = next(model.parameters()).device
    pooled, mean, logits = [], [], []
    for start in range(0, len(inputs["input_ids"]), chunk):
        part = {k: v[start:start + chunk].to(device) for k, v in inputs.items()}
        out = model.albert(part["input_ids"], part["attention_mask"], part["token_type_ids"])
        real = part["attention_mask"].unsqueeze(-1).to(out.last_hidden_state.dtype)  # (B, T, 1)
        mean.append(((out.last_hidden_state * real).sum(1) / real.sum(1)).cpu())  # (B, H)
        pooled.append(out.pooler_output.cpu())
        logits.append(model.sop_classifier(out.pooler_output).cpu())
    return {"pooled": torch.cat(pooled), "mean": torch.cat(mean), "logits": torch.cat(logits)}


def pooled_outputs(model: AlbertForPreTraining, inputs: dict, chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """The pooled [CLS] output (N, H) and the model's sentence logits (N, 2) of every row, on the CPU."""
    features = pair_features(model, inputs, chunk)
    return features["pooled"], features["logits"]


def linear_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, steps: int,
                 seed: int = 0) -> torch.Tensor:
    """Fit a 2-way logistic regression on frozen features (full-batch Adam, fixed steps); predictions on test_x.

    Features are standardised with the training mean and spread; a small L2 penalty keeps the weights finite
    when the classes separate."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    g = torch.Generator().manual_seed(seed)
    weight = (0.01 * torch.randn(train_x.shape[1], 2, generator=g)).requires_grad_()
    bias = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([weight, bias], lr=0.05)
    x = (train_x - mean) / std
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(x @ weight + bias, train_y) + 1e-3 * weight.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return (((test_x - mean) / std) @ weight + bias).argmax(-1)
