"""Could torchdata's StatefulDataLoader replace the hand-written resumable loader (text/batch_source.py)?

Both loaders serve the batches `albert-mini pretrain` trains on: the albert-nano run's short-then-long curriculum
(PhasedBatches) over the first Austen training chapters, so the walk crosses epoch edges and the phase switch
within a few dozen batches. Two candidates, adapters with LoadedBatches' interface: `StatefulLoaded`, a
StatefulDataLoader over the same tickets with the source's walk as its stateful sampler and its own state as the
checkpoint's, and `PositionLoaded`, the same but the checkpoint keeps the source's position (read from
StatefulDataLoader's snapshot). Both install our worker hooks (signals let pass, the death signal, closing at
exit): StatefulDataLoader has none of them, and a row without them shows what that costs.
For worker processes 0 and 2 the trial checks:
- bit-identity: N batches uninterrupted against k batches, the state through a checkpoint round trip
  (torch.save, torch.load with weights_only=True), a fresh loader and the rest; torch.equal on every tensor, for k
  at the start, mid-epoch, at epoch edges and at the phase switch, and against the bare source without a loader;
- what a run relies on beyond that: a state saved with workers resumed without them and the other way round, a
  checkpoint of today's format, settings that differ refused (and when), a group SIGTERM during a step, the global
  RNG left untouched;
- speed side by side in one process, rounds alternating: the first batch (workers starting), then per batch, a
  state_dict() call and a resume (load + first batch).
It ends with the lines of the loader each needs and the decision by the rule (kept only if bit-identical, less
code, no guarantee lost and the dependency justified: torchdata is not one of the project's runtime packages).

torchdata is not installed in the project's venv; install it aside and put it on the path:
    .venv/bin/python -m pip install --target /tmp/tdsite --no-deps torchdata==0.11.0
    PYTHONPATH=/tmp/tdsite .venv/bin/python benchmarks/stateful_loader_trial.py \
        [--rounds 5] [--write benchmarks/results/stateful_loader_trial.md]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import inspect
import io
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import torch

from albert_mini.text import batch_source
from albert_mini.text.batch_source import LoadedBatches, _Tickets
from albert_mini.text.batches import tokenize_documents
from albert_mini.text.corpus import load_corpus
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.run_data import training_batches
from albert_mini.training.setup import in_process

try:
    from torchdata.stateful_dataloader import StatefulDataLoader
except ImportError:
    StatefulDataLoader = None

# The run whose batches are served: albert-nano with BERT's curriculum, 6 short batches then long ones.
RUN = dict(preset="albert-nano", corpus="austen", seq_len=64, batch_size=8, short_seq_len=32, short_fraction=0.2,
           steps=30)
CHAPTERS = 4  # short epochs: 2 batches in the short phase, 11-12 in the long one
WORKERS = (0, 2)


@functools.cache
def token_documents():
    return tokenize_documents(load_corpus("austen", "train")[:CHAPTERS], Tokenizer.default())


def source(**changes):
    """A fresh training source of the trial's run (`changes` replace its settings)."""
    return training_batches(in_process(**{**RUN, **changes}), token_documents(), Tokenizer.default())


# ---------------------------------------------------------------------- the candidate
class SourceSampler:
    """The source's walk as a sampler StatefulDataLoader saves: a ticket per `next`, the position as the state."""

    def __init__(self, walk):
        self.walk = walk

    def __iter__(self):
        return self

    def __next__(self):
        return self.walk.plan()

    def state_dict(self) -> dict:
        return self.walk.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.walk.load_state_dict(state)


