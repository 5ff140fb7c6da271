"""Relative training speed of two presets (albert-mini against albert-nano by default), beside the FLOP ratio.

`albert_mini.study.throughput.relative_throughput` times forward + backward of each preset on random ids and
reports each one's tokens/s over the reference's ("speedup", the paper's Table 2 column) with the ratio the FLOP
model predicts. albert-mini does 3 times the layers at 4 times the width of albert-nano, so it should be slower:
a speedup below 1. That is a measurement, not a property a test can assert on a shared host, so it lives here
(it was a timed assertion in tests/study/test_throughput.py). Each round measures both presets, in turn (ABBA),
so a busy machine slows both alike; we print the median of the per-round ratios and the load average.

    .venv/bin/python benchmarks/preset_speed.py [--rounds 5] [--steps 3] [--batch-size 2] [--seq-len 64]
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch

from albert_mini.harness.experiments.provenance import cpu_model
from albert_mini.study.throughput import relative_throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="albert-mini")
    parser.add_argument("--reference", default="albert-nano")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per measurement (after one warm-up)")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=64)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} threads; load average "
          f"{os.getloadavg()[0]:.2f}; {args.preset} against {args.reference}, batch {args.batch_size} x "
          f"{args.seq_len} tokens, {args.steps} steps, {args.rounds} rounds")
    ratios, flop_ratio = [], None
    for r in range(args.rounds):
        order = [args.reference, args.preset] if r % 2 == 0 else [args.preset, args.reference]
        result = relative_throughput(order, reference=args.reference, batch_size=args.batch_size,
                                     seq_len=args.seq_len, steps=args.steps)
        ratios.append(result[args.preset]["speedup"])
        flop_ratio = result[args.preset]["flop_ratio"]
        print(f"  round {r}: {args.reference} {result[args.reference]['tokens_per_second']:,.0f} tok/s, "
              f"{args.preset} {result[args.preset]['tokens_per_second']:,.0f} tok/s, speedup {ratios[-1]:.3f}")
    print(f"speedup {args.preset} / {args.reference}: median of per-round ratios {statistics.median(ratios):.3f}x "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}); the FLOP model predicts {flop_ratio:.3f}x; "
          f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
