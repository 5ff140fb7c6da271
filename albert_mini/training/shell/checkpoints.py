"""Checkpoints and exact resume: the trainer's state saved on step ends and at the end, continued bit for bit.

A checkpoint (training/checkpoint.py writes it crash-safe: a temporary folder renamed into place) holds the
weights, the optimizer, and every rank's data position, RNG states and metrics window, so a resumed run draws the
same batches, the same dropout masks and logs the same lines as one that never stopped. A checkpoint records the
device that computed it: resuming on another works (checkpoints load on the CPU first), and is said on stdout, in
the resume line of metrics.jsonl and in run.json's notes, since the steps after it are not bit-identical.
"""

from __future__ import annotations

from pathlib import Path

from ...devices import describe_device
from ...paths import recorded_path
from ..checkpoint import (
    CheckpointError,
    capture_rng_state,
    load_checkpoint,
    newest_intact_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from ..distributed import gather_objects
from ..rundir import METRICS_FILE, amend_record, read_metrics, sweep_interrupted

# Changing these between a run and its resumption would change the arithmetic, so resuming refuses it.
RESUME_MUST_MATCH = ("accumulate", "clip_norm", "bf16")
# What a checkpoint's trainer state must hold for a resume to continue the run exactly.
RESUME_STATE = ("world_size", "schedule", "train_config", "rng", "data", "window", "step", "elapsed_seconds",
                "tokens_seen", "last_eval_step", "device")
PER_RANK = ("rng", "data", "window")  # what each rank saves of its own


class Checkpoints:
    """Saves the trainer's state in `out_dir` every `save_every` steps and at the end; resumes it."""

    def __init__(self, trainer):
        config = trainer.config
        self.out_dir = Path(config.out_dir)
        if not (hasattr(trainer.source, "state_dict") and hasattr(trainer.source, "load_state_dict")):
            raise TypeError(
                f"{type(trainer.source).__name__} has no state_dict()/load_state_dict(), so a checkpoint could not "
                "record the data position; give a source that has them (see albert_mini.text.batch_source) or set "
                "out_dir=None")
        if trainer.dist.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        trainer.last_saved_step = None

    # ------------------------------------------------------------------ events
    def on_step_end(self, trainer, control) -> None:
        every = trainer.config.save_every
        if every and trainer.step % every == 0:
            control.save = True

    def on_end(self, trainer, result) -> None:
        if trainer.last_saved_step != trainer.step:
            trainer.save()
        elif trainer.dist.is_main:
            sweep_interrupted(self.out_dir)  # what a killed save left, which no later save of this run will sweep

    def on_state_dict(self, trainer, state: dict) -> None:
        """Every rank's data position, RNG states and metrics window (a collective: every rank calls it), and what
        a resume checks: the processes, the device, the run."""
        state["rng"] = capture_rng_state()
        for key in PER_RANK:
            state[key] = gather_objects(state[key], trainer.dist)
        # The run folder as the record names it: no machine path in a checkpoint that may be shared.
        state["train_config"] = {**state["train_config"], "out_dir": recorded_path(self.out_dir)}
        state.update(world_size=trainer.dist.world_size, device=describe_device(trainer.device))
        identity = getattr(trainer, "run_identity", None)
        if identity is not None:
            state["run"] = identity

    def on_save(self, trainer) -> None:
        """Rank 0 writes; every rank contributes its state."""
        state = trainer.state_dict()
        trainer.last_saved_path = None
        if trainer.dist.is_main:
            trainer.last_saved_path = save_checkpoint(self.out_dir, trainer.step, trainer.model, state,
                                                      trainer.config.keep_checkpoints)
        trainer.last_saved_step = trainer.step

    def on_resume(self, trainer, path) -> None:
        """Continue from `path`, or from the newest intact checkpoint (a damaged newest one is set aside)."""
        if path is None:
            path = newest_intact_checkpoint(self.out_dir, set_aside=trainer.dist.is_main)
            if path is None:  # killed before its first checkpoint: what it logged is set aside
                if read_metrics(self.out_dir / METRICS_FILE)[0]:
                    trainer.log({"type": "resume", "step": 0, "checkpoint": None,
                                 "device": describe_device(trainer.device)})
                return
        state = load_checkpoint(path, trainer.model, trainer.optimizer)
        self.check_resumable(trainer, path, state)
        rank = trainer.dist.rank
        restore_rng_state(state["rng"][rank])
        trainer.load_state_dict({**state, **{key: state[key][rank] for key in ("data", "window")}})
        trainer.last_saved_step = trainer.step
        device, before = describe_device(trainer.device), state["device"]
        if not self.finished(trainer):  # a finished run trains nothing more: its log gets no line
            trainer.log({"type": "resume", "step": trainer.step, "checkpoint": recorded_path(path), "device": device,
                         **({"previous_device": before} if before != device else {})})
        if before != device and trainer.dist.is_main:
            note = (f"step {trainer.step}: resumed on {device}; the steps up to here ran on {before}, so the run is "
                    "not bit-identical to one that stayed there")
            print(note, flush=True)
            amend_record(self.out_dir, note=note)

    @staticmethod
    def finished(trainer) -> bool:
        """Whether the run has nothing left to train: max_steps reached or the time budget spent."""
        budget = trainer.config.max_minutes
        return trainer.step >= trainer.config.max_steps or (budget is not None and trainer.elapsed >= 60 * budget)

    @staticmethod
    def check_resumable(trainer, path, state: dict) -> None:
        """A checkpoint this run can continue exactly: every field a resume reads, the same processes, schedule
        and step settings, the same run; else one CheckpointError saying what differs."""
        missing = [key for key in RESUME_STATE if key not in state]
        if missing:  # saved by a version of this code from before the field existed
            raise CheckpointError(
                f"{path} does not record {', '.join(missing)} (an older albert-mini saved it); continue that run "
                "with the version that started it, or start again in a new --out (or with --overwrite)")
        world = trainer.dist.world_size
        if state["world_size"] != world:
            raise CheckpointError(
                f"{path} was written by {state['world_size']} processes and this run has {world}; resume with the "
                "same --nproc_per_node (each rank's data position and RNG are stored)")
        if state["schedule"] != trainer.schedule.state_dict():
            raise CheckpointError(
                f"{path} was trained with schedule {state['schedule']}, this run uses "
                f"{trainer.schedule.state_dict()}; keep --steps, --lr and --warmup when resuming, or start a new run "
                "directory")
        changed = [k for k in RESUME_MUST_MATCH if state["train_config"].get(k) != getattr(trainer.config, k)]
        if changed:
            raise CheckpointError(f"{path} was trained with different {changed}; keep them when resuming")
        theirs, ours = state.get("run"), getattr(trainer, "run_identity", None)
        if theirs is not None and ours is not None and theirs != ours:
            raise CheckpointError(
                f"{path} belongs to another run (its settings, model, tokenizer or text differ from this run's "
                "run.json): a checkpoint copied from elsewhere is not resumed; remove it from checkpoints/, or "
                "start again in a new --out (or with --overwrite)")
