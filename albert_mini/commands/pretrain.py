"""`albert-mini pretrain`: pretrain ALBERT; rerun the same command to resume a killed run exactly.

    albert-mini pretrain --preset albert-mini --corpus austen --task sop --steps 600 --minutes 15 --out runs/mini
    albert-mini tokenizer train --text my_texts/ --vocab-size 8000 --out runs/my.model
    albert-mini pretrain --corpus my_texts/ --tokenizer runs/my.model --steps 600 --out runs/my
    torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain ...   # DDP: training/distributed.py

The flags are the fields of PretrainingSetup (training/setup.py), checked there once; training/run.py builds the
run (the memory check included) and its directory (run.json, config.json, metrics.jsonl, checkpoints/) and trains
it.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from typing import TYPE_CHECKING

from ..cli import run as run_cli
from ..paths import DATA_ROOT
from ..safe_files import Writes
from ..text.corpus import expand_text_paths
from ..training import preemption
from ..training.setup import PretrainingSetup, add_flags
from . import command_parser

if TYPE_CHECKING:  # the run's modules load torch: imported where the run starts, so --help answers at once
    from ..training.trainer import TrainResult

EPILOG = """\
effective batch per optimizer step = --batch-size x world size x --accumulate
  (world size = number of processes: 1, or --nproc_per_node x nodes under torchrun)

your own text, in two steps (UTF-8 files; a folder means its *.txt files; quote glob patterns):
  albert-mini tokenizer train --text 'texts/*.txt' --vocab-size 8000 --out runs/texts.model
  albert-mini pretrain --corpus 'texts/*.txt' --tokenizer runs/texts.model --steps 600 --out runs/texts
  The model's vocab_size is the tokenizer's (whatever the preset says). 5% of the documents (those whose text
  has the smallest sha256) are held out for evaluation unless --validation or --holdout-fraction says otherwise.
  run.json records the sha256 of every file: resuming on changed text is refused, naming the files.
  The first run on a text prepares it into the token cache ($ALBERT_MINI_CACHE, else cache/tokens), on all
  cores; later runs, resumes and DDP ranks map it from disk (albert-mini prepare does it ahead of time).

run directory (--out): a run writes only into a directory that is absent, empty, or holds a run of its own
  (run.json, config.json, metrics.jsonl, checkpoints/step-*). A directory holding anything else (your files,
  an exported model) is refused, even with --overwrite; nothing but a run's own files is ever deleted.

