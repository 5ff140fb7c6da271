"""What the chapters' exercise tests (test_exercises_chNN.py) share: a stub, the grader's seed, assertions on what a
check prints, answers that claim to equal anything, and the assertions every chapter makes of its hints.

Every test there starts as a learner's first try: the fixture `first_try` (tests/book/conftest.py), which each
module asks for with `pytestmark`. The grader's verdict on a function is `exercise.verdict(fn, seed)`: cases drawn
from `seed` (GRADER_SEED where a test needs no other), which the learner never sees.
"""

import re
import runpy

GRADER_SEED = 20240601  # a seed of the grader's: its cases differ from the learner's (the exercise's own seed)


def not_written(*args, **kwargs):
    """A learner's stub, as the chapters hand it out."""
    raise NotImplementedError("write your solution here")


def hint_of(printed: str) -> str:
    """The first hint line of what a check printed."""
    return re.search(r"hint: (.*)", printed).group(1)


def squeeze(text: str) -> str:
    """Text without its whitespace, so `a + b` and `a+b` compare alike."""
    return re.sub(r"\s+", "", text)


# ------------------------------------------------------------------ what a check prints
def fails_with(check, fn, capsys, *needles) -> str:
    """`check(fn)` returns False and prints a failure that holds every needle; the printed text."""
    assert check(fn) is False
    printed = capsys.readouterr().out
    assert printed.startswith("Not yet."), printed
    for needle in needles:
        assert needle in printed, f"{needle!r} not in:\n{printed}"
    return printed


def names_the_mistake(check, wrong, hint, capsys, *needles) -> str:
    """`check(wrong)` fails with a different answer, shows the input (and every needle), and its hint starts with
    `hint`; the printed text."""
    printed = fails_with(check, wrong, capsys, "gives a different answer", "input:", *needles)
    assert hint_of(printed).startswith(hint), f"the hint is not {hint!r}:\n{printed}"
    return printed


def reports_a_stub(check, capsys) -> None:
    """A stub prints one 'not attempted yet' line and returns False, so the chapter runs on."""
    assert check(not_written) is False
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and ": not attempted yet;" in printed


def gives_the_tiers_in_turn(check, wrong, exercise, capsys) -> None:
    """Three wrong tries that no mistake explains: the first tier, the second, then the second again with where the
    worked answer is (and only then)."""
    printed = [fails_with(check, wrong, capsys) for _ in range(3)]
    hints = [re.sub(r" \(your answer is too (high|low)\)", "", hint_of(text)) for text in printed]  # numbers: the way
    assert hints[:2] == list(exercise.hints)
    assert hints[2].startswith(exercise.hints[1]) and "chapters/solutions/" in hints[2]
    assert "chapters/solutions/" not in printed[1]


def refuses_the_package_answer(exercise, answer, capsys, check=None) -> None:
    """The package's own answer is switched off while `exercise` is checked (by `check`, else its own check method):
    in the learner's check and under the grader."""
    fails_with(check or exercise.check, answer, capsys, "switched off while your function is checked")
    verdict = exercise.verdict(answer, GRADER_SEED)
    assert verdict.passed is False and "switched off" in verdict.message
    assert "not against copying" in verdict.message  # honest: a guard against accidents, not against a copy


# ------------------------------------------------------------------ right answers pass
def passes_solutions_and_references(module, solutions_file) -> None:
    """Every exercise of a chapter's module passes its check with the worked answer in `solutions_file` and with
    the module's own reference (its function of the exercise's name)."""
    solutions = runpy.run_path(str(solutions_file))
    for exercise in module.EXERCISES:
        assert exercise.check(solutions[exercise.name]) is True, exercise.name
        assert exercise.check(getattr(module, exercise.name)) is True, exercise.name


def grader_passes(exercise, answer, seeds=(11, 12, 13)) -> None:
    """The grader passes a right answer on the cases each seed draws (cases the learner never sees)."""
    for seed in seeds:
        verdict = exercise.verdict(answer, seed)
        assert verdict.passed is True, verdict.message


# ------------------------------------------------------------------ the grader's cases
def draws_unseen_cases(exercises, shown=lambda args: args, seed: int = 11) -> None:
    """The grader's seed draws as many cases as the learner's, more than the fixed ones, and other inputs (compared
    as `shown` gives them, e.g. repr for arrays)."""
    for exercise in exercises:
        learner, grader = exercise.cases(), exercise.cases(seed=seed)
        assert len(grader) == len(learner) > len(exercise.fixed), exercise.name
        assert shown([c.args for c in grader]) != shown([c.args for c in learner]), exercise.name


# ------------------------------------------------------------------ hints teach, they do not answer
def gives_nothing_away(exercise, keys) -> None:
    """At least two tiers and at least one mistake, each mistake with a hint of its own (none a tier), and no hint
    holds any of `keys` (what would hand over the answer), whitespace aside."""
    assert len(exercise.hints) >= 2 and exercise.mistakes, exercise.name
    mistakes = [m.hint for m in exercise.mistakes]
    leaks = [(key, hint) for hint in [*exercise.hints, *mistakes] for key in keys if squeeze(key) in squeeze(hint)]
    assert leaks == [], f"{exercise.name}: a hint holds the answer"
    assert len(set(mistakes)) == len(mistakes), f"{exercise.name}: each mistake has its own hint"
    assert not set(mistakes) & set(exercise.hints), f"{exercise.name}: a mistake's hint is a tier"


# ------------------------------------------------------------------ answers that claim to equal anything
def _equal_to_anything(self, other) -> bool:
    return True


class AlwaysEqual:
    """Not plain data: a check must not compare it with ==."""

    __eq__ = _equal_to_anything
    __hash__ = None


class SneakyInt(int):
    __eq__ = _equal_to_anything
    __hash__ = int.__hash__


class SneakyFloat(float):
    __eq__ = _equal_to_anything
    __hash__ = float.__hash__


class SneakyStr(str):
    __eq__ = _equal_to_anything
    __hash__ = str.__hash__


class SneakyList(list):
    __eq__ = _equal_to_anything
