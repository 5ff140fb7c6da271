"""Generated text files for the tests of pretraining on your own text."""

from __future__ import annotations

import random

WORDS = ("the a one old young tall quiet cat dog bird horse man woman child king queen house tree river garden road "
         "bank field town city ran walked sat looked spoke waited slept laughed fell rose over under near behind "
         "beside into across through happy sad tired bright dark cold warm slowly quickly softly again never often "
         "morning evening winter summer letter music window door table bread water fire stone").split()
# Small, fast runs of the pretraining CLI on such text.
PRETRAIN_FLAGS = ["--preset", "albert-nano", "--seq-len", "32", "--batch-size", "4", "--eval-batches", "1",
                  "--steps", "2", "--save-every", "0", "--eval-every", "0", "--quiet"]


def write_texts(folder, files=12, seed=1):
    """`files` text files of 4 paragraphs of 5 sentences, from a fixed seed."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        paragraphs = [" ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 11))).capitalize() + "."
                               for _ in range(5)) for _ in range(4)]
        (folder / f"doc{i:02d}.txt").write_text("\n\n".join(paragraphs) + "\n")
    return folder
