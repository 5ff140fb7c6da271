"""Calling a learner's exercise function and turning what it returns into plain data.

One path for both places an exercise is checked: the check cell a learner runs in JupyterLab, and the grading
kernel of `albert-mini grade`, where this module is the only grading code inside the sandbox. Nothing here knows
an exercise's answer: it decodes the inputs it is given, calls the function, and encodes each result as plain
data (JSON with type tags, arrays in an `.npz`), which the trusted side decodes and compares. A result that is
not plain data (an object whose `__eq__` is always true, a subclass of int, a generator) is encoded as
"unsupported", which no comparison accepts.

While the learner's function runs, the package functions that would solve the exercise are swapped for stubs
that raise `NotAvailable` ("not available while checking"), and put back afterwards.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MAX_ELEMENTS = 5_000_000  # per answer: more is refused as "too large" instead of filling the grader's memory
REQUESTS, ANSWERS = "requests.json", "answers"


class NotAvailable(RuntimeError):
    """Raised by a package function that solves the exercise being checked."""


# --------------------------------------------------------------------------------------------- input builders
@dataclass(frozen=True)
class Rng:
    """A seeded `np.random.Generator` as an input (one object shared by the repeated calls of a case)."""

    seed: int


@dataclass(frozen=True)
class Config:
    """An `AlbertConfig(**fields)` as an input."""

    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Sublayer:
    """A seeded stand-in for a sub-layer ("attention", "ffn" or "norm") of a given width, as an input."""

    kind: str
    width: int
    seed: int

    def build(self) -> SeededSublayer:
        return SeededSublayer(self.kind, self.width, self.seed)


class SeededSublayer:
    """A fixed, seeded stand-in for a sub-layer (attention, FFN or LayerNorm) that prints its role and seed."""

    def __init__(self, kind: str, width: int, seed: int):
        import torch

        generator = torch.Generator().manual_seed(seed)
        self.kind, self.seed = kind, seed
        self.w1 = torch.randn(width, width, generator=generator, dtype=torch.float64) / width**0.5
        self.w2 = torch.randn(width, width, generator=generator, dtype=torch.float64) / width**0.5
        self.gamma = 1.0 + 0.5 * torch.randn(width, generator=generator, dtype=torch.float64)
        self.beta = 0.5 * torch.randn(width, generator=generator, dtype=torch.float64)

    def __call__(self, x):
        import torch.nn.functional as F

        if self.kind == "attention":  # mixes positions, as attention does: softmax weights over the sequence
            weights = (x @ self.w1 @ x.transpose(-2, -1)).softmax(dim=-1)  # (B, T, T)
            return weights @ x @ self.w2
        if self.kind == "ffn":
            return F.gelu(x @ self.w1) @ self.w2
        return F.layer_norm(x, x.shape[-1:], self.gamma, self.beta, eps=1e-12)

    def __repr__(self) -> str:
        return f"<{self.kind} seed={self.seed}>"


# --------------------------------------------------------------------------------------------- plain data
@dataclass(frozen=True)
class Unsupported:
    """What a result that is not plain data decodes to: only its type's name survives."""

    type_name: str

    def __repr__(self) -> str:
        return f"<a {self.type_name}, not plain data>"


