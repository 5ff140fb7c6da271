"""Random MLM + sentence-task batches from a seeded generator: the smallest batch source, to test the machinery."""

from __future__ import annotations

import numpy as np
import torch

from ..specials import CLS_ID, FIRST_ORDINARY_ID, IGNORE_INDEX, MASK_ID, PAD_ID, SEP_ID
from .batch_source import BatchSource

# What `take` may keep in memory: 2**22 tokens (about 140 MB of batches, four int64 tensors a token). The stream
# is endless, so this, not the data, bounds a request such as --eval-batches 100000000.
MAX_HELD_TOKENS = 1 << 22


def max_take(batch_size: int, seq_len: int) -> int:
    """The most batches of batch_size x seq_len tokens that `SyntheticBatches.take` returns (at least 1)."""
    return max(1, MAX_HELD_TOKENS // (batch_size * seq_len))


class SyntheticBatches(BatchSource):
    """An endless stream of random `[CLS] a [SEP] b [SEP]` batches with MLM targets and (optionally) sentence labels.

    Micro-batch i on rank r is rows [r*B, (r+1)*B) of global batch i, which depends on (seed, i) only: one
    process with batch size B * world sees exactly what the ranks see together. Rows have random lengths
    (so ranks hold different numbers of masked tokens).
    """

    def __init__(self, vocab_size: int, batch_size: int, seq_len: int, seed: int = 0, rank: int = 0,
                 world_size: int = 1, mask_prob: float = 0.15, sentence_labels: bool = True):
        if seq_len < 8 or vocab_size <= FIRST_ORDINARY_ID or batch_size < 1:
            raise ValueError(f"need seq_len >= 8, vocab_size > {FIRST_ORDINARY_ID}, batch_size >= 1 "
                             f"(got {seq_len}, {vocab_size}, {batch_size})")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside 0..{world_size - 1}")
        super().__init__()
        self.vocab_size, self.batch_size, self.seq_len, self.seed = vocab_size, batch_size, seq_len, seed
        self.rank, self.world_size, self.mask_prob, self.sentence_labels = rank, world_size, mask_prob, sentence_labels

    def shard(self, rank: int, world_size: int) -> SyntheticBatches:
        """The same stream as seen by `rank` of `world_size` processes (batch_size stays per rank)."""
        return SyntheticBatches(self.vocab_size, self.batch_size, self.seq_len, self.seed, rank, world_size,
                                self.mask_prob, self.sentence_labels)

    def batches_in_epoch(self, epoch: int) -> float:
        return float("inf")  # one endless epoch

    def take(self, n: int) -> list[dict]:
        """The first n batches as a list (a re-iterable validation set); n is bounded by `max_take` up front,
        since the list is kept in memory and the stream never runs out."""
        most = max_take(self.batch_size, self.seq_len)
        if n > most:
            raise ValueError(f"take({n}) would keep {n:,} batches of {self.batch_size} x {self.seq_len} tokens in "
                             f"memory; at most {most:,} ({MAX_HELD_TOKENS:,} tokens)")
        return super().take(n)

    def batch(self, epoch: int, index: int) -> dict:
        """Micro-batch number `index` of this rank (there is only epoch 0)."""
        rng = np.random.default_rng([self.seed, index])
        G, T = self.batch_size * self.world_size, self.seq_len
        lengths = rng.integers(T // 2, T + 1, size=G)  # (G,)
        ids = rng.integers(FIRST_ORDINARY_ID, self.vocab_size, size=(G, T))
        position = np.arange(T)[None, :]  # (1, T)
        middle = lengths[:, None] // 2  # (G, 1)
        real = position < lengths[:, None]  # (G, T)
        ids[:, 0] = CLS_ID
        ids[position == middle] = SEP_ID
        ids[position == lengths[:, None] - 1] = SEP_ID
        ids[~real] = PAD_ID
        special = (ids == CLS_ID) | (ids == SEP_ID) | ~real
        masked = (rng.random((G, T)) < self.mask_prob) & ~special
        rows = slice(self.rank * self.batch_size, (self.rank + 1) * self.batch_size)
        out = {
            "input_ids": torch.from_numpy(np.where(masked, MASK_ID, ids)[rows]),
            "attention_mask": torch.from_numpy(real[rows].astype(np.int64)),
            "token_type_ids": torch.from_numpy(((position > middle) & real)[rows].astype(np.int64)),
            "labels": torch.from_numpy(np.where(masked, ids, IGNORE_INDEX)[rows]),
        }
        if self.sentence_labels:
            out["sentence_order_label"] = torch.from_numpy(rng.integers(0, 2, size=G)[rows])
        return out
