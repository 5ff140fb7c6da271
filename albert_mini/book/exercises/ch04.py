"""Checks for Chapter 4 (cross-layer parameter sharing): the layer schedule of groups, the sharing plan."""

from __future__ import annotations

import numpy as np

from ...model.albert import AlbertTransformer
from ...model.config import AlbertConfig
from ...model.sharing import STRATEGIES
from .checking import Case, Exercise, Mistake, WrongForm, int_list, kind_of

# (i, L, G) where the floating-point formula int(i / L * G) of the original code picks the wrong group.
FLOAT_FORMULA_TRAPS = [(15, 22, 22), (13, 23, 23), (30, 44, 22), (26, 46, 23), (3, 47, 47), (31, 39, 39)]
# The package functions that would answer either exercise: building an encoder asks the config for its plan.
_PLAN_FUNCTIONS = ("albert_mini.model.config:AlbertConfig.layer_to_group",
                   "albert_mini.model.albert:AlbertTransformer.layer_plan")


def _tiny_config(strategy: str, L: int, G: int = 1, K: int = 1) -> AlbertConfig:
    G, K = STRATEGIES[strategy].required_groups(L) or (G, K)  # e.g. "none" needs G = L
    return AlbertConfig(vocab_size=16, embedding_size=8, hidden_size=8, num_hidden_layers=L, num_attention_heads=1,
                        intermediate_size=16, max_position_embeddings=8, sharing=strategy,
                        num_hidden_groups=G, inner_group_num=K)


# ------------------------------------------------------------------------------------------- Exercise 1
def _reference_schedule(L: int, G: int, K: int) -> list[int]:
    """Read the schedule off a built encoder: the storage index (group * K + inner) of every layer step run."""
    encoder = AlbertTransformer(_tiny_config("all", L, G, K))
    stored = [id(layer) for group in encoder.albert_layer_groups for layer in group.albert_layers]
    return [stored.index(id(layer)) for g in encoder.layer_plan()
            for layer in encoder.albert_layer_groups[g].albert_layers]


_SCHEDULE_FIXED = ([Case((12, 1, 1)), Case((1, 1, 1)), Case((4, 4, 1)), Case((6, 3, 2)), Case((8, 2, 3)),
                    Case((12, 12, 1)), Case((24, 4, 2)), Case((6, 1, 3))]
                   + [Case((L, G, 1), note="a shape where rounding in floating point picks the wrong group")
                      for _, L, G in FLOAT_FORMULA_TRAPS])


def _drawn_shapes(rng: np.random.Generator, count: int = 16) -> list[Case]:
    cases = []
    for _ in range(count):
        L = int(rng.integers(1, 49))
        divisors = [d for d in range(1, L + 1) if L % d == 0]
        cases.append(Case((L, int(divisors[int(rng.integers(len(divisors)))]), int(rng.integers(1, 4)))))
    return cases


def _schedule(group_of, numbering=lambda g, k, G, K: g * K + k):
    """A schedule from a rule for the group of application i and for a stored layer's number."""
    return lambda L, G, K: [numbering(group_of(i, L, G), k, G, K) for i in range(L) for k in range(K)]


def _is(variant):
    return lambda got, expected, args, kwargs: got != expected and got == variant(*args, **kwargs)


