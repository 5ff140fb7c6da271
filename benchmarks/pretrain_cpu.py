"""`albert-mini pretrain` end to end against the bare training step of the same model, on this CPU.

Bare step: forward, backward and a LAMB step of the run's model (the preset, the Austen tokenizer's vocabulary) on
one prepared batch of the run's shape. The run: `python -m albert_mini pretrain` on Austen as a subprocess, its
speed the tokens/s its metrics.jsonl reports (data and the whole Trainer step included; the first log window, the
warm-up, left out). The two alternate, so a noisy shared host slows both alike; medians are reported. Goal: the
run within 10% of the bare step. Then the Trainer fed by DataLoader workers against the Trainer without them (why
TrainConfig.workers stays 0 on the CPU).

    .venv/bin/python benchmarks/pretrain_cpu.py [--rounds 2] [--preset albert-mini] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.devices import cpu_model
from albert_mini.settings import pick
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset
from albert_mini.text.corpus import load_corpus
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, Trainer

REPO = Path(__file__).resolve().parent.parent


def bare_block(model, optimizer, batch: dict, steps: int) -> float:
    """Seconds per step of forward + backward + LAMB over `steps` steps on one batch."""
    start = time.perf_counter()
    for _ in range(steps):
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return (time.perf_counter() - start) / steps


def pretrain_rates(args, out: Path) -> list[float]:
    """tokens/s of every log window of one `albert-mini pretrain` run but the first (the warm-up)."""
    cmd = [sys.executable, "-m", "albert_mini", "pretrain", "--preset", args.preset, "--corpus", "austen",
           "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len), "--steps", str(args.steps),
           "--log-every", str(args.log_every), "--eval-every", "0", "--save-every", "0", "--eval-batches", "1",
           "--quiet", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    subprocess.run(cmd, check=True, cwd=REPO, env=env)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [row["tokens_per_s"] for row in rows if row["type"] == "train"][1:]


def trainer_block(trainer: Trainer, steps: int) -> float:
    """Seconds per step of `steps` more steps of a Trainer (its log lines included)."""
    trainer.config.max_steps = trainer.step + steps
    start = time.perf_counter()
    trainer.train()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=pick(1, 2), help="bare blocks and runs, alternating")
    parser.add_argument("--preset", default=pick("albert-nano", "albert-mini"))
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=pick(6, 12), help="steps of each pretrain run")
    parser.add_argument("--log-every", type=int, default=pick(2, 3))
    parser.add_argument("--workers", type=int, default=1, help="DataLoader workers in the feeding comparison")
    args = parser.parse_args()

    tokenizer = Tokenizer.default()
    config = AlbertConfig.from_preset(args.preset, vocab_size=tokenizer.vocab_size)  # the run's model
    tokens = args.batch_size * args.seq_len
    load = os.getloadavg()[0]
    print(f"{cpu_model()}, {os.cpu_count()} cores, load {load:.2f}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; {args.preset}, batch {args.batch_size} x {args.seq_len} = {tokens} "
          f"tokens/step")
    dataset = build_pretraining_dataset(load_corpus("austen", "train"), tokenizer, "sop", args.seq_len, seed=0)
    batch = PretrainingBatches(dataset, args.batch_size).take(1)[0]
    torch.manual_seed(0)
    model = AlbertForPreTraining(config)
    optimizer = build_optimizer(model, "lamb", lr=1e-4)
    bare_block(model, optimizer, batch, 1)  # warm-up

    bare, run = [], []
    with tempfile.TemporaryDirectory(prefix="pretrain_cpu_") as tmp:
        for r in range(args.rounds):
            bare.append(bare_block(model, optimizer, batch, args.steps // 2))
            run += pretrain_rates(args, Path(tmp) / f"run{r}")
        bare.append(bare_block(model, optimizer, batch, args.steps // 2))
    bare_rate, run_rate = tokens / statistics.median(bare), statistics.median(run)
    print("\n| step | tokens/s | of the bare step |\n|---|---|---|")
    print(f"| bare (forward + backward + LAMB) | {bare_rate:,.0f} | 1.00 |")
    print(f"| albert-mini pretrain (Trainer, data, clipping, schedule, metrics) | {run_rate:,.0f} | "
          f"{run_rate / bare_rate:.2f} (goal >= 0.90) |")

    # Feeding: the Trainer with the batches built in this process, and with DataLoader workers building them.
    trainers = {}
    for workers in (0, args.workers):
        torch.manual_seed(0)
        m = AlbertForPreTraining(config)
        trainers[workers] = Trainer(m, build_optimizer(m, "lamb", lr=1e-4), WarmupPolyDecay(1e-4, 10**6, 0),
                                    PretrainingBatches(dataset, args.batch_size),
                                    TrainConfig(max_steps=1, log_every=args.log_every, progress=False,
                                                workers=workers))
        trainer_block(trainers[workers], 1)  # warm-up (and the workers' start)
    times = {w: [] for w in trainers}
    for r in range(2 * args.rounds):
        for w in (list(trainers) if r % 2 == 0 else list(trainers)[::-1]):
            times[w].append(trainer_block(trainers[w], args.steps // 2))
    for t in trainers.values():
        if hasattr(t.source, "close"):
            t.source.close()
    rate = {w: tokens / statistics.median(ts) for w, ts in times.items()}
    print(f"\nTrainer, batches built in this process: {rate[0]:,.0f} tokens/s; with {args.workers} DataLoader "
          f"worker(s): {rate[args.workers]:,.0f} tokens/s ({rate[args.workers] / rate[0]:.2f}x)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
