"""Pretrain ALBERT from the command line; rerun the same command to resume a killed run exactly.

    python -m albert_mini.training.pretrain --preset albert-mini --corpus austen --task sop --steps 600 \
        --minutes 15 --out runs/mini
    python -m albert_mini.text.tokenizer train --text my_texts/ --vocab-size 8000 --out runs/my.model
    python -m albert_mini.training.pretrain --corpus my_texts/ --tokenizer runs/my.model --steps 600 --out runs/my
    torchrun --standalone --nproc_per_node 2 -m albert_mini.training.pretrain ...   # DDP: training/distributed.py

The flags are the fields of PretrainingSetup (training/setup.py), checked there once; training/launch.py builds
the run and its directory: run.json (these settings, the tokenizer's path and sha256, the sha256 of every text
file, the world size), config.json (the model), metrics.jsonl (one line per log step and evaluation) and
checkpoints/step-NNNNNNN/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli import Parser
from ..cli import run as run_cli
from .distributed import DistInfo, cleanup, init_distributed
from .launch import Diverged, build_run
from .setup import PretrainingSetup, add_flags
from .trainer import TrainResult

EPILOG = """\
effective batch per optimizer step = --batch-size x world size x --accumulate
  (world size = number of processes: 1, or --nproc_per_node x nodes under torchrun)

your own text, in two steps (UTF-8 files; a folder means its *.txt files; quote glob patterns):
  python -m albert_mini.text.tokenizer train --text 'texts/*.txt' --vocab-size 8000 --out runs/texts.model
  python -m albert_mini.training.pretrain --corpus 'texts/*.txt' --tokenizer runs/texts.model --steps 600 \\
      --out runs/texts
  The model's vocab_size is the tokenizer's (whatever the preset says). 5% of the documents (those whose text
  has the smallest sha256) are held out for evaluation unless --validation or --holdout-fraction says otherwise.
  run.json records the sha256 of every file: resuming on changed text is refused, naming the files.

run directory (--out): a run writes only into a directory that is absent, empty, or holds a run of its own
  (run.json, config.json, metrics.jsonl, checkpoints/step-*). A directory holding anything else (your files,
  an exported model) is refused, even with --overwrite; nothing but a run's own files is ever deleted.

resuming: if --out already holds a run, the same command continues it from its newest checkpoint, bit for bit
  on the same machine, thread count and process count (weights, optimizer, schedule, data position and RNG
  states are all restored). A run with different settings, on changed text, or without its run.json is
  refused; use a new --out, or --overwrite to delete that run's files. --minutes, --eval-every, --eval-batches,
  --save-every, --log-every, --keep, --compile, --quiet may change.

errors: bad flags, files or directories end with one line `error: ...` and exit status 2; --debug shows the
  traceback.

several processes (DDP: gloo on CPU, nccl on GPUs; each process reads its own shard; rank 0 writes files
and shows progress):
  torchrun --standalone --nproc_per_node 2 -m albert_mini.training.pretrain --corpus synthetic --steps 20 \\
      --out runs/ddp
  on a node with 8 GPUs: torchrun --standalone --nproc_per_node 8 -m albert_mini.training.pretrain ... (one GPU each)
"""


def build_parser() -> argparse.ArgumentParser:
    """The flags of PretrainingSetup (training/setup.py), in its order, with its help and defaults."""
    parser = Parser(prog="python -m albert_mini.training.pretrain", description=__doc__.split("\n")[0],
                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> TrainResult:
    """Command line (see --help); bad flags, files or directories end with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> TrainResult:
    setup = PretrainingSetup.from_args(build_parser().parse_args(argv))  # checked there, once
    info = init_distributed()
    try:
        return run(setup, info)
    finally:
        cleanup(info)


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


if __name__ == "__main__":
    main()
