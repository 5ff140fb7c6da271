"""Pretrain ALBERT from the command line; rerun the same command to resume a killed run exactly.

    python -m albert_mini.training.pretrain --preset albert-mini --corpus austen --task sop --steps 600 \
        --minutes 15 --out runs/mini
    torchrun --standalone --nproc_per_node 2 -m albert_mini.training.pretrain ...   # DDP: training/distributed.py

The run directory gets config.json (the model), run.json (these settings, the tokenizer's path and sha256,
the world size), metrics.jsonl (one line per log step and evaluation) and checkpoints/step-NNNNNNN/.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

from ..model.config import PRESETS, AlbertConfig
from ..model.counting import count_parameters
from ..paths import sha256_file
from ..text.instances import SENTENCE_TASKS
from ..text.synthetic import SyntheticBatches
from .checkpoint import CHECKPOINTS, atomic_write_text, config_differences
from .distributed import DistInfo, barrier, cleanup, init_distributed
from .optim import OPTIMIZERS, WarmupPolyDecay, build_optimizer
from .recipe import OUTPUT_BIASES, build_pretraining_model
from .trainer import METRICS_FILE, Trainer, TrainConfig, TrainResult

CORPORA = ("austen", "synthetic")
RUN_FILE, CONFIG_FILE = "run.json", "config.json"
# Flags that do not change what is computed: they may differ between a run and its resumption.
FREE_ON_RESUME = ("out", "minutes", "eval_every", "eval_batches", "save_every", "log_every", "keep", "overwrite",
                  "compile", "quiet")

EPILOG = """\
effective batch per optimizer step = --batch-size x world size x --accumulate
  (world size = number of processes: 1, or --nproc_per_node x nodes under torchrun)

resuming: if --out already holds a run, the same command continues it from its newest checkpoint, bit for bit
  on the same machine, thread count and process count (weights, optimizer, schedule, data position and RNG
  states are all restored). A run with different settings is refused; use a new --out, or --overwrite to
  delete the old run's files. --minutes, --eval-every, --save-every, --log-every, --keep, --compile, --quiet may change.

several processes (DDP: gloo on CPU, nccl on GPUs; each process reads its own shard; rank 0 writes files
and shows progress):
  torchrun --standalone --nproc_per_node 2 -m albert_mini.training.pretrain --corpus synthetic --steps 20 \\
      --out runs/ddp
  on a node with 8 GPUs: torchrun --standalone --nproc_per_node 8 -m albert_mini.training.pretrain ... (one GPU each)
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m albert_mini.training.pretrain", description=__doc__.split("\n")[0],
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="albert-mini", choices=list(PRESETS), help="model size (default: albert-mini)")
    p.add_argument("--corpus", default="austen", choices=CORPORA,
                   help="austen: the committed Austen novels; synthetic: random tokens, to test the machinery")
    p.add_argument("--task", default="sop", choices=list(SENTENCE_TASKS),
                   help="sentence task beside MLM: sop (ALBERT), nsp (BERT) or none (MLM only); default sop")
    p.add_argument("--steps", type=int, required=True,
                   help="optimizer steps; also the length of the learning-rate decay, which reaches 0 here")
    p.add_argument("--minutes", type=float, default=None,
                   help="also stop after this much training wall time (whole run, counted across resumptions); "
                        "the learning rate still follows --steps, so it has not reached 0 when time runs out")
    p.add_argument("--out", required=True, help="run directory: config, metrics and checkpoints; resumed if present")
    p.add_argument("--batch-size", type=int, default=32, help="sequences per micro-batch per process (default 32)")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence (default 128)")
    p.add_argument("--lr", type=float, default=1.76e-3, help="peak learning rate (default 1.76e-3, the paper's)")
    p.add_argument("--warmup", type=int, default=None,
                   help="linear warmup steps, 0 for none (default: 2.5%% of --steps, the paper's 3125 / 125000)")
    p.add_argument("--optimizer", default="lamb", choices=OPTIMIZERS, help="lamb (the paper's) or adamw")
    p.add_argument("--output-bias", default="unigram", choices=OUTPUT_BIASES,
                   help="start of the MLM output bias: unigram = log token frequencies of the training text "
                        "(skips the phase where the model only learns frequencies; default), zeros = the reference")
    p.add_argument("--weight-decay", type=float, default=0.01, help="decoupled weight decay (default 0.01)")
    p.add_argument("--clip-norm", type=float, default=1.0, help="global gradient-norm limit (default 1.0)")
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step (default 1)")
    p.add_argument("--eval-every", type=int, default=50,
                   help="steps between evaluations on held-out batches (0: only at the end; default 50)")
    p.add_argument("--eval-batches", type=int, default=8, help="held-out batches per evaluation (default 8)")
    p.add_argument("--save-every", type=int, default=100,
                   help="steps between checkpoints (0: only at the end; default 100)")
    p.add_argument("--keep", type=int, default=2, help="checkpoints kept on disk, newest first (default 2)")
    p.add_argument("--log-every", type=int, default=10, help="steps between metrics lines (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the model init, the data order and the masking")
    p.add_argument("--masking", default="dynamic", choices=("dynamic", "static"),
                   help="dynamic: new instances and masks every epoch; static: built once, as the reference does")
    p.add_argument("--dupe-factor", type=int, default=1,
                   help="static masking only: differently masked copies of the corpus (the reference used 40)")
    p.add_argument("--tokenizer", default=None,
                   help="SentencePiece .model file (default: the committed Austen model, data/austen/spiece.model)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast: faster on GPUs and CPUs with AMX, about 5x slower on AVX2-only CPUs; "
                        "not bit-comparable with fp32 runs")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (no gain measured on CPU)")
    p.add_argument("--overwrite", action="store_true",
                   help="delete a different run already in --out (its config, metrics and checkpoints) first")
    p.add_argument("--quiet", action="store_true", help="no progress bar or metric lines on the terminal")
    return p


