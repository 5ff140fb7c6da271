"""The machinery every exercise check shares: run the learner's function on cases, compare, explain."""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

NOT_ATTEMPTED = "not attempted yet"  # what a check prints for a stub: the same line on every run


class ExerciseFailed(AssertionError):
    """Raised by a check when the learner's function gives a wrong answer, raises, or changes its inputs."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it: the message alone, since the traceback runs through this module only."""
        return [f"ExerciseFailed: {self}"]


def _close(got: Any, expected: Any, rtol: float, atol: float) -> bool:
    if isinstance(expected, torch.Tensor):
        got = torch.as_tensor(got)
        return got.shape == expected.shape and torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol)
    if isinstance(expected, np.ndarray):
        got = np.asarray(got)
        return got.shape == expected.shape and np.allclose(got, expected, rtol=rtol, atol=atol)
    if isinstance(expected, float):
        return isinstance(got, (int, float, np.floating, np.integer)) and math.isclose(
            float(got), expected, rel_tol=rtol, abs_tol=atol)
    if isinstance(expected, (list, tuple)):
        return (isinstance(got, (list, tuple)) and len(got) == len(expected)
                and all(_close(g, e, rtol, atol) for g, e in zip(got, expected)))
    if isinstance(expected, dict):
        return isinstance(got, dict) and got.keys() == expected.keys() and all(
            _close(got[k], expected[k], rtol, atol) for k in expected)
    return bool(got == expected)


def _show(value: Any, limit: int = 300) -> str:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        size = value.numel() if isinstance(value, torch.Tensor) else value.size
        value = value.tolist() if size <= 50 else f"<array of shape {tuple(value.shape)}>"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def check_against_reference(
    name: str,
    learner: Callable,
    reference: Callable,
    cases: Iterable[tuple[tuple, dict]],
    *,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    hint: str = "",
    compare: Callable[[Any, Any], bool] | None = None,
    parts: tuple[str, ...] = (),
    keep_inputs: bool = False,
) -> bool:
    """Call learner and reference on every (args, kwargs) case; True when all agree, False for a stub.

    A stub (the learner's function raises NotImplementedError) prints one "not attempted yet" line and returns
    False, so a chapter runs from top to bottom before the learner writes anything; under nbgrader's autograder
    (NBGRADER_EXECUTION set), which scores a grade cell by whether it raises, a stub raises ExerciseFailed.
    A wrong answer raises ExerciseFailed naming the first mismatch: the input, the expected and the received
    value, the largest difference (per part, for a tuple such as LAMB's (w, m, v), named by `parts`), never the
    reference code.
    With `keep_inputs`, an answer that changes an input tensor or array in place is wrong too.
    """
    cases = list(cases)
    for number, (args, kwargs) in enumerate(cases, start=1):
        expected = reference(*args, **kwargs)
        before = [_snapshot(value) for value in (*args, *kwargs.values())] if keep_inputs else []
        try:
            got = learner(*args, **kwargs)
        except NotImplementedError:
            if os.environ.get("NBGRADER_EXECUTION") in ("autograde", "validate"):  # nbgrader: no error, full points
                raise ExerciseFailed(f"{name}: {NOT_ATTEMPTED} (it still raises NotImplementedError)") from None
            function = name.split(" ")[0]  # the function's name, without what the check measures
            print(f"{function}: {NOT_ATTEMPTED}; write it above, then run both cells")
            return False
        except Exception as error:  # the learner's bug: report it with the input that triggered it
            raise ExerciseFailed(
                f"{name}: your function raised {type(error).__name__}: {error}\n  on input {_describe(args, kwargs)}"
            ) from None
        changed = _changed_inputs(before, [*args, *kwargs.values()], [*_arg_names(reference, args), *kwargs])
        if changed:
            raise ExerciseFailed(
                f"{name}: case {number} of {len(cases)}: your function changed its input {changed} in place.\n"
                f"  input:    {_describe(args, kwargs)}\n"
                "  hint: build new tensors (m = beta1 * m + ...) instead of updating the ones you are given "
                "(m.mul_(...), m += ..., w[...] = ...): the caller still needs them.")
        same = compare(got, expected) if compare else _close(got, expected, rtol, atol)
        if not same:
            message = (f"{name}: case {number} of {len(cases)} gives a different answer.\n"
                       f"  input:    {_describe(args, kwargs)}\n"
                       f"{_mismatch(got, expected, rtol, atol, parts)}")
            raise ExerciseFailed(message + (f"\n  hint: {hint}" if hint else ""))
    print(f"{name}: all {len(cases)} cases agree with the reference. Well done!")
    return True


def _snapshot(value: Any) -> Any:
    """A copy of a tensor or array argument to compare with after the call (None for anything else)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    return None


def _arg_names(function: Callable, args: tuple) -> list[str]:
    """The names of the positional parameters the arguments fill, as the exercise states them."""
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = []
    return [f"`{names[i]}`" if i < len(names) else f"argument {i + 1}" for i in range(len(args))]


def _changed_inputs(before: list, after: list, names: list[str]) -> str:
    """The names of the tensor or array inputs whose values differ from their snapshot, joined by commas."""
    changed = []
    for copy, value, label in zip(before, after, names):
        if copy is None:
            continue
        same = torch.equal(copy, value.detach()) if isinstance(copy, torch.Tensor) else np.array_equal(copy, value)
        if not same:
            changed.append(label)
    return ", ".join(changed)


def _mismatch(got: Any, expected: Any, rtol: float, atol: float, parts: tuple[str, ...]) -> str:
    """Expected and received values; for tuples of arrays, only the parts that differ, each with its largest gap."""
    arrays = (torch.Tensor, np.ndarray)
    if (isinstance(expected, tuple) and isinstance(got, (tuple, list)) and len(got) == len(expected)
            and any(isinstance(e, arrays) for e in expected)):
        lines = []
        for index, (have, want) in enumerate(zip(got, expected)):
            if _close(have, want, rtol, atol):
                continue
            label = parts[index] if index < len(parts) else f"part {index}"
            lines.append(f"  {label} (item {index} of the tuple) differs:\n"
                         f"    expected: {_show(want)}\n    got:      {_show(have)}"
                         f"{_largest_difference(have, want, indent='    ')}")
        return "\n".join(lines)
    return f"  expected: {_show(expected)}\n  got:      {_show(got)}{_largest_difference(got, expected)}"


def _largest_difference(got: Any, expected: Any, indent: str = "  ") -> str:
    """For two arrays of one shape: the largest absolute difference, where it is, and both values there."""
    if not isinstance(expected, (torch.Tensor, np.ndarray)):
        return ""
    try:
        want = np.asarray(expected.detach().cpu() if isinstance(expected, torch.Tensor) else expected, dtype=float)
        have = np.asarray(got.detach().cpu() if isinstance(got, torch.Tensor) else got, dtype=float)
    except (TypeError, ValueError):
        return ""
    if have.shape != want.shape:
        return f"\n{indent}shape:    expected {tuple(want.shape)}, got {tuple(have.shape)}"
    gap = np.abs(have - want)
    gap = np.where(np.isnan(gap), np.inf, gap)  # a NaN is as wrong as it gets
    if gap.size == 0:
        return ""
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
    return (f"\n{indent}largest difference {gap[where]:.3g} at index {where}: expected {want[where]:.8g}, "
            f"got {have[where]:.8g}")


def _describe(args: tuple, kwargs: dict) -> str:
    parts = [_show(a, 120) for a in args] + [f"{k}={_show(v, 120)}" for k, v in kwargs.items()]
    return ", ".join(parts)
