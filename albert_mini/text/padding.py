"""Right-padding rows of token ids into one batch: the one padding rule every batch in the project uses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..specials import IGNORE_INDEX, PAD_ID

# What fills the tail of each column: <pad> for ids, segment 0 for token types, "no target" for MLM labels.
PAD_VALUES = {"input_ids": PAD_ID, "token_type_ids": 0, "labels": IGNORE_INDEX}


def padded_width(lengths: Sequence[int], pad_to: int | None = None) -> int:
    """The batch width: the longest row, or `pad_to` when given (which must hold the longest row)."""
    longest = max(lengths)
    if pad_to is None:
        return longest
    if pad_to < longest:
        raise ValueError(f"pad_to={pad_to} is shorter than the longest sequence ({longest} tokens); raise pad_to "
                         f"or build shorter sequences (max_seq_len / max_length)")
    return pad_to


def pad_rows(rows: Sequence[Sequence[int]], value: int, width: int) -> torch.Tensor:
    """Rows of ints (lists or arrays) as one (B, width) LongTensor, each row's tail filled with `value`."""
    out = np.full((len(rows), width), value, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return torch.from_numpy(out)


def pad_batch(columns: dict[str, Sequence[Sequence[int]]], pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """Pad every column (input_ids, token_type_ids, labels) to one width and add attention_mask (1 = real token).

    `columns` maps a name of PAD_VALUES to one row per sequence; rows of a sequence have the same length.
    """
    lengths = [len(row) for row in columns["input_ids"]]
    if not lengths:
        raise ValueError("cannot pad an empty batch: pass at least one sequence")
    width = padded_width(lengths, pad_to)
    batch = {name: pad_rows(rows, PAD_VALUES[name], width) for name, rows in columns.items()}
    batch["attention_mask"] = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()  # (B, T)
    return batch


