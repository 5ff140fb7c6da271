"""The training loop of pretraining, fine-tuning, the chapters and the experiments: accumulate, clip, schedule,
evaluate, log. Everything about the run as software subscribes to its events (training/shell/).

Batches are dicts of tensors pulled with `next(source)` (input_ids, attention_mask, token_type_ids, labels,
optionally sentence_order_label); under DDP each rank has its own source. One optimizer step = `accumulate`
micro-batches on every rank; its loss is the objective's mean over the whole effective batch (objectives.py,
distributed.py), gradients clipped to global norm `clip_norm`. The loss statistics are named 0-d float64 tensors
kept on the device and stacked once for the all-reduce of a log line: a step reads one value on the host, the
gradient norm (tests/training/test_host_syncs.py). A NaN or infinite norm, logged loss or weight (checked before a
save and at the end) raises NonFiniteError naming the step, so no checkpoint holds one.

Events: `on_start`, `on_step_end` (subscribers may set `control.stop` or `control.save`), `on_evaluate`, `on_end`,
and `on_log` (every metric line), `on_state_dict`, `on_save`, `on_resume`, `on_close`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..model.hf import non_finite_tensors
from ..text.batch_source import BatchSource, LoadedBatches
from .distributed import DistInfo, all_reduce_sum, assert_replicas_identical, wrap_model
from .evaluation import evaluate, reduce_stats
from .evaluation import to_device as _to_device
from .objectives import PretrainingObjective, as_stat
from .optim import WarmupPolyDecay, build_optimizer, clip_grad_global_norm
from .train_config import GPU_WORKERS, TrainConfig, TrainResult


class NonFiniteError(FloatingPointError):
    """The run diverged at optimizer step `step` (`what` says where). Raised before anything of it is saved."""

    def __init__(self, step: int, what: str):
        super().__init__(f"{what} at step {step}")
        self.step, self.what = step, what


@dataclass
class Control:
    """What subscribers ask of the loop after an event: stop (with the reason) or save the step reached."""

    stop: str | None = None
    save: bool = False


class Trainer:
    """Gradient accumulation, clipping, schedule, evaluation and logging, with events for subscribers.

    `schedule` has `apply(optimizer, step) -> lr` and `state_dict()` (optim.SCHEDULES); `val_batches` is
    re-iterable; `objective` defaults to pretraining's; `callbacks` default to the shell the config asks for.
    """

    def __init__(self, model, optimizer, schedule, batches, config: TrainConfig, val_batches=None,
                 dist: DistInfo | None = None, objective=None, callbacks: list | None = None):
        self.objective = objective or PretrainingObjective()
        self.model, self.optimizer, self.schedule, self.config = model, optimizer, schedule, config
        self.device = next(model.parameters()).device
        self.dist = dist or DistInfo(device=self.device)
        self.ddp_model = wrap_model(model, self.dist)
        self.forward_model = torch.compile(self.ddp_model) if config.compile else self.ddp_model
        self.val_batches = val_batches
        cuda = self.device.type == "cuda"
        workers = config.workers if config.workers is not None else GPU_WORKERS if cuda else 0
        if (workers or cuda) and isinstance(batches, BatchSource):
            batches = LoadedBatches(batches, workers, pin_memory=cuda)
        self.source = batches
        self.batch_iter = batches if hasattr(batches, "__next__") else iter(batches)
        cap = getattr(batches, "max_predictions", None)  # the masker's cap: the MLM head runs at a fixed shape
        self._forward_options = {"max_predictions": cap} if cap is not None else {}
        self.clock = time.perf_counter
        self.step, self.elapsed, self.tokens_seen, self.last_eval_step = 0, 0.0, 0, None
        self.history: list[dict] = []
        self._clear_window()
        self._lr = 0.0
        if callbacks is None:
            from .shell import standard_shell  # the run as software: directory, checkpoints, budget, log, console

            callbacks = standard_shell(self)
        self.callbacks = list(callbacks)

    def emit(self, event: str, *args) -> None:
        for callback in self.callbacks:
            handler = getattr(callback, event, None)
            if handler is not None:
                handler(self, *args)

    def _clear_window(self) -> None:
        """The stats since the last log line: named sums (and tokens), gradient norms, seconds of training."""
        where = torch.device("cpu") if self.device.type == "mps" else self.device  # MPS has no float64
        self._sums = {k: torch.zeros((), dtype=torch.float64, device=where)
                      for k in (*self.objective.stat_names, "tokens")}
        self._norms, self._window_seconds = [], 0.0

    # ------------------------------------------------------------------ one optimizer step
    def _draw(self) -> tuple[list[dict], dict] | None:
        """The micro-batches of the next step and their counts (`_counts`), or None when the data ended on any
        rank."""
        micro = []
        with contextlib.suppress(StopIteration):
            for _ in range(self.config.accumulate):
                micro.append(_to_device(next(self.batch_iter), self.device, self.objective))
        counts, ended = self._counts(micro, ended=len(micro) < self.config.accumulate)
        return None if ended else (micro, counts)

    def _counts(self, micro: list[dict], ended: bool = False) -> tuple[dict, bool]:
        """The objective's denominators over the effective batch (0-d float64 tensors on the device, never read on
        the host), and whether any rank ran out of data. Under DDP one all-reduce carries both, so every rank divides
        by the same counts and all stop at once."""
        names = self.objective.denominator_names
        totals = torch.zeros(len(names), dtype=torch.float64, device=as_stat(0, self.device).device)
        if not ended:
            totals = torch.stack([torch.stack([as_stat(p[k], self.device) for k in names])
                                  for p in map(self.objective.denominators, micro)]).sum(0)
        if self.dist.is_distributed:
            flag = totals.new_full((1,), float(ended))
            reduced = all_reduce_sum(torch.cat([totals, flag]).to(self.dist.reduce_device), self.dist)
            totals, ended = reduced[:-1].to(totals.device), bool(reduced[-1] > 0)
        return dict(zip(names, totals)), ended

    def train_step(self, micro: list[dict], counts: dict | None = None) -> float:
        """Forward and backward over the micro-batches, clip, update; returns the gradient norm."""
        totals = counts if counts is not None else self._counts(micro)[0]
        for i, batch in enumerate(micro):
            # Only the last micro-batch all-reduces gradients; the others accumulate locally.
            last = i == len(micro) - 1
            with contextlib.nullcontext() if last or not self.dist.is_distributed else self.ddp_model.no_sync():
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.config.bf16):
                    out = self.forward_model(**batch, **self._forward_options)
                loss, stats = self.objective(out, batch, totals)
                (loss * self.dist.world_size).backward()  # DDP averages over ranks; we want the sum
            for k, v in stats.items():
                self._sums[k] += v.detach().to(self._sums[k].device, torch.float64)
            self._sums["tokens"] += batch["input_ids"].numel()
        params = [p for p in self.model.parameters() if p.grad is not None]
        try:  # the norm is read on the host anyway (clipping needs it): checking it costs no extra sync
            norm = clip_grad_global_norm(params, self.config.clip_norm or float("inf"))
        except FloatingPointError as err:
            self.optimizer.zero_grad(set_to_none=True)
            raise NonFiniteError(self.step + 1, str(err).split(";")[0]) from err
        self._lr = self.schedule.apply(self.optimizer, self.step)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._norms.append(norm)
        return norm

    # ------------------------------------------------------------------ the loop
    def train(self) -> TrainResult:
        """Run until max_steps, the data ends or a subscriber stops it (the time budget, a signal); log and
        evaluate along the way."""
        try:
            return self._train()
        except RuntimeError as error:  # a collective that failed (a lost peer): the line names the step reached
            error.training_step = self.step
            raise
        finally:
            self.emit("on_close")

    def _train(self) -> TrainResult:
        cfg, first_history = self.config, len(self.history)
        run_start = self.clock() - self.elapsed
        self.model.train()
        control = Control()
        self.emit("on_start", control)
        stop = "max_steps" if self.step >= cfg.max_steps else control.stop
        while stop is None:
            step_start = self.clock()
            drawn = self._draw()
            if drawn is None:
                stop = "data exhausted"
                break
            self.train_step(*drawn)
            now = self.clock()
            self._window_seconds += now - step_start
            self.elapsed = now - run_start
            if self.step % cfg.log_every == 0:
                self._log_train()
            if cfg.eval_every and self.step % cfg.eval_every == 0 and self.val_batches is not None:
                self._log_eval()
            control = Control()
            self.elapsed = self.clock() - run_start
            self.emit("on_step_end", control)  # the budget, a signal, the periodic checkpoint
            stop = "max_steps" if self.step >= cfg.max_steps else control.stop
            if stop is None and control.save:  # a last step is saved at the end, after its end lines
                self.save()
        self.elapsed = self.clock() - run_start
        self._check_weights()  # the last update's, which no later step reads
        assert_replicas_identical(self.model, self.dist)  # cheap, and a silent divergence would waste the run
        if self._norms:  # steps since the last log line
            self._log_train()
        if self.val_batches is not None and self.last_eval_step != self.step:
            self._log_eval()
        lines = self.history[first_history:]
        result = TrainResult(self.step, stop, *(next((m for m in reversed(lines) if m["type"] == kind), None)
                                                for kind in ("train", "eval")), lines)
        self.emit("on_end", result)  # the final checkpoint
        return result

    # ------------------------------------------------------------------ metrics
    def _log_train(self) -> dict:
        sums = reduce_stats(self._sums, self.dist)
        tokens = sums.pop("tokens")
        self.tokens_seen += int(tokens)
        metrics = {"type": "train", "step": self.step, **self.objective.metrics(sums), "lr": self._lr,
                   "grad_norm": float(np.mean(self._norms)),
                   "tokens_per_s": tokens / max(self._window_seconds, 1e-9), "tokens_seen": self.tokens_seen,
                   "elapsed_s": self.elapsed}
        self._check_losses(metrics, "training")
        self._clear_window()
        return self.log(metrics)

    def _log_eval(self) -> dict:
        metrics = {"type": "eval", "step": self.step, **evaluate(self.model, self.val_batches, self.dist,
                   self.config.eval_batches, self.config.bf16, self.objective), "elapsed_s": self.elapsed}
        self._check_losses(metrics, "held-out")
        self.last_eval_step = self.step
        self.emit("on_evaluate", metrics)
        return self.log(metrics)

    def log(self, metrics: dict) -> dict:
        """Keep a metric line in `history` and hand it to the subscribers (the log file, the console)."""
        self.history.append(metrics)
        self.emit("on_log", metrics)
        return metrics

    def _check_losses(self, metrics: dict, kind: str) -> None:
        for key, value in metrics.items():
            if key.endswith("loss") and isinstance(value, float) and not math.isfinite(value):
                raise NonFiniteError(self.step, f"the {kind} {key} is {value}")

    def _check_weights(self) -> None:
        """One host read for all the weights, made only before a save and at the end of a run."""
        with torch.no_grad():
            bad = non_finite_tensors(dict(self.model.named_parameters()))
        if bad:
            more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
            raise NonFiniteError(self.step, f"the weights are not finite after the update: {bad[0]}{more}")

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Everything besides the weights that continues the run exactly: step, optimizer, schedule, data position
        and metrics window, and what the subscribers add (the checkpoints: every rank's RNG and data position)."""
        state = {"step": self.step, "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
                 "train_config": dataclasses.asdict(self.config), "data": self.source.state_dict(),
                 "window": {"sums": {k: v.cpu().clone() for k, v in self._sums.items()},
                            "grad_norms": list(self._norms), "seconds": self._window_seconds},
                 "elapsed_seconds": self.elapsed, "tokens_seen": self.tokens_seen,
                 "last_eval_step": self.last_eval_step}
        self.emit("on_state_dict", state)
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()` (the optimizer's own state is loaded with the weights)."""
        self.source.load_state_dict(state["data"])
        sums = state["window"]["sums"]
        if torch.is_tensor(sums):  # saved as one vector: the stats in their order, then tokens
            sums = dict(zip((*self.objective.stat_names, "tokens"), sums))
        self._clear_window()
        for k, v in sums.items():
            self._sums[k] = v.to(self._sums[k].device).clone()
        self._norms, self._window_seconds = list(state["window"]["grad_norms"]), state["window"]["seconds"]
        self.step, self.elapsed, self.tokens_seen = state["step"], state["elapsed_seconds"], state["tokens_seen"]
        self.last_eval_step = state["last_eval_step"]

    def save(self):
        """Write a checkpoint of the step reached (the shell's checkpoints do; weights checked first)."""
        if not any(hasattr(callback, "on_save") for callback in self.callbacks):
            raise ValueError("save() needs TrainConfig.out_dir: the shell's checkpoints are written there")
        self._check_weights()  # a checkpoint never holds NaN or infinity: the newest one is always a good one
        self.emit("on_save")
        return getattr(self, "last_saved_path", None)

    def resume(self, path=None) -> int:
        """Continue from `path` or the newest checkpoint of the run (the shell's checkpoints); returns the step."""
        self.emit("on_resume", path)
        return self.step


def train(model, batches, config: TrainConfig, *, optimizer: str = "lamb", lr: float = 1e-3, warmup_steps: int = 0,
          weight_decay: float = 0.01, val_batches=None, dist: DistInfo | None = None, resume: bool = False,
          objective=None) -> TrainResult:
    """Build the optimizer and schedule for `model`, then train; the one-call form for chapters."""
    opt = build_optimizer(model, optimizer, lr=lr, weight_decay=weight_decay)
    trainer = Trainer(model, opt, WarmupPolyDecay(lr, config.max_steps, warmup_steps), batches, config,
                      val_batches=val_batches, dist=dist, objective=objective)
    if resume:
        trainer.resume()
    return trainer.train()
