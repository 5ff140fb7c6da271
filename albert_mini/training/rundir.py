"""Which directories a run or an export may write into, and what --overwrite may delete there.

The rule, for pretraining and fine-tuning runs (`--out`) and `export_pretrained` targets alike: write only into a
directory that is absent, empty, or holds what this kind of writer writes, and nothing else.
- A run writes run.json, config.json, metrics.jsonl and checkpoints/step-NNNNNNN/ (plus checkpoints/.tmp-* while
  it saves). An exported model is model.safetensors, config.json, manifest.json and, when it came from a run,
  that run's run.json and metrics.jsonl.
- Anything else in the directory is foreign: the directory is refused, even with --overwrite, and the message
  lists what is there. Nothing of the user's is ever deleted, and no new run is mixed into someone else's files.
- A file is recognised by its name and its content: a config.json that is not an AlbertConfig, or a run.json
  that is not a run record, is foreign.
- --overwrite deletes the recognised files (run.json first, so a half-cleared run is never resumed) and nothing
  else. A run directory without run.json is never resumed (its settings are unknown) and is refused unless
  --overwrite is given.
- One writer per run directory: `RunLock` holds an operating-system lock on the directory while a run writes
  there (filelock's native lock: flock on the directory itself on Linux and macOS; on Windows, which cannot open
  a directory, a file named after it in the temporary folder), so a second run on the same --out is refused at
  once, naming the first one's process id where Linux tells it. The system drops the lock when the process ends,
  however it ends, so a killed run never leaves a stale lock behind, and the run directory gains no lock file.
- run.json names the device the run computes on ("device") and keeps its "notes" across resumptions: a run resumed
  on another device than the one its checkpoint was computed on gets a note saying so (albert_mini.training.trainer).
- metrics.jsonl is appended line by line and never rewritten. `read_metrics` drops a torn line (a kill or a full
  disk during an append) and reads the log as one run: a resume line sets aside what was logged after its step,
  and the last line of a kind and step counts. An empty log, or one whose only line is torn anywhere, is still
  the run's: a kill can leave either, and the next run resumes from it.
- checkpoints/ is a folder of the run's own. A symbolic link there is refused in one line naming the fix: its
  target may be shared with other runs, and --overwrite would have to delete another folder's contents.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import lock_descriptor

from ..errors import UserError
from ..model.config import AlbertConfig, config_differences
from ..safe_files import TEMP_NAME, atomic_write_text, check_out_folder, fsync_folder
from ..text.corpus import fingerprint_changes

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["read_run"]

RUN_FILE, CONFIG_FILE, METRICS_FILE = "run.json", "config.json", "metrics.jsonl"
# Written beside an exported model by harness.research.model_card.
MODEL_CARD_FILE, SCORES_FILE = "README.md", "scores.json"
MODEL_FILE, MANIFEST_FILE, STATE_FILE = "model.safetensors", "manifest.json", "trainer_state.pt"
CHECKPOINTS = "checkpoints"
CHECKPOINT_FILES = frozenset({MODEL_FILE, STATE_FILE, CONFIG_FILE, MANIFEST_FILE})
STEP_DIR = re.compile(r"^step-(\d+)$")
SET_ASIDE = re.compile(r"^step-\d+\.corrupt(-\d+)?$")  # a corrupt checkpoint moved out of the way by a resume
TEMP_PREFIX = ".tmp-"  # checkpoints/.tmp-*: a save (or a deletion) that was interrupted
SHOWN = 5  # foreign entries named in a message
KIND_NAMES = {"pretrain": "pretraining", "finetune": "fine-tuning"}  # the "kind" of a run.json, for messages


class RunDirError(UserError, ValueError):
    """A directory that a run or an export may not write into; the message says what is there and what to do."""


@dataclass(frozen=True)
class Layout:
    """What one kind of writer puts in its directory."""

    name: str  # "run" or "exported model", for messages
    files: frozenset[str]  # top-level files it writes
    checkpoints: bool  # whether it writes checkpoints/step-NNNNNNN/


RUN = Layout("run", frozenset({RUN_FILE, CONFIG_FILE, METRICS_FILE}), checkpoints=True)
EXPORT = Layout("exported model", frozenset({MODEL_FILE, CONFIG_FILE, MANIFEST_FILE, RUN_FILE, METRICS_FILE,
                                             MODEL_CARD_FILE, SCORES_FILE}),
                checkpoints=False)


@dataclass
class Contents:
    """A directory sorted into the entries a layout wrote (`own`) and everything else (`foreign`)."""

    path: Path
    own: list[str]
    foreign: list[str]

    @property
    def empty(self) -> bool:
        return not self.own and not self.foreign


# ---------------------------------------------------------------------- looking
def refuse_non_directory(path: str | Path, flag: str = "--out") -> None:
    """RunDirError when `path` exists and is not a directory (a stat, not a listing)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{flag} {path} is a file, not a directory; give a directory path (it is created if absent)")


