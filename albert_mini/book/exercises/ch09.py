"""Checks for Chapter 9 (scaling up): training memory and the MLM head's compute."""

from __future__ import annotations

import random

from ...model.config import PRESETS, AlbertConfig
from ...study.memory import OPTIMIZER_STATES, parameter_bytes
from .checking import check_against_reference

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["mlm_head_flops_per_token"]


def _reference_memory(n_params: int, optimizer: str = "adamw") -> int:
    return parameter_bytes(n_params, optimizer)


def _memory_cases(seed: int = 9):
    rng = random.Random(seed)
    counts = [0, 1, 11_683_584, 334_607_360, 222_595_584] + [rng.randint(1, 2_000_000_000) for _ in range(4)]
    return [((n, optimizer), {}) for n in counts for optimizer in OPTIMIZER_STATES]


def check_training_memory_bytes(fn) -> bool:
    """Compare training_memory_bytes(n_params, optimizer) with fp32 weights + gradients + optimizer states."""
    return check_against_reference(
        "training_memory_bytes", fn, _reference_memory, _memory_cases(),
        hint="every fp32 value is 4 bytes; count the weight, its gradient and each optimizer state per parameter "
             "(plain SGD keeps none, SGD with momentum one, AdamW and LAMB two: m and v).",
    )


def mlm_head_flops_per_token(config: AlbertConfig) -> int:
    H, E, V = config.hidden_size, config.embedding_size, config.vocab_size
    return 2 * (H * E + E * V)


def _head_cases(seed: int = 9):
    rng = random.Random(seed)
    configs = [AlbertConfig.from_preset(name) for name in PRESETS]
    for _ in range(4):
        H = 64 * rng.randint(1, 8)
        configs.append(AlbertConfig(vocab_size=rng.randint(100, 50000), embedding_size=rng.choice([16, 64, 128, H]),
                                    hidden_size=H, num_attention_heads=4, intermediate_size=4 * H))
    return [((config,), {}) for config in configs]


def check_mlm_head_flops_per_token(fn) -> bool:
    """Compare mlm_head_flops_per_token(config) with 2 x (H*E + E*V) on every preset and random configs."""
    return check_against_reference(
        "mlm_head_flops_per_token", fn, mlm_head_flops_per_token, _head_cases(),
        hint="the head maps H -> E (dense), then E -> V (the decoder tied to the word embeddings); a multiply-add "
             "is 2 FLOPs; leave out biases, the activation and the LayerNorm.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "training_memory_bytes": [parameter_bytes],
    "mlm_head_flops_per_token": [mlm_head_flops_per_token],
}
KEY_NUMBERS = {  # the head's forward FLOPs per predicted position of ALBERT-base and BERT-base
    "mlm_head_flops_per_token": [mlm_head_flops_per_token(AlbertConfig.from_preset(name))
                                 for name in ("albert-base", "bert-base")],
}
