"""A child process that ends with its parent: a preparation worker, a DataLoader worker, a torchrun worker."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent (the thread that forked it) ends


def end_with_parent(parent: int, signum: int) -> None:
    """Send this process `signum` when process `parent` ends, even by kill -9 (which runs no cleanup in the
    parent): on Linux the kernel sends it (prctl PR_SET_PDEATHSIG), elsewhere a thread watches the parent."""
    if sys.platform.startswith("linux"):
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            if prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the death signal was set: nothing would send it
                    os.kill(os.getpid(), signum)
                return
        except (OSError, AttributeError):
            pass  # no prctl in this libc: watch instead
    threading.Thread(target=_watch_parent, args=(parent, signum), daemon=True, name="watch-parent").start()


def _watch_parent(parent: int, signum: int) -> None:
    while os.getppid() == parent:  # an orphan is adopted by another process (init, or a subreaper)
        time.sleep(0.5)
    os.kill(os.getpid(), signum)
