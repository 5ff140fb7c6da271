"""The training loop used by the pretraining CLI, fine-tuning, the chapters and the experiments.

Batch-source protocol. The trainer pulls micro-batches with `next(source)` (a list or any iterable works too; it
is wrapped in `iter`). Each batch is a dict of tensors: input_ids, attention_mask, token_type_ids (B, T);
labels (B, T) holding the token id at masked positions and IGNORE_INDEX (-100) elsewhere; optionally
sentence_order_label (B,) (SOP or NSP, 1 = swapped / not next). To write checkpoints, the source must also have
`state_dict()` (its exact position, as plain Python values or tensors) and `load_state_dict(state)`.
Under DDP each rank gets its own source (its shard). Every source in this project derives from
albert_mini.text.batch_source.BatchSource;
albert_mini.text.synthetic.SyntheticBatches is the smallest.

One optimizer step = `accumulate` micro-batches on every rank. The loss of a step is the per-token mean over the
whole effective batch (see albert_mini.training.distributed for why and how), with gradients clipped to global
norm 1.0. What is optimised and reported is the objective's (albert_mini.training.objectives); pretraining's is
the default.

Devices. The model may sit on any device (albert_mini.devices: CPU, CUDA, Apple's MPS); the metric sums are float64
tensors on that device (on the CPU for MPS, which has no float64), read on the host only at log steps.

Host syncs. On a GPU the host queues work ahead of the device; every value it reads back (`.item()`, `float()`,
`.tolist()`, a copy to the CPU, a branch on a tensor) makes it wait until the GPU has caught up, and the GPU then
idles while the host queues the next work. An optimizer step reads one value: the gradient norm (clipping and the
divergence check need it). The loss denominators, the metric sums, LAMB's trust ratios and the MLM head's masked
positions (`max_predictions`, below) stay on the device; log, evaluation and save steps read what they report.
Under DDP a step also reads whether any rank ran out of data. tests/training/test_host_syncs.py counts them.

Feeding. With `TrainConfig.workers` > 0, or on a CUDA device, batches come through a torch DataLoader
(albert_mini.text.batch_source.LoadedBatches: worker processes build the next batches while the model trains,
pinned memory on CUDA, copies that do not block); the batches are the same bits, so resuming stays exact. A source
that says `max_predictions` (PretrainingBatches does: its masker's cap) has the MLM head run at that many positions
per sequence, a static shape (albert_mini.model.albert.masked_positions). A
checkpoint records the device that computed it: resuming on another one works (checkpoints load on the CPU first),
and is said on stdout, in the resume line of metrics.jsonl and in run.json's notes, since the steps after it
are not bit-identical to those the first device would have computed.

Stopping and resuming. The run stops at max_steps, when the time budget (max_minutes) is spent, or when the data
ends. The budget is checked between optimizer steps and, when a step has several micro-batches, between those
too; in a single process it is also watched inside the forward and backward passes (at every tensor autograd
saves or reads back, a clock read and no device sync), so that one very long step (thousands of layers) cannot
overrun it. A step cut short by it is undone (see `_advance`), never half applied. When the budget runs out
inside the first step a call trains, one step takes longer than the whole budget left: the run stops there
without its final evaluation (a forward pass over the held-out batches, as long again), and the trainer's
`first_step_too_long` says so (the command line prints it). The stop is decided before the periodic checkpoint
of a step, so the last step's checkpoint is written once, after the last metric lines: a finished run rerun
with the same command finds it complete, trains nothing and appends nothing to metrics.jsonl.
A checkpoint records how many lines metrics.jsonl held when it was written, and a resumed run keeps exactly
those, so the log of a run killed (once or repeatedly) reads as that of one uninterrupted run.

Divergence. A NaN or infinite loss stops the run with NonFiniteError naming the step, and no checkpoint ever
holds non-finite weights, so the newest one on disk is the last good one. The checks ride on host reads that
happen anyway: the gradient norm of every step (clipping reads it), the losses of the log and evaluation
lines, and one check of the weights before each save and at the end of the run (a save copies them anyway).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..devices import describe_device
from ..model.hf import non_finite_tensors
from ..paths import recorded_path
from ..settings import static_output
from ..text.batch_source import BatchSource, LoadedBatches
from . import preemption
from .checkpoint import (
    CheckpointError,
    capture_rng_state,
    load_checkpoint,
    newest_intact_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from .distributed import (
    DistInfo,
    all_reduce_sum,
    assert_replicas_identical,
    gather_objects,
    stop_votes,
    wrap_model,
)
from .objectives import PretrainingObjective
from .optim import WarmupPolyDecay, build_optimizer, check_steps, clip_grad_global_norm
from .rundir import METRICS_FILE, amend_record, read_metrics, sweep_interrupted, truncate_metrics

# DataLoader workers on a CUDA device when TrainConfig.workers is None: enough to build batches ahead of the GPU.
GPU_WORKERS = 2
# Changing these between a run and its resumption would change the arithmetic, so resuming refuses it.
RESUME_MUST_MATCH = ("accumulate", "clip_norm", "bf16")
# What a checkpoint's trainer state must hold for a resume to continue the run exactly and keep its log whole.
PREEMPTED = "preempted"  # the stop reason of a run ended by SIGTERM or SIGUSR1 (training/preemption.py)
RESUME_STATE = ("world_size", "schedule", "train_config", "rng", "data", "window", "step", "elapsed_seconds",
                "tokens_seen", "last_eval_step", "metrics_lines", "device")


@dataclass
class TrainConfig:
    """How long and how to train; everything else (model, optimizer, schedule, data) is passed in built."""

    max_steps: int  # optimizer steps; the run also stops when the data or the time budget runs out
    max_minutes: float | None = None  # wall-clock budget of the whole run, counted across resumptions
    accumulate: int = 1  # micro-batches per optimizer step
    clip_norm: float | None = 1.0  # global gradient norm limit (None: no clipping)
    log_every: int = 10  # steps between train-metric lines
    eval_every: int = 0  # steps between evaluations on the validation batches (0: only at the end)
    eval_batches: int | None = None  # cap on validation batches per evaluation
    save_every: int = 0  # steps between checkpoints (0: only at the end); needs out_dir
    keep_checkpoints: int = 2
    out_dir: str | None = None  # metrics.jsonl and checkpoints/ go here (rank 0 only)
    bf16: bool = False  # bf16 autocast: for GPUs and AMX CPUs; about 5x slower on AVX2-only CPUs
    compile: bool = False  # torch.compile the model
    progress: bool = True  # tqdm bar on a terminal or in a Jupyter kernel, rank 0; never under CI or `make book`
    # DataLoader worker processes building batches ahead (0: built in this process; None: GPU_WORKERS on a CUDA
    # device, else 0). The CPU gets none by default: there the step's own threads already use every core and
    # building a batch is a small part of a step, so a worker gained nothing beyond noise (1.06x on 2 loaded cores,
    # benchmarks/pretrain_cpu.py), while it costs a process per run (started again on every resume, and spawned,
    # re-importing the package, where fork is not the default: macOS, Windows, some notebooks).
    workers: int | None = None
    echo: bool = False  # also print one line per log step and evaluation (never when CI=true)

    def __post_init__(self):
        check_steps(self.max_steps, "max_steps")
        check_steps(self.accumulate, "accumulate")
        checks = [
            (self.max_steps >= 1, f"max_steps must be >= 1, got {self.max_steps}"),
            (self.accumulate >= 1, f"accumulate must be >= 1, got {self.accumulate}"),
            (self.log_every >= 1, f"log_every must be >= 1, got {self.log_every}"),
            (self.eval_every >= 0 and self.save_every >= 0, "eval_every and save_every must be >= 0"),
            (self.keep_checkpoints >= 1, f"keep_checkpoints must be >= 1, got {self.keep_checkpoints}"),
            (self.max_minutes is None or self.max_minutes > 0, f"max_minutes must be > 0, got {self.max_minutes}"),
            (self.clip_norm is None or self.clip_norm > 0, f"clip_norm must be > 0 or None, got {self.clip_norm}"),
            (self.eval_batches is None or self.eval_batches >= 1, "eval_batches must be >= 1 or None"),
            (self.workers is None or self.workers >= 0, f"workers must be >= 0 or None, got {self.workers}"),
            (not self.save_every or self.out_dir, "save_every needs out_dir: checkpoints are written there"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


@dataclass
class TrainResult:
    """How a call to `Trainer.train` ended."""

    step: int
    stop_reason: str  # "max_steps", "max_minutes" or "data exhausted"
    train: dict | None  # last train metrics
    eval: dict | None  # last evaluation
    history: list[dict]  # every metrics line of this call, as written to metrics.jsonl


class NonFiniteError(FloatingPointError):
    """The run diverged: NaN or infinity in the loss, the gradients or the weights of optimizer step `step`
    (`what` says where it showed). Raised before anything of that step is saved."""

    def __init__(self, step: int, what: str):
        super().__init__(f"{what} at step {step}")
        self.step, self.what = step, what


class _BudgetSpent(Exception):
    """Raised inside a forward or backward pass when the time budget runs out (caught by `train_step`)."""


def _on_cpu(stats: torch.Tensor) -> torch.Tensor:
    """A step's small stats vector as float64 on the CPU, where the sums are kept (unchanged if it is already)."""
    return stats.detach().cpu().to(torch.float64)


