"""Checks for the chapters' exercises: `check_<name>(learner_function)` compares with the package's reference.

Each chapter's checks live in their own module (`ch03.py`, ...); every `check_*` function is re-exported here,
so a chapter writes `from albert_mini.book.exercises import check_factorized_parameter_count`.
"""

import importlib
import pkgutil

from .checking import ExerciseFailed, check_against_reference

__all__ = ["ExerciseFailed", "check_against_reference"]

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("ch"):
        _loaded = importlib.import_module(f"{__name__}.{_module.name}")
        for _name in dir(_loaded):
            if _name.startswith("check_"):
                globals()[_name] = getattr(_loaded, _name)
                __all__.append(_name)
