"""A pretraining run from its setup: build it (resuming it if --out allows), train it, say where its files are.

What `albert-mini pretrain` runs (its command line is albert_mini/commands/pretrain.py):

    albert-mini pretrain --preset albert-mini --corpus austen --task sop --steps 600 --minutes 15 --out runs/mini
    albert-mini tokenizer train --text my_texts/ --vocab-size 8000 --out runs/my.model
    albert-mini pretrain --corpus my_texts/ --tokenizer runs/my.model --steps 600 --out runs/my
    torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain ...   # DDP: training/distributed.py

The flags are the fields of PretrainingSetup (training/setup.py), checked there once; training/launch.py builds
the run and its directory: run.json (these settings, the tokenizer's path and sha256, the sha256 of every text
file, the world size), config.json (the model), metrics.jsonl (one line per log step and evaluation) and
checkpoints/step-NNNNNNN/.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import Diverged
from .distributed import DistInfo
from .launch import build_run
from .setup import PretrainingSetup
from .trainer import TrainResult


def run(setup: PretrainingSetup, info: DistInfo) -> TrainResult:
    """Build the run (resuming it if --out allows), train it, and say where its files are."""
    say = print if info.is_main and not setup.quiet else (lambda *a, **k: None)
    trainer = build_run(setup, info, say)
    try:
        result = trainer.train()
    except FloatingPointError as err:
        raise Diverged(f"the loss diverged at step {trainer.step + 1} ({str(err).split(';')[0]}); lower --lr "
                       f"(now {setup.lr:g}) or lengthen --warmup, and start again with --overwrite") from err
    finally:
        if trainer.run_lock is not None:
            trainer.run_lock.release()
    say(f"stopped at step {result.step} ({result.stop_reason}); metrics and checkpoints in {Path(setup.out)}")
    if result.eval is not None:
        say("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.eval.items()
                                     if isinstance(v, float) and k != "elapsed_s"))
    return result