def inspect(path: str | Path, layout: Layout, flag: str = "--out") -> Contents:
    """Sort the entries of `path` by whether `layout` wrote them; RunDirError when `path` is not a directory."""
    path = Path(path)
    if not path.exists():
        return Contents(path, [], [])
    refuse_non_directory(path, flag)
    own, foreign = [], []
    for entry in sorted(path.iterdir()):
        if layout.checkpoints and entry.name == CHECKPOINTS and entry.is_symlink():
            raise RunDirError(
                f"{flag} {path}: {entry} is a symbolic link (to {os.readlink(entry)}); a run keeps its checkpoints "
                f"in a folder of its own and deletes only what is inside {path}. Replace the link by a folder (move "
                f"the checkpoints into it), or make {flag} itself the folder on the other disk"
            )
        if layout.checkpoints and entry.name == CHECKPOINTS and entry.is_dir():
            stray = _foreign_checkpoint_entries(entry)
            if stray:
                foreign += stray
            else:
                own.append(f"{CHECKPOINTS}/")
        elif entry.is_file() and _is_own_file(entry, layout):
            own.append(entry.name)
        else:
            foreign.append(entry.name + ("/" if entry.is_dir() else ""))
    return Contents(path, own, foreign)


def looks_exported(path: str | Path) -> bool:
    """True for a directory written by export_pretrained (a manifest beside the weights), e.g. the shipped model."""
    path = Path(path)
    return (path / MANIFEST_FILE).is_file() and (path / MODEL_FILE).is_file()


def _is_own_file(path: Path, layout: Layout) -> bool:
    """Whether `path` is one of the files `layout` writes: by name, then by content for the JSON files."""
    temp = TEMP_NAME.match(path.name)  # what atomic_write_text leaves if killed before its rename
    name = temp.group(1) if temp else path.name
    if name not in layout.files:
        return False
    if temp or name == MODEL_FILE:
        return True
    try:
        if name == METRICS_FILE:
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline(len(_LINE_START) * 1000)
            start = first.strip("\x00 \t\r\n")  # zeros: what a crash leaves where data never reached the disk
            if not first.endswith("\n"):  # empty, or a torn first line: a run killed before or in its first append
                return _LINE_START.startswith(start) or start.startswith(_LINE_START)
            return not start or parse_metrics_line(start) is not None
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    try:
        data = json.loads(text)
    except ValueError:
        # A damaged run.json (it is written atomically, so only the disk can tear it) is still the run's: it
        # starts as a run record does, and --overwrite may delete it.
        return name == RUN_FILE and text.startswith('{\n  "kind": ')
    if not isinstance(data, dict):
        return False
    if name == RUN_FILE:
        return "settings" in data
    if name == MANIFEST_FILE:
        return isinstance(data.get("sha256"), dict)
    try:  # config.json: ours when it is an AlbertConfig
        AlbertConfig.from_dict(data)
    except (ValueError, TypeError):
        return False
    return True


def _foreign_checkpoint_entries(root: Path) -> list[str]:
    """Entries of checkpoints/ that are not step directories of checkpoint files or interrupted saves."""
    foreign = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and (entry.name.startswith(TEMP_PREFIX) or SET_ASIDE.match(entry.name)):
            continue
        if entry.is_dir() and STEP_DIR.match(entry.name):
            foreign += [f"{CHECKPOINTS}/{entry.name}/{f.name}" for f in sorted(entry.iterdir())
                        if f.name not in CHECKPOINT_FILES or not f.is_file()]
        else:
            foreign.append(f"{CHECKPOINTS}/{entry.name}")
    return foreign


