"""The write rule: one rule, in one place, for every file any `albert-mini` command writes.

Every command declares what it writes and reads (`WRITES`, a `Writes` in its module under albert_mini/commands/)
and calls `WRITES.check(...)` (`check_writes`) with the paths of this run before its work starts, so a refused
destination costs nothing. tests/test_write_rule.py walks every command of the command table and checks it. The rule:

- A command replaces only a file it created in this run, or a regular file the user named with --overwrite (a
  folder of outputs that records them, `OutputRecord`, also lets the command replace what it wrote there earlier
  and nobody has changed since).
- It never replaces one of its inputs, whether a flag named it or it was taken by default (defaults are resolved
  before the check; a file is the same file when its path or its device and inode are, so a hard link or a
  symbolic link to an input is refused too), even with --overwrite; a folder of outputs never holds an input.
- It never replaces a shipped file (under data/, figures/ or chapters/) unless the command exists to regenerate
  that file and says so (`regenerates`: `corpus`, `austen-tasks`, `book` and `experiments` regenerate theirs as
  their job, `tokenizer` the Austen tokenizer with --overwrite, the research commands and `model-card` their own
  results, figures and cards with --overwrite).
- It never writes over a device, a FIFO, a socket or a folder, and never deletes a file it did not write.
- A manifest (SHA256SUMS) is written only by the command that owns it, which keeps the lines it does not own
  (albert_mini.paths.update_manifest).

Writing: `atomic_write_bytes` / `atomic_write_text` (the package's one atomic writer) write a temp file beside the
destination, fsync it and rename it over the destination, so a crash or a full disk leaves the old file whole or
the new one whole, never a truncated one; `fsync_path` is the package's one fsync of a file or a folder.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError
from .paths import GNU_LINE, MANIFEST, REPO_ROOT, manifest_entry, sha256_file

SHIPPED_FOLDERS = ("data", "figures", "chapters")  # what the checkout ships; only their regenerators replace them


class UnsafeWriteError(UserError, ValueError):
    """A destination a command may not write; the message names the flag, the path and the fix."""


def nearest_existing(path: Path) -> Path:
    """`path` itself or its closest ancestor that exists (what will hold the folders a write creates)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_folder_writable(folder: str | Path, flag: str, shown: str | Path | None = None) -> None:
    """Refuse when `folder` cannot be created or written: a file in its way, or no write permission."""
    shown = folder if shown is None else shown
    holder = nearest_existing(Path(folder))
    if not holder.is_dir():
        raise UnsafeWriteError(f"{flag} {shown}: {holder} is a file, not a folder, so nothing can be written "
                               "below it; choose a path in a folder")
    try:  # a real write, since os.access says yes to root even on a read-only or virtual file system
        with tempfile.TemporaryFile(dir=holder):
            pass
    except OSError as err:
        raise UnsafeWriteError(f"{flag} {shown}: nothing can be written in {holder} ({err.strerror or err}); choose "
                               "a folder you may write to, or change its permissions") from None


