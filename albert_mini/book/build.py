"""Build the textbook: pair each chapter's .py source with its .ipynb and execute it in full mode.

    python -m albert_mini.book.build chapters/03_factorized_embeddings.py ...   # what `make book` runs
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..cli import Parser, run as run_cli
from ..settings import FAST_ENV

CELL_TIMEOUT_SECONDS = 1800
# The kernel a chapter names, spelled as ipykernel's installed spec spells it: JupyterLab copies the running kernel's
# spec into the notebook, so any other display name marks a chapter "unsaved" the moment it opens.
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def jupytext_metadata(source: Path) -> dict:
    """A chapter's jupytext metadata as JupyterLab saves it: the pairing plus the project's jupytext options."""
    from jupytext.config import load_jupytext_config

    metadata = {"formats": "ipynb,py:percent"}
    config = load_jupytext_config(str(Path(source).resolve().parent))
    if config is not None:
        config.set_default_format_options(metadata, read=True)
    return metadata


def build_chapter(source: Path, timeout: int = CELL_TIMEOUT_SECONDS) -> float:
    """Convert a py:percent chapter to .ipynb next to it, execute it in full mode, write it; return seconds."""
    import jupytext
    from nbclient import NotebookClient

    notebook = jupytext.read(source)
    notebook.metadata["jupytext"] = jupytext_metadata(source)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    jupytext.write(notebook, source.with_suffix(".ipynb"))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Command line: build the chapters named; bad input ends with one error line and exit status 2."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = Parser(prog="python -m albert_mini.book.build",
                    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter sources (chapters/NN_name.py)")
    args = parser.parse_args(argv)
    os.environ.pop(FAST_ENV, None)  # the book is always built in full mode
    for source in args.chapters:
        if source.suffix != ".py" or not source.exists():
            parser.error(f"{source} is not a chapter source (.py)")
        seconds = build_chapter(source)
        print(f"{source}: executed in {seconds:.0f} s -> {source.with_suffix('.ipynb')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