class StatefulLoaded:
    """LoadedBatches rebuilt on StatefulDataLoader, with the same interface and (with `hooks`) our worker hooks."""

    def __init__(self, source, workers: int = 0, pin_memory: bool = False, prefetch: int = 2, hooks: bool = True):
        self.source, self.workers, self.hooks = source, workers, hooks and workers > 0
        start = functools.partial(batch_source._start_worker, os.getpid(),
                                  threading.current_thread() is threading.main_thread())
        self.loader = StatefulDataLoader(_Tickets(source), batch_size=None, sampler=SourceSampler(source),
                                         num_workers=workers, pin_memory=pin_memory,
                                         prefetch_factor=prefetch if workers else None,
                                         generator=torch.Generator().manual_seed(0),
                                         worker_init_fn=start if self.hooks else None)
        self._iter = None

    @property
    def max_predictions(self) -> int | None:
        return getattr(self.source, "max_predictions", None)

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        if self._iter is None:
            with batch_source._group_signals_held() if self.hooks else contextlib.nullcontext():
                self._iter = iter(self.loader)
            if self.hooks:
                batch_source._close_at_exit(self)
        return next(self._iter)

    def take(self, n: int) -> list[dict]:
        return self.source.take(n)

    def state_dict(self) -> dict:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.close()
        self.loader.load_state_dict(state)

    def close(self) -> None:
        if self._iter is not None:
            batch_source.end_workers(self._iter)
            self._iter = self.loader._iterator = None
        batch_source._open_loaders.discard(self)


class PositionLoaded(StatefulLoaded):
    """The candidate that keeps today's checkpoint format: the source's position, which StatefulDataLoader's
    snapshot holds as its sampler's state when the last batch handed out was sent (its private layout)."""

    def state_dict(self) -> dict:
        state = self.loader.state_dict()
        return (state["_snapshot"]["_main_snapshot"] if self.workers else state)["_index_sampler_state"]

    def load_state_dict(self, state: dict) -> None:
        self.close()
        self.source.load_state_dict(state)


LOADERS = {"ours": LoadedBatches, "StatefulDataLoader": StatefulLoaded,
           "StatefulDataLoader, our position": PositionLoaded}


# ---------------------------------------------------------------------- bit-identity
def same(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
                                    for x, y in zip(a, b))


def draw(loader, n: int) -> list[dict]:
    return [next(loader) for _ in range(n)]