def check_args(args: argparse.Namespace) -> None:
    """Reject flag values that cannot work, naming the flag and a valid choice."""
    positive = {"--steps": args.steps, "--batch-size": args.batch_size, "--seq-len": args.seq_len,
                "--accumulate": args.accumulate, "--keep": args.keep, "--log-every": args.log_every,
                "--eval-batches": args.eval_batches}
    for flag, value in positive.items():
        if value < 1:
            raise SystemExit(f"error: {flag} must be >= 1, got {value}")
    for flag, value in {"--eval-every": args.eval_every, "--save-every": args.save_every}.items():
        if value < 0:
            raise SystemExit(f"error: {flag} must be >= 0 (0 means only at the end), got {value}")
    if args.dupe_factor < 1 or (args.dupe_factor > 1 and args.masking != "static"):
        raise SystemExit(f"error: --dupe-factor {args.dupe_factor} needs --masking static (and must be >= 1)")
    if args.minutes is not None and args.minutes <= 0:
        raise SystemExit(f"error: --minutes must be > 0, got {args.minutes}")
    if args.lr <= 0 or args.clip_norm <= 0 or args.weight_decay < 0:
        raise SystemExit("error: --lr and --clip-norm must be > 0 and --weight-decay >= 0")
    if args.warmup is not None and not 0 <= args.warmup <= args.steps:
        raise SystemExit(f"error: --warmup must be in [0, --steps={args.steps}], got {args.warmup}")
    max_len = PRESETS[args.preset].get("max_position_embeddings", 512)
    if not 8 <= args.seq_len <= max_len:
        raise SystemExit(f"error: --seq-len must be in [8, {max_len}] for {args.preset}, got {args.seq_len}")


# ---------------------------------------------------------------------- data
def build_data(args, config: AlbertConfig, info: DistInfo):
    """(train source, validation batches, tokenizer reference) for this rank."""
    if args.corpus == "synthetic":
        sentence = SENTENCE_TASKS[args.task].labelled
        train = SyntheticBatches(config.vocab_size, args.batch_size, args.seq_len, seed=args.seed,
                                 sentence_labels=sentence).shard(info.rank, info.world_size)
        val = SyntheticBatches(config.vocab_size, args.batch_size, args.seq_len, seed=args.seed + 1,
                               sentence_labels=sentence).shard(info.rank, info.world_size).take(args.eval_batches)
        return train, val, None
    from ..text.corpus import load_corpus
    from ..text.batches import PretrainingBatches, build_pretraining_dataset
    from ..text.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_file(args.tokenizer) if args.tokenizer else Tokenizer.default()
    if tokenizer.vocab_size != config.vocab_size:
        raise SystemExit(f"error: the tokenizer {tokenizer.path} has {tokenizer.vocab_size} pieces but {args.preset} "
                         f"has vocab_size {config.vocab_size}; pass a tokenizer and a preset that agree")
    common = dict(task=args.task, max_seq_len=args.seq_len, seed=args.seed)
    train_set = build_pretraining_dataset(load_corpus(args.corpus, "train"), tokenizer, **common,
                                          dynamic=args.masking == "dynamic", dupe_factor=args.dupe_factor)
    train = PretrainingBatches(train_set, args.batch_size).shard(info.rank, info.world_size)
    # Held-out chapters, masked once (static) so every evaluation scores the same examples.
    val_set = build_pretraining_dataset(load_corpus(args.corpus, "validation"), tokenizer, **common, dynamic=False)
    val_source = PretrainingBatches(val_set, args.batch_size).shard(info.rank, info.world_size)
    available = val_source.batches_per_epoch()
    if args.eval_batches > available:
        raise SystemExit(f"error: the validation split has {available} batches of {args.batch_size} per process; "
                         f"use --eval-batches {available} or fewer")
    return train, val_source.take(args.eval_batches), tokenizer_reference(tokenizer.path)