# --------------------------------------------------------------------------- what a path is
def special_kind(path: str | Path) -> str | None:
    """What `path` is when it exists and is not a regular file ("a folder", "a device", "a FIFO (named pipe)",
    "a socket"), following symbolic links; None for a regular file or nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent, a dangling link, or a path through a file: the folder check says which
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def shipped_folder(path: str | Path) -> str | None:
    """"data", "figures" or "chapters" when `path` lies in that shipped folder of the checkout, else None."""
    resolved = Path(path).resolve()
    for name in SHIPPED_FOLDERS:
        if resolved.is_relative_to(REPO_ROOT / name):
            return name
    return None


def _file_id(path: str | Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Inputs:
    """The files a command reads: each named path (a folder stands for every file below it), by resolved path and
    by (st_dev, st_ino), so another name of the same file (a hard link, a symbolic link) is recognised too."""

    def __init__(self, paths: Iterable[str | Path | None]):
        self.by_path: dict[Path, Path] = {}
        self.by_id: dict[tuple[int, int], Path] = {}
        for given in paths:
            if given is None:
                continue
            given = Path(given)
            if given.is_dir():
                for folder, _, names in os.walk(given):
                    for name in names:
                        self._add(Path(folder) / name)
            else:
                self._add(given)

    def _add(self, path: Path) -> None:
        self.by_path.setdefault(path.resolve(), path)
        file_id = _file_id(path)
        if file_id is not None:
            self.by_id.setdefault(file_id, path)

    def same(self, path: str | Path) -> Path | None:
        """The input that `path` is (the same path, or the same file under another name), else None."""
        found = self.by_path.get(Path(path).resolve())
        if found is None:
            file_id = _file_id(path)
            found = self.by_id.get(file_id) if file_id is not None else None
        return found

    def held_by(self, folder: str | Path) -> Path | None:
        """An input that lies in `folder` (at any depth), else None."""
        folder = Path(folder).resolve()
        return next((given for resolved, given in self.by_path.items() if resolved.is_relative_to(folder)), None)


# --------------------------------------------------------------------------- the rule
CHECKED: list[str] = []  # the commands whose writes were checked in this process, in order (for the tests)


@dataclass
class WritePlan:
    """What a command was allowed to write in this run: the files (created or replaced) and the output folders."""

    command: str
    files: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)


def _check_out_folder(flag: str, folder: Path, sources: Inputs) -> Path:
    """`folder` once a command may write files into it: absent or a writable folder, holding none of its inputs."""
    kind = special_kind(folder)
    if folder.exists() and kind != "a folder":
        what = "a file" if kind is None else kind
        raise UnsafeWriteError(f"{flag} {folder} is {what}, not a folder; give a folder path (it is created if "
                               "absent)")
    held = sources.held_by(folder)
    if held is not None:
        raise UnsafeWriteError(f"{flag} {folder} holds {held}, one of this command's inputs; choose a folder "
                               "apart from the files it reads")
    check_folder_writable(folder, flag)
    return folder


def check_writes(command: str, files: Iterable[tuple[str, str | Path]] = (),
                 folders: Iterable[tuple[str, str | Path]] = (), inputs: Iterable[str | Path | None] = (),
                 overwrite: bool = False, regenerates: Iterable[str | Path] = (), own: Iterable[str | Path] = (),
                 overwrite_flag: str = "--overwrite") -> WritePlan:
    """The write rule (see the module's docstring), checked before command `command` does any work.

    files: (flag, path) of each file it will write. folders: (flag, path) of each folder it will write files into
    (absent, or a folder; it never holds an input). inputs: every file or folder it reads, defaults resolved.
    overwrite: the user's --overwrite (`overwrite_flag`), or a regenerating command writing its shipped files.
    regenerates: the shipped files (or folders of them) this command exists to regenerate; any other file under
    data/, figures/ or chapters/ is refused even with overwrite. own: existing files this command wrote earlier
    and nobody changed since (an `OutputRecord`'s), which it may replace without overwrite.
    Raises UnsafeWriteError naming the flag, the path and the fix; returns the plan.
    """
    CHECKED.append(command)
    sources = Inputs(inputs)
    regenerated = [Path(p).resolve() for p in regenerates]
    owned = {Path(p).resolve() for p in own}
    plan, flags = WritePlan(command), []
    plan.folders += [_check_out_folder(flag, Path(folder), sources) for flag, folder in folders]
    for flag, path in files:
        path = Path(path)
        kind = special_kind(path)
        if kind == "a folder":
            raise UnsafeWriteError(f"{flag} {path} is a folder; give a file path, e.g. {path / 'out'}")
        if kind is not None:
            raise UnsafeWriteError(f"{flag} {path} is {kind}, not a regular file; albert-mini writes only regular "
                                   "files, so choose a file path")
        source = sources.same(path)
        if source is not None:
            also = "" if os.path.abspath(source) == os.path.abspath(path) else f" ({source} under another name)"
            raise UnsafeWriteError(f"{flag} {path} is one of this command's input files{also}; writing there would "
                                   "destroy it, so choose another path")
        resolved = path.resolve()
        twin = next((f for f, p in zip(flags, plan.files, strict=True) if p.resolve() == resolved), None)
        if twin is not None:
            raise UnsafeWriteError(f"{flag} {path} is also where {twin} goes; one file cannot hold both, so give "
                                   "them different paths")
        if (path.exists() or path.is_symlink()) and resolved not in owned:
            shipped = shipped_folder(path)
            if shipped and not any(resolved.is_relative_to(r) for r in regenerated):
                raise UnsafeWriteError(f"{flag} {path} is a file the project ships in {shipped}/, which "
                                       f"`albert-mini {command}` does not regenerate; choose a path outside data/, "
                                       "figures/ and chapters/")
            if not overwrite:
                raise UnsafeWriteError(f"{flag} {path} already exists and this command did not create it; choose a "
                                       f"new path, or pass {overwrite_flag} to replace it")
            if not os.access(path, os.W_OK):
                raise UnsafeWriteError(f"{flag} {path} is read-only; choose another path or change its "
                                       "permissions")
        check_folder_writable(path.parent, flag, shown=path)
        plan.files.append(path)
        flags.append(flag)
    return plan


@dataclass(frozen=True)
class Writes:
    """A command's declaration to the write rule: what it writes, what it reads, and which shipped files it
    regenerates (one line each, as the README's table and the tests show them). `check` applies the rule."""

    command: str
    outputs: str
    inputs: str
    regenerates: str = "nothing"

    def check(self, **kwargs) -> WritePlan:
        """`check_writes` for this command (same arguments)."""
        return check_writes(self.command, **kwargs)


def check_out_folder(folder: str | Path, flag: str = "--out", inputs: Iterable[str | Path] = (),
                     command: str = "") -> Path:
    """`folder` once outputs may be written into it (it exists as a writable folder, or can be created)."""
    return check_writes(command, folders=[(flag, folder)], inputs=inputs).folders[0]


# --------------------------------------------------------------------------- a folder's record of its outputs
OUTPUT_RECORD = ".albert-mini-outputs.json"


class OutputRecord:
    """The files a command wrote into a folder of its outputs, with their sha256 (OUTPUT_RECORD in the folder).

    What it lists, unchanged since, is the command's own: a later run may replace or delete it. A file it does not
    list, or one changed since (a learner's edited notebook), is someone else's.

    A kill cannot leave the folder refused: before writing, a command lists each file it is about to write with the
    sha256 it will have (`expect`, saved at once), and writes each one atomically, so every file a kill -9 leaves
    is either as the record lists it, or as it was before, or a temp file of an unfinished write beside a listed
    name (`leftovers`, which the next run deletes). The rerun then replaces or deletes them as its own.
    """

    def __init__(self, folder: str | Path, command: str):
        self.folder, self.command = Path(folder), command
        self.files: dict[str, str] = {}
        self.writing: dict[str, str] = {}  # files being written: name -> the sha256 they will have
        path = self.folder / OUTPUT_RECORD
        if path.is_file():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError):
                record = {}
            if isinstance(record, dict) and record.get("command") == command and isinstance(record.get("files"), dict):
                self.files = {str(k): str(v) for k, v in record["files"].items()}
                writing = record.get("writing", {})
                self.writing = {str(k): str(v) for k, v in writing.items()} if isinstance(writing, dict) else {}

    def _name(self, path: str | Path) -> str | None:
        try:
            return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(self.folder))).as_posix()
        except ValueError:
            return None

    def _digest(self, path: str | Path) -> str | None:
        """The current sha256 of `path` when the record lists it with that digest (written, or being written)."""
        name = self._name(path)
        path = Path(path)
        if (name not in self.files and name not in self.writing) or path.is_symlink() or not path.is_file():
            return None
        digest = sha256_file(path)
        return digest if digest in (self.files.get(name), self.writing.get(name)) else None

    def unchanged(self, path: str | Path) -> bool:
        """Whether `path` is a regular file this record lists with its current sha256."""
        return self._digest(path) is not None

    def own(self) -> list[Path]:
        """The listed files that are still as the command wrote them (or was writing them)."""
        return [self.folder / name for name in sorted(set(self.files) | set(self.writing))
                if self.unchanged(self.folder / name)]

    def leftovers(self) -> list[Path]:
        """The temp files of this command's unfinished atomic writes (`temp_name` of a listed file, or of the record
        itself): what a kill between a write and its rename leaves. The next run deletes them."""
        listed = set(self.files) | set(self.writing) | {OUTPUT_RECORD}
        found = []
        for folder, _, names in os.walk(self.folder):
            for name in names:
                temp = TEMP_NAME.match(name)
                if temp and self._name(Path(folder) / temp.group(1)) in listed:
                    found.append(Path(folder) / name)
        return sorted(found)

    def foreign(self) -> list[Path]:
        """Every file in the folder (at any depth) that is not listed unchanged, the record itself and the temp
        files of its writes aside."""
        found, leftovers = [], set(self.leftovers())
        for folder, _, names in os.walk(self.folder):
            for name in names:
                path = Path(folder) / name
                if path != self.folder / OUTPUT_RECORD and path not in leftovers and not self.unchanged(path):
                    found.append(path)
        return sorted(found)

    def expect(self, digests: dict[Path, str]) -> Path:
        """Before writing: list each file of `digests` (path -> the sha256 it will have once written) as being
        written, and save the record now. What an earlier run left (written, or being written when it was killed)
        stays listed with the digest it has, so a second kill loses nothing either; a listed file that is gone or
        changed since is dropped (someone else's now)."""
        settled = {}
        for name in sorted(set(self.files) | set(self.writing)):
            digest = self._digest(self.folder / name)
            if digest is not None:
                settled[name] = digest
        names = {}
        for path, digest in digests.items():
            name = self._name(path)
            if name is None:
                raise ValueError(f"{path} is not in {self.folder}")
            names[name] = digest
        self.files, self.writing = settled, names
        return self.save()

    def add(self, path: str | Path) -> None:
        """List `path` (a file just written into the folder) with its sha256."""
        name = self._name(path)
        if name is None:
            raise ValueError(f"{path} is not in {self.folder}")
        self.files[name] = sha256_file(Path(path))
        self.writing.pop(name, None)

    def forget(self, path: str | Path) -> None:
        self.files.pop(self._name(path), None)
        self.writing.pop(self._name(path), None)

    def save(self) -> Path:
        record = {"command": self.command, "note": "files albert-mini wrote here, with their sha256: a later run "
                  "replaces or deletes only these, and only while unchanged", "files": dict(sorted(self.files.items()))}
        if self.writing:  # a run in progress, or one stopped before it wrote these: either content is its own
            record["writing"] = dict(sorted(self.writing.items()))
        return atomic_write_text(self.folder / OUTPUT_RECORD, json.dumps(record, indent=1) + "\n")


