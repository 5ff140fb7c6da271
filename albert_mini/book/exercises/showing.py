"""How a check's message shows a value: short ones whole, long arrays and lists as their shape and a few values.

A failure message names an input, the expected answer and the learner's; four tensors printed in full would bury
the one line that says where they differ, so a long one reads `tensor of shape (8, 4): [-0.05629, -0.05762,
-0.01253, ..., -0.04238]`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FEW = 3  # leading values shown of a long array, before "..." and its last value
ARRAY_WHOLE = 8  # an array or tensor with at most this many numbers is shown whole


class Shown(str):
    """Text shown as it is (not quoted) among an input's values."""

    def __repr__(self) -> str:
        return str(self)


def short_form(value: Any, limit: int = 300) -> str:
    """`value` as a message shows it: whole when short, else its kind, shape and a few values (text cut at
    `limit` characters)."""
    if _is_array(value):
        array = _numpy(value)
        if array.size <= ARRAY_WHOLE:
            return _cut(repr(array.tolist()), limit)
        kind = "tensor" if type(value).__module__.startswith("torch") else "array"
        return _cut(f"{kind} of shape {tuple(array.shape)}: {_few(array.ravel())}", limit)
    text = repr(value)
    if len(text) <= limit or type(value) not in (list, tuple):
        return _cut(text, limit)
    shape = _numeric_shape(value)
    if shape is not None:
        return _cut(f"{type(value).__name__} of shape {shape}: {_few(np.asarray(value).ravel())}", limit)
    items = ", ".join(short_form(item, 40) for item in value[:FEW])
    return _cut(f"{type(value).__name__} of {len(value)} items: [{items}, ...]", limit)


def _is_array(value: Any) -> bool:
    torch = __import__("sys").modules.get("torch")
    return isinstance(value, np.ndarray) or (torch is not None and isinstance(value, torch.Tensor))


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    return value.detach().cpu().float().numpy() if value.dtype.is_floating_point else value.detach().cpu().numpy()


def _numeric_shape(value: list | tuple) -> tuple[int, ...] | None:
    """The shape of a rectangular nesting of lists or tuples of plain numbers (bools excluded), else None."""
    if value and all(type(item) in (int, float) for item in value):
        return (len(value),)
    if not value or not all(type(item) in (list, tuple) for item in value):
        return None
    inner = {_numeric_shape(item) for item in value}
    if len(inner) != 1 or None in inner:
        return None
    return (len(value), *inner.pop())


def _few(flat: np.ndarray) -> str:
    """The first FEW values, "...", and the last, each to four significant digits (integers whole)."""
    def number(x) -> str:
        return f"{x:.4g}" if isinstance(x, float) else repr(x)

    values = flat.tolist()
    shown = [number(x) for x in values[:FEW]]
    if len(values) > FEW:
        shown += ["...", number(values[-1])]
    return f"[{', '.join(shown)}]"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."
