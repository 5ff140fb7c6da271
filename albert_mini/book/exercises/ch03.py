"""Checks for Chapter 3 (factorized embeddings): the word table's parameters, the break-even E, the MLM head."""

from __future__ import annotations

import numpy as np

from ...model.config import AlbertConfig
from ...model.counting import closed_form_breakdown
from .checking import check_against_reference

# (V, H) pairs from real vocabularies and widths; (21128, 2048) and (3, 3) are where the projection bias changes
# the break-even size, so an answer that forgets it cannot pass by luck.
_VOCAB_WIDTH = [(30000, 768), (30000, 4096), (8000, 256), (21128, 2048), (3, 3), (30000, 128)]


def factorized_embedding_params(V: int, E: int, H: int) -> int:
    """Parameters of a V x E word table followed by an E -> H projection with bias."""
    return V * E + E * H + H


def break_even_embedding_size(V: int, H: int) -> int:
    """Smallest E at which the factorized word table (projection and bias included) is no smaller than V x H."""
    # V*E + E*H + H >= V*H  <=>  E >= H*(V-1) / (V+H); ceiling in integers so no float rounding can creep in
    return -(-(H * (V - 1)) // (V + H))


def mlm_head_params(V: int, E: int, H: int) -> int:
    """Parameters of ALBERT's MLM head (H -> E dense, LayerNorm, output bias; decoder weight tied)."""
    return closed_form_breakdown(_config(V, E, H), heads=True)["mlm_head"]


def _config(V: int, E: int, H: int) -> AlbertConfig:
    """A config of these widths; everything else is irrelevant to the counts asked for."""
    return AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H, num_attention_heads=1)


def _random_shapes(seed: int, n: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(2, 60000)), int(rng.integers(1, 1024)), int(rng.integers(1, 8192))) for _ in range(n)]


def _shape_cases() -> list[tuple[tuple, dict]]:
    fixed = [(30000, 128, 768), (30000, 128, 4096), (8000, 128, 256), (30000, 768, 768), (3, 1, 3)]
    return [((V, E, H), {}) for V, E, H in fixed + _random_shapes(seed=3, n=8)]


def check_factorized_embedding_params(fn) -> bool:
    """Check `fn(V, E, H)` against the count of Embedding(V, E) followed by Linear(E, H)."""
    return check_against_reference(
        "factorized_embedding_params", fn, factorized_embedding_params, _shape_cases(),
        hint="count every tensor: the V x E table, the E x H projection matrix and the projection's bias of size H.",
    )


def check_break_even_embedding_size(fn) -> bool:
    """Check `fn(V, H)`: the smallest integer E whose factorized word table is at least V * H parameters."""
    rng = np.random.default_rng(4)
    random = [(int(rng.integers(2, 60000)), int(rng.integers(1, 8192))) for _ in range(8)]
    cases = [((V, H), {}) for V, H in _VOCAB_WIDTH + random]
    return check_against_reference(
        "break_even_embedding_size", fn, break_even_embedding_size, cases,
        hint="write the inequality V*E + E*H + H >= V*H (the bias counts), solve it for E, and return the "
             "smallest integer that satisfies it (a ceiling, not a floor).",
    )


def check_mlm_head_params(fn) -> bool:
    """Check `fn(V, E, H)` against the closed-form count of ALBERT's MLM head."""
    return check_against_reference(
        "mlm_head_params", fn, mlm_head_params, _shape_cases(),
        hint="the head is Linear(H, E), LayerNorm(E) (weight and bias) and an output bias of size V; the E x V "
             "decoder matrix is the word-embedding table itself, so it adds nothing.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "factorized_embedding_params": [factorized_embedding_params],
    "break_even_embedding_size": [break_even_embedding_size],
    "mlm_head_params": [closed_form_breakdown],
}
# Exercise 1 restates the formula the chapter opens with (its counts for ALBERT-base are the chapter's first
# result), so only the numbers of Exercises 2 and 3 must wait for their exercise.
KEY_NUMBERS = {  # at the widths of ALBERT-base and ALBERT-xxlarge (V = 30,000), and for the presets
    "break_even_embedding_size": [break_even_embedding_size(30000, H) for H in (768, 4096)],
    "mlm_head_params": [closed_form_breakdown(AlbertConfig.from_preset(name), heads=True)["mlm_head"]
                        for name in ("albert-mini", "albert-base", "bert-base", "albert-xxlarge")],
}