class _Encoder:
    """Plain-data encoding: a JSON tree with type tags; arrays are kept aside under numbered keys."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None, prefix: str = "a"):
        self.arrays = {} if arrays is None else arrays
        self.prefix = prefix  # requests and answers keep their arrays under different prefixes
        self.elements = 0

    def _array(self, array: np.ndarray) -> str:
        self.elements += array.size
        if self.elements > MAX_ELEMENTS:
            raise OverflowError(f"more than {MAX_ELEMENTS:,} numbers")
        key = f"{self.prefix}{len(self.arrays)}"
        self.arrays[key] = np.array(array, copy=True)
        return key

    def encode(self, value: Any, depth: int = 0) -> Any:  # noqa: C901 (one branch per plain type)
        kind = type(value)  # never isinstance: a subclass of int (or of anything) could redefine ==
        if depth > 20:
            return {"unsupported": "structure nested more than 20 deep"}
        if value is None:
            return None
        if kind is bool:
            return {"bool": value}
        if kind is int:
            return {"int": value}
        if kind is float:
            return {"float": value if math.isfinite(value) else repr(value)}
        if kind is str:
            return {"str": value}
        if kind in (list, tuple):
            self.elements += len(value)
            if self.elements > MAX_ELEMENTS:
                raise OverflowError(f"more than {MAX_ELEMENTS:,} items")
            return {kind.__name__: [self.encode(item, depth + 1) for item in value]}
        if kind is dict:
            if not all(type(k) is str for k in dict.keys(value)):
                return {"unsupported": "dict with keys that are not strings"}
            return {"dict": {k: self.encode(v, depth + 1) for k, v in dict.items(value)}}
        if kind is np.ndarray:
            if value.dtype.kind not in "biuf":
                return {"unsupported": f"array of dtype {value.dtype}"}
            return {"ndarray": self._array(value)}
        if kind.__module__ == "numpy" and isinstance(value, np.generic) and value.dtype.kind in "biuf":
            return {"numpy": str(value.dtype), "value": self.encode(value.item(), depth + 1)}
        if _is_tensor(value):
            import torch

            tensor = value.detach().cpu()
            if tensor.dtype in (torch.bfloat16, torch.float16):
                tensor = tensor.float()
            if tensor.is_complex() or tensor.is_quantized or tensor.layout != torch.strided:
                return {"unsupported": f"tensor of dtype {tensor.dtype} and layout {tensor.layout}"}
            return {"tensor": self._array(tensor.numpy()), "dtype": str(value.dtype).removeprefix("torch.")}
        return {"unsupported": f"{kind.__module__}.{kind.__qualname__}"}

    def encode_input(self, value: Any) -> Any:
        """Inputs may also be the builders above (a seeded Generator, a config, a sub-layer)."""
        if isinstance(value, Rng):
            return {"rng": value.seed}
        if isinstance(value, Config):
            return {"config": {k: self.encode(v) for k, v in value.fields.items()}}
        if isinstance(value, Sublayer):
            return {"sublayer": [value.kind, value.width, value.seed]}
        if type(value) in (list, tuple):
            return {type(value).__name__: [self.encode_input(item) for item in value]}
        if type(value) is dict:
            return {"dict": {k: self.encode_input(v) for k, v in value.items()}}
        return self.encode(value)


def _is_tensor(value: Any) -> bool:
    torch = __import__("sys").modules.get("torch")
    return torch is not None and type(value) in (torch.Tensor, torch.nn.Parameter)


def decode(tree: Any, arrays: dict[str, np.ndarray], rngs: dict | None = None) -> Any:  # noqa: C901
    """The Python value of an encoded tree (arrays copied, so decoding twice gives two independent values)."""
    if tree is None:
        return None
    if not isinstance(tree, dict) or len(tree) == 0:
        raise ValueError(f"not an encoded value: {tree!r:.80}")
    tag = next(iter(tree))
    body = tree[tag]
    if tag == "bool":
        return bool(body)
    if tag == "int":
        return int(body)
    if tag == "float":
        return float(body)
    if tag == "str":
        return str(body)
    if tag == "list":
        return [decode(item, arrays, rngs) for item in body]
    if tag == "tuple":
        return tuple(decode(item, arrays, rngs) for item in body)
    if tag == "dict":
        return {k: decode(v, arrays, rngs) for k, v in body.items()}
    if tag == "ndarray":
        return np.array(arrays[body], copy=True)
    if tag == "tensor":
        import torch

        return torch.from_numpy(np.array(arrays[body], copy=True)).to(getattr(torch, tree["dtype"]))
    if tag == "numpy":
        return np.dtype(body).type(decode(tree["value"], arrays))
    if tag == "unsupported":
        return Unsupported(str(body))
    if tag == "rng":  # one Generator per seed within a call, so a case's repeated calls share it
        if rngs is None:
            return np.random.default_rng(int(body))
        return rngs.setdefault(int(body), np.random.default_rng(int(body)))
    if tag == "config":
        from ..model.config import AlbertConfig

        return AlbertConfig(**{k: decode(v, arrays) for k, v in body.items()})
    if tag == "sublayer":
        return SeededSublayer(str(body[0]), int(body[1]), int(body[2]))
    raise ValueError(f"unknown tag {tag!r}")


ANSWER_DEPTH = 24  # the kernel's encoder nests at most 20 deep
ANSWER_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "float32", "float64", "bfloat16"}  # of a tensor or a numpy scalar in an answer


class NotPlainData(ValueError):
    """An answer tree that is not what the kernel's encoder writes (a builder, an unknown dtype, a malformed
    node): the answer is wrong, and nothing it names is built."""


def decode_answer(tree: Any, arrays: dict[str, np.ndarray], depth: int = 0) -> Any:  # noqa: C901 (one per tag)
    """A learner's answer as plain data: numbers, strings, booleans, None, lists, tuples, dicts, and numeric
    arrays already read within their size limit. Unlike `decode` (the grader's own inputs), no builder (Generator,
    config, sub-layer) and no dtype outside ANSWER_DTYPES: a 60-byte answer cannot make the grader allocate."""
    if tree is None:
        return None
    if depth > ANSWER_DEPTH:
        raise NotPlainData(f"nested more than {ANSWER_DEPTH} deep")
    if type(tree) is not dict or len(tree) == 0:
        raise NotPlainData(f"not an encoded value: {str(tree)[:60]!r}")
    tag = next(iter(tree))
    body = tree[tag]
    if tag == "bool" and type(body) is bool:
        return body
    if tag == "int" and type(body) is int:
        return body
    if tag == "float" and type(body) in (int, float):
        return float(body)
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "str" and type(body) is str:
        return body
    if tag in ("list", "tuple") and type(body) is list:
        items = [decode_answer(item, arrays, depth + 1) for item in body]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and type(body) is dict:
        return {k: decode_answer(v, arrays, depth + 1) for k, v in body.items()}
    if tag in ("ndarray", "tensor") and type(body) is str and type(arrays.get(body)) is np.ndarray:
        array = np.array(arrays[body], copy=True)
        if tag == "ndarray":
            return array
        dtype = tree.get("dtype")
        if dtype not in ANSWER_DTYPES:
            raise NotPlainData(f"a tensor of dtype {str(dtype)[:40]}")
        import torch

        return torch.from_numpy(array).to(getattr(torch, dtype))
    if tag == "numpy" and body in ANSWER_DTYPES and body != "bfloat16":
        value = decode_answer(tree.get("value"), arrays, depth + 1)
        if type(value) not in (bool, int, float):
            raise NotPlainData("a numpy scalar that holds no number")
        try:
            return np.dtype(body).type(value)
        except (OverflowError, ValueError) as error:
            raise NotPlainData(f"a numpy {body} of {str(value)[:40]} ({error})") from None
    if tag == "unsupported":
        return Unsupported(str(body)[:200])
    raise NotPlainData(f"not plain data (tag {str(tag)[:40]!r})")


# --------------------------------------------------------------------------------------------- cases
def encode_cases(cases: list, arrays: dict[str, np.ndarray]) -> list[dict]:
    """Cases (objects with args, kwargs, repeat, global_seed) as plain requests."""
    encoder = _Encoder(arrays, prefix="q")
    return [{"args": encoder.encode_input(list(case.args)), "kwargs": encoder.encode_input(dict(case.kwargs)),
             "repeat": int(case.repeat), "global_seed": case.global_seed} for case in cases]


def decode_arguments(request: dict, arrays: dict[str, np.ndarray], rngs: dict | None = None) -> tuple[list, dict]:
    return decode(request["args"], arrays, rngs), decode(request["kwargs"], arrays, rngs)


@dataclass
class _Swap:
    """The package functions that solve an exercise, stubbed while the learner's function runs."""

    targets: list[str]
    saved: list = field(default_factory=list)

    def __enter__(self):
        import importlib

        for target in self.targets:
            module_name, _, qualname = target.partition(":")
            owner = importlib.import_module(module_name)
            *path, name = qualname.split(".")
            for part in path:
                owner = getattr(owner, part)
            function = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            function = getattr(function, "__func__", function)
            message = (f"{qualname} ({module_name}) is the package's own answer and is switched off while "
                       "your function is checked: write it yourself (a guard against calling it by accident, not "
                       "against copying it: a copy is plagiarism the checks do not detect)")
            stub_source = (f"def stub(*args, **kwargs):\n    raise __import__({__name__!r}, fromlist=['NotAvailable'])"
                           f".NotAvailable({message!r})\n")
            scope: dict = {}
            exec(compile(stub_source, "<not available>", "exec"), scope)  # noqa: S102 (our own constant source)
            stub = scope["stub"].__code__.replace(co_name=function.__code__.co_name)
            if function.__code__.co_freevars:  # a closure: its cells must match, so keep a matching stub
                stub = stub.replace(co_freevars=function.__code__.co_freevars)
            self.saved.append((function, function.__code__))
            function.__code__ = stub
        return self

    def __exit__(self, *exc):
        for function, code in reversed(self.saved):
            function.__code__ = code
        self.saved.clear()
        return False


