"""Checkpoints that resume bit-exactly and never clobber a good one.

A checkpoint is a directory `<run>/checkpoints/step-0000123/` holding
  model.safetensors   the weights (safetensors drops the tied decoder weight and restores the tie on load)
  trainer_state.pt    optimizer, schedule, step, RNG states and data positions of every rank (tensors and
                      plain Python values only, read back with torch.load(weights_only=True))
  config.json         the model config, checked against the model it is loaded into
  manifest.json       sha256 of the three files, written last
The files are written into a hidden temp directory, fsynced, and the directory is renamed into place, so a run
killed mid-save leaves either the old set of checkpoints or the old set plus a complete new one.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_model, save_model

from ..model.config import AlbertConfig, ConfigError
from ..paths import sha256_file

FORMAT_VERSION = 1
CHECKPOINTS = "checkpoints"
MODEL_FILE, STATE_FILE = "model.safetensors", "trainer_state.pt"
CONFIG_FILE, MANIFEST_FILE = "config.json", "manifest.json"
_STEP_DIR = re.compile(r"^step-(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message names the file and what to do."""


# ---------------------------------------------------------------------- atomic files
def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` to a temp file beside `path`, fsync it, then rename over `path` (all or nothing)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_path(path.parent)


# ---------------------------------------------------------------------- RNG states
def capture_rng_state() -> dict:
    """The global RNG states (Python, NumPy, torch CPU and CUDA) as tensors and plain values."""
    np_state = np.random.get_state(legacy=False)
    np_state = {**np_state, "state": {**np_state["state"], "key": torch.from_numpy(np_state["state"]["key"].copy())}}
    state = {"python": random.getstate(), "numpy": np_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Put back the states captured by `capture_rng_state`."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np_state = state["numpy"]
    np.random.set_state({**np_state, "state": {**np_state["state"], "key": np_state["state"]["key"].numpy()}})
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------- save
def unwrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """The plain module inside DistributedDataParallel and torch.compile wrappers."""
    while True:
        if hasattr(model, "_orig_mod"):
            model = model._orig_mod
        elif isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module
        else:
            return model


def checkpoint_dir(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINTS / f"step-{step:07d}"


def save_checkpoint(run_dir: str | Path, step: int, model: torch.nn.Module, trainer_state: dict,
                    keep: int = 2) -> Path:
    """Write the checkpoint of `step` under `run_dir/checkpoints/`, then delete all but the newest `keep`."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    model = unwrap_model(model)
    final = checkpoint_dir(run_dir, step)
    if final.exists():
        raise CheckpointError(f"{final} already exists; checkpoints are never overwritten. Use a new run directory")
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(".tmp-*"):  # left by a run killed mid-save; one writer per run directory
        shutil.rmtree(stale)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    tmp.mkdir()
    save_model(model, str(tmp / MODEL_FILE), metadata={"format": str(FORMAT_VERSION), "step": str(step)})
    torch.save({"format": FORMAT_VERSION, "step": step, **trainer_state}, tmp / STATE_FILE)
    (tmp / CONFIG_FILE).write_text(model.config.to_json())
    files = (MODEL_FILE, STATE_FILE, CONFIG_FILE)
    for name in files:
        _fsync_path(tmp / name)
    manifest = {"format": FORMAT_VERSION, "step": step, "sha256": {name: sha256_file(tmp / name) for name in files}}
    atomic_write_text(tmp / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, final)  # the commit point: before it the checkpoint does not exist, after it is complete
    _fsync_path(final.parent)
    for old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old)
    return final


# ---------------------------------------------------------------------- find and load
def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temp directories of interrupted saves are ignored)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if p.is_dir() and (m := _STEP_DIR.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def verify_checkpoint(path: str | Path) -> dict:
    """Check every file of a checkpoint against its manifest; returns the manifest or raises CheckpointError."""
    path = Path(path)
    hint = f"delete {path} to fall back to the previous checkpoint, or start a new run directory"
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text())
        expected = manifest["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path / MANIFEST_FILE} is missing or unreadable ({err}); {hint}") from err
    if manifest.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{path} has format {manifest.get('format')}, this code reads {FORMAT_VERSION}")
    for name, digest in expected.items():
        file = path / name
        if not file.is_file():
            raise CheckpointError(f"{file} is missing; {hint}")
        if sha256_file(file) != digest:
            raise CheckpointError(
                f"{file} is corrupt: its sha256 differs from the manifest (truncated or modified); {hint}"
            )
    return manifest


def config_differences(saved: dict, current: dict) -> list[str]:
    """Human-readable `field: saved -> current` lines for every field that differs."""
    keys = sorted(set(saved) | set(current))
    return [f"{k}: {saved.get(k, '<absent>')!r} -> {current.get(k, '<absent>')!r}"
            for k in keys if saved.get(k, "<absent>") != current.get(k, "<absent>")]


def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> dict:
    """Load weights (and optimizer state) from a checkpoint directory into `model`; returns the trainer state.

    Raises CheckpointError, naming the file or the config fields, for corrupt files or a different model.
    """
    path = Path(path)
    verify_checkpoint(path)
    model = unwrap_model(model)
    saved_config = json.loads((path / CONFIG_FILE).read_text())
    diffs = config_differences(saved_config, model.config.to_dict())
    if diffs:
        raise CheckpointError(
            f"{path} holds a model with a different config ({'; '.join(diffs)}); build the model from "
            f"{path / CONFIG_FILE} or start a new run directory"
        )
    try:
        load_model(model, str(path / MODEL_FILE), strict=True)
    except (SafetensorError, RuntimeError) as err:
        raise CheckpointError(f"{path / MODEL_FILE} does not fit the model: {err}") from err
    try:
        state = torch.load(path / STATE_FILE, weights_only=True)
    except Exception as err:  # torch raises several types for a damaged archive
        raise CheckpointError(f"{path / STATE_FILE} cannot be read: {err}") from err
    if optimizer is not None:
        saved_groups = state["optimizer"]["param_groups"]
        saved_names = [g.get("param_names") for g in saved_groups]
        current_names = [g.get("param_names") for g in optimizer.param_groups]
        if saved_names != current_names:
            raise CheckpointError(
                f"{path / STATE_FILE} holds optimizer state for other parameter groups; build the optimizer "
                "with albert_mini.training.optim.build_optimizer on the same model"
            )
        try:
            optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError) as err:
            raise CheckpointError(f"{path / STATE_FILE}: optimizer state does not fit ({err})") from err
    return state


def resolve_checkpoint(path: str | Path) -> Path:
    """`path` itself when it is a checkpoint (it has a manifest), else the newest checkpoint of the run in it."""
    path = Path(path)
    if (path / MANIFEST_FILE).exists():
        return path
    latest = latest_checkpoint(path)
    if latest is None:
        raise CheckpointError(f"{path} holds no checkpoint; pass a run directory written by "
                              "python -m albert_mini.training.pretrain")
    return latest


def load_pretrained(path: str | Path) -> torch.nn.Module:
    """An AlbertForPreTraining with the weights of a checkpoint directory, or of a run's newest checkpoint."""
    from ..model.albert import AlbertForPreTraining

    path = resolve_checkpoint(path)
    verify_checkpoint(path)
    try:
        config = AlbertConfig.from_json(path / CONFIG_FILE)
    except (ConfigError, ValueError) as err:
        raise CheckpointError(f"{path / CONFIG_FILE} is not a valid config: {err}") from err
    model = AlbertForPreTraining(config)
    try:
        load_model(model, str(path / MODEL_FILE), strict=True)
    except (SafetensorError, RuntimeError) as err:
        raise CheckpointError(f"{path / MODEL_FILE} does not fit its config: {err}") from err
    return model


def export_pretrained(source: str | Path, out_dir: str | Path) -> Path:
    """Copy the weights and config of a checkpoint (or a run's newest) into `out_dir`, without trainer state.

    The result is what `load_pretrained` and the fine-tuning code read: model.safetensors, config.json and a
    manifest with their sha256, small enough to ship (the optimizer state of a run is twice the weights).
    """
    source = resolve_checkpoint(source)
    manifest = verify_checkpoint(source)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in (MODEL_FILE, CONFIG_FILE):
        shutil.copyfile(source / name, out / name)
    exported = {"format": FORMAT_VERSION, "step": manifest["step"],
                "sha256": {name: manifest["sha256"][name] for name in (MODEL_FILE, CONFIG_FILE)}}
    atomic_write_text(out / MANIFEST_FILE, json.dumps(exported, indent=2) + "\n")
    return out
