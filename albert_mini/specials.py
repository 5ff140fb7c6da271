"""ALBERT's special token ids and the label that marks "no target": the one place these numbers are written.

Ids 0-4 are the layout of the official `30k-clean.model` (and of every tokenizer this project trains), so the
model, the data pipeline and the trainer agree on them without asking a tokenizer.
"""

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["CLS_ID", "IGNORE_INDEX", "SEP_ID"]

PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3, 4
SPECIAL_PIECES = {"<pad>": PAD_ID, "<unk>": UNK_ID, "[CLS]": CLS_ID, "[SEP]": SEP_ID, "[MASK]": MASK_ID}
SPECIAL_IDS = frozenset(SPECIAL_PIECES.values())
FIRST_ORDINARY_ID = max(SPECIAL_IDS) + 1  # the smallest id of an ordinary piece (random test inputs start here)

# Label of a position (or sequence) that carries no target: HF's value, and torch cross_entropy's ignore_index.
IGNORE_INDEX = -100