def checkpointed_bytes(state: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def checkpointed(state: dict) -> dict:
    """The state as a checkpoint keeps it: saved, and read back with plain values only."""
    return torch.load(io.BytesIO(checkpointed_bytes(state)), weights_only=True)


def resumed(make, n: int, k: int, workers: int, resume_workers: int | None = None) -> list[dict]:
    """k batches, the state through a checkpoint, a fresh loader (`resume_workers`) loads it, the other n - k."""
    first = make(source(), workers)
    try:
        head = draw(first, k)
        state = checkpointed(first.state_dict())
    finally:
        first.close()
    again = make(source(), workers if resume_workers is None else resume_workers)
    try:
        again.load_state_dict(state)
        return head + draw(again, n - k)
    finally:
        again.close()


def cut_points(n: int) -> dict[int, str]:
    """Where to cut a run of n batches: the start, epoch edges, the phase switch, mid-epoch, the last batch."""
    walk, labels = source(), {}
    for k in range(n):
        inner = walk.first if walk.drawn < walk.switch_after else walk.then
        if k == 0:
            labels[k] = "start"
        elif k == walk.switch_after:
            labels[k] = "phase switch"
        elif inner.index == inner.batches_in_epoch(inner.epoch):  # the next batch opens an epoch
            labels[k] = f"epoch edge ({'short' if inner is walk.first else 'long'} phase)"
        next(walk)
    mids = [k for k in range(1, n) if k not in labels]
    for k in (mids[0], mids[len(mids) // 2]):
        labels[k] = "mid-epoch"
    labels[n - 1] = labels.get(n - 1, "before the last batch")
    return dict(sorted(labels.items()))


def outcome(fn) -> str:
    """'ok' or the exception's class and first line."""
    try:
        fn()
        return "ok"
    except Exception as error:  # noqa: BLE001 (the trial reports what failed)
        return f"{type(error).__name__}: {str(error).splitlines()[0][:110] if str(error) else ''}".rstrip(": ")


# ---------------------------------------------------------------------- what a run relies on
def resume_across_workers(make, n: int, k: int, reference: list[dict], saved: int, resumed_with: int) -> str:
    result = []
    text = outcome(lambda: result.append(resumed(make, n, k, saved, resumed_with)))
    return text if text != "ok" else ("bit-identical" if same(result[0], reference) else "different bits")


def resume_from_todays_checkpoint(make, n: int, k: int, reference: list[dict], workers: int) -> str:
    """Today's checkpoints hold LoadedBatches' state (the source's position and settings)."""
    ours = LoadedBatches(source(), workers)
    draw(ours, k)
    state = checkpointed(ours.state_dict())
    ours.close()
    loader, result = make(source(), workers), []
    try:
        text = outcome(lambda: (loader.load_state_dict(state), result.append(draw(loader, n - k))))
    finally:
        loader.close()
    return text if text != "ok" else ("bit-identical" if same(reference[:k] + result[0], reference) else
                                      "different bits")


def refusal(make, workers: int) -> str:
    """Load a state saved under another seed: refused at load_state_dict, at the first batch, or not at all."""
    first = make(source(), workers)
    draw(first, 3)
    state = checkpointed(first.state_dict())
    first.close()
    other = make(source(seed=1), workers)
    try:
        try:
            other.load_state_dict(state)
        except ValueError:
            return "refused at load_state_dict"
        try:
            next(other)
        except ValueError:
            return "refused at the first batch" + (" (workers already started)" if workers else "")
        return "not refused"
    finally:
        other.close()


def group_sigterm(make, reference: list[dict], **options) -> str:
    """A scheduler's SIGTERM reaches every process of the group during a step: does the loader go on?"""
    loader, caught = make(source(), 2, **options), []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))
    try:
        got = draw(loader, 2)
        for worker in loader._iter._workers:
            os.kill(worker.pid, signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
        got += draw(loader, 4)
        return ("goes on, same bits" if same(got, reference[:6]) else "goes on, different bits") + \
            (", the run sees it" if caught else "")
    except Exception as error:  # noqa: BLE001
        first_line = re.sub(r"pid\(s\) [\d, ]+", "pid(s) ... ", str(error).splitlines()[0][:100])
        return f"{type(error).__name__}: {first_line}"
    finally:
        with contextlib.suppress(Exception):
            loader.close()
        signal.signal(signal.SIGTERM, previous)


def leaves_global_rng(make, workers: int) -> str:
    before = torch.get_rng_state()
    loader = make(source(), workers)
    draw(loader, 3)
    loader.state_dict()
    loader.close()
    return "untouched" if torch.equal(before, torch.get_rng_state()) else "drawn from"


# ---------------------------------------------------------------------- speed
def timings(make, workers: int, n: int, k: int) -> dict:
    loader = make(source(), workers)
    start = time.perf_counter()
    next(loader)
    first = time.perf_counter() - start
    start = time.perf_counter()
    draw(loader, n - 1)
    per_batch = (time.perf_counter() - start) / (n - 1)
    loader.close()
    loader = make(source(), workers)
    draw(loader, k)
    start = time.perf_counter()
    for _ in range(20):
        state = loader.state_dict()
    state_s = (time.perf_counter() - start) / 20
    size = len(checkpointed_bytes(state))
    loader.close()
    loader = make(source(), workers)
    start = time.perf_counter()
    loader.load_state_dict(state)
    next(loader)
    resume = time.perf_counter() - start
    loader.close()
    return {"first": first, "per_batch": per_batch, "state_dict": state_s, "state_bytes": size, "resume": resume}


# ---------------------------------------------------------------------- lines of code
def code_lines(*objects) -> int:
    """Lines of the objects' source that are neither blank, comments nor docstrings."""
    count = 0
    for obj in objects:
        text = inspect.getsource(obj)
        in_doc = False
        for line in text.splitlines():
            s = line.strip()
            if in_doc:
                in_doc = not s.endswith('"""')
                continue
            if s.startswith('"""'):
                in_doc = not (len(s) >= 6 and s.endswith('"""'))
                continue
            if not s or s.startswith("#"):
                continue
            count += 1
    return count


def package_lines(package: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in package.rglob("*.py"))


# ---------------------------------------------------------------------- the report
def machine() -> list[str]:
    model = next((line.split(":", 1)[1].strip() for line in subprocess.run(
        ["lscpu"], capture_output=True, text=True, check=False).stdout.splitlines()
        if line.startswith("Model name")), platform.processor() or "unknown")
    import torchdata
    return [f"CPU: {model}, {os.cpu_count()} cores; load average at the start {load()}",
            f"Python {platform.python_version()}, torch {torch.__version__}, torchdata {torchdata.__version__}, "
            f"{torch.get_num_threads()} torch threads"]


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(map(str, row)) + " |" for row in rows)]


