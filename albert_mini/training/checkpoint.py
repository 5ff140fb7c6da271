"""Checkpoints that resume bit-exactly and never clobber a good one.

A checkpoint is a directory `<run>/checkpoints/step-0000123/` holding
  model.safetensors   the weights (a tensor tied to an earlier one, the MLM decoder, is stored once; loading
                      restores the tie)
  trainer_state.pt    optimizer, schedule, step, RNG states and data positions of every rank (tensors and
                      plain Python values only, read back with torch.load(weights_only=True))
  config.json         the model config, checked against the model it is loaded into
  manifest.json       sha256 of the three files
Saving is crash-safe: the files go into a hidden temp directory `checkpoints/.tmp-*`, each fsynced, and the
directory is renamed into place (the commit point). Older checkpoints are deleted only after that, each renamed
to a `.tmp-*` name first, so a half-deleted one never looks like a checkpoint. A process killed at any point
leaves the old checkpoints loadable, plus the new one when it got past the rename; a failing disk raises
CheckpointError and leaves the old ones untouched. tests/training/test_fault_injection.py stops a save at every step.
"""

from __future__ import annotations

import errno
import io
import json
import os
import random
import shutil
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_model
from safetensors.torch import save as safetensors_bytes

from ..devices import mps_available
from ..errors import UserError
from ..model.config import AlbertConfig, ConfigError, config_differences
from ..paths import REPO_ROOT, sha256_bytes, sha256_file, shipped_path
from ..safe_files import atomic_write_text
from ..safe_files import fsync_path as _fsync_path
from .rundir import (
    CHECKPOINTS,
    CONFIG_FILE,
    EXPORT,
    MANIFEST_FILE,
    METRICS_FILE,
    MODEL_FILE,
    RUN_FILE,
    STATE_FILE,
    STEP_DIR,
    TEMP_PREFIX,
    check_export_dir,
    clear,
    read_metrics,
)

FORMAT_VERSION = 1


class CheckpointError(UserError, RuntimeError):
    """A checkpoint that cannot be used or saved; the message names the file and what to do."""


# ---------------------------------------------------------------------- file-system steps
# Every file-system step of a save goes through `_step`, so the fault-injection tests can stop a save at each
# one: kill the process there, or raise (tests/training/test_fault_injection.py). Without a hook it does nothing.
_fault_hook: Callable[[str], None] | None = None


def set_fault_hook(hook: Callable[[str], None] | None) -> None:
    """Call `hook(label)` before every file-system step of save_checkpoint; None removes it. For tests."""
    global _fault_hook
    _fault_hook = hook


def _step(label: str) -> None:
    if _fault_hook is not None:
        _fault_hook(label)


def _write_new_file(path: Path, data: bytes) -> None:
    """Create `path` holding `data`, fsynced; written in two halves so that a test can stop it in between."""
    _step(f"create {path.name}")
    with open(path, "xb") as f:
        half = len(data) // 2
        f.write(data[:half])
        f.flush()
        _step(f"write the second half of {path.name}")
        f.write(data[half:])
        f.flush()
        _step(f"fsync {path.name}")
        os.fsync(f.fileno())


# ---------------------------------------------------------------------- RNG states
def capture_rng_state() -> dict:
    """The global RNG states (Python, NumPy, torch CPU, CUDA and MPS) as tensors and plain values."""
    np_state = np.random.get_state(legacy=False)
    np_state = {**np_state, "state": {**np_state["state"], "key": torch.from_numpy(np_state["state"]["key"].copy())}}
    state = {"python": random.getstate(), "numpy": np_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if mps_available():
        state["mps"] = torch.mps.get_rng_state()
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
    if "mps" in state and mps_available():
        torch.mps.set_rng_state(state["mps"])


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


def weights_bytes(model: torch.nn.Module, metadata: dict[str, str]) -> bytes:
    """The safetensors file of a model's weights, as safetensors' save_model writes it, but in memory.

    A tensor that is the same view as an earlier one (a tied weight) is stored once, and the metadata maps its
    name to the one kept; safetensors' load_model restores the tie.
    """
    tensors, kept_as, metadata = {}, {}, dict(metadata)
    for name, tensor in model.state_dict().items():
        view = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape), tensor.stride())
        if view in kept_as:
            metadata[name] = kept_as[view]
        else:
            kept_as[view] = name
            tensors[name] = tensor.detach().contiguous()
    return sorted_metadata(safetensors_bytes(tensors, metadata=metadata))


