"""What every exercise shares: its cases, its reference, and the judgement of a learner's answers.

An `Exercise` names its function, the reference that answers it, fixed cases (the traps the text warns about)
and cases drawn from a seed. The same judgement serves two places:

- the learner's check cell (`check_<name>(fn)`): cases drawn from the exercise's fixed seed, so the printed
  output is the same on every run; a stub prints "not attempted yet", a wrong answer prints the failing case and
  a hint and returns False (the chapter goes on), a right one prints "Well done!";
- `albert-mini grade`: cases drawn at grading time from a fresh seed, sent to the student's sandboxed kernel as
  plain data; the answers come back as plain data and are judged here, in the grader's process.

Hints come in tiers: the first wrong try names the idea to revisit, a second one a narrower pointer, never the
formula or code; a recognised common mistake gets its own hint; after the last tier the check names the worked
answer in chapters/solutions/.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..answering import Unsupported, call_all, decode_answer, decode_arguments, encode_cases
from .showing import Shown, short_form

NOT_ATTEMPTED = "not attempted yet"  # what a check prints for a stub: the same line on every run
_ATTEMPTS: dict[str, int] = {}  # wrong tries per exercise in this kernel, for the hint tiers


class ExerciseFailed(AssertionError):
    """Raised by a check under nbgrader (which scores a cell by whether it raises) for a stub or a wrong answer."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it: the message alone, since the traceback runs through this module only."""
        return [f"ExerciseFailed: {self}"]


class WrongForm(ValueError):
    """An answer of the wrong kind (a bool for an int, a tuple of three for a pair, the wrong shape)."""