def manifest_owned(folder: str | Path, names: Iterable[str]) -> list[Path]:
    """What a command that owns `names` in `folder` wrote there earlier, unchanged since (its own, which a rerun may
    replace): the files among `names` that the folder's SHA256SUMS lists with their current sha256, and the
    manifest itself when it lists nothing but `names`."""
    folder, names = Path(folder), set(names)
    manifest = folder / MANIFEST
    if special_kind(manifest) is not None or not manifest.is_file():
        return []
    lines = manifest.read_text(errors="replace").splitlines()
    listed = dict(entry for entry in map(manifest_entry, lines) if entry is not None)
    own = [folder / name for name in sorted(names) if name in listed and special_kind(folder / name) is None
           and (folder / name).is_file() and sha256_file(folder / name) == listed[name]]
    return own + ([manifest] if set(listed) <= names and all(line.strip() == "" or manifest_entry(line)
                                                             for line in lines) else [])


# --------------------------------------------------------------------------- writing
def temp_name(path: Path) -> Path:
    """The temp file beside `path` that a write goes through (TEMP_NAME recognises it)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


TEMP_NAME = re.compile(r"^\.(.+)\.tmp-\d+$")  # temp_name's names: what an atomic write killed before its rename leaves


# Windows cannot open a folder (os.open raises PermissionError), so a folder is fsynced only elsewhere; there, the
# file system's own journal keeps a rename.
FSYNC_FOLDERS = os.name != "nt"


def fsync_path(path: str | Path) -> None:
    """fsync a file, or a folder (so that a rename or a deletion in it is on disk; not where folders cannot be
    opened: Windows)."""
    if not FSYNC_FOLDERS and Path(path).is_dir():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: str | Path) -> None:
    """`fsync_path` of a folder (nothing where folders cannot be opened)."""
    if FSYNC_FOLDERS:
        fsync_path(folder)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`, fsync the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)  # a full disk or a Ctrl-C leaves the old file, and no half-written temp
        if isinstance(err, OSError) and err.filename is None:  # a failed write names no file: name the destination
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise
    fsync_folder(path.parent)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """`atomic_write_bytes` of `text` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


