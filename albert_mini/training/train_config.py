"""How long and how to train (`TrainConfig`), read by the trainer and by its shell, and how a call ended
(`TrainResult`)."""

from __future__ import annotations

from dataclasses import dataclass

from .optim import check_steps

GPU_WORKERS = 2  # DataLoader workers on a CUDA device when TrainConfig.workers is None: batches built ahead


@dataclass
class TrainConfig:
    """How long and how to train; everything else (model, optimizer, schedule, data) is passed in built."""

    max_steps: int  # optimizer steps; the run also stops when the data or the time budget runs out
    max_minutes: float | None = None  # wall-clock budget of the whole run across resumptions, checked between steps
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
    # DataLoader workers building batches ahead (None: GPU_WORKERS on CUDA, else 0: on the CPU the step's threads use
    # every core already, and a worker gained nothing beyond noise, benchmarks/pretrain_cpu.py).
    workers: int | None = None
    echo: bool = False  # also print one line per log step and evaluation (never when CI=true)

    def __post_init__(self):
        check_steps(self.max_steps, "max_steps")
        check_steps(self.accumulate, "accumulate")
        for ok, message in [
            (self.max_steps >= 1 and self.accumulate >= 1 and self.log_every >= 1 and self.keep_checkpoints >= 1,
             "max_steps, accumulate, log_every and keep_checkpoints must be >= 1"),
            (self.eval_every >= 0 and self.save_every >= 0, "eval_every and save_every must be >= 0"),
            (self.max_minutes is None or self.max_minutes > 0, f"max_minutes must be > 0, got {self.max_minutes}"),
            (self.clip_norm is None or self.clip_norm > 0, f"clip_norm must be > 0 or None, got {self.clip_norm}"),
            (self.eval_batches is None or self.eval_batches >= 1, "eval_batches must be >= 1 or None"),
            (self.workers is None or self.workers >= 0, f"workers must be >= 0 or None, got {self.workers}"),
            (not self.save_every or self.out_dir, "save_every needs out_dir: checkpoints are written there")]:
            if not ok:
                raise ValueError(message)


@dataclass
class TrainResult:
    """How a call to `Trainer.train` ended: its step, why ("max_steps", "max_minutes", "data exhausted"), the last
    train and eval metrics, and every metric line of this call."""

    step: int
    stop_reason: str
    train: dict | None
    eval: dict | None
    history: list[dict]