@dataclass(frozen=True)
class Case:
    """One call: positional and keyword inputs; `repeat` calls share one seeded Generator (statistical checks)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    repeat: int = 0
    global_seed: int | None = None
    note: str = ""  # what the case tests, shown beside a failure ("B comes before A in the same document")


@dataclass(frozen=True)
class Mistake:
    """A common wrong answer, recognised from (got, expected, inputs), with a hint of its own."""

    test: Callable[[Any, Any, tuple, dict], bool]
    hint: str


@dataclass(frozen=True)
class Verdict:
    """The judgement of one exercise: passed (None: not attempted), and one message."""

    passed: bool | None
    message: str
    tier_used: bool = False  # whether the hint was the attempt's tier (a recognised mistake's own hint is not)


@dataclass(frozen=True)
class Exercise:
    """An exercise: what its function answers, on which inputs, and how an answer is judged."""

    name: str
    chapter: str
    reference: Callable  # on the decoded inputs; for `repeat` cases, the expected summary
    fixed: Sequence[Case]
    drawn: Callable[[np.random.Generator], list[Case]] | None = None
    normalize: Callable[[Any], Any] | None = None  # answer -> comparable form; raises WrongForm
    compare: Callable[[Any, Any], bool] | None = None  # default: close within rtol, atol
    rtol: float = 1e-6
    atol: float = 1e-8
    summarize: Callable[[list, Case], Any] | None = None  # `repeat` cases: the values -> what is compared
    screen: Callable[[list[Case], list[Any]], str | None] | None = None  # across cases (decoded answers), first
    hints: Sequence[str] = ()
    mistakes: Sequence[Mistake] = ()
    unavailable: Sequence[str] = ()  # "module:qualname" of package functions that solve it
    keep_inputs: bool = False  # an answer that changes an input in place is wrong
    new_result: bool = False  # an answer that returns one of its inputs (not a new object) is wrong
    title: str = ""
    parts: Sequence[str] = ()  # names of a tuple answer's items, for messages
    learner_seed: int = 0

    @property
    def label(self) -> str:
        return self.title or self.name

    def cases(self, seed: int | None = None) -> list[Case]:
        """The fixed cases, then those drawn from `seed` (the learner's fixed seed when None)."""
        drawn = self.drawn(np.random.default_rng(self.learner_seed if seed is None else seed)) if self.drawn else []
        return [*self.fixed, *drawn]

    def requests(self, cases: list[Case]) -> tuple[list[dict], dict[str, np.ndarray]]:
        arrays: dict[str, np.ndarray] = {}
        return encode_cases(cases, arrays), arrays

    def expected(self, requests: list[dict], arrays: dict[str, np.ndarray]) -> list[Any]:
        """The reference's answers on the decoded requests, in the comparable form (computed by the trusted side)."""
        answers = []
        for request in requests:
            args, kwargs = decode_arguments(request, arrays)
            value = self.reference(*args, **kwargs)
            answers.append(value if request.get("repeat") else self._normal(_roundtrip(value)))
        return answers

    def _normal(self, value: Any) -> Any:
        return self.normalize(value) if self.normalize else value

    def _same(self, got: Any, expected: Any) -> bool:
        return self.compare(got, expected) if self.compare else close(got, expected, self.rtol, self.atol)

    def judge(self, cases: list[Case], requests: list[dict], expected: list[Any], answer: dict,
              arrays: dict[str, np.ndarray], attempt: int = 1) -> Verdict:
        """The verdict on a learner's answers (`answer`: {"records": [...]} or {"missing": True})."""
        if answer.get("missing"):
            return Verdict(False, f"`{self.name}` is not defined as a function when its check runs (its cell "
                                  "was deleted, renamed or did not run)")
        records = answer.get("records")
        if not isinstance(records, list) or len(records) != len(cases):
            return Verdict(False, f"{self.label}: no answer for every case (the grading kernel's output was "
                                  "incomplete)")
        if any(isinstance(r, dict) and r.get("not_implemented") for r in records):
            return Verdict(None, f"{self.name}: {NOT_ATTEMPTED}")
        if self.screen:
            problem = self.screen(cases, [_decoded(record, arrays) for record in records])
            if problem:
                return Verdict(False, f"{self.label}: {problem}")
        for number, (case, request, want, record) in enumerate(zip(cases, requests, expected, records), start=1):
            wrong = self._case_verdict(f"case {number} of {len(cases)}", case, request, want, record, arrays, attempt)
            if wrong is not None:
                return wrong
        return Verdict(True, f"{self.label}: all {len(cases)} cases agree with the reference. Well done!")

    def _case_verdict(self, where: str, case: Case, request: dict, want: Any, record, arrays: dict[str, np.ndarray],
                      attempt: int) -> Verdict | None:
        """The verdict on one case's answer when it is wrong (raised, changed its input, differs); None if right."""
        shown = _describe(request, arrays) + (f"  ({case.note})" if case.note else "")
        if not isinstance(record, dict):
            return Verdict(False, f"{self.label}: {where}: no answer")
        if "raised" in record:
            extra = ("\n  hint: this function is the exercise; the package's own version is switched off "
                     "while it is checked (against accidents, not against copying)" if record.get("not_available")
                     else "")
            return Verdict(False, f"{self.label}: your function raised {record['raised']}\n  on input "
                                  f"{shown}{extra}")
        if record.get("changed"):
            names = ", ".join(f"input {i + 1}" for i in record["changed"])
            return Verdict(False, f"{self.label}: {where}: your function changed {names} in place.\n"
                                  f"  input:    {shown}\n  hint: build new values instead of updating the "
                                  "ones you are given: the caller still needs them.")
        if self.new_result and record.get("aliased") is not None:
            return Verdict(False, f"{self.label}: {where}: your function returned input "
                                  f"{record['aliased'] + 1} itself; the text asks for a new one (change a "
                                  "copy and return the copy).")
        try:
            if case.repeat:
                values = [decode_answer(v, arrays) for v in _listed(record.get("values", []))]
                got = self.summarize(values, case) if self.summarize else values
            else:
                got = self._normal(decode_answer(record.get("value"), arrays))
        except WrongForm as problem:
            return Verdict(False, f"{self.label}: {where}: {problem}\n  input:    {shown}")
        except Exception as error:  # an answer the judge cannot read: wrong, with the reason
            return Verdict(False, f"{self.label}: {where}: the answer could not be read "
                                  f"({type(error).__name__}: {error})\n  input:    {shown}")
        if isinstance(got, Unsupported) or not self._same(got, want):
            hint, tiered = self._hint(got, want, request, arrays, attempt)
            return Verdict(False, f"{self.label}: {where} gives a different answer.\n  input:    {shown}\n"
                                  f"{_mismatch(got, want, self.rtol, self.atol, self.parts)}\n"
                                  f"  hint: {hint}", tier_used=tiered)
        return None

    def hint(self, got: Any, expected: Any, request: dict, arrays: dict, attempt: int) -> str:
        """A recognised mistake's own hint, else the tier for this attempt (then where the worked answer is)."""
        return self._hint(got, expected, request, arrays, attempt)[0]

    def _hint(self, got: Any, expected: Any, request: dict, arrays: dict, attempt: int) -> tuple[str, bool]:
        """The hint, and whether it was the attempt's tier (which then counts as used)."""
        args, kwargs = decode_arguments(request, arrays)
        for mistake in self.mistakes:
            try:
                if mistake.test(got, expected, tuple(args), kwargs):
                    return mistake.hint, False
            except Exception:  # a test that does not apply to this kind of answer
                continue
        if not self.hints:
            return "compare your answer with the expected one on this input, by hand", False
        tier = self.hints[min(attempt, len(self.hints)) - 1] + _direction(got, expected)
        if attempt > len(self.hints):
            tier += f" (the worked answer is in chapters/solutions/, chapter {self.chapter})"
        return tier, True

    def verdict(self, function, seed: int | None = None, attempt: int = 1) -> Verdict:
        """The verdict on `function` for the cases drawn from `seed` (the learner's when None), in this process."""
        cases = self.cases(seed)
        requests, arrays = self.requests(cases)
        expected = self.expected(requests, arrays)  # before the learner's function runs
        records, out_arrays = call_all(function, requests, arrays, self.unavailable, self.keep_inputs)
        return self.judge(cases, requests, expected, {"records": records}, {**arrays, **out_arrays}, attempt)

    def check(self, function) -> bool:
        """The learner's check: print the verdict, return True when right (under nbgrader, raise unless right)."""
        attempt = _ATTEMPTS.get(self.name, 0) + 1
        verdict = self.verdict(function, attempt=attempt)
        grading = os.environ.get("NBGRADER_EXECUTION") in ("autograde", "validate")
        if verdict.passed is None:
            if grading:  # nbgrader scores a test cell by whether it raises
                raise ExerciseFailed(f"{self.name}: {NOT_ATTEMPTED} (it still raises NotImplementedError)")
            print(f"{self.name}: {NOT_ATTEMPTED}; write it above, then run both cells")
            return False
        if not verdict.passed:
            if verdict.tier_used:  # a recognised mistake's own hint leaves the tiers for the next wrong try
                _ATTEMPTS[self.name] = attempt
            if grading:
                raise ExerciseFailed(verdict.message)
            print(f"Not yet. {verdict.message}")
            return False
        print(verdict.message)
        return True


def _direction(got: Any, expected: Any) -> str:
    """Where the answer is a number: whether it is too high or too low (the tier hints never say by how much)."""
    if type(got) in (int, float) and type(expected) in (int, float) and math.isfinite(got) and got != expected:
        return f" (your answer is too {'high' if got > expected else 'low'})"
    return ""


def _decoded(record: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A record's answer as Python values (a list for repeated calls), or None where it has none to compare."""
    if not isinstance(record, dict) or "raised" in record:
        return None
    try:
        if "values" in record:
            return [decode_answer(v, arrays) for v in _listed(record["values"])]
        return decode_answer(record.get("value"), arrays)
    except Exception:  # unreadable: the case-by-case judgement reports it
        return None


def _roundtrip(value: Any) -> Any:
    """A reference answer through the same plain encoding as a learner's (so both are judged alike)."""
    from ..answering import _Encoder

    arrays: dict[str, np.ndarray] = {}
    return decode_answer(_Encoder(arrays).encode(value), arrays)


def _listed(values: Any) -> list:
    """A record's repeated values (a list, or the answer is not plain data)."""
    if type(values) is not list:
        raise ValueError("the repeated calls' values are not a list")
    return values


# --------------------------------------------------------------------------------------------- comparing
def close(got: Any, expected: Any, rtol: float, atol: float) -> bool:  # noqa: C901 (one branch per kind)
    """Whether a plain answer matches the expected one: numbers within tolerance, containers item by item."""
    import torch

    if isinstance(got, Unsupported):
        return False
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor | np.ndarray) or tuple(got.shape) != tuple(expected.shape):
            return False
        got = torch.as_tensor(got)
        return bool(torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol))
    if isinstance(expected, np.ndarray):
        got = np.asarray(got) if isinstance(got, np.ndarray | list | tuple) else None
        return got is not None and got.shape == expected.shape and got.dtype.kind in "biuf" and bool(
            np.allclose(got, expected, rtol=rtol, atol=atol))
    if type(expected) is bool:
        return type(got) is bool and got == expected
    if type(expected) is float:
        return type(got) in (int, float) and math.isclose(float(got), expected, rel_tol=rtol, abs_tol=atol)
    if type(expected) is int:
        return type(got) is int and got == expected
    if isinstance(expected, list | tuple):
        return (type(got) is type(expected) and len(got) == len(expected)
                and all(close(g, e, rtol, atol) for g, e in zip(got, expected)))
    if isinstance(expected, dict):
        return type(got) is dict and got.keys() == expected.keys() and all(
            close(got[k], expected[k], rtol, atol) for k in expected)
    return type(got) is type(expected) and got == expected