def listing(names: list[str]) -> str:
    """The first few names, and how many more there are."""
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _step_names(path: Path) -> list[str]:
    root = path / CHECKPOINTS
    return sorted(p.name for p in root.iterdir() if STEP_DIR.match(p.name)) if root.is_dir() else []


# ---------------------------------------------------------------------- runs
def check_run_dir(out: str | Path, flag: str = "--out") -> Contents:
    """Refuse `out` for a run when it is a file, an exported model or holds anything a run does not write."""
    out = Path(out)
    if out.is_dir() and looks_exported(out):
        raise RunDirError(
            f"{flag} {out} holds an exported model ({MODEL_FILE}, {MANIFEST_FILE}, {CONFIG_FILE}); a run never "
            f"writes into one, since its config and metrics would replace the model's. Choose a new {flag}; to "
            f"fine-tune from this model pass it to `albert-mini finetune --task TASK --init {out}`"
        )
    contents = inspect(out, RUN, flag)
    if contents.foreign:
        raise RunDirError(
            f"{flag} {out} holds files that no run wrote: {listing(contents.foreign)}. A run writes only into an "
            f"absent or empty directory or into its own run directory, and never deletes anything else, not "
            f"even with --overwrite; choose a new {flag} or move those files away"
        )
    return contents


def resumable(out: str | Path, record: dict, overwrite: bool, flag: str = "--out",
              contents: Contents | None = None) -> bool:
    """Whether `out` holds this very run (resume it) rather than nothing or a run --overwrite may replace.

    Raises RunDirError for a directory a run may not use (see `check_run_dir`), for a run with other settings
    or on changed text unless `overwrite`, and for run files without run.json unless `overwrite`.
    """
    out = Path(out)
    contents = contents if contents is not None else check_run_dir(out, flag)  # given: listed under the lock
    if contents.empty:
        return False
    old = _read_record(out / RUN_FILE)
    if old is _DAMAGED:
        if overwrite:
            return False
        raise RunDirError(f"{out / RUN_FILE} is damaged (not valid JSON) or holds parts runs do not write, so "
                          "the run's settings are unknown and "
                          f"it is not resumed; choose a new {flag}, or pass --overwrite to delete this run's files "
                          "and start again")
    if old is None:
        if overwrite:
            return False
        steps = _step_names(out)
        held = f"checkpoints {listing(steps)}" if steps else listing(contents.own)
        raise RunDirError(
            f"{flag} {out} holds {held} but no {RUN_FILE}, so the run's settings are unknown and it is not "
            f"resumed; put its {RUN_FILE} back to resume it, choose a new {flag}, or pass --overwrite to delete "
            "these run files and start again"
        )
    diffs = record_differences(old, record)
    if diffs:
        if overwrite:
            return False
        raise RunDirError(
            f"{flag} {out} holds a {KIND_NAMES.get(old['kind'], 'training')} run with different "
            f"settings: {'; '.join(diffs)}. Repeat that run's flags to resume it, choose a new {flag}, or pass "
            "--overwrite to delete it"
        )
    if old.get("corpus") and record.get("corpus"):
        changes = fingerprint_changes(old["corpus"], record["corpus"])
        if changes:
            if overwrite:
                return False
            text = "--train-file and --test-file" if record.get("kind") == "finetune" else "--corpus"
            raise RunDirError(
                f"the text of {text} changed since the run in {out} started: {listing(changes)}. Resuming on "
                f"other text would not continue that run; restore the text to resume, choose a new {flag}, or pass "
                "--overwrite to start over"
            )
    return True


def record_differences(old: dict, new: dict) -> list[str]:
    """`part.field: old -> new` for every recorded setting, model field or tokenizer detail that differs."""
    if old["kind"] != new["kind"]:
        return [f"kind: {old['kind']!r} -> {new['kind']!r}"]
    # A fine-tuning run records no model, a run on synthetic text no tokenizer.
    parts = {part: (old.get(part) or {}, new.get(part) or {}) for part in ("settings", "model", "tokenizer")}
    return [f"{part}.{line}" for part, (a, b) in parts.items() for line in config_differences(a, b)]


_DAMAGED = {}  # what _read_record returns for a run.json that does not parse, or is not shaped as runs write it


