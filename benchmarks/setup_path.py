"""How the setup travels from `albert-mini pretrain` to the training loop: the package files it passes through.

    .venv/bin/python benchmarks/setup_path.py            # prints files, steps and steps back, and the route

Every call into a function of albert_mini is traced (sys.setprofile) from the command's `main` until the trainer's
`train` starts. The route is the command's and training/'s own calls, and each call they make into another
layer (text/, model/, devices, ...) counted once, as the file it enters: what that callee does inside is its
own business. Consecutive calls in different files are one step. A step back is a step into a file the setup
had already left. The goal was about half as many steps back as a review of the route counted (101 of 125 steps over
24 files). The run is a small Austen one (2 steps), in a temporary folder; nothing is trained or kept.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import albert_mini
from albert_mini.training.trainer import Trainer

PACKAGE = Path(albert_mini.__file__).resolve().parent
FLAGS = ["--preset", "albert-nano", "--corpus", "austen", "--task", "sop", "--seq-len", "64", "--batch-size", "4",
         "--steps", "2", "--eval-batches", "1", "--quiet"]


ROUTE = ("commands/", "training/", "cli.py")  # the files that carry the setup to the loop


class Stop(Exception):
    """Raised when the trainer starts to train: the route ends there."""


def route(argv: list[str]) -> list[str]:
    """The package files of the calls made from the command's start to the loop's, one per step."""
    from albert_mini.commands.pretrain import _main

    files: list[str] = []
    entered = []  # the frame of the other layer's function being called, while it runs

    def profile(frame, event, arg):
        if entered:
            if event == "return" and frame is entered[0]:
                entered.clear()
            return
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(PACKAGE):
            return
        if frame.f_code is Trainer.train.__code__:
            raise Stop
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(ROUTE):
            entered.append(frame)
        if not files or files[-1] != name:
            files.append(name)

    sys.setprofile(profile)
    try:
        _main(argv)
    except Stop:
        pass
    finally:
        sys.setprofile(None)
    return files


def summary(files: list[str]) -> dict:
    """Files visited, steps between them, and steps into a file already left."""
    seen, back = set(), 0
    for previous, current in zip(files, files[1:]):
        seen.add(previous)
        back += current in seen
    return {"files": len(set(files)), "steps": len(files) - 1, "steps back": back}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        files = route([*FLAGS, "--out", str(Path(folder) / "run")])
    numbers = summary(files)
    print(", ".join(f"{k}: {v}" for k, v in numbers.items()))
    print(" -> ".join(files))


if __name__ == "__main__":
    main()
