"""Checks for Chapter 4 (cross-layer parameter sharing)."""

from __future__ import annotations

import random

from ...model.albert import AlbertTransformer
from ...model.config import AlbertConfig
from ...model.sharing import STRATEGIES
from .checking import check_against_reference

# (i, L, G) where the floating-point formula int(i / L * G) of the original code picks the wrong group.
FLOAT_FORMULA_TRAPS = [(15, 22, 22), (13, 23, 23), (30, 44, 22), (26, 46, 23), (3, 47, 47), (31, 39, 39)]


def _tiny_config(strategy: str, L: int, G: int = 1, K: int = 1) -> AlbertConfig:
    G, K = STRATEGIES[strategy].required_groups(L) or (G, K)  # e.g. "none" needs G = L
    return AlbertConfig(vocab_size=16, embedding_size=8, hidden_size=8, num_hidden_layers=L, num_attention_heads=1,
                        intermediate_size=16, max_position_embeddings=8, sharing=strategy,
                        num_hidden_groups=G, inner_group_num=K)


def _reference_schedule(L: int, G: int, K: int) -> list[int]:
    """Read the schedule off a built encoder: the storage index (group * K + inner) of every layer step run."""
    encoder = AlbertTransformer(_tiny_config("all", L, G, K))
    stored = [id(layer) for group in encoder.albert_layer_groups for layer in group.albert_layers]
    return [stored.index(id(layer)) for g in encoder.layer_plan()
            for layer in encoder.albert_layer_groups[g].albert_layers]


def _schedule_cases(seed: int = 4, count: int = 16):
    rng = random.Random(seed)
    fixed = [(12, 1, 1), (1, 1, 1), (4, 4, 1), (6, 3, 2), (8, 2, 3), (12, 12, 1), (24, 4, 2), (6, 1, 3)]
    fixed += [(L, G, 1) for _, L, G in FLOAT_FORMULA_TRAPS]
    cases = list(fixed)
    while len(cases) < len(fixed) + count:
        L = rng.randint(1, 48)
        cases.append((L, rng.choice([d for d in range(1, L + 1) if L % d == 0]), rng.randint(1, 3)))
    return [(case, {}) for case in cases]


def check_layer_schedule(fn) -> bool:
    """Compare layer_schedule(L, G, K) with the layers a built encoder runs, on fixed and random shapes."""
    return check_against_reference(
        "layer_schedule", fn, _reference_schedule, _schedule_cases(),
        hint="L * K entries: application i runs group i * G // L (integers only: floats turn 15 / 22 * 22 into "
             "14.999...), and a call of group g runs its layers g * K, g * K + 1, ..., g * K + K - 1 in order.",
    )


def _reference_plan(strategy: str, L: int) -> list[tuple[int, int]]:
    """Read the plan off a built encoder: label attention/FFN modules by object identity, in order of first use."""
    encoder = AlbertTransformer(_tiny_config(strategy, L))
    attention_ids, ffn_ids, plan = {}, {}, []
    for group in encoder.layer_plan():
        layer = encoder.albert_layer_groups[group].albert_layers[0]
        plan.append((attention_ids.setdefault(id(layer.attention), len(attention_ids)),
                     ffn_ids.setdefault(id(layer.ffn), len(ffn_ids))))
    return plan


def _plan_cases(seed: int = 4):
    rng = random.Random(seed)
    lengths = [1, 2, 3, 6, 12] + [rng.randint(2, 24) for _ in range(3)]
    return [((strategy, L), {}) for L in lengths for strategy in STRATEGIES]


def check_sharing_plan(fn) -> bool:
    """Compare sharing_plan(strategy, L) with the blocks that built models actually use."""
    return check_against_reference(
        "sharing_plan", fn, _reference_plan, _plan_cases(),
        hint="return one (attention_block, ffn_block) pair per layer application; a shared block is block 0 "
             "for every application, an unshared one is numbered by the application that owns it (0-based).",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "layer_schedule": [_reference_schedule, AlbertConfig.layer_to_group, AlbertTransformer.layer_plan,
                       AlbertTransformer.forward],
    "sharing_plan": [_reference_plan],
}
KEY_NUMBERS: dict[str, list] = {}