def _same_object(result: Any, inputs: list) -> int | None:
    """The position of the input that `result` is (not a copy of), for containers and arrays, else None."""
    for index, value in enumerate(inputs):
        if result is value and (type(value) in (np.ndarray, list, dict) or _is_tensor(value)):
            return index
    return None


def call_case(function, request: dict, arrays: dict[str, np.ndarray], encoder: _Encoder,
              keep_inputs: bool = False) -> dict:
    """Call `function` on one request; the record of what it did, as plain data."""
    repeat = max(int(request.get("repeat") or 0), 1)
    rngs: dict = {}
    values, changed, aliased = [], [], None
    numpy_state, python_state = np.random.get_state(), random.getstate()
    try:
        if request.get("global_seed") is not None:
            np.random.seed(int(request["global_seed"]))
            random.seed(int(request["global_seed"]))
            _torch_seed(int(request["global_seed"]))
        for _ in range(repeat):
            args, kwargs = decode_arguments(request, arrays, rngs)
            inputs = [*args, *kwargs.values()]
            before = [_state(v) for v in inputs] if keep_inputs else []
            try:
                result = function(*args, **kwargs)
            except NotImplementedError:
                return {"not_implemented": True}
            except NotAvailable as error:
                return {"raised": f"{error}", "not_available": True}
            except Exception as error:  # the learner's bug: its type and message
                return {"raised": f"{type(error).__name__}: {error}"[:2000]}
            if keep_inputs:
                changed = sorted(set(changed) | {i for i, (b, v) in enumerate(zip(before, inputs)) if _differs(b, v)})
            if aliased is None:
                aliased = _same_object(result, inputs)
            values.append(encoder.encode(result))
    except OverflowError as error:
        return {"raised": f"the answer is too large to check ({error})"}
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
    record: dict = {"value": values[0]} if int(request.get("repeat") or 0) == 0 else {"values": values}
    if changed:
        record["changed"] = changed
    if aliased is not None:
        record["aliased"] = aliased
    return record


