"""Build the textbook: pair each chapter's .py source with its .ipynb and execute it in full mode.

    albert-mini book chapters/03_factorized_embeddings.py ...   # what `make book` runs

A rebuild whose results did not change leaves the notebook unchanged except for the lines that print timings:
every cell keeps the id it had in the committed notebook (a new cell gets an id derived from its text), no
execution timestamps are recorded, and consecutive writes to stdout (or stderr) become one output.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from .lab import KERNEL_DISPLAY_NAME, KERNEL_NAME

CELL_TIMEOUT_SECONDS = 1800
# The kernel a chapter names, the environment's own (albert_mini.book.lab, installed by `make venv`), spelled as its
# spec spells it: JupyterLab copies the running kernel's spec into the notebook, so any other display name marks a
# chapter "unsaved" the moment it opens.
KERNELSPEC = {"name": KERNEL_NAME, "display_name": KERNEL_DISPLAY_NAME, "language": "python"}


def jupytext_metadata(source: Path) -> dict:
    """A chapter's jupytext metadata as JupyterLab saves it: the pairing plus the project's jupytext options."""
    from jupytext.config import load_jupytext_config

    metadata = {"formats": "ipynb,py:percent"}
    config = load_jupytext_config(str(Path(source).resolve().parent))
    if config is not None:
        config.set_default_format_options(metadata, read=True)
    return metadata


def keep_cell_ids(notebook, previous=None) -> None:
    """Give every cell the id of its counterpart in `previous` (the committed notebook), matched as JupyterLab's
    jupytext pairing matches them on save; a cell without one gets an id derived from its type and text."""
    used: set[str] = set()
    if previous is not None:
        from jupytext.combine import map_outputs_to_inputs

        for cell, j in zip(notebook.cells, map_outputs_to_inputs(notebook.cells, previous.cells)):
            old_id = previous.cells[j].get("id") if j is not None else None
            if old_id and old_id not in used:
                cell["id"] = old_id
                used.add(old_id)
            else:
                cell["id"] = None
    for cell in notebook.cells:
        if cell.get("id") in used:
            continue
        digest = hashlib.sha1(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()
        candidate, n = digest[:8], 0
        while candidate in used:  # two cells with the same text
            n += 1
            candidate = hashlib.sha1(f"{digest}/{n}".encode()).hexdigest()[:8]
        cell["id"] = candidate
        used.add(candidate)


def merge_adjacent_streams(notebook) -> None:
    """Join consecutive stdout (or stderr) outputs of a cell: how the kernel happened to flush is not a result."""
    for cell in notebook.cells:
        merged = []
        for output in cell.get("outputs", []):
            previous = merged[-1] if merged else None
            if (output.get("output_type") == "stream" and previous is not None
                    and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
                previous["text"] += output["text"]
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged


def build_chapter(source: Path, timeout: int = CELL_TIMEOUT_SECONDS) -> float:
    """Convert a py:percent chapter to .ipynb next to it, execute it in full mode, write it; return seconds."""
    import jupytext
    from nbclient import NotebookClient

    target = source.with_suffix(".ipynb")
    notebook = jupytext.read(source)
    notebook.metadata["jupytext"] = jupytext_metadata(source)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    keep_cell_ids(notebook, jupytext.read(target) if target.exists() else None)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name=KERNEL_NAME, record_timing=False,
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    merge_adjacent_streams(notebook)
    jupytext.write(notebook, target)
    return time.perf_counter() - start

