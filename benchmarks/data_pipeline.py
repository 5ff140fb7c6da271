"""Is the data pipeline fast enough? Instances and masked batches per second vs the model's training steps.

For the classroom preset (albert-mini, seq 128, batch 32) on the Austen training chapters, measures:
- tokenizing the corpus once (done once per run, cached by the dataset),
- building SOP instances (one pass over the corpus) in instances per second,
- masked, padded batches per second in dynamic mode (instances rebuilt every epoch, masks drawn per example;
  the epoch's build cost is included, spread over its batches) and in static mode (precomputed masks),
- one AlbertForPreTraining training step (forward + backward + AdamW) on those batches.
Pipeline and model run alternately in one process, so a noisy shared host slows both alike; medians reported.

    .venv/bin/python benchmarks/data_pipeline.py [--steps 6] [--batches 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.settings import pick
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset, tokenize_documents
from albert_mini.text.corpus import load_corpus
from albert_mini.text.instances import build_instances
from albert_mini.text.tokenizer import Tokenizer

PRESET, SEQ, BATCH = "albert-mini", 128, 32


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=pick(2, 6), help="timed model steps (after one warm-up)")
    parser.add_argument("--batches", type=int, default=pick(5, 20), help="pipeline batches timed per round")
    args = parser.parse_args()

    tokenizer = Tokenizer.default()
    documents = load_corpus("austen", "train")
    start = time.perf_counter()
    token_docs = tokenize_documents(documents, tokenizer)
    tokenize_s = time.perf_counter() - start
    print(f"corpus: {len(documents)} chapters, {token_docs.num_tokens():,} tokens; "
          f"tokenized once in {tokenize_s:.2f} s")

    build_times, n_instances = [], 0
    for seed in range(3):
        start = time.perf_counter()
        n_instances = len(build_instances(token_docs, "sop", SEQ, seed=seed))
        build_times.append(time.perf_counter() - start)
    build_s = statistics.median(build_times)
    print(f"SOP instances: {n_instances:,} per pass, built in {build_s:.3f} s: "
          f"{n_instances / build_s:,.0f} instances/s")

    dataset = build_pretraining_dataset(token_docs, tokenizer, "sop", SEQ, seed=0)
    dynamic = PretrainingBatches(dataset, BATCH, pad_to=SEQ)
    start = time.perf_counter()
    static_data = build_pretraining_dataset(token_docs, tokenizer, "sop", SEQ, seed=0, dynamic=False)
    static_build_s = time.perf_counter() - start
    static = PretrainingBatches(static_data, BATCH, pad_to=SEQ)
    print(f"static mode: {len(static_data):,} instances built and masked in {static_build_s:.2f} s")

    config = AlbertConfig.from_preset(PRESET, vocab_size=tokenizer.vocab_size)
    torch.manual_seed(0)
    model = AlbertForPreTraining(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def model_step():
        loss = model(**next(static)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def pipeline(source):
        return lambda: [next(source) for _ in range(args.batches)]

    model_step()  # warm-up
    dynamic_s, static_s, model_s = [], [], []
    for _ in range(args.steps):  # alternate, so the shared host's slow spells hit both sides
        dynamic_s.append(seconds(pipeline(dynamic)) / args.batches)
        static_s.append(seconds(pipeline(static)) / args.batches)
        model_s.append(seconds(model_step))
    per_epoch = dynamic.batches_per_epoch()
    dynamic_batch_s = statistics.median(dynamic_s) + build_s / per_epoch  # the epoch's rebuild, spread out
    static_batch_s = statistics.median(static_s)
    model_batch_s = statistics.median(model_s)

    print(f"\n{PRESET}, seq {SEQ}, batch {BATCH} ({BATCH * SEQ} tokens per batch), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"  pipeline, dynamic (new instances + masks every epoch): {1 / dynamic_batch_s:8.1f} batches/s "
          f"({BATCH / dynamic_batch_s:,.0f} sequences/s)")
    print(f"  pipeline, static (precomputed masks):                   {1 / static_batch_s:8.1f} batches/s")
    print(f"  model training step (forward + backward + AdamW):       {1 / model_batch_s:8.2f} batches/s "
          f"({BATCH * SEQ / model_batch_s:,.0f} tokens/s)")
    print(f"  dynamic pipeline is {model_batch_s / dynamic_batch_s:,.0f}x faster than the model "
          f"(goal >= 20x); static {model_batch_s / static_batch_s:,.0f}x")


if __name__ == "__main__":
    main()