def _read_record(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return _DAMAGED
    return record if _well_formed(record) else _DAMAGED


def _well_formed(record) -> bool:
    """Whether a parsed run.json has the shape runs write: an object whose kind is a string, whose settings, model,
    tokenizer and corpus are objects (or null) and whose notes are a list; a hand-edited one may be anything."""
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        return False
    parts = [record.get(part) for part in ("settings", "model", "tokenizer", "corpus")]
    if not all(part is None or isinstance(part, dict) for part in parts):
        return False
    return isinstance((record.get("corpus") or {}).get("files", {}), dict) and isinstance(record.get("notes", []),
                                                                                         list)


def recorded_notes(out: str | Path) -> list[str]:
    """The notes of out/run.json (e.g. resumptions on another device), which a resumed run's record keeps."""
    record = _read_record(Path(out) / RUN_FILE)
    notes = record.get("notes") if isinstance(record, dict) else None
    return [str(n) for n in notes] if isinstance(notes, list) else []


def amend_record(out: str | Path, note: str | None = None, **fields) -> None:
    """Set `fields` in out/run.json and append `note` to its notes; nothing when there is no readable run.json
    (a run trained without a record, such as a fine-tuning run of the library)."""
    path = Path(out) / RUN_FILE
    record = _read_record(path)
    if not isinstance(record, dict) or record is _DAMAGED:
        return
    record.update(fields)
    if note is not None:
        record["notes"] = [*recorded_notes(out), note]
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")


def clear(out: str | Path, layout: Layout) -> None:
    """Delete the entries `layout` writes in `out` (after `inspect` found nothing foreign), and nothing else."""
    out = Path(out)
    contents = inspect(out, layout)
    if contents.foreign:
        raise RunDirError(f"{out} holds files that are not a {layout.name}'s: {listing(contents.foreign)}")
    # run.json and the manifest first: a half-cleared directory is then never taken for a run or a model.
    first = [name for name in (RUN_FILE, MANIFEST_FILE) if name in contents.own]
    for name in first + [n for n in contents.own if n not in first]:
        target = out / name.rstrip("/")
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    if contents.own:
        fsync_folder(out)


def sweep_interrupted(out: str | Path) -> None:
    """Delete what an interrupted save or deletion left in out/checkpoints/ (.tmp-*), as the next save does: for
    a run that ends without another save (a finished run rerun), which would otherwise keep a checkpoint's worth
    of bytes there. Only the run's one writer (RunLock) calls it."""
    root = Path(out) / CHECKPOINTS
    if root.is_dir() and not root.is_symlink():
        for stale in sorted(root.glob(f"{TEMP_PREFIX}*")):
            shutil.rmtree(stale, ignore_errors=True)


# ---------------------------------------------------------------------- exports
def check_export_dir(out: str | Path, overwrite: bool) -> None:
    """Refuse an export target that holds a run, foreign files, or (without `overwrite`) an exported model."""
    out = Path(out)
    contents = inspect(out, EXPORT, flag="export target")
    if contents.empty:
        return
    if not looks_exported(out) and ((out / CHECKPOINTS).exists() or (out / RUN_FILE).exists()):
        raise RunDirError(
            f"{out} holds a training run (run.json or checkpoints/), not an exported model; export into a new "
            "or empty directory, so the run and its checkpoints stay as they are"
        )
    if contents.foreign:
        raise RunDirError(
            f"{out} holds files an export does not write: {listing(contents.foreign)}; export into a new or empty "
            "directory (nothing else in it is deleted, not even with overwrite=True)"
        )
    if not overwrite:
        raise RunDirError(
            f"{out} already holds an exported model ({listing(contents.own)}); pass overwrite=True to replace it, "
            "or export into a new directory"
        )


# ---------------------------------------------------------------------- one writer
class RunLock:
    """An exclusive lock on the run directory for as long as this object lives (or until `release`).

    On Linux and macOS it is an flock on the directory itself (filelock's `lock_descriptor`), so it adds no file to
    it; Windows cannot open a directory, so there the lock is on a file in the temporary folder named after the
    directory's resolved path. A second run on the same directory gets RunDirError at once, naming the process that
    holds it where Linux tells it (/proc/locks). The lock belongs to the open descriptor, so the system releases it
    when the process dies, even by kill -9: a stale lock cannot exist. The package imports without `fcntl`.
    """

    def __init__(self, out: str | Path, flag: str = "--out"):
        self._fd = None
        out = Path(out)
        check_out_folder(out, flag)
        out.mkdir(parents=True, exist_ok=True)
        self.path = out
        self._fd = _open_lock_target(out)
        try:
            locked = lock_descriptor(self._fd, blocking=False)
        except OSError:  # a file system without flock (some network mounts): run unlocked, as before locks existed
            return
        if not locked:
            os.close(self._fd)
            self._fd = None
            holder = lock_holder(out)
            who = f"process {holder}" if holder else "another process"
            raise RunDirError(f"{flag} {out} is in use by another run ({who}); wait for it to end or stop it, or "
                              f"choose a new {flag}: two runs writing one directory would mix their checkpoints "
                              "and metrics")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor releases the lock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:  # at interpreter exit `os` may be gone; the kernel drops the lock anyway
            pass


LOCK_IN_FOLDER = hasattr(os, "O_DIRECTORY")  # POSIX opens a directory to lock it; Windows cannot


def _open_lock_target(out: Path) -> int:
    """A descriptor whose lock stands for `out`'s: the directory itself, or (Windows) a file in the temp folder."""
    if LOCK_IN_FOLDER:
        return os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    key = hashlib.sha256(os.path.normcase(str(out.resolve())).encode("utf-8")).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / "albert-mini-locks"
    folder.mkdir(exist_ok=True)
    return os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o666)