def _torch_seed(seed: int) -> None:
    torch = __import__("sys").modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def _snapshot(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if _is_tensor(value):
        return value.detach().clone()
    return None


def _state(value: Any) -> Any:
    """An input as it was before the call: a copy of an array or tensor, else its plain encoding."""
    snapshot = _snapshot(value)
    return snapshot if snapshot is not None else _Encoder().encode(value)


def _differs(before: Any, value: Any) -> bool:
    """Whether an input changed since `_state` took `before`."""
    if isinstance(before, np.ndarray) or _is_tensor(before):
        return _changed(before, value)
    return before != _Encoder().encode(value)


def _changed(snapshot: Any, value: Any) -> bool:
    if snapshot is None:
        return False
    if isinstance(snapshot, np.ndarray):
        return not (snapshot.shape == value.shape and np.array_equal(snapshot, value, equal_nan=True))
    import torch

    return not (snapshot.shape == value.shape and torch.equal(snapshot, value.detach()))


def call_all(function, requests: list[dict], arrays: dict[str, np.ndarray], unavailable: list[str] = (),
             keep_inputs: bool = False) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Every request's record, and the arrays they refer to (the package's answers stubbed meanwhile)."""
    out_arrays: dict[str, np.ndarray] = {}
    encoder = _Encoder(out_arrays, prefix="v")
    with _Swap(list(unavailable)):
        records = [call_case(function, request, arrays, encoder, keep_inputs) for request in requests]
    return records, out_arrays


# --------------------------------------------------------------------------------------------- in the grading kernel
def answer_requests(namespace: dict, exercise: str, folder: str) -> None:
    """Run the requests the grader left for `exercise` in `folder` on the learner's function; write the records.

    Called by the cell that stands in for the exercise's check cell in a graded run. What it writes is only data:
    the grader decodes and judges it in its own process, so anything done to this function or its output can at
    most make a wrong answer.
    """
    folder = Path(folder)
    plan = json.loads((folder / REQUESTS).read_text())[exercise]
    with np.load(folder / requests_arrays_name(exercise), allow_pickle=False) as loaded:
        arrays = {key: loaded[key] for key in loaded.files}
    function = namespace.get(exercise)
    if not callable(function):
        result: dict = {"missing": True}
        out_arrays: dict = {}
    else:
        records, out_arrays = call_all(function, plan["requests"], arrays, plan.get("unavailable", []),
                                       plan.get("keep_inputs", False))
        result = {"records": records}
    target = folder / ANSWERS
    target.mkdir(exist_ok=True)
    _write_atomic(target / f"{exercise}.npz", lambda handle: np.savez(handle, **out_arrays))
    _write_atomic(target / f"{exercise}.json", lambda handle: handle.write(json.dumps(result).encode()))
    print(f"{exercise}: answered {len(plan['requests'])} requests for the grader")


def requests_arrays_name(exercise: str) -> str:
    """The file holding the arrays of one exercise's requests (each exercise numbers its arrays from 0)."""
    return f"requests-{exercise}.npz"


def _write_atomic(path: Path, write) -> None:
    handle = tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp")
    try:
        with handle:
            write(handle)
        os.replace(handle.name, path)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