def sorted_metadata(data: bytes) -> bytes:
    """A safetensors file with its header metadata in sorted order (safetensors writes it in hash order).

    Only the order of the metadata entries changes; the header keeps its length, so the tensors stay where
    they are and identical runs give identical bytes.
    """
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    if "__metadata__" not in header:
        return data
    header = {"__metadata__": dict(sorted(header["__metadata__"].items())),
              **{k: v for k, v in header.items() if k != "__metadata__"}}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(text) > size:  # never happens: the same entries, reordered, have the same length
        return data
    return data[:8] + text + b" " * (size - len(text)) + data[8 + size:]


def save_checkpoint(run_dir: str | Path, step: int, model: torch.nn.Module, trainer_state: dict,
                    keep: int = 2) -> Path:
    """Write the checkpoint of `step` under `run_dir/checkpoints/`, then delete all but the newest `keep`.

    Crash-safe (see the module docstring). A file-system error such as a full disk raises CheckpointError
    saying what failed; the half-written checkpoint is removed and the earlier ones are untouched.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    model = unwrap_model(model)
    final = checkpoint_dir(run_dir, step)
    if final.exists():
        raise CheckpointError(f"{final} already exists; checkpoints are never overwritten. Use a new run directory")
    state = io.BytesIO()
    torch.save({"format": FORMAT_VERSION, "step": step, **trainer_state}, state)
    files = {MODEL_FILE: weights_bytes(model, {"format": str(FORMAT_VERSION), "step": str(step)}),
             STATE_FILE: state.getvalue(), CONFIG_FILE: model.config.to_json().encode("utf-8")}
    manifest = {"format": FORMAT_VERSION, "step": step,
                "sha256": {name: sha256_bytes(data) for name, data in files.items()}}
    files[MANIFEST_FILE] = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    tmp = final.parent / f"{TEMP_PREFIX}{final.name}-{os.getpid()}"
    try:
        _commit(files, tmp, final)
    except OSError as err:
        if final.exists():  # the rename into place happened: the checkpoint is complete
            raise CheckpointError(f"{final} is saved, but syncing {final.parent} afterwards failed ({err}); the "
                                  "checkpoint may not survive a power cut, so check the disk") from err
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(_save_failure(final, err, sum(map(len, files.values())))) from err
    try:
        _prune(run_dir, keep)
    except OSError as err:
        raise CheckpointError(f"{final} is saved, but deleting an older checkpoint failed ({err}); delete the "
                              f"oldest step-* directories in {final.parent} by hand, or lower --keep") from err
    return final


def _commit(files: dict[str, bytes], tmp: Path, final: Path) -> None:
    """Write `files` into the temp directory `tmp`, fsync everything, and rename it to `final`."""
    parent = final.parent
    if not parent.is_dir():
        _step(f"mkdir {CHECKPOINTS}/")
        parent.mkdir(parents=True, exist_ok=True)
        _step("fsync the run directory")
        _fsync_path(parent.parent)
    for stale in sorted(parent.glob(f"{TEMP_PREFIX}*")):  # left by a killed save or deletion; one writer per run
        _step(f"remove {stale.name}")
        shutil.rmtree(stale)
    _step("mkdir the temp directory")
    tmp.mkdir()
    for name, data in files.items():
        _write_new_file(tmp / name, data)
    _step("fsync the temp directory")
    _fsync_path(tmp)
    _step("rename the temp directory into place")
    os.replace(tmp, final)  # the commit point: before it the checkpoint does not exist, after it is complete
    _step(f"fsync {CHECKPOINTS}/")
    _fsync_path(parent)


def _prune(run_dir: str | Path, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints, each renamed out of sight first."""
    for old in list_checkpoints(run_dir)[:-keep]:
        doomed = old.with_name(f"{TEMP_PREFIX}delete-{old.name}")
        _step(f"rename {old.name} for deletion")
        os.replace(old, doomed)
        _step(f"fsync {CHECKPOINTS}/ after the rename")
        _fsync_path(old.parent)
        _step(f"delete {old.name}")
        shutil.rmtree(doomed)


