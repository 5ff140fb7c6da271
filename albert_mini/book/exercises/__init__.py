"""Checks for the chapters' exercises: `check_<name>(learner_function)` compares with the package's reference.

Each chapter's checks live in their own module (`ch03.py`, ...); every `check_*` function is re-exported here,
so a chapter writes `from albert_mini.book.exercises import check_factorized_parameter_count`. A chapter's
exercises, in the order it asks them, are its module's EXERCISES; `chapter_exercises` maps each name to its
`Exercise` (what the tests run against chapters/solutions/ and what `make grade` judges a submission by).
"""

import importlib
import pkgutil
import re

from .checking import NOT_ATTEMPTED, Exercise, ExerciseFailed

__all__ = ["ExerciseFailed", "NOT_ATTEMPTED", "chapter_exercises", "chapters_with_exercises",
           "check_albert_preprocess", "check_answer_token_span", "check_apply_80_10_10",
           "check_break_even_embedding_size", "check_factorized_embedding_params", "check_lamb_update",
           "check_layer_schedule", "check_mlm_head_flops_per_token", "check_mlm_head_params",
           "check_ngram_probabilities", "check_nsp_label_from_sources", "check_overlap_feature", "check_pair_layout",
           "check_post_ln_block", "check_prediction_budget", "check_race_pack", "check_sample_span_length",
           "check_sharing_plan", "check_sop_pair", "check_squad_f1", "check_training_memory_bytes",
           "check_truncate_longest_first", "check_trust_ratio", "check_warmup_poly_lr"]

_CHAPTER_MODULE = re.compile(r"ch(\d\d)")

for _module in pkgutil.iter_modules(__path__):
    if _CHAPTER_MODULE.fullmatch(_module.name):
        _loaded = importlib.import_module(f"{__name__}.{_module.name}")
        for _name in dir(_loaded):
            if _name.startswith("check_"):  # each listed once in __all__ above (tests/book/test_exercises_package.py)
                globals()[_name] = getattr(_loaded, _name)


def chapters_with_exercises() -> list[str]:
    """The two-digit numbers of the chapters that have exercises ("01", "02", ...)."""
    return sorted(m.group(1) for m in map(_CHAPTER_MODULE.fullmatch, (i.name for i in pkgutil.iter_modules(__path__)))
                  if m)


def chapter_exercises(number: str) -> dict[str, Exercise]:
    """Exercise name -> the exercise, in the order chapter `number` ("05") asks them."""
    module = importlib.import_module(f"{__name__}.ch{number}")
    return {exercise.name: exercise for exercise in module.EXERCISES}
