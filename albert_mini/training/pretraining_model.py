"""The pretraining model, built in one place for the CLI, the experiments and the chapters.

Two choices beyond the paper's architecture, both on by default:
- the MLM output bias starts at the log unigram frequencies of the training text, which skips the hundreds of
  steps an MLM head otherwise spends learning how frequent each token is (the reference starts it at zero:
  output_bias="zeros");
- with no sentence task (MLM only) the pooler and the sentence head stay as initialised: nothing trains them, and
  DistributedDataParallel waits for a gradient of every parameter that requires one.
"""

from __future__ import annotations

import math

import torch

from ..choices import OUTPUT_BIASES, POSITION_INITS
from ..model.albert import AlbertForPreTraining
from ..model.config import AlbertConfig
from ..text.batches import unigram_log_prior
from ..text.instances import sentence_task

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["build_pretraining_model"]


def build_pretraining_model(config: AlbertConfig, task: str = "sop", train_documents=None,
                            log_prior: torch.Tensor | None = None, seed: int = 0,
                            output_bias: str = "unigram", position_init: str = "normal") -> AlbertForPreTraining:
    """An AlbertForPreTraining drawn from `seed` (torch's global generator), ready to pretrain with `task`.

    output_bias="unigram" needs the tokenized training text (`train_documents`, anything
    albert_mini.text.batches.unigram_log_prior reads) or its prior already computed (`log_prior`).
    position_init="sinusoidal" (a recipe probe's option) starts the position table as sine waves.
    """
    labelled = sentence_task(task).labelled  # an unknown task fails before anything is built
    if output_bias not in OUTPUT_BIASES:
        raise ValueError(f"unknown output_bias {output_bias!r}; choose one of {', '.join(OUTPUT_BIASES)}")
    if output_bias == "unigram" and log_prior is None and train_documents is None:
        raise ValueError("output_bias='unigram' needs train_documents (or their log_prior); pass them, or "
                         "output_bias='zeros' for the reference's start")
    prior = None  # the text's log frequencies, counted before the model is drawn (they draw nothing)
    if output_bias == "unigram":
        prior = log_prior if log_prior is not None else unigram_log_prior(train_documents, config.vocab_size)
    torch.manual_seed(seed)
    model = AlbertForPreTraining(config)
    if prior is not None:
        model.init_output_bias(prior)
    if position_init == "sinusoidal":
        init_sinusoidal_positions(model)
    elif position_init != "normal":
        raise ValueError(f"unknown position_init {position_init!r}; choose one of {', '.join(POSITION_INITS)}")
    train_sentence_head(model, labelled)
    return model


def train_sentence_head(model: AlbertForPreTraining, trained: bool) -> None:
    """Freeze (or unfreeze) the pooler and the sentence head: with no sentence task nothing trains them."""
    model.albert.pooler.requires_grad_(trained)
    model.sop_classifier.requires_grad_(trained)


@torch.no_grad()
def init_sinusoidal_positions(model: AlbertForPreTraining) -> None:
    """Position embeddings start as sin/cos waves (std = initializer_range) instead of random draws."""
    table = model.albert.embeddings.position_embeddings.weight
    T, E = table.shape
    position = torch.arange(T, dtype=torch.float32)[:, None]  # (T, 1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, E, 2, dtype=torch.float32) / E)[None, :]  # (1, E/2)
    waves = torch.zeros(T, E)
    waves[:, 0::2], waves[:, 1::2] = torch.sin(position * freq), torch.cos(position * freq)
    table.copy_(waves / waves.std() * model.config.initializer_range)