def _to_device(batch: dict, device: torch.device, objective=None) -> dict:
    objective = objective or PretrainingObjective()
    missing = [k for k in objective.required if k not in batch]
    if missing:
        raise KeyError(f"batch lacks {missing}; a batch source must yield dicts with keys {objective.inputs}")
    if batch["input_ids"].shape[0] == 0:  # its loss would be 0 / 0
        raise ValueError("a batch holds no sequence (input_ids of shape "
                         f"{tuple(batch['input_ids'].shape)}); a batch source must yield at least one")
    # Not blocking: from pinned memory (LoadedBatches on CUDA) the copy overlaps the work already queued.
    return {k: batch[k].to(device, non_blocking=True) for k in objective.inputs if k in batch}


def _sums_device(device: torch.device) -> torch.device:
    """Where the metric sums are kept: the model's device, or the CPU for MPS (it has no float64)."""
    return torch.device("cpu") if device.type == "mps" else device


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches, dist: DistInfo | None = None, max_batches: int | None = None,
             bf16: bool = False, objective=None) -> dict:
    """The objective's metrics on validation batches, summed over ranks (pretraining: MLM and sentence accuracy)."""
    if iter(batches) is batches:
        raise TypeError("validation batches must be re-iterable (a list, or a source whose __iter__ starts over); "
                        "wrap an iterator with list(...)")
    dist = dist or DistInfo()
    objective = objective or PretrainingObjective()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    sums = torch.zeros(objective.n_stats, dtype=torch.float64)
    try:
        for i, batch in enumerate(batches):
            if max_batches is not None and i >= max_batches:
                break
            batch = _to_device(batch, device, objective)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                out = model(**batch)
            _, stats = objective(out, batch, [1.0] * objective.n_denominators)
            sums += _on_cpu(stats)
    finally:
        model.train(was_training)
    return objective.metrics(all_reduce_sum(sums.to(dist.reduce_device), dist).cpu())


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel, where tqdm.auto draws a widget bar (stderr is no terminal there)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


