"""Chapter 4 exercise checks accept the reference answers and reject stubs and plausible mistakes."""

import pytest

from albert_mini.book.exercises import ExerciseFailed, check_layer_schedule, check_sharing_plan
from albert_mini.book.exercises.ch04 import FLOAT_FORMULA_TRAPS


def right_schedule(L, G, K):
    return [(i * G // L) * K + k for i in range(L) for k in range(K)]


def stub(*args):
    raise NotImplementedError


def test_layer_schedule_accepts_reference():
    assert check_layer_schedule(right_schedule)


def test_float_traps_really_are_traps():
    assert all(int(i / L * G) != i * G // L for i, L, G in FLOAT_FORMULA_TRAPS)


@pytest.mark.parametrize("wrong", [
    lambda L, G, K: [int(i / L * G) * K + k for i in range(L) for k in range(K)],  # the original TF float formula
    lambda L, G, K: [min((i + 1) * G // L, G - 1) * K + k for i in range(L) for k in range(K)],  # off by one
    lambda L, G, K: [(i % G) * K + k for i in range(L) for k in range(K)],  # round-robin groups
    lambda L, G, K: [i * G // L for i in range(L)],  # forgets the inner layers
    lambda L, G, K: [(i * G // L) + k * G for i in range(L) for k in range(K)],  # numbers layers inner-major
], ids=["tf-float", "off-by-one", "round-robin", "no-inner", "inner-major"])
def test_layer_schedule_rejects(wrong):
    with pytest.raises(ExerciseFailed):
        check_layer_schedule(wrong)


def right_plan(strategy, L):
    return [(0 if strategy in ("all", "attention") else i, 0 if strategy in ("all", "ffn") else i) for i in range(L)]


def test_sharing_plan_accepts_reference():
    assert check_sharing_plan(right_plan)


def test_sharing_plan_accepts_lists_of_lists():
    assert check_sharing_plan(lambda s, L: [list(pair) for pair in right_plan(s, L)])


@pytest.mark.parametrize("wrong", [
    lambda s, L: right_plan({"attention": "ffn", "ffn": "attention"}.get(s, s), L),  # strategies swapped
    lambda s, L: [(a + 1, f + 1) for a, f in right_plan(s, L)],  # 1-based block numbers
    lambda s, L: right_plan("none" if s == "all" else s, L),  # "all" read as "nothing shared"
    lambda s, L: right_plan(s, L)[:-1],  # one application missing
], ids=["swapped", "one-based", "all-as-none", "short"])
def test_sharing_plan_rejects(wrong):
    with pytest.raises(ExerciseFailed):
        check_sharing_plan(wrong)


@pytest.mark.parametrize("check", [check_layer_schedule, check_sharing_plan])
def test_a_stub_is_not_attempted_yet(check, capsys):
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(stub) is False
    assert ": not attempted yet;" in capsys.readouterr().out