resuming: if --out already holds a run, the same command continues it from its newest checkpoint, bit for bit
  on the same machine, thread count and process count (weights, optimizer, schedule, data position and RNG
  states are all restored). A run with different settings, on changed text, or without its run.json is
  refused; use a new --out, or --overwrite to delete that run's files. --minutes, --eval-every, --eval-batches,
  --save-every, --log-every, --keep, --compile, --quiet may change, and so may --device: a run resumed on
  another device than its checkpoint's goes on, saying so in a line naming both devices and in a note in
  run.json (the steps from there are not bit-identical to the first device's). --config may not change.

devices (--device): auto takes a CUDA GPU if there is one, else Apple's GPU (MPS), else the CPU; cuda or mps
  where there is none is refused in one line. run.json records the device used ("device").

model fields (--config KEY=VALUE ...): set AlbertConfig fields on top of --preset, e.g. --config
  embedding_size=64 num_hidden_layers=4; an unknown key or a bad value is refused, naming the valid keys or the
  problem, and so is a value the data cannot feed (type_vocab_size 1 with sentence pairs, ...). A model and batch
  whose training step cannot fit in the device's memory are refused before anything is allocated, with the
  estimate. config.json and run.json record the model built.

preemption: SIGTERM or SIGUSR1 (what a cluster scheduler sends before it takes the machine) ends the run after
  the step under way with a checkpoint and one line, exit status 128 + the signal (143, 138) so the scheduler
  requeues it; the same command resumes it bit for bit. A second signal ends it at once.

stopping: --minutes is checked between optimizer steps, so a run overruns it by at most the step under way (a
  step is never cut). A loss that becomes NaN or infinite stops the run with one line naming the step (exit
  status 2); no checkpoint ever holds such weights, so the newest one is the last good one.

errors: bad flags, files or directories end with one line `error: ...` and exit status 2; --debug shows the
  traceback.

several processes (DDP: gloo on CPU, nccl on GPUs; each process reads its own shard; rank 0 writes files
and shows progress):
  torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain --corpus synthetic --steps 20 --out runs/ddp
  on a node with 8 GPUs: torchrun --standalone --nproc_per_node 8 -m albert_mini pretrain ... (one GPU each)
  on several machines: torchrun --nnodes N --node_rank i --nproc_per_node G --master_addr HOST --master_port
  PORT -m albert_mini pretrain ... on each, with one --out that every machine mounts (a shared file system):
  rank 0 writes the run and every rank resumes from its checkpoints; a node that does not see it stops the run
"""


WRITES = Writes("pretrain", outputs="--out DIR, a run directory (run.json, config.json, metrics.jsonl, checkpoints/; "
                "a run's own files only)", inputs="--corpus and --validation texts (default: the Austen splits), "
                "--tokenizer (default: the Austen tokenizer)")


def inputs_of(setup: PretrainingSetup) -> list:
    """Every file the run reads, defaults resolved."""
    if setup.corpus == "synthetic":
        return []
    from ..text.tokenizer import DEFAULT_DIR as TOKENIZER_DIR

    texts = expand_text_paths(setup.corpus) if setup.own_text else [DATA_ROOT / setup.corpus]
    validation = expand_text_paths(setup.validation) if setup.validation else []
    return [*texts, *validation, setup.tokenizer or TOKENIZER_DIR / "spiece.model"]


def build_parser() -> argparse.ArgumentParser:
    """The flags of PretrainingSetup (training/setup.py), in its order, with its help and defaults."""
    parser = command_parser("pretrain", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> TrainResult:
    """Command line (see --help); bad flags, files or directories end with one error line and exit status 2."""
    try:
        return run_cli(_main, argv)
    except SystemExit as stopped:
        if stopped.code and launched_by_torchrun():
            end_worker_now(stopped.code)
        raise


def launched_by_torchrun() -> bool:
    """A worker of torchrun (the env:// rendezvous variables are set; training/distributed.py says the same)."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def end_worker_now(status: int) -> None:
    """End a torchrun worker that stopped on an error (its line said, its files written and closed) without
    Python's teardown: after a run under DDP the interpreter's last garbage collection took 40-200 s on a loaded
    machine, and its agent, and the other nodes' agents, waited that long to end. The exit handlers still run."""
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(status)


def _main(argv: list[str]) -> TrainResult:
    setup = PretrainingSetup.from_args(build_parser().parse_args(argv))  # checked there, once
    from ..training import rundir
    from ..training.distributed import check_ranks_agree, cleanup, init_distributed

    # A file where the run's folder should be, then the write rule; what --out holds is listed once, when the run
    # opens its directory.
    if setup.out:
        rundir.refuse_non_directory(setup.out)
    WRITES.check(folders=[("--out", setup.out)] if setup.out else [], inputs=inputs_of(setup))
    info = init_distributed(setup.device)
    preemption.enable()  # SIGTERM or SIGUSR1 while it trains: save after the step, exit 128 + the signal
    peers_alive = True
    try:
        check_ranks_agree(setup.settings(), info)  # before any text is read: a difference is one line, no hang
        from ..training.run import pretrain  # the run's modules, once its flags, folders and device are settled

        return pretrain(setup, info)
    except RuntimeError as error:  # another rank died or hung: one line and exit 2, not a wait or a traceback
        from ..training.distributed import is_peer_loss, peer_lost

        if not is_peer_loss(error, info):
            raise
        peers_alive = False
        step = getattr(error, "training_step", None)  # set by the trainer when it was training
        raise peer_lost(error, info, step, newest_checkpoint(setup.out)) from error
    finally:
        cleanup(info, peers_alive)


def newest_checkpoint(out: str | None) -> str | None:
    from ..training.checkpoint import latest_checkpoint

    newest = latest_checkpoint(out) if out else None
    return str(newest) if newest is not None else None
