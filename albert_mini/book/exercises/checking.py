"""The machinery every exercise check shares: run the learner's function on cases, compare, explain."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch


class ExerciseFailed(AssertionError):
    """Raised by a check when the learner's function gives a wrong answer, raises, or is not written yet."""

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
) -> bool:
    """Call learner and reference on every (args, kwargs) case; raise ExerciseFailed naming the first mismatch.

    The message shows the input, the expected and the received value, never the reference code.
    """
    cases = list(cases)
    for number, (args, kwargs) in enumerate(cases, start=1):
        expected = reference(*args, **kwargs)
        try:
            got = learner(*args, **kwargs)
        except NotImplementedError:
            raise ExerciseFailed(
                f"{name}: not written yet. Replace the `raise NotImplementedError` with your code."
            ) from None
        except Exception as error:  # the learner's bug: report it with the input that triggered it
            raise ExerciseFailed(
                f"{name}: your function raised {type(error).__name__}: {error}\n  on input {_describe(args, kwargs)}"
            ) from None
        same = compare(got, expected) if compare else _close(got, expected, rtol, atol)
        if not same:
            message = (f"{name}: case {number} of {len(cases)} gives a different answer.\n"
                       f"  input:    {_describe(args, kwargs)}\n  expected: {_show(expected)}\n"
                       f"  got:      {_show(got)}{_largest_difference(got, expected)}")
            raise ExerciseFailed(message + (f"\n  hint: {hint}" if hint else ""))
    print(f"{name}: all {len(cases)} cases agree with the reference. Well done!")
    return True


def _largest_difference(got: Any, expected: Any) -> str:
    """For two arrays of one shape: the largest absolute difference, where it is, and both values there."""
    if not isinstance(expected, (torch.Tensor, np.ndarray)):
        return ""
    try:
        want = np.asarray(expected.detach().cpu() if isinstance(expected, torch.Tensor) else expected, dtype=float)
        have = np.asarray(got.detach().cpu() if isinstance(got, torch.Tensor) else got, dtype=float)
    except (TypeError, ValueError):
        return ""
    if have.shape != want.shape:
        return f"\n  shape:    expected {tuple(want.shape)}, got {tuple(have.shape)}"
    gap = np.abs(have - want)
    gap = np.where(np.isnan(gap), np.inf, gap)  # a NaN is as wrong as it gets
    if gap.size == 0:
        return ""
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
    return (f"\n  largest difference {gap[where]:.3g} at index {where}: expected {want[where]:.8g}, "
            f"got {have[where]:.8g}")


def _describe(args: tuple, kwargs: dict) -> str:
    parts = [_show(a, 120) for a in args] + [f"{k}={_show(v, 120)}" for k, v in kwargs.items()]
    return ", ".join(parts)
