"""Checks for Chapter 1 (why ALBERT): the order of operations in a post-LN transformer layer."""

from __future__ import annotations

import numpy as np
import torch

from ..answering import Sublayer
from .checking import Case, Exercise, Mistake, WrongForm, close, kind_of


def post_ln_block(h, attention, ffn, norm_1, norm_2):
    """BERT's (and ALBERT's) layer: add each sub-layer's output to its input, then normalize."""
    a = norm_1(h + attention(h))
    return norm_2(a + ffn(a))


# ------------------------------------------------------------------------------------------- cases
_KINDS = ("attention", "ffn", "norm", "norm")


def _case(B: int, T: int, H: int, h_seed: int, layer_seed: int, note: str = "") -> Case:
    """A float64 input of shape (B, T, H) and four seeded sub-layers of width H (plain data and builders)."""
    h = 2.0 * torch.from_numpy(np.random.default_rng(h_seed).standard_normal((B, T, H)))
    return Case((h, *(Sublayer(kind, H, layer_seed + i) for i, kind in enumerate(_KINDS))), note=note)


_FIXED = [_case(1, 3, 4, 100, 0, "one sequence of three positions"), _case(2, 5, 8, 101, 10),
          _case(3, 7, 16, 102, 20)]


def _drawn(rng: np.random.Generator) -> list[Case]:
    return [_case(int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.choice([4, 8, 12, 16])),
                  int(rng.integers(0, 2**31)), int(rng.integers(0, 2**20))) for _ in range(3)]


def _a_tensor(value) -> torch.Tensor:
    """The layer's output: a tensor (or array) of numbers; anything else is the wrong kind of answer."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor) or value.is_complex() or value.dtype == torch.bool:
        raise WrongForm(f"returned {kind_of(value)}; return the layer's output, a tensor shaped like h")
    return value


# ------------------------------------------------------------------------------------------- common mistakes
def _pre_ln(h, attention, ffn, norm_1, norm_2):
    x = h + attention(norm_1(h))
    return x + ffn(norm_2(x))


def _no_residual(h, attention, ffn, norm_1, norm_2):
    return norm_2(ffn(norm_1(attention(h))))


def _normalize_then_add(h, attention, ffn, norm_1, norm_2):
    a = h + norm_1(attention(h))
    return a + norm_2(ffn(a))


def _swapped_norms(h, attention, ffn, norm_1, norm_2):
    return post_ln_block(h, attention, ffn, norm_2, norm_1)


def _residual_from_h(h, attention, ffn, norm_1, norm_2):
    a = norm_1(h + attention(h))
    return norm_2(h + ffn(a))


def _one_step(h, attention, ffn, norm_1, norm_2):
    return norm_1(h + attention(h))


def _is(order):
    """A test: the answer is what `order` computes on the case's own input and sub-layers."""
    def test(got, expected, args, kwargs) -> bool:
        with torch.no_grad():
            return close(got, order(*args, **kwargs), 1e-9, 1e-10)
    return test


POST_LN = Exercise(
    "post_ln_block", "01", post_ln_block, _FIXED, drawn=_drawn, normalize=_a_tensor, rtol=1e-9, atol=1e-10,
    keep_inputs=True,
    hints=("revisit what \"post-LN\" means: where each LayerNorm sits relative to the residual addition "
           "(the figure above draws both placements).",
           "the layer is two steps of one shape, and the second step starts from what the first one returned."),
    mistakes=(
        Mistake(_is(_pre_ln), "that is the pre-LN order: it normalizes before each sub-layer. In post-LN the "
                              "LayerNorm comes last in each step, after the residual addition."),
        Mistake(_is(_no_residual), "the residual connections are missing: each step adds its input back to "
                                   "the sub-layer's output."),
        Mistake(_is(_normalize_then_add), "you normalize the sub-layer's output and then add the input; post-LN "
                                          "adds first and normalizes the sum."),
        Mistake(_is(_swapped_norms), "the two LayerNorms are swapped: norm_1 closes the attention step, norm_2 "
                                     "the feed-forward step."),
        Mistake(_is(_residual_from_h), "the second residual adds the layer's input h; it should add the input "
                                       "of the feed-forward step."),
        Mistake(_is(_one_step), "that is the output of the attention step alone; the feed-forward step follows."),
    ),
)
EXERCISES = [POST_LN]


def check_post_ln_block(fn) -> bool:
    """Check `fn(h, attention, ffn, norm_1, norm_2)` against the post-LN order on seeded sub-layers."""
    return POST_LN.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {"post_ln_block": [post_ln_block]}
KEY_NUMBERS: dict[str, list] = {}
