"""Exercise references and worked solutions that restate a library function word for word stay equal to it on the
exercise's own inputs (its fixed cases and those drawn for the learner and for the grader), and no other such copy
appears without being compared here."""

import ast
import importlib
from pathlib import Path

import pytest
from exercise_helpers import GRADER_SEED

from albert_mini.book.answering import decode_arguments
from albert_mini.book.exercises import chapter_exercises
from albert_mini.study import leak_probe, throughput
from albert_mini.tasks import features
from albert_mini.text import masking

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "albert_mini"
COPIES = [*sorted((PACKAGE / "book" / "exercises").glob("ch[0-9][0-9].py")),
          *sorted((ROOT / "chapters" / "solutions").glob("[0-9][0-9]_*.py"))]
SEEDS = (None, 11, 12, GRADER_SEED)  # the learner's cases, then three of the grader's

# A copy (file relative to the repository, function) -> the library's function, called as the exercise calls its
# answer (the budget exercise asks for the cap before the share).
TWINS = {
    ("albert_mini/book/exercises/ch06.py", "prediction_budget"):
        lambda n_tokens, max_predictions=20, masked_lm_prob=0.15: masking.prediction_budget(
            n_tokens, masked_lm_prob, max_predictions),
    ("chapters/solutions/06_ngram_masking.py", "prediction_budget"):
        lambda n_tokens, max_predictions=20, masked_lm_prob=0.15: masking.prediction_budget(
            n_tokens, masked_lm_prob, max_predictions),
    ("albert_mini/book/exercises/ch08.py", "answer_token_span"): features.answer_token_span,
    ("albert_mini/book/exercises/ch09.py", "mlm_head_flops_per_token"): throughput.mlm_head_flops_per_token,
    ("chapters/solutions/09_scaling_up.py", "mlm_head_flops_per_token"): throughput.mlm_head_flops_per_token,
    ("chapters/solutions/05_sentence_order_prediction.py", "overlap_feature"): leak_probe.type_overlap,
}


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def _body(function: ast.FunctionDef) -> str:
    """A function's statements as code, its docstring and comments aside."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(ast.unparse(statement) for statement in body)


def _library_bodies() -> dict[str, str]:
    bodies = {}
    for path in PACKAGE.rglob("*.py"):
        if (PACKAGE / "book" / "exercises") not in path.parents:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef):
                    bodies.setdefault(_body(node), f"{path.relative_to(ROOT)}:{node.name}")
    return bodies


def _load(path: Path, name: str):
    """One function of a package module, or of a solutions file with the file's imports, without running its other
    cells (a solutions file runs every check)."""
    if PACKAGE in path.parents:
        return getattr(importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts)), name)
    tree = ast.parse(path.read_text())
    kept = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)] + [_functions(path)[name]]
    scope: dict = {}
    exec(compile(ast.Module(kept, type_ignores=[]), str(path), "exec"), scope)  # noqa: S102 (the repository's own file)
    return scope[name]


def test_every_word_for_word_copy_of_a_library_function_is_compared_below():
    library = _library_bodies()
    found = {(str(path.relative_to(ROOT)), name): library[_body(node)]
             for path in COPIES for name, node in _functions(path).items()
             if len(_body(node)) >= 30 and _body(node) in library}
    assert found, "the scan finds the known copies"
    unlisted = {copy: original for copy, original in found.items() if copy not in TWINS}
    assert not unlisted, f"compare these copies with the library function in TWINS, or import it: {unlisted}"


@pytest.mark.parametrize("copy", sorted(TWINS), ids=lambda copy: f"{Path(copy[0]).stem}:{copy[1]}")
def test_a_copy_gives_what_the_library_gives_on_every_case_of_its_exercise(copy):
    path, name = copy
    function, library = _load(ROOT / path, name), TWINS[copy]
    exercise = chapter_exercises(Path(path).name[:2] if path.startswith("chapters") else Path(path).stem[2:])[name]
    compared = 0
    for seed in SEEDS:
        requests, arrays = exercise.requests(exercise.cases(seed))
        for request in requests:
            args, kwargs = decode_arguments(request, arrays)
            again_args, again_kwargs = decode_arguments(request, arrays)  # fresh inputs for the second call
            ours, theirs = function(*args, **kwargs), library(*again_args, **again_kwargs)
            assert type(ours) is type(theirs) and ours == theirs, (request, ours, theirs)
            compared += 1
    assert compared >= 4 * len(exercise.fixed)