# ---------------------------------------------------------------------- the trainer
class Trainer:
    """Gradient accumulation, clipping, schedule, logging, evaluation, checkpoints and exact resume.

    `schedule` is a WarmupPolyDecay or anything with `apply(optimizer, step) -> lr` and `state_dict()`;
    `batches` follows the batch-source protocol above; `val_batches` is re-iterable (e.g. a list of batches);
    `objective` defaults to pretraining (see PretrainingObjective; fine-tuning passes its own).
    """

    def __init__(self, model, optimizer, schedule: WarmupPolyDecay, batches, config: TrainConfig,
                 val_batches=None, dist: DistInfo | None = None, objective=None):
        self.objective = objective or PretrainingObjective()
        self.model = model  # the plain module: saved, evaluated, and the one the optimizer holds
        self.optimizer, self.schedule, self.config = optimizer, schedule, config
        self.device = next(model.parameters()).device
        self.dist = dist or DistInfo(device=self.device)
        self.ddp_model = wrap_model(model, self.dist)
        self.forward_model = torch.compile(self.ddp_model) if config.compile else self.ddp_model
        self.val_batches = val_batches
        if config.out_dir and not (hasattr(batches, "state_dict") and hasattr(batches, "load_state_dict")):
            raise TypeError(
                f"{type(batches).__name__} has no state_dict()/load_state_dict(), so a checkpoint could not record "
                "the data position; give a source that has them (see albert_mini.text.batch_source) or set out_dir=None"
            )
        cuda = self.device.type == "cuda"
        workers = config.workers if config.workers is not None else GPU_WORKERS if cuda else 0
        if (workers or cuda) and isinstance(batches, BatchSource):
            batches = LoadedBatches(batches, workers, pin_memory=cuda)
        self.source = batches
        self.batch_iter = batches if hasattr(batches, "__next__") else iter(batches)
        # The masker's cap, when the source says it: the MLM head then runs at a fixed number of positions.
        cap = getattr(batches, "max_predictions", None)
        self._forward_options = {"max_predictions": cap} if cap is not None else {}
        self.step = 0
        self.elapsed = 0.0  # training wall time of the whole run, across resumptions
        self.tokens_seen = 0
        self.last_saved_step: int | None = None
        # What identifies the run (training/run.py sets it from run.json's record): saved in every checkpoint, and
        # a checkpoint of another run (copied into this one's folder) is refused instead of resumed.
        self.run_identity: str | None = None
        self._asked_anywhere = False  # whether any rank's stop signal was seen by the last vote (`_out_of_time`)
        self.history: list[dict] = []
        # The objective's stats vector + tokens seen, since the last log line.
        self._sums = torch.zeros(self.objective.n_stats + 1, dtype=torch.float64, device=_sums_device(self.device))
        self._norms: list[float] = []
        self._window_seconds = 0.0  # data + train-step time since the last log line (evals and saves excluded)
        self._lr = 0.0
        self._last_eval_step: int | None = None
        self._bar = None
        # The time budget is watched inside a step in one process only: under DDP a rank cannot stop in the middle
        # of a pass the others finish (they would wait for it in the gradient all-reduce), and torch.compile
        # would break its graphs at the hooks. There the budget is checked between steps and micro-batches.
        self._watch_inside = self.dist.world_size == 1 and not config.compile
        self._cut_inside = False  # whether the budget ran out inside a pass of the step being trained
        self.first_step_too_long = False  # set when the budget ran out inside the first step a call trained
        self.out_dir = Path(config.out_dir) if config.out_dir else None
        self._lines_written = 0  # complete lines in out_dir/metrics.jsonl (rank 0), recorded by each checkpoint
        if self.out_dir is not None and self.dist.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._lines_written = len(read_metrics(self.out_dir / METRICS_FILE)[0])

    # ------------------------------------------------------------------ one optimizer step
    def _global_counts(self, micro: list[dict] | None) -> tuple:
        """The objective's denominators over the effective batch, then whether any rank ran out of data.

        Pretraining: (masked tokens, labelled sequences, exhausted), the counts as 0-d tensors on the device. One
        all-reduce per step carries them all under DDP, so every rank agrees on the denominators and on stopping.
        """
        k = self.objective.n_denominators
        parts = [] if micro is None else [self.objective.denominators(b) for b in micro]
        if parts and all(isinstance(p, torch.Tensor) for p in parts):
            # Counted on the device (pretraining): the totals stay there, and one process knows without asking
            # whether it ran out of data. Under DDP only that flag is read back.
            totals = torch.stack(parts).sum(0)
            if not self.dist.is_distributed:
                return (*totals, False)
            reduced = all_reduce_sum(torch.cat([totals, totals.new_zeros(1)]).to(self.dist.reduce_device), self.dist)
            return (*reduced[:k].to(totals.device), bool(reduced[k] > 0))
        counts = torch.zeros(k + 1, dtype=torch.float64)
        if micro is None:
            counts[k] = 1.0
        else:
            for p in parts:
                counts[:k] += torch.as_tensor(p, dtype=torch.float64)
        *totals, exhausted = all_reduce_sum(counts.to(self.dist.reduce_device), self.dist).tolist()
        return (*totals, exhausted > 0)

    def train_step(self, micro: list[dict], counts: tuple[float, float, bool] | None = None,
                   stop=None, deadline: float | None = None) -> float | None:
        """Forward and backward over the micro-batches, clip, update; returns the gradient norm.

        `stop()`, when given, is asked before every micro-batch after the first; `deadline` (a time.perf_counter
        value), when given, is watched inside the forward and backward passes. When either says the time is up
        the step is left undone (its gradients and metric sums dropped, nothing applied) and None is returned.
        """
        *totals, _ = counts if counts is not None else self._global_counts(micro)
        sums_before = self._sums.clone() if stop is not None or deadline is not None else None
        try:
            with self._watch(deadline):
                for i, batch in enumerate(micro):
                    if i and stop is not None and stop():
                        raise _BudgetSpent
                    last = i == len(micro) - 1
                    # Only the last micro-batch all-reduces gradients; the others accumulate locally.
                    sync = (contextlib.nullcontext() if last or not self.dist.is_distributed
                            else self.ddp_model.no_sync())
                    with sync:
                        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
                            out = self.forward_model(**batch, **self._forward_options)
                        loss, stats = self.objective(out, batch, totals)
                        (loss * self.dist.world_size).backward()  # DDP averages over ranks; we want the sum
                    self._sums[:-1] += stats.detach().to(self._sums.device, torch.float64)
                    self._sums[-1] += batch["input_ids"].numel()
        except _BudgetSpent:
            self.optimizer.zero_grad(set_to_none=True)
            self._sums = sums_before
            return None
        params = [p for p in self.model.parameters() if p.grad is not None]
        try:  # the norm is read on the host anyway (clipping needs it): checking it costs no extra sync
            norm = (clip_grad_global_norm(params, self.config.clip_norm) if self.config.clip_norm
                    else clip_grad_global_norm(params, float("inf")))
        except FloatingPointError as err:
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError(self.step + 1, str(err).split(";")[0]) from err
        # The rate is set once the step will surely be applied (only the update reads it), so a step undone by
        # `stop` leaves the optimizer's groups, and the lr of the next train line, as they were.
        self._lr = self.schedule.apply(self.optimizer, self.step)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._norms.append(norm)
        return norm

    def _watch(self, deadline: float | None):
        """A context in which every tensor autograd saves (forward) or reads back (backward) first checks the
        clock, raising _BudgetSpent once `deadline` has passed; a no-op without a deadline. The hooks hand the
        tensors through untouched, so the numbers are the same with and without them."""
        if deadline is None:
            return contextlib.nullcontext()

        def check(tensor):
            if self._past(deadline):
                self._cut_inside = True  # inside a pass, not between micro-batches
                raise _BudgetSpent
            return tensor

        return torch.autograd.graph.saved_tensors_hooks(check, check)

    def _past(self, deadline: float) -> bool:
        """Whether `deadline` (a time.perf_counter value) has passed; what the watch inside a step asks."""
        return time.perf_counter() >= deadline

    # ------------------------------------------------------------------ the loop
    def train(self) -> TrainResult:
        """Run until max_steps, the time budget or the data ends; log, evaluate and save along the way. In a
        command that enabled it, SIGTERM or SIGUSR1 ends the run after the step under way with a checkpoint and
        raises Preempted (training/preemption.py)."""
        try:
            with preemption.watching():
                return self._train()
        except RuntimeError as error:  # a collective that failed (a lost peer): the line names the step reached
            error.training_step = self.step
            raise

    def _train(self) -> TrainResult:
        cfg = self.config
        show_bar = (cfg.progress and self.dist.is_main and (sys.stderr.isatty() or _in_kernel()) and not _ci()
                    and not static_output())
        bar = tqdm(total=cfg.max_steps, initial=self.step, desc=self.objective.name, dynamic_ncols=True,
                   disable=not show_bar)
        self._bar = bar
        run_start = time.perf_counter() - self.elapsed
        self.model.train()
        last_train = last_eval = None
        first_history = len(self.history)
        first_step = self.step
        stop_reason = self._stop_reason(run_start)
        while stop_reason is None:
            step_start = time.perf_counter()
            stop_reason = self._advance(run_start)
            if stop_reason is not None:
                break
            self._window_seconds += time.perf_counter() - step_start
            bar.update(1)
            if self.step % cfg.log_every == 0:
                last_train = self._log_train(run_start)
            if cfg.eval_every and self.step % cfg.eval_every == 0 and self.val_batches is not None:
                last_eval = self._log_eval(run_start)
            # Whether the run stops here is decided before this step's periodic checkpoint: a last step is saved
            # below, after the lines the end logs, so the checkpoint of a finished run has them all.
            stop_reason = self._stop_reason(run_start)
            if stop_reason is None and cfg.save_every and self.step % cfg.save_every == 0:
                self.save()
        self.elapsed = time.perf_counter() - run_start
        if stop_reason == PREEMPTED:
            bar.close()
            self._stop_preempted()
        self._check_weights()  # the last update's, which no later step reads (one host read per call)
        assert_replicas_identical(self.model, self.dist)  # cheap, and a silent divergence would waste the run
        if self._norms:  # steps since the last log line
            last_train = self._log_train(run_start)
        if stop_reason == "max_minutes" and self.step == first_step and self._cut_inside:
            # Not one step fitted in the budget left: the evaluation, a pass over the held-out batches, would
            # overrun it as much. It is not due any more, so a rerun with the same budget appends nothing.
            self.first_step_too_long = True
            self._last_eval_step = self.step
        if self.val_batches is not None and self._last_eval_step != self.step:
            last_eval = self._log_eval(run_start)
        if self.out_dir is not None and self.last_saved_step != self.step:
            self.save()
        elif self.out_dir is not None and self.dist.is_main:
            sweep_interrupted(self.out_dir)  # what a killed save left, which no later save of this run will sweep
        bar.close()
        return TrainResult(self.step, stop_reason, last_train, last_eval, self.history[first_history:])

    def _stop_reason(self, run_start: float) -> str | None:
        """"max_steps", "max_minutes" or PREEMPTED when the run ends before another step, else None (the same on
        every rank: rank 0's clock decides the budget, a signal on any rank stops them all)."""
        self.elapsed = time.perf_counter() - run_start
        if self.step >= self.config.max_steps:
            return "max_steps"
        if self._out_of_time(run_start):
            return "max_minutes"
        return PREEMPTED if self._stop_asked() else None

    def _stop_asked(self) -> bool:
        """Whether a signal asked this run to stop (training/preemption.py): under DDP, on any rank, as the vote of
        the last `_out_of_time` carried it; in one process, here."""
        if self.dist.is_distributed:
            return self._asked_anywhere
        return preemption.requested() is not None

    def _stop_preempted(self) -> None:
        """Save the step reached, its log window too (no end lines are written, so the resumed run logs as an
        uninterrupted one), and raise Preempted with the line that says so (one a node: local rank 0's)."""
        mine = preemption.requested()
        signum = mine or signal.SIGTERM  # another rank was signalled: this one ends as SIGTERM ends it
        by = preemption.signal_name(mine) if mine else "a signal to another rank"
        if self.out_dir is not None and self.step > 0 and self.last_saved_step != self.step:
            self.save()
        if self.out_dir is None:
            kept = "nothing is saved without an output folder, so the run starts again from the beginning"
        elif self.last_saved_step == self.step:
            kept = (f"checkpoint step-{self.step:07d} in {self.out_dir / 'checkpoints'} holds it; the same command "
                    "resumes from there, bit for bit")
        else:
            kept = "no step was trained, so there was nothing to save; the same command starts it again"
        message = f"stopped by {by} after step {self.step} (preemption); {kept}"
        raise preemption.Preempted(message if self.dist.local_rank == 0 else "", signum)

    def _out_of_time(self, run_start: float) -> bool:
        """Whether the time budget is spent (rank 0's clock decides, so every rank stops at the same point). Under
        DDP the same collective carries each rank's stop signal (`_stop_asked` reads it): one all-reduce, one host
        read, as rank 0's broadcast cost before."""
        self.elapsed = time.perf_counter() - run_start
        budget = self.config.max_minutes
        spent, self._asked_anywhere = stop_votes(budget is not None and self.elapsed >= 60 * budget,
                                                 preemption.requested() is not None, self.dist)
        return spent

    def _finished(self) -> bool:
        """Whether the run has nothing left to train: max_steps reached or the time budget spent."""
        budget = self.config.max_minutes
        return self.step >= self.config.max_steps or (budget is not None and self.elapsed >= 60 * budget)

    def _advance(self, run_start: float) -> str | None:
        """One optimizer step; None, or why the run stops instead ("data exhausted", "max_minutes").

        With a time budget and several micro-batches per step, the budget is checked before every micro-batch
        after the first (drawing them, then computing them), and in a single process it is also watched inside
        every forward and backward pass (`_watch`), so that one long step cannot overrun it. A step
        cut short there is undone, not finished: its micro-batches go back to the source (its position before
        the step is restored), the RNG states and metric sums return to the step's start and its gradients are
        dropped, so nothing of it is applied. The run then ends as after its last whole step (final lines,
        checkpoint), and a resumption with more --minutes computes the step exactly as an uninterrupted run.
        """
        cfg = self.config
        between = cfg.max_minutes is not None and cfg.accumulate > 1
        inside = cfg.max_minutes is not None and self._watch_inside
        self._cut_inside = False
        if between or inside:
            position = copy.deepcopy(self.source.state_dict()) if hasattr(self.source, "state_dict") else None
            start = (position, capture_rng_state())
        micro, exhausted = [], False
        for i in range(cfg.accumulate):
            if i and between and self._out_of_time(run_start):  # every rank asks, even one out of data
                return self._undo_step(*start)
            if not exhausted:
                try:
                    micro.append(_to_device(next(self.batch_iter), self.device, self.objective))
                except StopIteration:
                    exhausted = True
        counts = self._global_counts(None if exhausted else micro)
        if counts[-1]:
            return "data exhausted"
        stop = (lambda: self._out_of_time(run_start)) if between else None
        deadline = run_start + 60 * cfg.max_minutes if inside else None
        if self.train_step(micro, counts, stop=stop, deadline=deadline) is None:
            return self._undo_step(*start)
        return None

    def _undo_step(self, position, rng) -> str:
        """Put the source and the RNGs back where the step began (its gradients are already dropped)."""
        self.optimizer.zero_grad(set_to_none=True)
        if position is not None:
            self.source.load_state_dict(position)
        restore_rng_state(rng)
        return "max_minutes"

    # ------------------------------------------------------------------ metrics
    def _log_train(self, run_start: float) -> dict:
        sums = all_reduce_sum(self._sums.clone().to(self.dist.reduce_device), self.dist).cpu()
        self.tokens_seen += int(sums[-1])
        metrics = {"type": "train", "step": self.step, **self.objective.metrics(sums[:-1]), "lr": self._lr,
                   "grad_norm": float(np.mean(self._norms)),
                   "tokens_per_s": float(sums[-1]) / max(self._window_seconds, 1e-9),
                   "tokens_seen": self.tokens_seen, "elapsed_s": time.perf_counter() - run_start}
        self._check_losses(metrics, "training")
        self._sums.zero_()
        self._norms.clear()
        self._window_seconds = 0.0
        self._record(metrics)
        bar_fields = {shown: metrics.get(key) for key, shown in self.objective.progress.items()}
        bar_fields["tok/s"] = round(metrics["tokens_per_s"])
        bar_fields = {k: f"{v:.3f}" if isinstance(v, float) else v for k, v in bar_fields.items() if v is not None}
        if self._bar is not None:
            self._bar.set_postfix(bar_fields, refresh=False)
        return metrics

    def _log_eval(self, run_start: float) -> dict:
        metrics = {"type": "eval", "step": self.step,
                   **evaluate(self.model, self.val_batches, self.dist, self.config.eval_batches, self.config.bf16,
                              self.objective),
                   "elapsed_s": time.perf_counter() - run_start}
        self._check_losses(metrics, "held-out")
        self._record(metrics)
        self._last_eval_step = self.step
        return metrics

    def _check_losses(self, metrics: dict, kind: str) -> None:
        """NonFiniteError when a loss of a log or evaluation line is NaN or infinite (already host numbers)."""
        for key, value in metrics.items():
            if key.endswith("loss") and isinstance(value, float) and not math.isfinite(value):
                raise NonFiniteError(self.step, f"the {kind} {key} is {value}")

    def _check_weights(self) -> None:
        """NonFiniteError naming the weights holding NaN or infinity: one host read for all of them, made only
        before a save and at the end of a run. Every rank holds the same weights, so all raise together."""
        with torch.no_grad():
            bad = non_finite_tensors(dict(self.model.named_parameters()))
        if bad:
            more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
            raise NonFiniteError(self.step, f"the weights are not finite after the update: {bad[0]}{more}")

    def _record(self, metrics: dict) -> None:
        self.history.append(metrics)
        if not self.dist.is_main:
            return
        line = json.dumps(metrics)
        if self.out_dir is not None:
            with open(self.out_dir / METRICS_FILE, "a") as f:
                f.write(line + "\n")
            self._lines_written += 1
        if self.config.echo and not _ci():
            shown = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items())
            if self._bar is not None and not self._bar.disable:
                tqdm.write(shown)
            else:
                print(shown, flush=True)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """Everything besides the weights that an exact resumption needs (RNG and data of every rank)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            # The run folder as the record names it: no machine path in a checkpoint that may be shared.
            "train_config": {**dataclasses.asdict(self.config),
                             "out_dir": recorded_path(self.out_dir) if self.out_dir else None},
            "rng": gather_objects(capture_rng_state(), self.dist),
            "data": gather_objects(self.source.state_dict(), self.dist),
            # Stats of the steps since the last log line, so the next line covers the same steps after a resume.
            "window": gather_objects({"sums": self._sums.cpu().clone(), "grad_norms": list(self._norms),
                                      "seconds": self._window_seconds}, self.dist),
            "elapsed_seconds": self.elapsed,
            "tokens_seen": self.tokens_seen,
            "last_eval_step": self._last_eval_step,
            "metrics_lines": self._lines_written,  # what metrics.jsonl held: a resumption keeps just these lines
            "world_size": self.dist.world_size,
            "device": describe_device(self.device),  # what computed the steps so far (rank 0's)
            **({"run": self.run_identity} if self.run_identity is not None else {}),
        }

    def save(self) -> Path | None:
        """Write a checkpoint of the current step to out_dir (rank 0 writes; every rank contributes its state)."""
        if self.out_dir is None:
            raise ValueError("save() needs TrainConfig.out_dir")
        self._check_weights()  # a checkpoint never holds NaN or infinity: the newest one is always a good one
        state = self.state_dict()
        path = None
        if self.dist.is_main:
            path = save_checkpoint(self.out_dir, self.step, self.model, state, self.config.keep_checkpoints)
        self.last_saved_step = self.step
        return path

    def resume(self, path: str | Path | None = None) -> int:
        """Continue from `path` or from the newest checkpoint in out_dir; returns the step (0: nothing to resume)."""
        if path is None:
            # A damaged newest checkpoint is skipped (and set aside, so that its step can be saved again).
            path = newest_intact_checkpoint(self.out_dir, set_aside=self.dist.is_main) if self.out_dir else None
            if path is None:
                if self.out_dir is not None and self.dist.is_main:
                    self._truncate_metrics(0, 0)  # lines of a run killed before its first checkpoint
                return 0
        state = load_checkpoint(path, self.model, self.optimizer)
        self._check_resumable(path, state)
        restore_rng_state(state["rng"][self.dist.rank])
        self.source.load_state_dict(state["data"][self.dist.rank])
        window = state["window"][self.dist.rank]
        self._sums, self._norms = window["sums"].to(_sums_device(self.device)).clone(), list(window["grad_norms"])
        self._window_seconds = window["seconds"]
        self.step, self.elapsed, self.tokens_seen = state["step"], state["elapsed_seconds"], state["tokens_seen"]
        self.last_saved_step, self._last_eval_step = self.step, state["last_eval_step"]
        # A run whose budget ran out inside the step after this checkpoint ended here later than the checkpoint's
        # clock says (the step was undone, and there was no new step to save): its end lines say when.
        ended_at = self._end_clock(state["metrics_lines"]) if self.out_dir and self.dist.is_main else None
        ended_at = gather_objects(ended_at, self.dist)[0]  # rank 0's log: every rank decides alike
        if ended_at is not None:
            self.elapsed = max(self.elapsed, ended_at)
        finished = self._finished()
        ended = set()
        if self.out_dir is not None and self.dist.is_main:
            ended = self._truncate_metrics(self.step, state["metrics_lines"], finished)
        if finished:
            self._mark_logged(gather_objects(ended, self.dist)[0])
        device, before = describe_device(self.device), state["device"]
        moved = before != device
        if not finished:  # a finished run trains nothing more: its log gets no line
            self._record({"type": "resume", "step": self.step, "checkpoint": recorded_path(path), "device": device,
                          **({"previous_device": before} if moved else {})})
        if moved:
            self._note_device_change(before, device)
        return self.step

    def _note_device_change(self, before: str, device: str) -> None:
        """Say that the run continues on another device, on stdout and in run.json's notes (rank 0)."""
        if not self.dist.is_main:
            return
        note = (f"step {self.step}: resumed on {device}; the steps up to here ran on {before}, so the run is not "
                f"bit-identical to one that stayed there")
        print(note, flush=True)
        if self.out_dir is not None:
            amend_record(self.out_dir, note=note)

    def _check_resumable(self, path, state: dict) -> None:
        """A checkpoint this run can continue exactly: every field a resume reads, the same processes, schedule
        and step settings; else one CheckpointError saying what differs."""
        missing = [key for key in RESUME_STATE if key not in state]
        if missing:  # saved by a version of this code from before the field existed
            raise CheckpointError(
                f"{path} does not record {', '.join(missing)} (an older albert-mini saved it); continue that run "
                "with the version that started it, or start again in a new --out (or with --overwrite)"
            )
        if state["world_size"] != self.dist.world_size:
            raise CheckpointError(
                f"{path} was written by {state['world_size']} processes and this run has {self.dist.world_size}; "
                "resume with the same --nproc_per_node (each rank's data position and RNG are stored)"
            )
        if state["schedule"] != self.schedule.state_dict():
            raise CheckpointError(
                f"{path} was trained with schedule {state['schedule']}, this run uses {self.schedule.state_dict()}; "
                "keep --steps, --lr and --warmup when resuming, or start a new run directory"
            )
        changed = [k for k in RESUME_MUST_MATCH if state["train_config"].get(k) != getattr(self.config, k)]
        if changed:
            raise CheckpointError(f"{path} was trained with different {changed}; keep them when resuming")
        theirs = state.get("run")  # absent from checkpoints saved before it was recorded: those resume as before
        if theirs is not None and self.run_identity is not None and theirs != self.run_identity:
            raise CheckpointError(
                f"{path} belongs to another run (its settings, model, tokenizer or text differ from this run's "
                "run.json): a checkpoint copied from elsewhere is not resumed; remove it from checkpoints/, or "
                "start again in a new --out (or with --overwrite)"
            )

    def _end_clock(self, lines: int) -> float | None:
        """The run's clock (elapsed_s) in the end lines that follow the checkpoint of this step in metrics.jsonl
        (its last train line and evaluation, at the same step; see `_truncate_metrics`), or None when none do."""
        clocks = []
        for record in read_metrics(self.out_dir / METRICS_FILE)[0][lines:lines + 2]:
            if record.get("step") != self.step or record.get("type") not in ("train", "eval"):
                break
            if isinstance(record.get("elapsed_s"), (int, float)):
                clocks.append(record["elapsed_s"])
        return max(clocks) if clocks else None

    def _truncate_metrics(self, step: int, lines: int, finished: bool = False) -> set[str]:
        """Keep the metric lines the checkpoint of `step` had seen written (`lines`), so the log reads as one run;
        returns the types of the lines kept that the end of the run wrote after this checkpoint, which a finished
        run keeps ("train", "eval").

        A run's last train line (steps since the last log line) and last evaluation can follow the checkpoint of
        the step they are at, when the run stopped right after a periodic checkpoint (its time budget ran out
        within the next step, or its data ended). A finished run keeps them (it will not write them again); one
        that goes on drops them, since an uninterrupted run would not have written them there.
        """
        path = self.out_dir / METRICS_FILE
        records = read_metrics(path)[0]
        kept = records[:lines]
        tail = records[len(kept):len(kept) + 2] if finished else []
        for record in tail:
            if record["step"] != step or record["type"] not in ("train", "eval"):
                break
            kept.append(record)
        note = truncate_metrics(path, step, len(kept))  # and a torn last line
        if note:
            print(note, file=sys.stderr, flush=True)
        self._lines_written = len(kept)
        ended = {r["type"] for r in kept if r["step"] == step and r["type"] in ("train", "eval")}
        return ended if finished else set()

    def _mark_logged(self, ended: set[str]) -> None:
        """A finished run whose last lines are in the log (`ended`) does not write them again."""
        if "train" in ended and self._norms:  # the steps since the last log line were logged after the checkpoint
            self._sums.zero_()
            self._norms.clear()
            self._window_seconds = 0.0
        if "eval" in ended:
            self._last_eval_step = self.step


def train(model, batches, config: TrainConfig, *, optimizer: str = "lamb", lr: float = 1e-3, warmup_steps: int = 0,
          weight_decay: float = 0.01, val_batches=None, dist: DistInfo | None = None, resume: bool = False,
          objective=None) -> TrainResult:
    """Build the optimizer and schedule for `model`, then train; the one-call form for chapters."""
    opt = build_optimizer(model, optimizer, lr=lr, weight_decay=weight_decay)
    schedule = WarmupPolyDecay(lr, config.max_steps, warmup_steps)
    trainer = Trainer(model, opt, schedule, batches, config, val_batches=val_batches, dist=dist, objective=objective)
    if resume:
        trainer.resume()
    return trainer.train()
