"""Does pretraining on your own text scale? Preparation speed, start-up time and peak memory at 1x/10x/100x.

The text is Austen's training chapters as blank-line documents (3.3 MB), copied 1, 10 and 100 times into as
many files (100x: 329 MB). For each size, in one run on one machine:
- SentencePiece alone: encoding the text's paragraphs, already lower-cased as ALBERT's preprocessing does, on one
  core, MB/s (the floor any ALBERT pipeline pays; raw text encodes faster, its capitals being unknown pieces);
- cold: `pretrain --corpus` with an empty token cache, from process start to the first batch in hand: it prepares
  the text (all cores), builds the first passes of instances and the model;
- warm: the same command again (a new --out, the same cache): it maps what the cold run prepared;
- check: what the warm start spends proving the cache (`TokenCache(folder)`: the manifest's fields, the size and
  crc32 of every file, the arrays' agreement), timed alone in this process, best of three (the files are in the
  page cache, as on a warm start; from a cold disk it is the disk's read speed);
- in memory (--baseline): the text read and tokenized in one process without the cache, as before the cache
  (`tokenize_documents(load_text_files(...))`), the instances counted and the first batch built the same way.
Each run is a fresh process; its peak resident memory (ru_maxrss) includes the pages of the mapped files it read.
Because the copies repeat the same text, nothing here deduplicates anything: every copy is encoded again.

    .venv/bin/python benchmarks/corpus_scale.py [--scales 1 10 100] [--baseline]
"""

from __future__ import annotations

import time

START = time.perf_counter()  # a child's start-up counts from here, before the package is imported

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from albert_mini.devices import cpu_model  # noqa: E402

FLAGS = ["--split-by", "blank-line", "--steps", "1", "--seq-len", "128", "--batch-size", "32", "--quiet"]


