"""Is `albert-mini prepare` ahead of SentencePiece alone? Its tokens/s on all cores vs SentencePiece's on one core.

The text is Austen's training chapters as blank-line documents (3.3 MB), copied --copies times into as many files
(default 10: 33 MB). Side by side in one run, alternately, best of --rounds each (the least disturbed by other
work on the machine), every measurement in a fresh process:
- SentencePiece alone: `encode(sentences, num_threads=1)` over every sentence of the text, already cut and
  preprocessed (the work no ALBERT pipeline can skip), in a process that imports nothing else: tokens/s; and the
  same with Python's cyclic garbage collector off, as prepare's workers run (the lists of ints SentencePiece
  returns make the collector walk them again and again: the faster of the two is the stricter reference);
- prepare: `token_cache.prepare(..., workers=N)` (what `albert-mini prepare` runs, in a process that has
  imported what the command imports: no torch) into an empty cache: reading, splitting, encoding, writing and
  the final check of what was written, tokens/s; and the whole command
  (`albert-mini prepare`, process start to exit: Python and its imports too);
- with --compare-with DIR: prepare from another checkout (DIR first on PYTHONPATH), e.g. the commit before a
  change, so that both are measured on the same machine under the same load.
Wall-clock time decides the goal (prepare on 2 cores at least 1.5x SentencePiece alone). Each line
also gives CPU seconds (the process's, and for prepare its workers' too): on a machine that other work keeps
busy, the wall-clock ratio understates prepare (its workers share the cores with that work), and "on idle
cores" is the ratio 2 x (SentencePiece's CPU seconds) / (prepare's), what N idle cores would give if the
workers ran side by side without a pause.

    .venv/bin/python benchmarks/prepare_speed.py [--copies 10] [--workers 2] [--rounds 3] [--compare-with DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from albert_mini.devices import cpu_model

REPO = Path(__file__).resolve().parents[1]
ALONE = """
import gc, json, sys, time
import sentencepiece as spm
processor = spm.SentencePieceProcessor(model_file=sys.argv[1])
sentences = open(sys.argv[2], encoding="utf-8").read().split("\\n")
if sys.argv[3] == "off":
    gc.disable()