# --------------------------------------------------------------------------------------------- normalising
def python_int(value: Any) -> int:
    """An answer that must be a Python int (not a bool, not a numpy integer)."""
    if type(value) is not int:
        raise WrongForm(f"returned {kind_of(value)}; return a Python int (int(...) converts a numpy or torch "
                        "number)")
    return value


def whole_number(value: Any, advice: str = "keep the arithmetic in the integers") -> int:
    """A count: a Python or numpy integer; a float means a division or a conversion crept in (`advice` says how
    to keep it whole)."""
    if isinstance(value, np.integer):
        value = int(value)
    if type(value) is float:
        raise WrongForm(f"returned the float {value!r}; a count is a whole number: {advice}")
    if type(value) is not int:
        raise WrongForm(f"returned {kind_of(value)}; return the count as an int")
    return value


def number(value: Any) -> float:
    """An answer that is a number of any plain kind (int, float, numpy scalar, 0-d array or tensor)."""
    import torch

    if isinstance(value, torch.Tensor | np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if type(value) is bool or type(value) not in (int, float):
        raise WrongForm(f"returned {kind_of(value)}; return a number")
    return float(value)


def int_list(value: Any, what: str = "the answer") -> list[int]:
    """A sequence of integers in any plain form (list, tuple, 1-d array or tensor) as a list of Python ints."""
    import torch

    if isinstance(value, torch.Tensor | np.ndarray):
        if value.ndim != 1 or (value.dtype.kind if isinstance(value, np.ndarray) else
                               "f" if value.is_floating_point() else "i") not in "iu":
            raise WrongForm(f"{what} is an array of shape {tuple(value.shape)}; return a 1-d sequence of ints")
        return [int(v) for v in value.tolist()]
    if type(value) not in (list, tuple):
        raise WrongForm(f"{what} is {kind_of(value)}; return a list of ints")
    items = []
    for item in value:
        if isinstance(item, np.integer):
            item = int(item)
        if type(item) is not int:
            raise WrongForm(f"{what} holds {kind_of(item)}; it should hold ints")
        items.append(item)
    return items


def kind_of(value: Any) -> str:
    """How a message names what an answer was: its type and a short repr."""
    if isinstance(value, Unsupported):
        return f"a {value.type_name} (not plain data)"
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return f"a {name} ({short_form(value, 60)})"


# --------------------------------------------------------------------------------------------- showing
def _describe(request: dict, arrays: dict[str, np.ndarray]) -> str:
    """The inputs of a request as a learner reads them (a Generator by its seed, so the line is the same each run)."""
    args, kwargs = decode_arguments(request, arrays)
    args = [Shown(f"np.random.default_rng({tree['rng']})") if isinstance(tree, dict) and "rng" in tree else value
            for tree, value in zip(request["args"].get("list", []), args)]
    parts = [short_form(a, 120) for a in args] + [f"{k}={short_form(v, 120)}" for k, v in kwargs.items()]
    if request.get("repeat"):
        parts.append(f"called {request['repeat']:,} times with one Generator")
    return ", ".join(parts)


def _mismatch(got: Any, expected: Any, rtol: float, atol: float, parts: Sequence[str]) -> str:
    """Expected and received values; for tuples of arrays, only the parts that differ, each with its largest gap."""
    import torch

    arrays = (torch.Tensor, np.ndarray)
    if (isinstance(expected, tuple) and isinstance(got, tuple | list) and len(got) == len(expected)
            and any(isinstance(e, arrays) for e in expected)):
        lines = []
        for index, (have, want) in enumerate(zip(got, expected)):
            if close(have, want, rtol, atol):
                continue
            label = parts[index] if index < len(parts) else f"part {index}"
            lines.append(f"  {label} (item {index} of the tuple) differs:\n"
                         f"    expected: {short_form(want)}\n    got:      {short_form(have)}"
                         f"{_largest_difference(have, want, indent='    ')}")
        return "\n".join(lines)
    return f"  expected: {short_form(expected)}\n  got:      {short_form(got)}{_largest_difference(got, expected)}"


def _largest_difference(got: Any, expected: Any, indent: str = "  ") -> str:
    """For two arrays of one shape: the largest absolute difference, where it is, and both values there."""
    import torch

    if not isinstance(expected, torch.Tensor | np.ndarray) or not isinstance(got, torch.Tensor | np.ndarray):
        return ""
    want = np.asarray(expected.detach().cpu() if isinstance(expected, torch.Tensor) else expected, dtype=float)
    have = np.asarray(got.detach().cpu() if isinstance(got, torch.Tensor) else got, dtype=float)
    if have.shape != want.shape:
        return f"\n{indent}shape:    expected {tuple(want.shape)}, got {tuple(have.shape)}"
    gap = np.abs(have - want)
    gap = np.where(np.isnan(gap), np.inf, gap)  # a NaN is as wrong as it gets
    if gap.size == 0:
        return ""
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
    return (f"\n{indent}largest difference {gap[where]:.3g} at index {where}: expected {want[where]:.8g}, "
            f"got {have[where]:.8g}")