# --------------------------------------------------------------------------- manifests
def update_manifest(folder: str | Path, names: list[str]) -> None:
    """Record the current sha256 of `names` (files in `folder`) in its manifest: their lines are updated where
    they stand (in their own format), names not listed yet are added at the end (sorted), and every other line (the
    entries of other commands, comments, BSD-style lines) is kept as it is, in its place.

    Only the command that owns these entries calls this (the write rule)."""
    folder = Path(folder)
    path = folder / MANIFEST
    digests = {name: sha256_file(folder / name) for name in names}
    lines, done = [], set()
    for line in path.read_text().splitlines(keepends=True) if path.is_file() else []:
        entry = manifest_entry(line)
        name = entry[0] if entry else None
        if name not in digests:
            lines.append(line if line.endswith("\n") else line + "\n")
        elif name not in done:  # a second line for the same file would contradict the first: dropped
            gnu = GNU_LINE.match(line.rstrip("\r\n"))
            lines.append(f"{digests[name]} {gnu.group(2)}{name}\n" if gnu else f"SHA256 ({name}) = {digests[name]}\n")
            done.add(name)
    lines += [f"{digests[name]}  {name}\n" for name in sorted(digests) if name not in done]
    atomic_write_text(path, "".join(lines))  # all or nothing: a torn manifest would fail every check
