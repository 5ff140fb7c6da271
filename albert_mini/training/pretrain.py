"""Pretrain ALBERT from the command line; rerun the same command to resume a killed run exactly.

    python -m albert_mini.training.pretrain --preset albert-mini --corpus austen --task sop --steps 600 \
        --minutes 15 --out runs/mini
    python -m albert_mini.text.tokenizer train --text my_texts/ --vocab-size 8000 --out runs/my.model
    python -m albert_mini.training.pretrain --corpus my_texts/ --tokenizer runs/my.model --steps 600 --out runs/my
    torchrun --standalone --nproc_per_node 2 -m albert_mini.training.pretrain ...   # DDP: training/distributed.py

The run directory gets run.json (these settings, the tokenizer's path and sha256, the sha256 of every text
file, the world size), config.json (the model), metrics.jsonl (one line per log step and evaluation) and
checkpoints/step-NNNNNNN/.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import torch

from ..cli import SEED_MAX, Parser, nonnegative_float, positive_float, seed
from ..cli import run as run_cli
from ..errors import UsageError, UserError
from ..model.config import PRESETS, AlbertConfig
from ..model.counting import count_parameters
from ..safe_files import check_out_folder
from ..text.instances import SENTENCE_TASKS
from . import rundir
from .checkpoint import atomic_write_text
from .distributed import DistInfo, barrier, cleanup, init_distributed
from .optim import OPTIMIZERS, WarmupPolyDecay, build_optimizer
from .pretrain_inputs import (
    DEFAULT_HOLDOUT,
    SPLIT_BY,
    Inputs,
    build_inputs,
    check_corpus_flags,
    load_tokenizer,
    short_batch_size,
    short_steps,
)
from .recipe import OUTPUT_BIASES, build_pretraining_model
from .trainer import TrainConfig, Trainer, TrainResult


class Diverged(UserError, FloatingPointError):
    """The loss became NaN or infinite; the message names the step and the settings to change."""


# Flags that do not change what is computed: they may differ between a run and its resumption.
FREE_ON_RESUME = ("out", "minutes", "eval_every", "eval_batches", "save_every", "log_every", "keep", "overwrite",
                  "compile", "quiet", "debug")

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
    p = Parser(prog="python -m albert_mini.training.pretrain", description=__doc__.split("\n")[0],
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="albert-mini", choices=list(PRESETS), help="model size (default: albert-mini)")
    p.add_argument("--corpus", nargs="+", default=["austen"], metavar="NAME|PATH",
                   help="austen: the committed Austen novels (default); synthetic: random tokens, to test the "
                        "machinery; or your own UTF-8 text: files, folders (their *.txt files) or glob patterns, "
                        "with --tokenizer")
    p.add_argument("--split-by", default=None, choices=list(SPLIT_BY),
                   help="your own text: file = each file is one document (default); blank-line = blank lines "
                        "separate documents and each line is a paragraph (BERT's input format)")
    p.add_argument("--validation", nargs="+", default=None, metavar="PATH",
                   help="your own text: held-out files for evaluation (default: hold out documents of --corpus)")
    p.add_argument("--holdout-fraction", type=float, default=None,
                   help=f"your own text without --validation: fraction of the documents held out for evaluation, "
                        f"the same ones whatever the file order or seed (default {DEFAULT_HOLDOUT:g}, at least one)")
    p.add_argument("--task", default="sop", choices=list(SENTENCE_TASKS),
                   help="sentence task beside MLM: sop (ALBERT), nsp (BERT) or none (MLM only); default sop")
    p.add_argument("--steps", type=int, required=True,
                   help="optimizer steps; also the length of the learning-rate decay, which reaches 0 here")
    p.add_argument("--minutes", type=positive_float, default=None,
                   help="also stop after this much training wall time (whole run, counted across resumptions); "
                        "the learning rate still follows --steps, so it has not reached 0 when time runs out")
    p.add_argument("--out", required=True,
                   help="run directory: config, metrics and checkpoints; resumed if it holds this run (see below)")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per micro-batch per process (default 32)")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence (default 128)")
    p.add_argument("--short-seq-len", type=int, default=None,
                   help="train the first --short-fraction of the steps on sequences this long (BERT's curriculum), "
                        "with --batch-size x --seq-len / this many sequences per micro-batch; evaluation uses "
                        "--seq-len")
    p.add_argument("--short-fraction", type=float, default=0.9,
                   help="fraction of --steps trained at --short-seq-len (default 0.9, as in BERT)")
    p.add_argument("--lr", type=positive_float, default=1.76e-3,
                   help="peak learning rate (default 1.76e-3, the paper's)")
    p.add_argument("--warmup", type=int, default=None,
                   help="linear warmup steps, 0 for none (default: 2.5%% of --steps, the paper's 3125 / 125000)")
    p.add_argument("--optimizer", default="lamb", choices=OPTIMIZERS, help="lamb (the paper's) or adamw")
    p.add_argument("--output-bias", default="unigram", choices=OUTPUT_BIASES,
                   help="start of the MLM output bias: unigram = log token frequencies of the training text "
                        "(skips the phase where the model only learns frequencies; default), zeros = the reference")
    p.add_argument("--weight-decay", type=nonnegative_float, default=0.01, help="decoupled weight decay (default 0.01)")
    p.add_argument("--clip-norm", type=positive_float, default=1.0, help="global gradient-norm limit (default 1.0)")
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step (default 1)")
    p.add_argument("--eval-every", type=int, default=50,
                   help="steps between evaluations on held-out batches (0: only at the end; default 50)")
    p.add_argument("--eval-batches", type=int, default=8, help="held-out batches per evaluation (default 8)")
    p.add_argument("--save-every", type=int, default=100,
                   help="steps between checkpoints (0: only at the end; default 100)")
    p.add_argument("--keep", type=int, default=2, help="checkpoints kept on disk, newest first (default 2)")
    p.add_argument("--log-every", type=int, default=10, help="steps between metrics lines (default 10)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the model init, the data order and the masking")
    p.add_argument("--masking", default="dynamic", choices=("dynamic", "static"),
                   help="dynamic: new instances and masks every epoch; static: built once, as the reference does")
    p.add_argument("--dupe-factor", type=int, default=1,
                   help="static masking only: differently masked copies of the corpus (the reference used 40)")
    p.add_argument("--group-by-length", action="store_true",
                   help="batch training sequences of similar length, each batch trimmed to its longest: the same "
                        "instances with almost no padding compute (off by default; changes the batches)")
    p.add_argument("--tokenizer", default=None,
                   help="SentencePiece .model file: required with your own text (train it with python -m "
                        "albert_mini.text.tokenizer train --text ...); for austen the committed "
                        "data/austen/spiece.model. The model's vocab_size is the tokenizer's")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast: faster on GPUs and CPUs with AMX, about 5x "
                                                       "slower on AVX2-only CPUs; not bit-comparable with fp32 runs")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (no gain measured on CPU)")
    p.add_argument("--overwrite", action="store_true",
                   help="when --out holds a run with other settings, on changed text or without run.json, delete "
                        "that run's own files (run.json, config.json, metrics.jsonl, checkpoints/) first; "
                        "never anything else, so a directory with other files is still refused")
    p.add_argument("--quiet", action="store_true", help="no progress bar or metric lines on the terminal")
    return p


def check_args(args: argparse.Namespace) -> None:
    """Reject flag values that cannot work, naming the flag and a valid choice."""
    positive = {"--steps": args.steps, "--batch-size": args.batch_size, "--seq-len": args.seq_len,
                "--accumulate": args.accumulate, "--keep": args.keep, "--log-every": args.log_every,
                "--eval-batches": args.eval_batches}
    for flag, value in positive.items():
        if value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    for flag, value in {"--eval-every": args.eval_every, "--save-every": args.save_every}.items():
        if value < 0:
            raise UsageError(f"{flag} must be >= 0 (0 means only at the end), got {value}")
    if args.dupe_factor < 1 or (args.dupe_factor > 1 and args.masking != "static"):
        raise UsageError(f"--dupe-factor {args.dupe_factor} needs --masking static (and must be >= 1)")
    floats = {"--minutes": args.minutes, "--lr": args.lr, "--clip-norm": args.clip_norm,
              "--weight-decay": args.weight_decay, "--holdout-fraction": args.holdout_fraction,
              "--short-fraction": args.short_fraction}
    for flag, value in floats.items():  # the parser checks them; this is for a Namespace built in code
        if value is not None and (not math.isfinite(value) or value < 0 or (value == 0 and flag != "--weight-decay")):
            raise UsageError(f"{flag} must be a finite number {'>=' if flag == '--weight-decay' else '>'} 0, "
                             f"got {value}")
    if not 0 <= args.seed <= SEED_MAX:
        raise UsageError(f"--seed must be in [0, {SEED_MAX}], got {args.seed}")
    if args.warmup is not None and not 0 <= args.warmup <= args.steps:
        raise UsageError(f"--warmup must be in [0, --steps={args.steps}], got {args.warmup}")
    max_len = max_seq_len(args.preset)
    if not 8 <= args.seq_len <= max_len:
        raise UsageError(f"--seq-len must be in [8, {max_len}] for {args.preset}, got {args.seq_len}")
    if args.short_seq_len is not None:
        if not 8 <= args.short_seq_len < args.seq_len or args.seq_len % args.short_seq_len:
            raise UsageError(f"--short-seq-len must be in [8, --seq-len={args.seq_len}) and divide it, "
                             f"got {args.short_seq_len}; e.g. --short-seq-len {args.seq_len // 2}")
        if not 0 < args.short_fraction < 1:
            raise UsageError(f"--short-fraction must be in (0, 1), got {args.short_fraction}")
    check_corpus_flags(args)


def phase_note(args) -> str:
    if args.short_seq_len is None:
        return ""
    return f" (first {short_steps(args)} steps: {short_batch_size(args)} x {args.short_seq_len})"


def max_seq_len(preset: str) -> int:
    return PRESETS[preset].get("max_position_embeddings", 512)


# ---------------------------------------------------------------------- run directory
def run_record(args, config: AlbertConfig, info: DistInfo, tokenizer, inputs: Inputs) -> dict:
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in FREE_ON_RESUME}
    return {"kind": "pretrain", "settings": settings, "model": config.to_dict(),
            "tokenizer": tokenizer.file_reference() if tokenizer is not None else None,
            "corpus": inputs.corpus, "world_size": info.world_size,
            "effective_batch": args.batch_size * info.world_size * args.accumulate, "command": " ".join(sys.argv)}


def setting_defaults() -> dict:
    """Every setting's default: the value of a setting that an older run.json does not record."""
    parser = build_parser()
    return {action.dest: parser.get_default(action.dest) for action in parser._actions}