def _save_failure(final: Path, err: OSError, size: int) -> str:
    """Why a save failed and what was (not) lost, in one message."""
    previous = latest_checkpoint(final.parent.parent)
    kept = f"the previous checkpoint {previous.name} is intact" if previous else "there was no earlier checkpoint"
    cause = "the disk is full" if err.errno == errno.ENOSPC else "the file system refused a write"
    where = f" ({err.filename})" if err.filename else ""
    return (f"could not save checkpoint {final}: {cause}: {err.strerror or err}{where}. The partial checkpoint "
            f"was removed and {kept}; make room (a checkpoint takes {size / 1e6:.1f} MB) and rerun the same "
            "command to resume")


# ---------------------------------------------------------------------- find and load
def step_of(checkpoint: Path) -> int:
    """The step number in a checkpoint directory's name (step-0000123 -> 123)."""
    return int(STEP_DIR.match(checkpoint.name).group(1))


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (temp directories of interrupted saves are ignored)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and STEP_DIR.match(p.name)), key=step_of)


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def repair_hint(path: str | Path) -> str:
    """What to do about a damaged checkpoint directory, which depends on what it is.

    A checkpoint inside a run can be deleted when an older one remains to fall back to. An exported model
    has nothing to fall back to: deleting it would lose the model, so the hint says how to restore it.
    """
    path = Path(path)
    if path.parent.name == CHECKPOINTS and STEP_DIR.match(path.name):
        run = path.parent.parent
        older = [p for p in list_checkpoints(run) if step_of(p) < step_of(path)]
        if older:
            return f"delete {path} to fall back to the previous checkpoint {older[-1].name}, then rerun the command"
        return (f"it is the oldest checkpoint of the run in {run}, so there is none to fall back to: start the run "
                "again with --overwrite, or use a new --out")
    shipped = shipped_path(path)
    if shipped is not None:
        return (f"{path} is the model shipped with albert-mini, not a run, so there is no older checkpoint: restore "
                f"it with `git checkout -- {shipped}` in {REPO_ROOT}")
    return (f"{path} is an exported model, not a run, so there is no older checkpoint: export it again from its run "
            f"with albert_mini.training.checkpoint.export_pretrained(RUN_DIR, {str(path)!r}, overwrite=True)")


def verify_checkpoint(path: str | Path) -> dict:
    """Check every file of a checkpoint against its manifest; returns the manifest or raises CheckpointError."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text())
        expected = manifest["sha256"]
        if not isinstance(expected, dict) or not all(isinstance(name, str) and isinstance(digest, str)
                                                     and name and Path(name).name == name
                                                     for name, digest in expected.items()):
            raise TypeError("its sha256 field is not a map of file names in the folder to digests")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path / MANIFEST_FILE} is missing or unreadable ({err}); {repair_hint(path)}") \
            from err
    if manifest.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{path} has format {manifest.get('format')}, this code reads {FORMAT_VERSION}")
    for name, digest in expected.items():
        file = path / name
        if not file.is_file():
            raise CheckpointError(f"{file} is missing; {repair_hint(path)}")
        if sha256_file(file) != digest:
            raise CheckpointError(
                f"{file} is corrupt: its sha256 differs from the manifest (truncated or modified); {repair_hint(path)}"
            )
    return manifest


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
        # On the CPU first: a checkpoint written on a GPU loads anywhere; the optimizer moves its state to the
        # parameters' device when it loads it.
        state = torch.load(path / STATE_FILE, weights_only=True, map_location="cpu")
    except Exception as err:  # torch raises several types for a damaged archive
        # torch's message advises weights_only=False, which would run whatever code the file holds: not passed on.
        raise CheckpointError(f"{path / STATE_FILE} cannot be read safely ({type(err).__name__}): it is damaged or "
                              f"holds more than tensors and plain values; {repair_hint(path)}") from err
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


def newest_intact_checkpoint(run_dir: str | Path, set_aside: bool = False, say=None) -> Path | None:
    """The newest checkpoint of a run that verifies; None when the run has none.

    A newer one that fails verification is skipped with one line through `say` (default: stderr) naming it and
    why; with `set_aside` (a resume, which will save that step again) it is renamed to step-NNNNNNN.corrupt so
    that the run can go on. When every checkpoint is damaged, the newest one's CheckpointError is raised.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    found = list_checkpoints(run_dir)
    first_error = None
    for path in reversed(found):
        try:
            verify_checkpoint(path)
        except CheckpointError as err:
            first_error = first_error or err
            if path == found[0]:
                break
            aside = _set_aside(path) if set_aside else None
            moved = f"; moved to {aside.name}" if aside else ""
            say(f"skipped the damaged checkpoint {path.name} ({_first_clause(err)}){moved}; using an older one")
            continue
        return path
    if first_error is not None:
        raise first_error
    return None


