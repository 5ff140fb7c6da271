"""Build the textbook: pair each chapter's .py source with its .ipynb and execute it; save chapter figures.

    python -m albert_mini.book chapters/03_factorized_embeddings.py ...   # what `make book` runs
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .settings import FAST_ENV, fast_mode

CELL_TIMEOUT_SECONDS = 1800
# The kernel a chapter names, spelled as ipykernel's installed spec spells it: JupyterLab copies the running kernel's
# spec into the notebook, so any other display name marks a chapter "unsaved" the moment it opens.
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def repo_root(start: Path | None = None) -> Path:
    """The checkout that holds chapters/, figures/ and data/ (found from the working directory upwards)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() and (folder / "chapters").is_dir():
            return folder
    package_checkout = Path(__file__).resolve().parents[1]
    if (package_checkout / "chapters").is_dir():
        return package_checkout
    raise FileNotFoundError("cannot find the albert-mini checkout (a folder with pyproject.toml and chapters/)")


def figure_path(name: str) -> Path:
    """Where a chapter saves figure `name`: figures/ in full mode, a git-ignored cache in fast mode."""
    folder = repo_root() / ("cache/figures-fast" if fast_mode() else "figures")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def save_figure(fig, name: str, folder: Path | None = None) -> Path:
    """Save a matplotlib figure for the book (PNG, 120 dpi, tight) and return its path (default: figure_path)."""
    path = figure_path(name) if folder is None else Path(folder) / name
    fig.savefig(path, dpi=120, bbox_inches="tight", metadata={"Software": None})
    return path


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