def prepare_run_dir(out: Path, record: dict, overwrite: bool, info: DistInfo) -> bool:
    """Check `out` against this run (albert_mini.training.rundir); True when it holds the same run (resume it)."""
    defaults = setting_defaults()
    if isinstance(defaults.get("corpus"), list) and len(defaults["corpus"]) == 1:
        defaults["corpus"] = defaults["corpus"][0]  # recorded as a name, as check_corpus_flags leaves it
    same = rundir.resumable(out, record, overwrite, defaults)
    barrier(info)  # every rank has read run.json before rank 0 may replace it
    if info.is_main:
        if not same:
            rundir.clear(out, rundir.RUN)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / rundir.RUN_FILE, json.dumps(record, indent=2) + "\n")  # first: the files are a run
        atomic_write_text(out / rundir.CONFIG_FILE, AlbertConfig.from_dict(record["model"]).to_json())
    barrier(info)
    return same


# ---------------------------------------------------------------------- main
def seed_everything(seed: int) -> None:
    """Seed the global RNGs (Python, NumPy, torch); the data pipeline has its own seeded generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def main(argv: list[str] | None = None) -> TrainResult:
    """Command line (see --help); bad flags, files or directories end with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> TrainResult:
    args = build_parser().parse_args(argv)
    check_args(args)
    info = init_distributed()
    try:
        return run(args, info)
    finally:
        cleanup(info)