def peak_mb() -> float:
    """Peak resident memory of this process in MB: VmHWM on Linux (ru_maxrss there keeps the parent's peak across
    exec), else ru_maxrss (bytes on macOS)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6


def child(folder: str, tokenizer: str, out: str, mode: str) -> None:
    """One start-up, as a fresh process would do it: print its seconds to the first batch and its peak memory."""
    from albert_mini.commands.pretrain import build_parser
    from albert_mini.training.distributed import init_distributed
    from albert_mini.training.run import Run
    from albert_mini.training.setup import PretrainingSetup

    argv = ["--corpus", folder, "--tokenizer", tokenizer, "--out", out, *FLAGS]
    setup = PretrainingSetup.from_args(build_parser().parse_args(argv))
    if mode == "baseline":
        use_memory_pipeline()
    run = Run.build(setup, init_distributed("cpu"), lambda *a, **k: None)
    next(run.trainer.batch_iter)
    seconds = time.perf_counter() - START
    run.close()
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb()}))


def use_memory_pipeline() -> None:
    """Make the pretraining inputs read and tokenize the text in memory, as they did before the token cache."""
    from albert_mini.text.batches import tokenize_documents
    from albert_mini.text.corpus import expand_text_paths, fingerprint_files, load_text_files
    from albert_mini.training import pretrain_inputs
    from albert_mini.training.setup import DEFAULT_HOLDOUT, SPLIT_BY

    def load_documents(args, tokenizer, say=print):
        paths = expand_text_paths(args.corpus)
        documents = load_text_files(paths, mode=SPLIT_BY[args.split_by])
        fraction = DEFAULT_HOLDOUT if args.holdout_fraction is None else args.holdout_fraction
        train, held = pretrain_inputs.hold_out(documents, fraction, args.split_by)
        return tokenize_documents(train, tokenizer), tokenize_documents(held, tokenizer), fingerprint_files(paths)

    pretrain_inputs.load_documents = load_documents


def sentencepiece_alone(folder: Path, tokenizer: str) -> float:
    """MB/s of one core encoding the text's preprocessed paragraphs (lines) with SentencePiece, nothing else (the
    first ten files: the rate does not depend on the size); MB of the text as read."""
    import sentencepiece as spm

    from albert_mini.text.tokenizer import preprocess_text

    processor = spm.SentencePieceProcessor(model_file=tokenizer)
    files = sorted(folder.glob("*.txt"))
    raw = [line for f in files[:10] for line in f.read_text(encoding="utf-8").splitlines() if line]
    size = sum(len(line.encode("utf-8")) + 1 for line in raw)
    lines = [preprocess_text(line) for line in raw]
    best = float("inf")
    for _ in range(3):  # the best of three: the least disturbed by other work on the machine
        start = time.perf_counter()
        processor.encode(lines, num_threads=1)
        best = min(best, time.perf_counter() - start)
    return size / 1e6 / best


def check_seconds(cache: Path) -> float:
    """Seconds to open (and so check) the prepared folder in `cache`, best of three."""
    from albert_mini.text.token_cache import TokenCache

    folder = next(p for p in cache.iterdir() if (p / "manifest.json").is_file())
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        TokenCache(folder)
        best = min(best, time.perf_counter() - start)
    return best


def cache_mb(cache: Path) -> float:
    """MB of the files the check reads (tokens and index, not the passes)."""
    from albert_mini.text.token_cache import CONTENT_NAMES

    folder = next(p for p in cache.iterdir() if (p / "manifest.json").is_file())
    return sum((folder / name).stat().st_size for name in CONTENT_NAMES) / 1e6


def run_child(folder: Path, tokenizer: str, out: Path, mode: str, cache: Path) -> dict:
    env = {**os.environ, "ALBERT_MINI_CACHE": str(cache)}
    done = subprocess.run([sys.executable, __file__, "--child", str(folder), tokenizer, str(out), mode], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the {mode} start-up failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100], help="copies of the Austen text")
    parser.add_argument("--baseline", action="store_true", help="also time the in-memory pipeline (slow at 100x)")
    parser.add_argument("--keep", type=Path, help="build the texts and caches in this folder and keep them")
    args = parser.parse_args()

    from albert_mini.paths import DATA_ROOT
    from albert_mini.text.corpus import load_corpus
    from albert_mini.text.token_cache import default_workers

    tokenizer = str(DATA_ROOT / "austen" / "spiece.model")
    work = args.keep or Path(tempfile.mkdtemp(prefix="corpus-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    text = "\n\n".join("\n".join(doc.paragraphs) for doc in load_corpus("austen", "train")) + "\n"
    print(f"machine: {cpu_model()}, {default_workers()} cores usable, load average "
          f"{os.getloadavg()[0]:.1f} at the start; Python {platform.python_version()}")
    print(f"{'text':>6} {'MB':>7} | {'SP alone':>9} | {'cold s':>7} {'MB/s':>6} {'x SP':>5} {'peak MB':>8} | "
          f"{'warm s':>7} {'peak MB':>8} {'check s':>8} {'cache MB':>8}" +
          (f" | {'memory s':>8} {'peak MB':>8}" if args.baseline else ""))
    try:
        for scale in args.scales:
            folder = work / f"austen-x{scale}"
            folder.mkdir(exist_ok=True)
            for i in range(scale):
                (folder / f"part-{i:04d}.txt").write_text(text, encoding="utf-8")
            size = scale * len(text.encode("utf-8")) / 1e6
            cache = work / f"cache-x{scale}"
            shutil.rmtree(cache, ignore_errors=True)
            alone = sentencepiece_alone(folder, tokenizer)
            cold = run_child(folder, tokenizer, work / f"run-cold-x{scale}", "cache", cache)
            manifest = json.loads(next(cache.glob("*/manifest.json")).read_text())
            rate = manifest["text_bytes"] / 1e6 / manifest["prepared"]["seconds"]  # reading, splitting, encoding
            warm = run_child(folder, tokenizer, work / f"run-warm-x{scale}", "cache", cache)
            row = (f"{scale:>5}x {size:7.1f} | {alone:6.1f}/cpu | {cold['seconds']:7.1f} {rate:6.1f} "
                   f"{rate / alone:5.2f} {cold['peak_mb']:8.0f} | {warm['seconds']:7.1f} {warm['peak_mb']:8.0f} "
                   f"{check_seconds(cache):8.2f} {cache_mb(cache):8.1f}")
            if args.baseline:
                memory = run_child(folder, tokenizer, work / f"run-memory-x{scale}", "baseline", cache)
                row += f" | {memory['seconds']:8.1f} {memory['peak_mb']:8.0f}"
            print(row, flush=True)
            if not args.keep:
                shutil.rmtree(folder)
                shutil.rmtree(cache)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("SP alone: MB/s of one core; x SP: the cold run's preparation rate (all cores) over SP alone on one core.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:6])
    else:
        main()
