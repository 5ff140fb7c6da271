"""A pretraining run of the command line, from its setup: the user's text read and checked, model, batches and
trainer built (albert_mini.training.build), the run directory checked, locked and recorded, a killed run resumed,
and the run trained (`run`, what `albert-mini pretrain` calls; its command line is albert_mini/commands/pretrain.py).

The run directory gets run.json (the setup's settings, --config included, the model config built from them, the
tokenizer's path and sha256, the sha256 of every text file, the world size, the device the run computes on and
notes such as a resumption on another device; a file inside the repository named relative to its root, so the
record holds no path of the machine's checkout), config.json (the model), metrics.jsonl and
checkpoints/step-NNNNNNN/.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import torch

from ..devices import describe_device
from ..errors import Diverged
from ..model.config import AlbertConfig
from ..model.counting import count_parameters
from ..paths import recorded_path
from ..safe_files import atomic_write_text, check_out_folder
from . import rundir
from .build import build_model, build_trainer
from .checkpoint import latest_checkpoint
from .distributed import DistInfo, barrier
from .pretrain_inputs import Inputs, build_inputs, load_tokenizer
from .setup import PretrainingSetup, defaults
from .trainer import NonFiniteError, Trainer, TrainResult


def run(setup: PretrainingSetup, info: DistInfo) -> TrainResult:
    """Build the run (resuming it if --out allows), train it, and say where its files are."""
    say = print if info.is_main and not setup.quiet else (lambda *a, **k: None)
    trainer = build_run(setup, info, say)
    try:
        result = trainer.train()
    except NonFiniteError as err:
        raise Diverged(diverged_message(setup, err.step, err.what)) from err
    except FloatingPointError as err:  # raised by code of another kind (an objective's own check)
        raise Diverged(diverged_message(setup, trainer.step + 1, str(err).split(";")[0])) from err
    finally:
        if trainer.run_lock is not None:
            trainer.run_lock.release()
    if trainer.first_step_too_long and info.is_main:  # said even with --quiet: the run trained nothing
        print(f"the time budget (--minutes {setup.minutes:g}) ran out inside step {result.step + 1}, which was "
              "undone: one step of this model and batch takes longer than the time that was left, so nothing was "
              "trained and the final evaluation was skipped; give more --minutes (the run resumes), or a smaller "
              "model, --batch-size or --seq-len", flush=True)
    say(f"stopped at step {result.step} ({result.stop_reason}); metrics and checkpoints in {Path(setup.out)}")
    if result.eval is not None:
        say("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.eval.items()
                                     if isinstance(v, float) and k != "elapsed_s"))
    return result


def diverged_message(setup: PretrainingSetup, step: int, what: str) -> str:
    """Why a run stopped on a NaN or infinite loss, its usual causes, and the checkpoint that is kept."""
    last = latest_checkpoint(setup.out) if setup.out else None
    kept = (f"the last good checkpoint, {last.name} in {Path(setup.out) / 'checkpoints'}, is kept" if last
            else "no checkpoint had been written yet")
    return (f"the loss diverged at step {step} ({what}); the usual causes are a learning rate too high (--lr "
            f"{setup.lr:g}), too short a warm-up (--warmup {setup.warmup_steps}) or a --config that makes the model "
            f"unstable; {kept} (no checkpoint holds NaN weights); lower --lr or lengthen --warmup, and start again "
            "with --overwrite")


def run_record(setup: PretrainingSetup, config: AlbertConfig, info: DistInfo, tokenizer, inputs: Inputs) -> dict:
    """What run.json holds: the settings that decide the numbers, the model, the tokenizer and the text."""
    return {"kind": "pretrain", "settings": setup.settings(), "model": config.to_dict(),
            "tokenizer": tokenizer.file_reference() if tokenizer is not None else None,
            "corpus": inputs.corpus, "world_size": info.world_size,
            "effective_batch": setup.batch_size * info.world_size * setup.accumulate,
            "device": describe_device(info.device), "command": recorded_command()}


def recorded_command(argv: list[str] | None = None) -> str:
    """The command line as a run records it: the script (for `python -m`, the module's file) relative to the
    repository root when it lies inside it, every argument as the user gave it."""
    script, *rest = sys.argv if argv is None else argv
    return " ".join([recorded_path(script) if script and Path(script).is_file() else script, *rest])


def prepare_run_dir(out: Path, record: dict, overwrite: bool, info: DistInfo) -> bool:
    """Check `out` against this run (albert_mini.training.rundir); True when it holds the same run (resume it)."""
    same = rundir.resumable(out, record, overwrite, defaults())
    notes = rundir.recorded_notes(out) if same else []  # kept: a resumed run is still that run
    barrier(info)  # every rank has read run.json before rank 0 may replace it
    if info.is_main:
        record = {**record, "notes": notes} if notes else record
        if not same:
            rundir.clear(out, rundir.RUN)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / rundir.RUN_FILE, json.dumps(record, indent=2) + "\n")  # first: the files are a run
        atomic_write_text(out / rundir.CONFIG_FILE, AlbertConfig.from_dict(record["model"]).to_json())
    barrier(info)
    return same


def seed_everything(seed: int) -> None:
    """Seed the global RNGs (Python, NumPy, torch); the data pipeline has its own seeded generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_run(setup: PretrainingSetup, info: DistInfo, say=print) -> Trainer:
    """The run's trainer, resumed when --out holds the same run: what the command line trains."""
    out = Path(setup.out)
    rundir.check_run_dir(out)  # before the data is read: a directory a run may not use is refused at once
    check_out_folder(out)  # and one that cannot be created or written
    # One writer per directory: an existing --out is locked at once, a new one once it is created (bad flags
    # found while the data is read then leave no directory behind).
    locks = [rundir.RunLock(out)] if info.is_main and out.is_dir() else []
    try:
        trainer = _build_run(setup, info, say, out, locks)
    except BaseException:
        for lock in locks:
            lock.release()
        raise
    trainer.run_lock = locks[0] if locks else None  # held while the trainer lives (released by the caller)
    return trainer


def _build_run(setup: PretrainingSetup, info: DistInfo, say, out: Path, locks: list) -> Trainer:
    tokenizer = load_tokenizer(setup)
    vocab = {"vocab_size": tokenizer.vocab_size} if tokenizer is not None else {}
    config = setup.model_config(**vocab)  # the preset, the --config fields, the tokenizer's vocabulary
    seed_everything(setup.seed)
    inputs = build_inputs(setup, config.vocab_size, tokenizer, info)  # own seeded generators
    # The training text's tokens start the output bias; the synthetic corpus has no text, so its bias starts at zero.
    documents = inputs.train_documents
    model_setup = setup if documents is not None else setup.replace(output_bias="zeros")
    model = build_model(model_setup, config, documents).to(info.device)  # identical on every rank
    torch.manual_seed(setup.seed + 1 + info.rank)  # dropout masks differ between ranks
    if info.is_main and not locks:
        locks.append(rundir.RunLock(out))
    # The record names the bias the model started from (zeros for synthetic data), not the flag's default.
    record = run_record(model_setup, config, info, tokenizer, inputs)
    resuming = prepare_run_dir(out, record, setup.overwrite, info)
    trainer = build_trainer(setup, model, inputs.train, inputs.validation, dist=info)
    if resuming and trainer.resume():
        say(f"resumed {out} at step {trainer.step}")
    effective = setup.batch_size * info.world_size * setup.accumulate
    preset_vocab = AlbertConfig.from_preset(setup.preset).vocab_size
    if config.vocab_size != preset_vocab and tokenizer is not None:  # synthetic data: --config vocab_size
        say(f"vocab_size {config.vocab_size} from the tokenizer {tokenizer.path} (the preset has {preset_vocab})")
    model_name = f"{setup.preset} with {' '.join(setup.config)}" if setup.config else setup.preset
    say(f"{model_name}: {count_parameters(model):,} parameters on {describe_device(info.device)} | "
        f"{info.world_size} process(es) | effective batch "
        f"{effective} x {setup.seq_len} tokens{phase_note(setup)} | {setup.optimizer} lr {setup.lr:g}, warmup "
        f"{setup.warmup_steps}, {setup.steps} steps")
    return trainer


def phase_note(setup: PretrainingSetup) -> str:
    phases = setup.phases()
    if len(phases) == 1:
        return ""
    return f" (first {phases[0].steps} steps: {phases[0].batch_size} x {phases[0].seq_len})"