def run(args: argparse.Namespace, info: DistInfo) -> TrainResult:
    """Build model, optimizer, schedule and data, resume if the run directory allows it, and train."""
    say = print if info.is_main and not args.quiet else (lambda *a, **k: None)
    trainer = build_trainer(args, info, say)
    out = Path(args.out)
    try:
        result = trainer.train()
    except FloatingPointError as err:
        raise Diverged(f"the loss diverged at step {trainer.step + 1} ({str(err).split(';')[0]}); lower --lr "
                       f"(now {args.lr:g}) or lengthen --warmup, and start again with --overwrite") from err
    finally:
        if trainer.run_lock is not None:
            trainer.run_lock.release()
    say(f"stopped at step {result.step} ({result.stop_reason}); metrics and checkpoints in {out}")
    if result.eval is not None:
        say("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.eval.items()
                                     if isinstance(v, float) and k != "elapsed_s"))
    return result


def build_trainer(args: argparse.Namespace, info: DistInfo, say=print) -> Trainer:
    """The run's trainer, resumed when --out holds the same run: what `run` trains, and what studies drive."""
    out = Path(args.out)
    rundir.check_run_dir(out)  # before the data is read: a directory a run may not use is refused at once
    check_out_folder(out)  # and one that cannot be created or written
    # One writer per directory: an existing --out is locked at once, a new one once it is created (bad flags
    # found while the data is read then leave no directory behind).
    locks = [rundir.RunLock(out)] if info.is_main and out.is_dir() else []
    try:
        trainer = _build_trainer(args, info, say, out, locks)
    except BaseException:
        for lock in locks:
            lock.release()
        raise
    trainer.run_lock = locks[0] if locks else None  # held while the trainer lives (released by `run`)
    return trainer


