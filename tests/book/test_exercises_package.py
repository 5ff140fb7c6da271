"""The exercises package exports every chapter's checks, each name once."""

import importlib

import albert_mini.book.exercises as exercises
from albert_mini.book.exercises import chapters_with_exercises


def test_all_names_every_check_once():
    assert len(exercises.__all__) == len(set(exercises.__all__))
    checks = {name for number in chapters_with_exercises()
              for name in dir(importlib.import_module(f"albert_mini.book.exercises.ch{number}"))
              if name.startswith("check_")}
    assert checks and checks == {name for name in exercises.__all__ if name.startswith("check_")}
    assert all(callable(getattr(exercises, name)) for name in exercises.__all__ if name.startswith("check_"))