def tokenizer_reference(path: str | Path | None) -> dict | None:
    """Where the tokenizer model is and its sha256, so a run records exactly which ids it was trained on."""
    if path is None:
        return None
    path = Path(path).resolve()
    return {"path": str(path), "sha256": sha256_file(path)}


# ---------------------------------------------------------------------- run directory
def run_record(args, config: AlbertConfig, info: DistInfo, tokenizer: dict | None) -> dict:
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in FREE_ON_RESUME}
    return {"settings": settings, "model": config.to_dict(), "tokenizer": tokenizer, "world_size": info.world_size,
            "effective_batch": args.batch_size * info.world_size * args.accumulate,
            "command": " ".join(sys.argv)}


def prepare_run_dir(out: Path, record: dict, overwrite: bool, info: DistInfo) -> bool:
    """Check `out` against this run's settings; True when it holds the same run (resume), False for a fresh one."""
    existing = out / RUN_FILE
    same = False
    if existing.exists():
        try:
            old = json.loads(existing.read_text())
        except ValueError as err:
            raise SystemExit(f"error: {existing} is not valid JSON ({err}); use a new --out or --overwrite") from err
        diffs = [f"{part}.{line}" for part in ("settings", "model", "tokenizer")
                 for line in config_differences(old.get(part) or {}, record.get(part) or {})]
        if diffs and not overwrite:
            raise SystemExit(
                f"error: {out} holds a run with different settings:\n  " + "\n  ".join(diffs)
                + "\nrepeat that run's flags to resume it, choose a new --out, or pass --overwrite to delete it"
            )
        same = not diffs
    barrier(info)  # every rank has read run.json before rank 0 may replace it
    if info.is_main:
        out.mkdir(parents=True, exist_ok=True)
        if not same:
            for name in (RUN_FILE, CONFIG_FILE, METRICS_FILE):
                (out / name).unlink(missing_ok=True)
            shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
        atomic_write_text(out / CONFIG_FILE, AlbertConfig.from_dict(record["model"]).to_json())
        atomic_write_text(out / RUN_FILE, json.dumps(record, indent=2) + "\n")
    barrier(info)
    return same


# ---------------------------------------------------------------------- main
def seed_everything(seed: int) -> None:
    """Seed the global RNGs (Python, NumPy, torch); the data pipeline has its own seeded generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def main(argv: list[str] | None = None) -> TrainResult:
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
    config = AlbertConfig.from_preset(args.preset)
    seed_everything(args.seed)
    train_data, val_data, tokenizer = build_data(args, config, info)  # seeded generators of its own
    # The training text's tokens (a DatasetShard of the PretrainingDataset) start the output bias; the synthetic
    # corpus has no text, so its output bias starts at zero.
    documents = None if args.corpus == "synthetic" else train_data.dataset.dataset.documents
    model = build_pretraining_model(config, args.task, documents, seed=args.seed,
                                    output_bias=args.output_bias if documents is not None else "zeros")
    model = model.to(info.device)  # identical on every rank; DDP broadcasts rank 0's anyway
    torch.manual_seed(args.seed + 1 + info.rank)  # dropout masks differ between ranks
    out = Path(args.out)
    resuming = prepare_run_dir(out, run_record(args, config, info, tokenizer), args.overwrite, info)
    warmup = args.warmup if args.warmup is not None else round(0.025 * args.steps)
    optimizer = build_optimizer(model, args.optimizer, lr=args.lr, weight_decay=args.weight_decay)
    schedule = WarmupPolyDecay(args.lr, args.steps, warmup)
    train_config = TrainConfig(
        max_steps=args.steps, max_minutes=args.minutes, accumulate=args.accumulate, clip_norm=args.clip_norm,
        log_every=args.log_every, eval_every=args.eval_every, eval_batches=args.eval_batches,
        save_every=args.save_every, keep_checkpoints=args.keep, out_dir=str(out), bf16=args.bf16,
        compile=args.compile, progress=not args.quiet, echo=not args.quiet,
    )
    trainer = Trainer(model, optimizer, schedule, train_data, train_config, val_batches=val_data, dist=info)
    if resuming and trainer.resume():
        say(f"resumed {out} at step {trainer.step}")
    effective = args.batch_size * info.world_size * args.accumulate
    say(f"{args.preset}: {count_parameters(model):,} parameters | {info.world_size} process(es) | effective batch "
        f"{effective} x {args.seq_len} tokens | {args.optimizer} lr {args.lr:g}, warmup {warmup}, {args.steps} steps")
    result = trainer.train()
    say(f"stopped at step {result.step} ({result.stop_reason}); metrics and checkpoints in {out}")
    if result.eval is not None:
        say("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.eval.items()
                                     if isinstance(v, float) and k != "elapsed_s"))
    return result


if __name__ == "__main__":
    main()
