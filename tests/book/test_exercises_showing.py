"""How a check's failure message shows values: short ones whole, long tensors, arrays and lists as their shape and
a few values."""

import numpy as np
import pytest
import torch
from exercise_helpers import fails_with

from albert_mini.book.exercises import ch07
from albert_mini.book.exercises.showing import Shown, short_form

pytestmark = pytest.mark.usefixtures("first_try")  # tests/book/conftest.py


def test_a_long_tensor_is_its_shape_and_a_few_values():
    tensor = torch.arange(600, dtype=torch.float32).reshape(4, 150) / 7
    assert short_form(tensor) == "tensor of shape (4, 150): [0, 0.1429, 0.2857, ..., 85.57]"
    assert short_form(np.arange(600).reshape(4, 150)) == "array of shape (4, 150): [0, 1, 2, ..., 599]"
    assert short_form(torch.ones(3, 5, dtype=torch.bfloat16)) == "tensor of shape (3, 5): [1, 1, 1, ..., 1]"


def test_a_short_tensor_or_list_is_shown_whole():
    assert short_form(torch.tensor([0.5, 1.25, -2.0])) == "[0.5, 1.25, -2.0]"
    assert short_form(np.array([[1, 2], [3, 4]])) == "[[1, 2], [3, 4]]"
    assert short_form([2, 10, 11, 3]) == "[2, 10, 11, 3]" and short_form((1.5, None)) == "(1.5, None)"
    assert short_form(0.1 + 0.2) == "0.30000000000000004"  # a number keeps every digit


def test_a_long_list_is_its_shape_or_its_length_and_first_items():
    assert short_form([[i / 3 for i in range(150)]] * 4) == "list of shape (4, 150): [0, 0.3333, 0.6667, ..., 49.67]"
    words = [f"word{i}" for i in range(200)]
    assert short_form(words) == "list of 200 items: ['word0', 'word1', 'word2', ...]"
    ragged = [list(range(60)), list(range(70))]
    assert short_form(ragged, 100).startswith("list of 2 items: [list of shape (60,): [0, 1, 2, ..., 59]")


def test_long_text_is_cut_with_a_mark_and_shown_text_is_not_quoted():
    assert short_form("x" * 500, 20) == "'" + "x" * 19 + " ..."
    assert short_form([Shown("np.random.default_rng(3)"), 4]) == "[np.random.default_rng(3), 4]"


def test_a_failure_message_shows_each_tensor_once_as_a_shape(capsys):
    """lamb_update's inputs and answers are (8, 4) tensors: each is one short line, and the largest difference still
    says where they part."""
    printed = fails_with(ch07.check_lamb_update, lambda w, g, m, v, lr, weight_decay=0.01, adapt=True:
                         (w - lr * g, m.clone(), v.clone()), capsys, "largest difference")
    input_line = next(line for line in printed.splitlines() if line.lstrip().startswith("input:"))
    assert input_line.count("tensor of shape (8, 4): [") == 4 and len(input_line) < 400
    answers = [line for line in printed.splitlines() if line.lstrip().startswith(("expected:", "got:"))]
    assert answers and all("tensor of shape (8, 4): [" in line and len(line) < 100 for line in answers)
