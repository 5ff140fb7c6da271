"""Figure 1 analog: how much each layer changes its input, albert-mini vs its unshared twin, trained and at init."""

from __future__ import annotations

import dataclasses

import torch

from ...model.albert import AlbertModel
from ...model.config import AlbertConfig
from ..smoothness import Smoothness, layer_smoothness, plot_smoothness
from .common import Budget, held_out_batches, mini, pretrain, setting


def run(budget: Budget) -> dict:
    val = held_out_batches(budget)
    models = {}
    twins = (("ALBERT (albert-mini)", mini()), ("BERT-style (bert-mini)", AlbertConfig.from_preset("bert-mini")))
    for label, config in twins:
        trained, _ = pretrain(config, "sop", budget)
        models[f"{label}, trained"] = dataclasses.asdict(layer_smoothness(trained.albert, val))
        torch.manual_seed(budget.seed)  # the encoder the pretraining recipe starts from
        models[f"{label}, at initialisation"] = dataclasses.asdict(layer_smoothness(AlbertModel(config), val))
    return {"models": models}


def figure(result: dict):
    models = {label: Smoothness(**entry) for label, entry in result["models"].items()}
    return plot_smoothness(models, title=f"Layer input vs output embeddings, held-out Austen ({setting(result)})")


def table(result: dict) -> str:
    out = ["### Smoothness (Figure 1 analog): mean angle in degrees per layer", ""]
    for label, entry in result["models"].items():
        out.append(f"- {label}: " + ", ".join(f"{d:.1f}" for d in entry["degrees"]))
    return "\n".join(out)
