"""The bounds of one grading sandbox: its memory (tmpfs included), its processes, its scratch, /tmp and /dev/shm.

    limits = Limits(memory_gb=4, processes=256, scratch_mb=1024, tmp_mb=512)

How each is enforced:

- scratch, /tmp and /dev/shm are tmpfs of a fixed size (bubblewrap's --size); the only file the sandbox can write
  outside them is the runner's bundle, and every process's files are capped by RLIMIT_FSIZE (set inside the
  sandbox, so no student process can raise it);
- memory and processes: where this user can create a cgroup (v1 memory and pids hierarchies, or a v2 cgroup
  whose parent delegates both controllers), each sandbox gets one, whose memory limit counts the tmpfs pages it
  writes and whose pids limit counts every process; elsewhere each process gets `memory_gb` of address space
  (RLIMIT_AS) and the sandbox's user namespace RLIMIT_NPROC processes (which does not bind root), and the tmpfs
  are bounded apart from the memory limit. `unavailable()` says which, in one line, at the start of `grade`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Limits:
    memory_gb: float = 4.0  # the sandbox's memory (with a cgroup, its tmpfs included), else each process's
    processes: int = 256
    scratch_mb: int = 1024  # the notebook's folder, its home and its answers
    tmp_mb: int = 512  # /tmp, and /dev/shm as much again
    bundle_mb: int = 256  # the largest file any process in the sandbox may write, the runner's bundle included

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gb * 2**30)


def _own_cgroup(controller: str | None) -> Path | None:
    """This process's cgroup folder for `controller` (v1), or its v2 cgroup (controller None)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if controller is None and number == "0" and controllers == "":
            base = CGROUP_ROOT / "unified" if (CGROUP_ROOT / "unified" / "cgroup.controllers").exists() else CGROUP_ROOT
            return base / path.lstrip("/")
        if controller is not None and controller in controllers.split(","):
            return CGROUP_ROOT / controllers / path.lstrip("/")
    return None


class Cgroup:
    """One sandbox's cgroup(s): made before it starts, the sandbox's first process moved in, removed after."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders  # "memory" / "pids" (v1) or "both" (v2) -> its folder

    @classmethod
    def make(cls, limits: Limits, name: str) -> Cgroup | None:
        """A new cgroup bounding memory and processes, or None where this user cannot make one."""
        version2 = _own_cgroup(None)
        if version2 is not None and {"memory", "pids"} <= set(_read(version2 / "cgroup.subtree_control").split()):
            with contextlib.suppress(OSError):
                folder = version2 / name
                folder.mkdir()
                made = cls({"both": folder})
                if made._write(folder / "memory.max", limits.memory_bytes) and \
                        made._write(folder / "pids.max", limits.processes):
                    made._write(folder / "memory.swap.max", 0)
                    return made
                made.remove()
        memory, pids = _own_cgroup("memory"), _own_cgroup("pids")
        if memory is None or pids is None:
            return None
        made = cls({})
        try:
            for kind, parent in (("memory", memory), ("pids", pids)):
                (parent / name).mkdir()
                made.folders[kind] = parent / name
        except OSError:
            made.remove()
            return None
        if made._write(memory / name / "memory.limit_in_bytes", limits.memory_bytes) and \
                made._write(pids / name / "pids.max", limits.processes):
            made._write(memory / name / "memory.memsw.limit_in_bytes", limits.memory_bytes)  # where swap is counted
            return made
        made.remove()
        return None

    @staticmethod
    def _write(path: Path, value: int) -> bool:
        try:
            path.write_text(str(value))
            return True
        except OSError:
            return False

    def enter(self) -> None:
        """Move the calling process in (run in the sandbox's first process before it execs)."""
        for folder in self.folders.values():
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def peak_memory(self) -> int | None:
        for kind, name in (("both", "memory.peak"), ("memory", "memory.max_usage_in_bytes")):
            if kind in self.folders:
                text = _read(self.folders[kind] / name).strip()
                return int(text) if text.isdigit() else None
        return None

    def remove(self) -> None:
        """Kill whatever is left in the cgroup and remove it (best effort: an empty cgroup is harmless)."""
        for folder in self.folders.values():
            for _ in range(50):
                pids = [int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit()]
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    folder.rmdir()
                    break
                time.sleep(0.1)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def unavailable(limits: Limits, as_root: bool | None = None) -> str | None:
    """One line naming the bounds this machine cannot give a sandbox (None when every bound holds)."""
    probe = Cgroup.make(limits, f"albert-mini-probe-{os.getpid()}")
    if probe is not None:
        probe.remove()
        return None
    root = os.geteuid() == 0 if as_root is None else as_root
    return (f"note: no cgroup can be made here, so each sandbox's memory is bounded per process "
            f"({limits.memory_gb:g} GB of address space each) with its tmpfs bounded apart from it "
            f"({limits.scratch_mb} + 2 x {limits.tmp_mb} MB), not in one total"
            + ("; and the process limit does not bind root: run grade as an ordinary user to have it" if root
               else f"; processes are limited to {limits.processes} by RLIMIT_NPROC"))
