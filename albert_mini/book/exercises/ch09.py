"""Checks for Chapter 9 (scaling up): training memory and the MLM head's compute."""

from __future__ import annotations

import numpy as np

from ...model.config import PRESETS, AlbertConfig
from ...study.memory import OPTIMIZER_STATES, parameter_bytes
from ...study.throughput import mlm_head_flops_per_token as package_head_flops
from ..answering import Config
from .checking import Case, Exercise, Mistake, whole_number


def _whole_number(value) -> int:
    """A count of bytes or FLOPs."""
    return whole_number(value, "return an int (in bytes or FLOPs, not in GB or GFLOPs)")


# ------------------------------------------------------------------------------------------- Exercise 1
# The references are written here, apart from the package's functions (those are switched off while an answer,
# the reference included, is checked); tests/book/test_exercises_ch09.py shows that they agree with the package,
# and tests/book/test_exercises_twins.py compares each word-for-word copy with its original on every case.
def training_memory_bytes(n_params: int, optimizer: str = "adamw") -> int:
    """fp32 bytes of the weights, their gradients and the optimizer's states (study.memory.parameter_bytes)."""
    return 4 * (2 + OPTIMIZER_STATES[optimizer]) * n_params


def _memory_cases(counts) -> list[Case]:
    return [Case((n, optimizer)) for n in counts for optimizer in OPTIMIZER_STATES]


def _states(optimizer: str) -> int:
    return OPTIMIZER_STATES[optimizer]


MEMORY = Exercise(
    "training_memory_bytes", "09", training_memory_bytes,
    _memory_cases([0, 1, 11_683_584, 334_607_360, 222_595_584]),
    drawn=lambda rng: _memory_cases([int(n) for n in rng.integers(1, 2_000_000_000, size=4)]),
    normalize=_whole_number, unavailable=("albert_mini.study.memory:parameter_bytes",),
    hints=("revisit what a training step keeps for every parameter: the weight itself, and what the backward pass "
           "and the optimizer add to it.",
           "count the fp32 values per parameter for the failing optimizer first, then turn values into bytes."),
    mistakes=(
        Mistake(lambda got, want, args, kw: args[0] > 0 and got == want // 4,
                "that counts values: every fp32 value takes 4 bytes."),
        Mistake(lambda got, want, args, kw: args[0] > 0 and got == want * 8,
                "that is bits: an fp32 value is 32 bits, 4 bytes."),
        Mistake(lambda got, want, args, kw: args[0] > 0 and got == 4 * (1 + _states(args[1])) * args[0],
                "one fp32 value per parameter is missing: count the weight, its gradient and each of this "
                "optimizer's states."),
        Mistake(lambda got, want, args, kw: args[0] > 0 and got == 4 * args[0],
                "that is the weights alone: training also keeps their gradients and the optimizer's states."),
        Mistake(lambda got, want, args, kw: args[0] > 0 and got != want and got % (4 * args[0]) == 0,
                "the right kind of count, with the wrong number of optimizer states for this optimizer: plain "
                "SGD keeps none, SGD with momentum one, AdamW and LAMB two."),
    ),
)


# ------------------------------------------------------------------------------------------- Exercise 2
def mlm_head_flops_per_token(config: AlbertConfig) -> int:
    """Forward FLOPs of the MLM head at one predicted position (study.throughput.mlm_head_flops_per_token)."""
    H, E, V = config.hidden_size, config.embedding_size, config.vocab_size
    return 2 * (H * E + E * V)


def _head_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(4):
        H = 64 * int(rng.integers(1, 9))
        fields = {"vocab_size": int(rng.integers(100, 50_001)), "embedding_size": int(rng.choice([16, 64, 128, H])),
                  "hidden_size": H, "num_attention_heads": 4, "intermediate_size": 4 * H}
        cases.append(Case((Config(fields),)))
    return cases


def _widths(args) -> tuple[int, int, int]:
    config = args[0]
    return config.hidden_size, config.embedding_size, config.vocab_size


def _head_is(formula):
    """A mistake test: the answer is `formula(H, E, V)`."""
    return lambda got, want, args, kw: got != want and got == formula(*_widths(args))


HEAD_FLOPS = Exercise(
    "mlm_head_flops_per_token", "09", mlm_head_flops_per_token,
    [Case((Config(AlbertConfig.from_preset(name).to_dict()),), note=name) for name in PRESETS],
    drawn=_head_cases, normalize=_whole_number,
    unavailable=("albert_mini.study.throughput:mlm_head_flops_per_token",),
    hints=("revisit the head's two matrix products in the order a hidden state meets them, with the width of "
           "what goes in and what comes out of each.",
           "count the multiply-adds of each product from its two widths, then turn multiply-adds into FLOPs."),
    mistakes=(
        Mistake(lambda got, want, args, kw: 2 * got == want,
                "those are multiply-adds: a multiply-add is 2 FLOPs."),
        Mistake(_head_is(lambda H, E, V: 2 * E * V),
                "the dense layer from H to E runs before the decoder and costs its own multiply-adds."),
        Mistake(_head_is(lambda H, E, V: 2 * H * E),
                "the decoder to V vocabulary logits is missing, and it is the bulk of the head's cost."),
        Mistake(_head_is(lambda H, E, V: 2 * (H * E + H * V)),
                "the decoder works at width E, not H: it maps the E-wide vector to the V logits."),
        Mistake(_head_is(lambda H, E, V: 2 * (H * H + E * V)),
                "the dense layer maps H to E, not H to H (that is BERT's transform, where E = H)."),
        Mistake(lambda got, want, args, kw: got - want in (sum(_widths(args)[1:]), 2 * sum(_widths(args)[1:])),
                "leave out the biases, as the text says: count the matrix products only."),
    ),
)
EXERCISES = [MEMORY, HEAD_FLOPS]


def check_training_memory_bytes(fn) -> bool:
    """Check `training_memory_bytes(n_params, optimizer)`: fp32 weights + gradients + optimizer states, in bytes."""
    return MEMORY.check(fn)


def check_mlm_head_flops_per_token(fn) -> bool:
    """Check `mlm_head_flops_per_token(config)` on every preset and on drawn configs."""
    return HEAD_FLOPS.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "training_memory_bytes": [parameter_bytes, training_memory_bytes],
    "mlm_head_flops_per_token": [package_head_flops, mlm_head_flops_per_token],
}
KEY_NUMBERS = {  # the head's forward FLOPs per predicted position of ALBERT-base and BERT-base
    "mlm_head_flops_per_token": [mlm_head_flops_per_token(AlbertConfig.from_preset(name))
                                 for name in ("albert-base", "bert-base")],
}