def _first_clause(err: Exception) -> str:
    return str(err).split(";")[0]


def _set_aside(path: Path) -> Path:
    """Rename a damaged checkpoint out of the run's way, keeping it for inspection."""
    target, n = path.with_name(f"{path.name}.corrupt"), 0
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{n}")
    os.replace(path, target)
    _fsync_path(path.parent)
    return target


def resolve_checkpoint(path: str | Path) -> Path:
    """`path` itself when it is a checkpoint (it has a manifest), else the newest intact checkpoint of the run."""
    path = Path(path)
    if (path / MANIFEST_FILE).exists():
        return path
    latest = newest_intact_checkpoint(path)
    if latest is None:
        raise CheckpointError(f"{path} holds no checkpoint; pass a run directory written by "
                              "albert-mini pretrain")
    return latest


def load_pretrained(path: str | Path) -> torch.nn.Module:
    """An AlbertForPreTraining with the weights of a checkpoint directory, or of a run's newest checkpoint.

    Read as strictly as a folder from outside (albert_mini.model.hf): the files must match the manifest,
    config.json must be a valid config, and model.safetensors (the only weights read) must hold every weight of
    that model with its shape, and nothing else; the model is float32. Each failure is one CheckpointError naming
    the file and the weights."""
    from ..model.albert import AlbertForPreTraining
    from ..model.hf import fit_state, read_safetensors

    path = resolve_checkpoint(path)
    verify_checkpoint(path)
    try:
        config = AlbertConfig.from_json(path / CONFIG_FILE)
    except (ConfigError, ValueError) as err:
        raise CheckpointError(f"{path / CONFIG_FILE} is not a valid config: {err}") from err
    model = AlbertForPreTraining(config)
    weights = path / MODEL_FILE
    state = fit_state(model, read_safetensors(weights, CheckpointError), str(weights), error=CheckpointError)
    model.load_state_dict(state, strict=True)  # copied into the model's own (tied) parameters
    return model


def export_pretrained(source: str | Path, out_dir: str | Path, overwrite: bool = False) -> Path:
    """Copy the weights and config of a checkpoint (or a run's newest) into `out_dir`, without trainer state.

    The result is what `load_pretrained` and the fine-tuning code read: model.safetensors, config.json and a
    manifest with their sha256, small enough to ship (the optimizer state of a run is twice the weights), plus
    the run's run.json and its metrics.jsonl up to the exported step when the checkpoint belongs to a run.
    `out_dir` must be absent, empty, or (with overwrite=True) an exported model; nothing else in it is ever
    deleted (albert_mini.training.rundir).
    """
    source = resolve_checkpoint(source)
    manifest = verify_checkpoint(source)
    out = Path(out_dir)
    check_export_dir(out, overwrite)
    clear(out, EXPORT)
    out.mkdir(parents=True, exist_ok=True)
    for name in (MODEL_FILE, CONFIG_FILE):
        shutil.copyfile(source / name, out / name)
        _fsync_path(out / name)
    run = source.parent.parent
    if source.parent.name == CHECKPOINTS and (run / RUN_FILE).is_file():
        shutil.copyfile(run / RUN_FILE, out / RUN_FILE)
        if (run / METRICS_FILE).is_file():
            kept = [r for r in read_metrics(run / METRICS_FILE)[0] if r["step"] <= manifest["step"]]
            atomic_write_text(out / METRICS_FILE, "".join(json.dumps(r) + "\n" for r in kept))
    exported = {"format": FORMAT_VERSION, "step": manifest["step"],
                "sha256": {name: manifest["sha256"][name] for name in (MODEL_FILE, CONFIG_FILE)}}
    atomic_write_text(out / MANIFEST_FILE, json.dumps(exported, indent=2) + "\n")  # last: the model is complete
    return out
