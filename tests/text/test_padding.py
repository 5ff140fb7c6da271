"""The one padding rule: right-pad each column with its own fill value and mark real tokens in attention_mask."""

import numpy as np
import pytest
import torch

from albert_mini.specials import IGNORE_INDEX, PAD_ID
from albert_mini.text.padding import pad_batch, pad_rows, padded_width


def test_columns_are_padded_with_their_own_values():
    batch = pad_batch({"input_ids": [[2, 7, 3], np.array([2, 3])], "token_type_ids": [[0, 0, 1], [0, 0]],
                       "labels": [[-100, 7, -100], [-100, -100]]})
    assert batch["input_ids"].tolist() == [[2, 7, 3], [2, 3, PAD_ID]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 1], [0, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 7, -100], [-100, -100, IGNORE_INDEX]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert all(t.dtype == torch.long for t in batch.values())


def test_pad_to_fixes_the_width_and_must_hold_the_longest_row():
    assert pad_batch({"input_ids": [[5]]}, pad_to=4)["attention_mask"].tolist() == [[1, 0, 0, 0]]
    assert padded_width([3, 1], None) == 3 and padded_width([3, 1], 3) == 3
    with pytest.raises(ValueError, match="pad_to=2 is shorter than the longest sequence \\(3 tokens\\)"):
        padded_width([3, 1], 2)
    with pytest.raises(ValueError, match="empty batch"):
        pad_batch({"input_ids": []})
    assert pad_rows([[1], []], value=9, width=2).tolist() == [[1, 9], [9, 9]]