def _build_trainer(args: argparse.Namespace, info: DistInfo, say, out: Path, locks: list) -> Trainer:
    tokenizer = load_tokenizer(args)
    vocab = {"vocab_size": tokenizer.vocab_size} if tokenizer is not None else {}
    config = AlbertConfig.from_preset(args.preset, **vocab)
    seed_everything(args.seed)
    inputs = build_inputs(args, config.vocab_size, tokenizer, info, max_seq_len(args.preset))  # own seeded generators
    # The training text's tokens start the output bias; the synthetic corpus has no text, so its bias starts at zero.
    documents = inputs.train_documents
    model = build_pretraining_model(config, args.task, documents, seed=args.seed,
                                    output_bias=args.output_bias if documents is not None else "zeros")
    model = model.to(info.device)  # identical on every rank; DDP broadcasts rank 0's anyway
    torch.manual_seed(args.seed + 1 + info.rank)  # dropout masks differ between ranks
    if info.is_main and not locks:
        locks.append(rundir.RunLock(out))
    resuming = prepare_run_dir(out, run_record(args, config, info, tokenizer, inputs), args.overwrite, info)
    warmup = args.warmup if args.warmup is not None else round(0.025 * args.steps)
    optimizer = build_optimizer(model, args.optimizer, lr=args.lr, weight_decay=args.weight_decay)
    schedule = WarmupPolyDecay(args.lr, args.steps, warmup)
    train_config = TrainConfig(
        max_steps=args.steps, max_minutes=args.minutes, accumulate=args.accumulate, clip_norm=args.clip_norm,
        log_every=args.log_every, eval_every=args.eval_every, eval_batches=args.eval_batches,
        save_every=args.save_every, keep_checkpoints=args.keep, out_dir=str(out), bf16=args.bf16,
        compile=args.compile, progress=not args.quiet, echo=not args.quiet,
    )
    trainer = Trainer(model, optimizer, schedule, inputs.train, train_config, val_batches=inputs.validation, dist=info)
    if resuming and trainer.resume():
        say(f"resumed {out} at step {trainer.step}")
    effective = args.batch_size * info.world_size * args.accumulate
    preset_vocab = AlbertConfig.from_preset(args.preset).vocab_size
    if config.vocab_size != preset_vocab:
        say(f"vocab_size {config.vocab_size} from the tokenizer {tokenizer.path} (the preset has {preset_vocab})")
    say(f"{args.preset}: {count_parameters(model):,} parameters | {info.world_size} process(es) | effective batch "
        f"{effective} x {args.seq_len} tokens{phase_note(args)} | {args.optimizer} lr {args.lr:g}, warmup {warmup}, "
        f"{args.steps} steps")
    return trainer


if __name__ == "__main__":
    main()