def bit_identity(n: int, bare: list[dict], points: dict[int, str]) -> tuple[list[list], dict[str, bool]]:
    """Rows of the bit-identity table, and whether each loader matched the bare source everywhere."""
    rows, identical = [], dict.fromkeys(LOADERS, True)
    for workers in WORKERS:
        for k, label in {None: "-", **points}.items():
            cells = []
            for name, make in LOADERS.items():
                if k is None:  # (a): uninterrupted
                    loader = make(source(), workers)
                    ok = same(draw(loader, n), bare)
                    loader.close()
                else:
                    ok = same(resumed(make, n, k, workers), bare)
                identical[name] &= ok
                cells.append("yes" if ok else "NO")
            rows.append([workers, "uninterrupted (a)" if k is None else f"k = {k}", label, *cells])
    return rows, identical


SIGNALS_ALONE = "group SIGTERM, without our worker hooks (2 workers)"
DECISION = "## Decision"  # the heading of the hand-written part of a --write file, kept when it is rewritten


def guarantees(n: int, k: int, bare: list[dict]) -> dict[str, dict[str, str]]:
    """Each case's outcome for each loader."""
    cases = {
        "saved with 2 workers, resumed with 0": lambda make: resume_across_workers(make, n, k, bare, 2, 0),
        "saved with 0 workers, resumed with 2": lambda make: resume_across_workers(make, n, k, bare, 0, 2),
        "a checkpoint of today's format (2 workers)": lambda make: resume_from_todays_checkpoint(make, n, k, bare, 2),
        "a position saved under another seed (0 workers)": lambda make: refusal(make, 0),
        "a position saved under another seed (2 workers)": lambda make: refusal(make, 2),
        "group SIGTERM during a step (2 workers)": lambda make: group_sigterm(make, bare),
        SIGNALS_ALONE: lambda make: "-" if make is LoadedBatches else group_sigterm(make, bare, hooks=False),
        "torch's global RNG (2 workers)": lambda make: leaves_global_rng(make, 2),
    }
    return {case: {name: check(make) for name, make in LOADERS.items()} for case, check in cases.items()}


def speed(n: int, k: int, rounds: int) -> list[list]:
    times = {(name, w): [] for w in WORKERS for name in LOADERS}
    for round_ in range(rounds):
        for workers in WORKERS:
            order = list(LOADERS.items())
            for name, make in order[::-1] if round_ % 2 else order:  # none always first
                times[name, workers].append(timings(make, workers, n, k))
    rows = []
    for (name, workers), runs in times.items():
        med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        rows.append([workers, name, f"{med['first'] * 1e3:.1f}", f"{med['per_batch'] * 1e3:.2f}",
                     f"{med['state_dict'] * 1e6:.0f}", f"{med['state_bytes']:,}", f"{med['resume'] * 1e3:.1f}"])
    return rows


def lines_of_code() -> dict[str, int]:
    """Lines of each loader with the same interface; the signal, death-signal and at-exit helpers are shared."""
    lines = {"ours": code_lines(LoadedBatches, batch_source._Iterable, _Tickets),
             "StatefulDataLoader": code_lines(StatefulLoaded, SourceSampler, _Tickets)}
    lines["StatefulDataLoader, our position"] = (lines["StatefulDataLoader"] + code_lines(PositionLoaded)
                                                 - code_lines(StatefulLoaded.state_dict,
                                                              StatefulLoaded.load_state_dict))
    return lines