wall, cpu = time.perf_counter(), time.process_time()
tokens = sum(map(len, processor.encode(sentences, num_threads=1)))
print(json.dumps({"tokens": tokens, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""
PREPARE = """
import json, resource, sys, time
sys.argv[0] = "albert-mini"  # the package loads as the command loads it: without torch, which preparing never uses
from pathlib import Path
from albert_mini.text import token_cache
from albert_mini.text.tokenizer import Tokenizer
tokenizer = Tokenizer.from_file(sys.argv[1])
files = sorted(Path(sys.argv[2]).glob("*.txt"))
def cpu():  # this process's and its reaped workers'
    who = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, who))
wall, used = time.perf_counter(), cpu()
cache = token_cache.prepare(files, tokenizer, "blank_line", workers=int(sys.argv[4]), root=Path(sys.argv[3]),
                            progress=False, say=lambda *a: None)
print(json.dumps({"tokens": cache.manifest["tokens"], "wall": time.perf_counter() - wall, "cpu": cpu() - used,
                  "workers": cache.manifest["prepared"]["workers"], "contents": cache.manifest["contents"]}))
"""
# As the console script runs it (its name in sys.argv[0] before the package is imported: no torch, see PREPARE).
COMMAND = "import sys; sys.argv[0] = 'albert-mini'; from albert_mini.commands import main; main(sys.argv[1:])"


def child(code: str, *argv, path: Path = REPO, env: dict | None = None) -> dict | None:
    """Run `code` in a fresh Python with `path` first on its path; the JSON line it prints last, if any."""
    env = {**os.environ, "PYTHONPATH": str(path), "OMP_NUM_THREADS": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=path, env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"a measurement failed ({path}):\n{done.stderr[-2000:]}")
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return json.loads(last) if last.startswith("{") else None


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=10, help="copies of the Austen text (3.3 MB each)")
    parser.add_argument("--workers", type=int, default=2, help="prepare's worker processes")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each is reported")
    parser.add_argument("--compare-with", type=Path, metavar="DIR", help="also time prepare from this checkout")
    args = parser.parse_args()

    from albert_mini.paths import DATA_ROOT
    from albert_mini.text.corpus import load_corpus
    from albert_mini.text.token_cache import read_sentences

    model = DATA_ROOT / "austen" / "spiece.model"
    work = Path(tempfile.mkdtemp(prefix="prepare-speed-"))
    try:
        folder = work / "text"
        folder.mkdir()
        text = "\n\n".join("\n".join(doc.paragraphs) for doc in load_corpus("austen", "train")) + "\n"
        files = [folder / f"part-{i:04d}.txt" for i in range(args.copies)]
        for f in files:
            f.write_text(text, encoding="utf-8")
        sentences = work / "sentences.txt"  # one a line: a sentence never holds a line end
        sentences.write_text("\n".join(s for f in files for s in read_sentences(f.read_text(), "blank_line")[2]),
                             encoding="utf-8")
        size = sum(f.stat().st_size for f in files) / 1e6
        paths = {"this checkout": REPO, **({str(args.compare_with): args.compare_with.resolve()}
                                           if args.compare_with else {})}
        print(f"machine: {cpu_model()}, {len(os.sched_getaffinity(0))} cores usable; load average {load()} at the "
              f"start; Python {platform.python_version()}")
        print(f"text: {size:.1f} MB in {len(files)} files; prepare with {args.workers} worker(s); best of "
              f"{args.rounds} rounds, run alternately")
        argv = ["prepare", "--corpus", folder, "--tokenizer", model, "--split-by", "blank-line", "--workers",
                args.workers, "--quiet"]
        alone, alone_off, runs, whole = [], [], {name: [] for name in paths}, []
        for _ in range(args.rounds):
            alone.append(child(ALONE, model, sentences, "on"))
            alone_off.append(child(ALONE, model, sentences, "off"))
            for name, path in paths.items():
                shutil.rmtree(work / "cache", ignore_errors=True)
                runs[name].append(child(PREPARE, model, folder, work / "cache", args.workers, path=path))
            shutil.rmtree(work / "cache", ignore_errors=True)
            start = time.perf_counter()
            child(COMMAND, *argv, env={"ALBERT_MINI_CACHE": str(work / "cache")})
            whole.append(time.perf_counter() - start)
        best = min(alone, key=lambda run: run["wall"])
        sp_rate, sp_cpu = best["tokens"] / best["wall"], min(run["cpu"] for run in alone)
        print(f"SentencePiece alone, 1 core: {best['tokens']:,} tokens in {best['wall']:.2f} s = "
              f"{sp_rate / 1e6:.2f} M tokens/s ({sp_cpu:.2f} CPU s)")
        off = min(alone_off, key=lambda run: run["wall"])
        off_rate = off["tokens"] / off["wall"]
        print(f"SentencePiece alone, 1 core, collector off: {off['wall']:.2f} s = {off_rate / 1e6:.2f} M tokens/s "
              f"({min(run['cpu'] for run in alone_off):.2f} CPU s)")
        for name, done in runs.items():
            wall, cpu = min(run["wall"] for run in done), min(run["cpu"] for run in done)
            tokens = done[0]["tokens"]
            print(f"prepare ({name}), {done[0]['workers']} workers: {tokens:,} tokens in {wall:.2f} s = "
                  f"{tokens / wall / 1e6:.2f} M tokens/s = {tokens / wall / sp_rate:.2f}x SentencePiece alone, "
                  f"{tokens / wall / off_rate:.2f}x with its collector off ({cpu:.2f} CPU s; on idle cores "
                  f"{done[0]['workers'] * sp_cpu / cpu:.2f}x)")
        same = len({json.dumps(run["contents"], sort_keys=True) for done in runs.values() for run in done}) == 1
        print(f"token caches: {'byte-identical (size and crc32 of every file)' if same else 'DIFFERENT'} across "
              "runs" + (" and checkouts" if len(paths) > 1 else ""))
        wall = min(whole)
        print(f"the whole command (albert-mini prepare, this checkout, process start to exit): {wall:.2f} s = "
              f"{best['tokens'] / wall / sp_rate:.2f}x SentencePiece alone")
        print(f"load average {load()} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