def lock_holder(path: str | Path) -> int | None:
    """The id of a process holding an flock on `path` (Linux's /proc/locks), or None when it cannot be told."""
    inode = os.stat(path).st_ino
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and len(fields) >= 6 and fields[-3].split(":")[-1] == str(inode):
            pid = int(fields[-4])
            if pid != os.getpid():
                return pid
    return None


# ---------------------------------------------------------------------- metrics.jsonl
_LINE_START = '{"type": '  # how every line the trainer writes starts (json.dumps of a dict led by "type")


def parse_metrics_line(line: str) -> dict | None:
    """One line of a metrics log as its record, or None when it is not one (torn, damaged, or not a record)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if isinstance(record, dict) and "type" in record and isinstance(record.get("step"), int):
        return record
    return None


def read_metrics(path: str | Path) -> tuple[list[dict], int]:
    """The lines of a metrics log as one uninterrupted run wrote them, and how many damaged lines were dropped (a
    torn tail, usually).

    The log is appended and never rewritten (training/shell/log.py): a resume line at step s sets aside what the
    earlier life of the run logged after s, and of several lines of one kind at one step the last one counts. The
    one reader of metrics.jsonl in the training code (the run directory check reads its first line with
    `parse_metrics_line` too).
    """
    path = Path(path)
    if not path.is_file():
        return [], 0
    latest, dropped = {}, 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip("\x00 \t\r"):  # blank, or the zeros a crash can leave where data never reached the disk
            continue
        record = parse_metrics_line(line)
        if record is None:
            dropped += 1
            continue
        if record["type"] == "resume":
            latest = {key: r for key, r in latest.items() if r["step"] <= record["step"]}
        latest.pop((record["type"], record["step"]), None)  # the last one counts, where it stands
        latest[record["type"], record["step"]] = record
    return list(latest.values()), dropped


def read_run(folder: Path) -> tuple[dict, list[dict]]:
    """(run.json settings, eval curve with minutes and training tokens) of a pretraining run directory or an
    exported model that kept its metrics: what learning curves are drawn from."""
    folder = Path(folder)
    metrics = folder / METRICS_FILE
    if not metrics.is_file():
        raise RunDirError(f"{folder} has no {METRICS_FILE}; give a run directory of albert-mini pretrain "
                         "(or an exported model that kept its metrics)")
    settings = json.loads((folder / RUN_FILE).read_text()).get("settings", {}) if (folder / RUN_FILE).is_file() else {}
    curve, tokens = [], 0
    for row in read_metrics(metrics)[0]:  # a torn last line (a killed run) is left out
        if row.get("type") == "train":
            # Training tokens reached by the next evaluation (tests/study/test_recipe_results.py's logs have none).
            tokens = row.get("tokens_seen", tokens)
        elif row.get("type") == "eval":
            curve.append({"step": row["step"], "minutes": row["elapsed_s"] / 60, "tokens": tokens,
                          "mlm_acc": row["mlm_acc"], "sentence_acc": row.get("sentence_acc")})
    if not curve:
        raise RunDirError(f"{metrics} has no evaluation lines; pretrain with --eval-every > 0")
    return settings, curve
