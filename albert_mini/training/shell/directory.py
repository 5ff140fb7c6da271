"""A run's directory (--out), settled once for every rank: rank 0 alone checks, locks, clears and records it and
picks the checkpoint to resume from; every rank then confirms it sees the folder rank 0 wrote, and all ranks go on
together or stop together with the same one-line error. A node that cannot see the run's folder (a multi-node run
whose --out is not shared) is named in that line; no rank is left waiting. Which folders a run may write into, and
what --overwrite may delete, is training/rundir.py's rule."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ...safe_files import atomic_write_text, check_out_folder
from .. import rundir
from ..checkpoint import newest_intact_checkpoint
from ..distributed import DistInfo, broadcast_object, gather_objects

SHARED_FOLDER = ("every process of a run must see the same --out: on several machines, a folder on a file system "
                 "they all mount (NFS, Lustre, a cloud file share), since rank 0 alone writes the run's files and "
                 "every rank resumes from its checkpoints")


@dataclass
class RunDirectory:
    """A run's --out, settled once for every rank: checked and locked by rank 0, resumed from one checkpoint."""

    out: Path
    info: DistInfo = field(default_factory=DistInfo)
    lock: rundir.RunLock | None = None
    resuming: bool = False
    checkpoint: Path | None = None  # the checkpoint every rank resumes from (rank 0's pick), None: step 0
    # What --out held when rank 0 locked it at `open` (listed once: no other run writes a locked folder); None for
    # a folder that did not exist then, listed again when it is settled.
    contents: rundir.Contents | None = None

    @classmethod
    def open(cls, out: str | Path, info: DistInfo | None = None) -> RunDirectory:
        """Refuse at once a folder no run may use; rank 0 locks one that exists (a new one once it is created, so
        bad flags found while the data is read leave no folder behind)."""
        info = info or DistInfo()
        out = Path(out)
        contents = rundir.check_run_dir(out)
        check_out_folder(out)
        lock = rundir.RunLock(out) if info.is_main and out.is_dir() else None
        return cls(out, info, lock, contents=contents if lock is not None else None)

    def settle(self, record: dict, overwrite: bool, files: dict[str, str] | None = None) -> bool:
        """Resume or start the run `record` describes; True when resuming. Rank 0 decides, clears what --overwrite
        allows, writes run.json (then `files`, {name: text}) and picks the checkpoint; the other ranks take its
        decision and check that they see the same folder. Every rank returns, or every rank raises the same
        RunDirError."""
        decision = decided_on_rank0(lambda: self._decide(record, overwrite, files or {}), self.info,
                                    f"rank 0 could not settle {self.out}: ")
        seen = None if self.info.is_main else self._sees(decision)  # rank 0 wrote them
        problems = [p for p in gather_objects(seen, self.info) if p]
        if problems:
            raise rundir.RunDirError(f"{'; '.join(problems)}: {SHARED_FOLDER}")
        self.resuming = decision["resume"]
        name = decision["checkpoint"]
        self.checkpoint = self.out / rundir.CHECKPOINTS / name if name else None
        return self.resuming

    def refuse_other_settings(self, record: dict, overwrite: bool) -> None:
        """Refuse, before any text is read, a folder holding a run of other settings, model or tokenizer (the
        text's fingerprint is compared by `settle`, once the text is read). Rank 0 checks; every rank raises."""
        decided_on_rank0(lambda: rundir.resumable(self.out, {**record, "corpus": None}, overwrite,
                                                  contents=self.contents), self.info)

    def _decide(self, record: dict, overwrite: bool, files: dict[str, str]) -> dict:
        same = rundir.resumable(self.out, record, overwrite, contents=self.contents)
        notes = rundir.recorded_notes(self.out) if same else []  # kept: a resumed run is still that run
        if self.lock is None:
            self.lock = rundir.RunLock(self.out)
        record = {**record, "notes": notes} if notes else record
        if not same:
            rundir.clear(self.out, rundir.RUN)
        self.out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, indent=2) + "\n"
        atomic_write_text(self.out / rundir.RUN_FILE, text)  # first: the files are a run
        for name, content in files.items():
            atomic_write_text(self.out / name, content)
        # A damaged newest checkpoint is set aside here, once, by the only writer.
        checkpoint = newest_intact_checkpoint(self.out, set_aside=True) if same else None
        return {"resume": same, "checkpoint": checkpoint.name if checkpoint else None,
                "run_json": hashlib.sha256(text.encode("utf-8")).hexdigest()}

    def _sees(self, decision: dict) -> str | None:
        """None when this rank (not rank 0) sees the run.json (and checkpoint) rank 0 wrote, else what it sees
        instead."""
        where = f"rank {self.info.rank} (--out {self.out})"
        try:
            text = (self.out / rundir.RUN_FILE).read_bytes()
        except OSError:
            return f"{where} does not see the {rundir.RUN_FILE} rank 0 wrote"
        if hashlib.sha256(text).hexdigest() != decision["run_json"]:
            return f"{where} sees another {rundir.RUN_FILE} than the one rank 0 wrote"
        name = decision["checkpoint"]
        if name and not (self.out / rundir.CHECKPOINTS / name).is_dir():
            return f"{where} does not see the checkpoint {name} that rank 0 resumes from"
        return None

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def decided_on_rank0(decide, info: DistInfo, context: str = ""):
    """What `decide()` returns on rank 0, handed to every rank. If it raises, every rank raises: rank 0 its own
    error, the others a RunDirError with its message after `context` (every rank must hear it, or the others would
    wait for a decision forever)."""
    outcome, failure = None, None
    if info.is_main:
        try:
            outcome = {"value": decide()}
        except Exception as err:
            outcome, failure = {"error": str(err)}, err
    outcome = broadcast_object(outcome, info)
    if failure is not None:
        raise failure
    if "error" in outcome:
        raise rundir.RunDirError(f"{context}{outcome['error']}")
    return outcome["value"]
