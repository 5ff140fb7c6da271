"""What the trainer loop costs over a bare training step, and what bf16 autocast and torch.compile do on this CPU.

Bare step: forward, backward and a LAMB step on one prepared batch. Loop step: `Trainer.train()` for one more
step, so data loading, the loss-count all-reduce, the schedule, clipping, metrics and a log line (pessimistic:
one per step) are all included. The two run alternately on identical models, so a noisy shared host slows
both alike; we report medians. Goal: the loop costs < 10% over the bare step.

    .venv/bin/python benchmarks/trainer_loop.py [--rounds 8] [--data austen|synthetic] [--skip-compile]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.settings import pick
from albert_mini.text.synthetic import SyntheticBatches
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, Trainer


def make_source(kind: str, config: AlbertConfig, batch_size: int, seq_len: int):
    """The trainer's batch source: the real Austen pipeline, or seeded random tokens."""
    if kind == "synthetic":
        return SyntheticBatches(config.vocab_size, batch_size, seq_len, seed=0)
    from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset
    from albert_mini.text.corpus import load_corpus
    from albert_mini.text.tokenizer import Tokenizer

    start = time.perf_counter()
    dataset = build_pretraining_dataset(load_corpus("austen", "train"), Tokenizer.default(), task="sop",
                                        max_seq_len=seq_len, seed=0)
    print(f"  austen dataset built in {time.perf_counter() - start:.1f} s (tokenized once, outside the loop)")
    return PretrainingBatches(dataset, batch_size)


def bare_step(model, optimizer, batch: dict, bf16: bool = False) -> float:
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def loop_step(trainer: Trainer) -> float:
    trainer.config.max_steps = trainer.step + 1
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def alternate(runs: dict, rounds: int, warmup: int = 1) -> dict:
    """Median seconds of each callable, run in turn (order flipped every round) after `warmup` rounds."""
    times = {name: [] for name in runs}
    for r in range(warmup + rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for name in order:
            t = runs[name]()
            if r >= warmup:
                times[name].append(t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=pick(2, 8), help="timed steps per variant (after warm-up)")
    parser.add_argument("--preset", default=pick("albert-nano", "albert-mini"))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--data", default="austen", choices=("austen", "synthetic"))
    parser.add_argument("--skip-bf16", action="store_true")
    parser.add_argument("--skip-compile", action="store_true")
    args = parser.parse_args()

    config = AlbertConfig.from_preset(args.preset)
    tokens = args.batch_size * args.seq_len
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.preset}, batch {args.batch_size} x "
          f"seq {args.seq_len} = {tokens} tokens/step, data: {args.data}")
    torch.manual_seed(0)
    model = AlbertForPreTraining(config)
    source = make_source(args.data, config, args.batch_size, args.seq_len)
    batch = next(make_source("synthetic", config, args.batch_size, args.seq_len)) if args.data == "synthetic" \
        else source.take(1)[0]
    bare_model = copy.deepcopy(model)
    bare_opt = build_optimizer(bare_model, "lamb", lr=1e-4)
    loop_model = copy.deepcopy(model)
    trainer = Trainer(loop_model, build_optimizer(loop_model, "lamb", lr=1e-4), WarmupPolyDecay(1e-4, 10**6, 0),
                      source, TrainConfig(max_steps=1, log_every=10, progress=False))

    med = alternate({"bare": lambda: bare_step(bare_model, bare_opt, batch), "loop": lambda: loop_step(trainer)},
                    args.rounds)
    print(f"bare step  {med['bare']:.3f} s  ({tokens / med['bare']:,.0f} tok/s)")
    print(f"trainer loop {med['loop']:.3f} s  ({tokens / med['loop']:,.0f} tok/s)  "
          f"overhead {med['loop'] / med['bare'] - 1:+.1%} (goal < +10%)")

    if not args.skip_bf16:
        med = alternate({"fp32": lambda: bare_step(bare_model, bare_opt, batch),
                         "bf16": lambda: bare_step(bare_model, bare_opt, batch, bf16=True)}, max(2, args.rounds // 2))
        print(f"bf16 autocast: {med['bf16']:.3f} s vs fp32 {med['fp32']:.3f} s -> "
              f"{med['fp32'] / med['bf16']:.2f}x the fp32 speed")

    if not args.skip_compile:
        compiled_model = copy.deepcopy(model)
        compiled = torch.compile(compiled_model)
        compiled_opt = build_optimizer(compiled_model, "lamb", lr=1e-4)
        start = time.perf_counter()
        try:
            bare_step(compiled, compiled_opt, batch)
        except Exception as err:  # inductor needs a working C++ toolchain; report rather than crash
            print(f"torch.compile failed: {type(err).__name__}: {str(err).splitlines()[0]}")
            return
        print(f"torch.compile: first step (compilation) {time.perf_counter() - start:.1f} s")
        med = alternate({"eager": lambda: bare_step(bare_model, bare_opt, batch),
                         "compiled": lambda: bare_step(compiled, compiled_opt, batch)}, args.rounds)
        print(f"torch.compile: {med['compiled']:.3f} s vs eager {med['eager']:.3f} s -> "
              f"{med['eager'] / med['compiled']:.2f}x the eager speed")


if __name__ == "__main__":
    main()
