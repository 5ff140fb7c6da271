"""Padding compute: albert-mini's training tokens/s with today's batches vs length-grouped batches (opt-in).

albert_mini packs whole sentences and never truncates, so a 128-token sequence of Austen holds about 107 real
tokens; a batch of 32 random sequences is padded to its longest, which is nearly always 128. Grouping by length
(`PretrainingBatches(..., group_by_length=True)`) serves the same instances in batches of similar length, each
trimmed to its own longest sequence. Both variants take a full training step (forward, backward, LAMB) of
albert-mini on real Austen batches at 128 tokens. Every round times the same batch positions of the epoch for
both, one step of each in turn (ABBA), so a noisy shared host slows both alike; we report medians over rounds of
real (non-padding) tokens per second, and the ratio.

    .venv/bin/python benchmarks/padding.py [--rounds 12] [--steps 3]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.harness.experiments.provenance import cpu_model
from albert_mini.settings import pick
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset
from albert_mini.text.corpus import load_corpus
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.optim import build_optimizer

PRESET, SEQ, BATCH = "albert-mini", 128, 32


def epoch_share(source: PretrainingBatches) -> float:
    """Real tokens over batch positions across all of epoch 0, from the sequence lengths (nothing is masked)."""
    data, B = source.dataset, source.batch_size
    count = source.batches_in_epoch(0)
    if source.group_by_length:
        rows = [row for w in range(-(-count // source.group_window)) for row in source.window_batches(0, w)]
    else:
        rows = [np.arange(i * B, (i + 1) * B) for i in range(count)]
    real = positions = 0
    for row in rows:
        lengths = [data.sequence_length(int(i)) for i in row]
        real, positions = real + sum(lengths), positions + max(lengths) * len(lengths)
    return real / positions


def train_step(model, optimizer, batch: dict) -> float:
    start = time.perf_counter()
    model(**batch).loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=pick(2, 16), help="timed rounds (after one warm-up round)")
    parser.add_argument("--steps", type=int, default=pick(1, 3), help="training steps per variant and round")
    parser.add_argument("--preset", default=pick("albert-nano", PRESET))
    args = parser.parse_args()

    print(f"CPU: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} threads; {args.preset}, "
          f"batch {BATCH} x max {SEQ} tokens, Austen SOP, dynamic masking, seed 0")
    dataset = build_pretraining_dataset(load_corpus("austen", "train"), Tokenizer.default(), task="sop",
                                        max_seq_len=SEQ, seed=0)
    sources = {"today": PretrainingBatches(dataset, BATCH),
               "grouped": PretrainingBatches(dataset, BATCH, group_by_length=True)}
    count = sources["today"].batches_per_epoch()
    shares = {name: epoch_share(source) for name, source in sources.items()}
    print(f"epoch 0: {len(dataset)} sequences, {count} batches; real-token share over the epoch: today "
          f"{shares['today']:.1%}, grouped {shares['grouped']:.1%} (window {sources['grouped'].group_window} "
          f"batches)")

    torch.manual_seed(0)
    model = AlbertForPreTraining(AlbertConfig.from_preset(args.preset, vocab_size=Tokenizer.default().vocab_size))
    models = {name: copy.deepcopy(model).train() for name in sources}
    optimizers = {name: build_optimizer(m, "lamb", lr=1e-4) for name, m in models.items()}
    picker = np.random.default_rng(0)
    rates = {name: [] for name in sources}
    totals = {name: [0, 0, 0.0] for name in sources}  # real tokens, batch positions, seconds
    for r in range(1 + args.rounds):
        # The same batch positions for both variants (they cover the same stretch of the epoch), and the steps
        # interleaved one by one, in ABBA order, so a change in the host's load falls on both alike.
        indices = picker.choice(count, size=args.steps, replace=False)
        spent = {name: [0, 0, 0.0] for name in sources}  # real tokens, batch positions, seconds
        for s, i in enumerate(indices):
            for name in (list(sources) if (r + s) % 2 == 0 else list(reversed(sources))):
                batch = sources[name].batch(0, int(i))
                seconds = train_step(models[name], optimizers[name], batch)
                mask = batch["attention_mask"]
                spent[name] = [spent[name][0] + int(mask.sum()), spent[name][1] + mask.numel(),
                               spent[name][2] + seconds]
        if r == 0:
            continue  # round 0 warms up
        for name in sources:
            rates[name].append(spent[name][0] / spent[name][2])
            totals[name] = [a + b for a, b in zip(totals[name], spent[name])]
        print(f"  round {r}: today {rates['today'][-1]:,.0f}, grouped {rates['grouped'][-1]:,.0f} real tok/s, "
              f"ratio {rates['grouped'][-1] / rates['today'][-1]:.2f}", flush=True)

    ratios = [g / t for g, t in zip(rates["grouped"], rates["today"])]
    for name in sources:
        real, positions, seconds = totals[name]
        print(f"{name:8s} median {statistics.median(rates[name]):,.0f} real tokens/s "
              f"({positions / seconds:,.0f} positions/s); real-token share of the timed batches {real / positions:.1%}")
    pooled = (totals["grouped"][0] / totals["grouped"][2]) / (totals["today"][0] / totals["today"][2])
    print(f"speedup grouped / today: median of per-round ratios {statistics.median(ratios):.2f}x "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}), pooled over all rounds {pooled:.2f}x; "
          f"the padding bound is {shares['grouped'] / shares['today']:.2f}x")


if __name__ == "__main__":
    main()
