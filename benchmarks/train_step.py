"""One full training step (forward, backward, AdamW step) of albert_mini vs HF AlbertForPreTraining.

Both models get the same config, the same weights and the same batch, and run alternately in one process, so a
noisy shared host slows both alike; we report medians. Also measures this machine's fp32 matmul peak and the
fraction of it each implementation reaches.

    make benchmark            # or: .venv/bin/python benchmarks/train_step.py [--steps 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.model.hf import to_hf

CASES = {
    "a": (dict(vocab_size=8000, embedding_size=64, hidden_size=256, num_hidden_layers=6, num_attention_heads=4,
               intermediate_size=1024), 128, 32),
    "b": (dict(vocab_size=8000, embedding_size=128, hidden_size=512, num_hidden_layers=12, num_attention_heads=8,
               intermediate_size=2048), 128, 16),
}
MASKED_FRACTION = 0.15


def matmul_peak(size: int = 2048, repeats: int = 12) -> float:
    """Best fp32 GFLOP/s of a square matmul on this machine (the ceiling a model step could reach)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        rates.append(2 * size**3 / (time.perf_counter() - start) / 1e9)
    return max(rates)


def step_flops(config: AlbertConfig, seq: int, batch: int, mlm_positions: float) -> float:
    """FLOPs of forward + backward (3x forward): matmuls, attention scores and the MLM decoder rows computed."""
    H, I, E, V, L = (config.hidden_size, config.intermediate_size, config.embedding_size, config.vocab_size,
                     config.num_hidden_layers)
    tokens = batch * seq
    per_token = 2 * (E * H + L * (4 * H * H + 2 * H * I) + L * 2 * seq * H)  # projection, layers, attention
    per_prediction = 2 * (H * E + E * V)  # MLM transform + decoder
    return 3 * (tokens * per_token + tokens * mlm_positions * per_prediction)


def make_batch(config: AlbertConfig, seq: int, batch: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (batch, seq), generator=g)
    labels = torch.where(torch.rand(batch, seq, generator=g) < MASKED_FRACTION, ids, torch.full_like(ids, -100))
    return dict(input_ids=ids, token_type_ids=(torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone(),
                attention_mask=torch.ones(batch, seq, dtype=torch.long), labels=labels,
                sentence_order_label=torch.randint(0, 2, (batch,), generator=g))


def timed_step(model, optimizer, batch, hf: bool) -> float:
    start = time.perf_counter()
    if hf:
        loss = model(**batch).loss
    else:
        loss = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], labels=batch["labels"],
                     sentence_order_label=batch["sentence_order_label"]).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def run_case(name: str, steps: int, peak: float) -> dict:
    fields, seq, batch_size = CASES[name]
    config = AlbertConfig(**fields)
    torch.manual_seed(0)
    ours = AlbertForPreTraining(config).train()
    hf = to_hf(ours).train()
    batch = make_batch(config, seq, batch_size)
    optimizers = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in (("ours", ours), ("hf", hf))}
    times = {"ours": [], "hf": []}
    for step in range(steps + 2):  # two warm-up steps each, then alternate
        for key, model in (("ours", ours), ("hf", hf)) if step % 2 == 0 else (("hf", hf), ("ours", ours)):
            t = timed_step(model, optimizers[key], batch, hf=key == "hf")
            if step >= 2:
                times[key].append(t)
    tokens = seq * batch_size
    result = {"case": name, "tokens_per_step": tokens}
    for key in times:
        median = statistics.median(times[key])
        positions = MASKED_FRACTION if key == "ours" else 1.0  # HF computes MLM logits at every position
        gflops = step_flops(config, seq, batch_size, positions) / median / 1e9
        result[key] = {"tok_s": tokens / median, "gflop_s": gflops, "peak_fraction": gflops / peak}
    result["ratio"] = result["ours"]["tok_s"] / result["hf"]["tok_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per model and case (after 2 warm-up)")
    parser.add_argument("--cases", default="ab", help="which cases to run: a, b or ab")
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    peak = matmul_peak()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"fp32 matmul peak measured: {peak:.0f} GFLOP/s")
    for name in args.cases:
        r = run_case(name, args.steps, peak)
        print(f"case {name} ({r['tokens_per_step']} tokens/step): "
              f"albert_mini {r['ours']['tok_s']:,.0f} tok/s ({r['ours']['peak_fraction']:.0%} of peak), "
              f"HF {r['hf']['tok_s']:,.0f} tok/s ({r['hf']['peak_fraction']:.0%} of peak), "
              f"ratio {r['ratio']:.2f}x")


if __name__ == "__main__":
    main()