SCHEDULE = Exercise(
    "layer_schedule", "04", _reference_schedule, _SCHEDULE_FIXED, drawn=_drawn_shapes,
    normalize=lambda value: int_list(value, "the schedule"),
    hints=("revisit \"Groups and inner groups\": which group does each layer application run, and what runs "
           "each time a group is called?",
           "work the mixed example of that section (L = 6, G = 3, K = 2) out by hand from its printed plan, and "
           "compare it with what your function returns for that shape."),
    mistakes=(
        Mistake(_is(_schedule(lambda i, L, G: int(i / L * G))),
                "that is the floating-point formula of the original code: for this shape rounding puts an "
                "application into the previous group. Stay in the integers."),
        Mistake(_is(_schedule(lambda i, L, G: i % G)),
                "consecutive applications share a group (with L = 6 and G = 3 the groups run 0, 0, 1, 1, 2, 2), "
                "they do not take turns."),
        Mistake(_is(_schedule(lambda i, L, G: min((i + 1) * G // L, G - 1))),
                "off by one: application 0 runs group 0; count applications from 0."),
        Mistake(lambda got, expected, args, kwargs: args[2] > 1 and len(got) == args[0],
                "each call of a group runs all K of its inner layers: the list has L·K entries."),
        Mistake(lambda got, expected, args, kwargs: args[2] > 1 and got != expected and got == _schedule(
            lambda i, L, G: i * G // L, lambda g, k, G, K: g + k * G)(*args),
            "stored layers are numbered group by group: inner layer k of group g is number g·K + k."),
    ),
    unavailable=_PLAN_FUNCTIONS,
)


# ------------------------------------------------------------------------------------------- Exercise 2
def _reference_plan(strategy: str, L: int) -> list[tuple[int, int]]:
    """Read the plan off a built encoder: label attention/FFN modules by object identity, in order of first use."""
    encoder = AlbertTransformer(_tiny_config(strategy, L))
    attention_ids, ffn_ids, plan = {}, {}, []
    for group in encoder.layer_plan():
        layer = encoder.albert_layer_groups[group].albert_layers[0]
        plan.append((attention_ids.setdefault(id(layer.attention), len(attention_ids)),
                     ffn_ids.setdefault(id(layer.ffn), len(ffn_ids))))
    return plan


def block_pairs(value) -> list[tuple[int, int]]:
    """A list of (attention block, FFN block) pairs; each pair a tuple or list of two ints."""
    if type(value) not in (list, tuple):
        raise WrongForm(f"returned {kind_of(value)}; return a list of (attention_block, ffn_block) pairs")
    pairs = []
    for item in value:
        if type(item) not in (list, tuple) or len(item) != 2:
            raise WrongForm(f"the plan holds {kind_of(item)}; each item is a pair (attention_block, ffn_block)")
        pairs.append(tuple(int_list(item, "a pair of the plan")))
    return pairs


def _plan_cases(lengths) -> list[Case]:
    return [Case((strategy, int(L))) for L in lengths for strategy in STRATEGIES]


def _right_plan(strategy: str, L: int) -> list[tuple[int, int]]:
    attention_shared, ffn_shared = strategy in ("all", "attention"), strategy in ("all", "ffn")
    return [(0 if attention_shared else i, 0 if ffn_shared else i) for i in range(L)]


_OTHER_BLOCK = {"attention": "ffn", "ffn": "attention"}

PLAN = Exercise(
    "sharing_plan", "04", _reference_plan, _plan_cases([1, 2, 3, 6, 12]),
    drawn=lambda rng: _plan_cases(rng.integers(2, 25, size=3)), normalize=block_pairs,
    hints=("revisit the table of the four strategies at the start of the chapter: which blocks does each one "
           "keep once, and which once per application?",
           "a block gets the next free number the first time an application uses it, so application 0 always "
           "starts at (0, 0)."),
    mistakes=(
        Mistake(lambda got, expected, args, kwargs: got == _right_plan(_OTHER_BLOCK.get(args[0], args[0]), args[1])
                and args[0] in _OTHER_BLOCK,
                "the strategy names the block that is shared: with \"attention\" every application uses "
                "attention block 0 and has an FFN block of its own, and the other way round for \"ffn\"."),
        Mistake(lambda got, expected, args, kwargs: got == [(a + 1, f + 1) for a, f in expected],
                "blocks are numbered from 0."),
        Mistake(lambda got, expected, args, kwargs: args[0] == "all" and got == _right_plan("none", args[1]),
                "\"all\" shares both blocks: every application uses the same attention and FFN block."),
        Mistake(lambda got, expected, args, kwargs: args[0] == "none" and got == _right_plan("all", args[1]),
                "\"none\" shares nothing: every application has blocks of its own."),
        Mistake(lambda got, expected, args, kwargs: len(got) != len(expected),
                "one pair per layer application: the plan has L pairs."),
    ),
    unavailable=_PLAN_FUNCTIONS,
)
EXERCISES = [SCHEDULE, PLAN]


def check_layer_schedule(fn) -> bool:
    """Compare layer_schedule(L, G, K) with the layers a built encoder runs, on fixed and random shapes."""
    return SCHEDULE.check(fn)


def check_sharing_plan(fn) -> bool:
    """Compare sharing_plan(strategy, L) with the blocks that built models actually use."""
    return PLAN.check(fn)


# What a student notebook must not show (tests/book/test_student_notebooks.py): for each exercise, the functions
# whose source answers it, and the numbers it asks for.
ANSWERS = {
    "layer_schedule": [_reference_schedule, AlbertConfig.layer_to_group, AlbertTransformer.layer_plan,
                       AlbertTransformer.forward],
    "sharing_plan": [_reference_plan],
}
KEY_NUMBERS: dict[str, list] = {}
