"""Checks for Chapter 1 (why ALBERT): the order of operations in a post-LN transformer layer."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .checking import check_against_reference


def post_ln_block(h, attention, ffn, norm_1, norm_2):
    """BERT's (and ALBERT's) layer: add each sub-layer's output to its input, then normalize."""
    a = norm_1(h + attention(h))
    return norm_2(a + ffn(a))


class _Sublayer:
    """A fixed, seeded stand-in for a sub-layer (attention, FFN or LayerNorm) that prints its role and seed."""

    def __init__(self, kind: str, width: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.kind, self.seed = kind, seed
        self.w1 = torch.randn(width, width, generator=generator, dtype=torch.float64) / width**0.5
        self.w2 = torch.randn(width, width, generator=generator, dtype=torch.float64) / width**0.5
        self.gamma = 1.0 + 0.5 * torch.randn(width, generator=generator, dtype=torch.float64)
        self.beta = 0.5 * torch.randn(width, generator=generator, dtype=torch.float64)

    def __call__(self, x):
        if self.kind == "attention":  # mixes positions, like attention does: softmax weights over the sequence
            weights = (x @ self.w1 @ x.transpose(-2, -1)).softmax(dim=-1)  # (B, T, T)
            return weights @ x @ self.w2
        if self.kind == "ffn":
            return F.gelu(x @ self.w1) @ self.w2
        return F.layer_norm(x, x.shape[-1:], self.gamma, self.beta, eps=1e-12)

    def __repr__(self) -> str:
        return f"<{self.kind} seed={self.seed}>"


def _cases():
    cases = []
    for seed, (B, T, H) in enumerate([(1, 3, 4), (2, 5, 8), (3, 7, 16)]):
        h = 2.0 * torch.randn(B, T, H, generator=torch.Generator().manual_seed(100 + seed), dtype=torch.float64)
        parts = [_Sublayer(kind, H, 10 * seed + i) for i, kind in enumerate(("attention", "ffn", "norm", "norm"))]
        cases.append(((h, *parts), {}))
    return cases


def check_post_ln_block(fn) -> bool:
    """Check `fn(h, attention, ffn, norm_1, norm_2)` against the post-LN order on seeded sub-layers."""
    return check_against_reference(
        "post_ln_block", fn, post_ln_block, _cases(), rtol=1e-9, atol=1e-10,
        hint="two steps, each 'sub-layer, add the input back, then normalize': first with attention and "
             "norm_1, then with ffn and norm_2 on the result of the first step.",
    )


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {"post_ln_block": [post_ln_block]}
KEY_NUMBERS: dict[str, list] = {}