def dependency(say) -> None:
    import torchdata.stateful_dataloader as sdl
    dist = importlib.metadata.distribution("torchdata")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        StatefulLoaded(source(), 0)
    say(f"- torchdata {dist.version} requires {', '.join(dist.requires or [])}; torchdata.stateful_dataloader is "
        f"{package_lines(Path(sdl.__file__).parent):,} lines, a fork of torch's DataLoader iterators that imports "
        "torch's private torch.utils.data._utils; torchdata is not one of the project's runtime packages.")
    for warning in sorted({f"{w.category.__name__}: {w.message}" for w in caught}):
        say(f"- Building a StatefulDataLoader under torch {torch.__version__} warns: {warning}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=30, help="batches in the uninterrupted run (N)")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds, the loaders alternating")
    parser.add_argument("--write", type=Path, help="also write the report to this markdown file")
    args = parser.parse_args()
    if StatefulDataLoader is None:
        print("torchdata is not importable: install it aside (pip install --target DIR --no-deps torchdata) and "
              "run with PYTHONPATH=DIR", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    n, out = args.batches, []
    say = out.append
    say("# StatefulDataLoader in place of the hand-written resumable loader: a trial")
    say("")
    say(f"`benchmarks/stateful_loader_trial.py`, run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    say("")
    for line in machine():
        say(f"- {line}")
    walk = source()
    say(f"- Batches: albert-nano run, {CHAPTERS} Austen training chapters, {RUN['short_seq_len']}-token phase for "
        f"{walk.switch_after} batches of {walk.first.batch_size} (epochs of {walk.first.batches_in_epoch(0)}), "
        f"then {RUN['seq_len']}-token batches of {walk.then.batch_size} (epochs of {walk.then.batches_in_epoch(0)}, "
        f"{walk.then.batches_in_epoch(1)}, ...); N = {n}")

    bare, points = draw(source(), n), cut_points(n)
    rows, identical = bit_identity(n, bare, points)
    say("")
    say("## Bit-identical resume (torch.equal on every tensor against the bare source's N batches)")
    say("")
    out.extend(table(["workers", "run", "cut at", *LOADERS], rows))

    k = [k for k, label in points.items() if label == "mid-epoch"][-1]
    results = guarantees(n, k, bare)
    say("")
    say(f"## What a run relies on beyond the bits (cut at k = {k}, mid-epoch)")
    say("")
    out.extend(table(["case", *LOADERS], [[case, *cells.values()] for case, cells in results.items()]))

    rows = speed(n, k, args.rounds)
    say("")
    say(f"## Speed (median of {args.rounds} rounds, the loaders alternating in one process; load average at the "
        f"end {load()})")
    say("")
    out.extend(table(["workers", "loader", "first batch ms", "per batch ms", "state_dict() us",
                      "state bytes (torch.save)", "resume ms (load + first batch)"], rows))

    lines = lines_of_code()
    say("")
    say("## Code and dependency")
    say("")
    say("- Lines of code of the loader a run uses, with the same interface (blank lines, comments and docstrings not "
        "counted; the signal, death-signal and at-exit helpers are shared and not counted): " +
        ", ".join(f"{name} {count}" for name, count in lines.items()) + ".")
    dependency(say)

    say("")
    say("## By the rule (kept only if bit-identical, less code, no guarantee lost, dependency justified)")
    say("")
    rows = []
    for name in list(LOADERS)[1:]:
        kept_all = all(cells[name] == cells["ours"] for case, cells in results.items() if case != SIGNALS_ALONE)
        rows.append([name, "yes" if identical[name] else "NO", "yes" if kept_all else "NO",
                     lines["ours"] - lines[name], "yes" if results[SIGNALS_ALONE][name].startswith("goes on")
                     else "no (needs our hooks)", "not a runtime package"])
    out.extend(table(["candidate", "bit-identical", "every guarantee kept", "lines saved",
                      "group signals on its own", "dependency"], rows))
    report = "\n".join(out) + "\n"
    print(report)
    if args.write:  # the decision written by hand below the measurements stays
        old = args.write.read_text(encoding="utf-8") if args.write.exists() else ""
        kept = old[old.index(DECISION):] if DECISION in old else ""
        args.write.write_text(report + ("\n" + kept if kept else ""), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
