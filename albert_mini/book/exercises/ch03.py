"""Checks for Chapter 3 (factorized embeddings): the word table's parameters, the break-even E, the MLM head."""

from __future__ import annotations

import numpy as np

from ...model.config import AlbertConfig
from ...model.counting import closed_form_breakdown
from .checking import Case, Exercise, Mistake, whole_number

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


def _random_shapes(rng: np.random.Generator, n: int) -> list[Case]:
    return [Case((int(rng.integers(2, 60000)), int(rng.integers(1, 1024)), int(rng.integers(1, 8192))))
            for _ in range(n)]


_SHAPES = [Case(shape) for shape in [(30000, 128, 768), (30000, 128, 4096), (8000, 128, 256), (30000, 768, 768),
                                     (3, 1, 3)]]


FACTORIZED = Exercise(
    "factorized_embedding_params", "03", factorized_embedding_params, _SHAPES,
    drawn=lambda rng: _random_shapes(rng, 8), normalize=whole_number,
    hints=("count what each module stores, tensor by tensor: the word table, then the projection from E to H.",
           "a linear layer stores more than its weight matrix."),
    mistakes=(Mistake(lambda got, want, args, kw: got == want - args[2],
                      "you are short by exactly H: the projection has a bias of size H as well as its matrix."),
              Mistake(lambda got, want, args, kw: got == args[0] * args[1],
                      "that is the word table alone; the projection's parameters count too.")),
)

BREAK_EVEN = Exercise(
    "break_even_embedding_size", "03", break_even_embedding_size,
    [Case(pair) for pair in _VOCAB_WIDTH],
    drawn=lambda rng: [Case((int(rng.integers(2, 60000)), int(rng.integers(1, 8192)))) for _ in range(8)],
    normalize=whole_number,
    hints=("factorizing saves parameters only while E is small: find where that stops being true.",
           "the answer is the first whole E that satisfies your inequality: decide which way to round."),
    mistakes=(Mistake(lambda got, want, args, kw: got == want - 1,
                      "one too small: at that E factorizing still saves parameters. You want the first E at which "
                      "it does not (round the other way)."),
              Mistake(lambda got, want, args, kw: got != want and got == -(-(args[1] * args[0]) // (args[0] + args[1])),
                      "close: your inequality leaves out one tensor of the factorized count (look at Exercise 1).")),
)

MLM_HEAD = Exercise(
    "mlm_head_params", "03", mlm_head_params, _SHAPES,
    drawn=lambda rng: _random_shapes(rng, 8), normalize=whole_number,
    unavailable=("albert_mini.model.counting:closed_form_breakdown",),
    hints=("list the head's modules in the order a hidden state goes through them, and count each one's tensors.",
           "one of the head's matrices is not its own: look at what it shares with the embeddings."),
    mistakes=(Mistake(lambda got, want, args, kw: got == want + args[0] * args[1],
                      "the E x V decoder matrix is the word-embedding table itself (tied), so it adds nothing."),
              Mistake(lambda got, want, args, kw: got == want - args[0],
                      "the decoder's matrix is shared, but its output bias of size V is the head's own."),
              Mistake(lambda got, want, args, kw: got == want - 2 * args[1],
                      "LayerNorm has parameters too: a scale and a shift for each of its E features."),
              Mistake(lambda got, want, args, kw: got == want - args[1],
                      "short by exactly E: the dense layer from H to E has a bias too."),
              Mistake(lambda got, want, args, kw: got == args[2] * args[2] + 3 * args[2] + args[0],
                      "that is BERT's head, which transforms at width H; ALBERT's works at the embedding width.")),
)
EXERCISES = [FACTORIZED, BREAK_EVEN, MLM_HEAD]


def check_factorized_embedding_params(fn) -> bool:
    """Check `fn(V, E, H)` against the count of Embedding(V, E) followed by Linear(E, H)."""
    return FACTORIZED.check(fn)


def check_break_even_embedding_size(fn) -> bool:
    """Check `fn(V, H)`: the smallest integer E whose factorized word table is at least V * H parameters."""
    return BREAK_EVEN.check(fn)


def check_mlm_head_params(fn) -> bool:
    """Check `fn(V, E, H)` against the closed-form count of ALBERT's MLM head."""
    return MLM_HEAD.check(fn)


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
