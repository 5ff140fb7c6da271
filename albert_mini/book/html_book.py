"""The book as static HTML: every chapter's committed, executed notebook (never re-run), the results page
(data/results/README.md), the teacher guide and a contents page, with maths rendered offline. What `make html` runs:

    albert-mini html                 # -> build/html/index.html
    albert-mini html --out DIR       # anywhere else

Sphinx with MyST-NB turns the notebooks into pages (`nb_execution_mode = "off"`: outputs come from the .ipynb).
MathJax 3.2.2 comes from PyPI (the `django-static-mathjax` wheel ships its files; Django itself is not needed) and is
copied next to the pages, so nothing is fetched from a CDN when a page opens. The sources are staged in a folder
that mirrors the checkout (`chapters/`, `figures/`), so a chapter's `![...](../figures/x.png)` resolves as it does
in JupyterLab.

A rebuild deletes only the files an earlier build wrote (OUT/.albert-mini-outputs.json lists them with their sha256)
and refuses a folder that holds anything else, or a page changed since. The record lists each file before it is
written, and each is written atomically, so a build killed at any point is finished by the same command run again.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import tempfile
from pathlib import Path

from ..errors import UserError
from ..paths import repo_root, sha256_file
from ..safe_files import OutputRecord, Writes, atomic_write_bytes, check_writes
from .exercises.solutions import copy_with_solutions

GUIDE = "TEACHER_GUIDE.md"
NOTES = "REFERENCE_NOTES.md"  # the notes on the reference code that chapters link, as [REFERENCE_NOTES.md](...)
RESULTS = Path("data/results/README.md")  # the results page: the claims at a glance, then every committed result
TITLE = "albert-mini: ALBERT built step by step"
# The parts of MathJax's es5 tree that the TeX-input, CommonHTML-output page needs, including what it may load
# lazily (TeX extensions, fonts, the menu and its accessibility tools); the other combined builds stay behind.
MATHJAX_SCRIPT = "tex-mml-chtml.js"
MATHJAX_PARTS = (MATHJAX_SCRIPT, "a11y", "adaptors", "input", "output/chtml", "sre", "ui")


# Printed output wraps inside its column as JupyterLab's output area does, instead of hiding behind a scrollbar;
# code keeps its lines, and a type a shade smaller than the theme's makes the column show the 88 characters that
# chapter code is written to.
OUTPUT_CSS_FILE = "book.css"
OUTPUT_CSS = """\
article pre { font-size: 13.5px; }
div.cell_output pre, div.output pre { white-space: pre-wrap; overflow-wrap: anywhere; }
"""

# A figure opens at full size over the page on click (a click or Escape closes it): the column shows figures scaled
# down, and a reader may want a detail larger. A local script and style, so it works offline and from file://.
ZOOM = "zoom"  # _static/zoom.js and _static/zoom.css
ZOOM_JS = """\
document.addEventListener("DOMContentLoaded", function () {
  // The full-size copy exists only while it is open: no empty image sits in the page meanwhile.
  var overlay = document.createElement("div");
  overlay.className = "zoom-overlay";
  overlay.title = "click or press Escape to close";
  document.body.appendChild(overlay);
  function close() { overlay.classList.remove("open"); overlay.replaceChildren(); }
  overlay.addEventListener("click", close);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") close(); });
  document.querySelectorAll("article.bd-article img").forEach(function (img) {
    if (img.closest("a")) return;  // an image that is already a link keeps it
    function open() {
      var big = document.createElement("img");
      big.src = img.currentSrc || img.src;
      big.alt = img.alt;
      overlay.replaceChildren(big);
      overlay.classList.add("open");
    }
    img.classList.add("zoomable");
    img.title = "click to see full size";
    img.tabIndex = 0;
    img.addEventListener("click", open);
    img.addEventListener("keydown", function (e) { if (e.key === "Enter") open(); });
  });
});
"""
ZOOM_CSS = """\
img.zoomable { cursor: zoom-in; }
.zoom-overlay { display: none; position: fixed; inset: 0; z-index: 2000; overflow: auto; padding: 1rem;
                background: rgba(255, 255, 255, 0.97); cursor: zoom-out; }
.zoom-overlay.open { display: block; }
.zoom-overlay img { display: block; margin: 0 auto; max-width: none; }
"""

BUILD_MARK = ".buildinfo"  # what Sphinx's HTML builder writes at the top of every output folder (not a proof that
# a folder is ours: the folder's record of outputs, albert_mini.safe_files.OutputRecord, is)


class BookBuildError(UserError, RuntimeError):
    """The book could not be built (what is missing, or Sphinx's exit status after its messages)."""

CONF = '''\
# Written by albert_mini.book.html_book for one build; edit the generator, not this file.
project = {project!r}
html_title = {project!r}
author = {author!r}                    # the theme's footer: "By ..." (without it, "By Author name not set")
copyright = {copyright!r}
root_doc = "index"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nb_execution_mode = "off"              # outputs come from the committed notebooks
nb_render_markdown_format = "myst"     # markdown outputs (tables) render like markdown cells
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]
html_theme = "sphinx_book_theme"
html_theme_options = {{"show_toc_level": 2, "use_download_button": False, "use_fullscreen_button": False}}
html_context = {{"default_mode": "light"}}   # figures are drawn on white; also: no theme-mode console error
html_static_path = ["_static"]
html_css_files = ["{css}", "{zoom}.css"]
html_js_files = ["{zoom}.js"]
html_show_sourcelink = False
html_copy_source = False
html_show_search_summary = False       # summaries are fetched page by page, which browsers refuse from file://
mathjax_path = "mathjax/{script}"
mathjax3_config = {{"loader": {{"load": ["[tex]/textmacros"]}}, "tex": {{"packages": {{"[+]": ["textmacros"]}}}}}}
'''


def copyright_line(root: Path) -> tuple[str, str]:
    """The year and the holder from LICENSE's "Copyright (c) YEAR HOLDER" line: the book's footer names them."""
    match = re.search(r"^Copyright \(c\) (\d{4}) (.+)$", (root / "LICENSE").read_text(), re.MULTILINE)
    if match is None:
        raise BookBuildError("LICENSE has no 'Copyright (c) YEAR HOLDER' line for the book's footer; restore it "
                             "(git checkout LICENSE)")
    return match.group(1), match.group(2).strip()


def mathjax_source() -> Path:
    """MathJax's es5 folder inside the installed `django-static-mathjax` wheel."""
    try:
        import mathjax
    except ImportError as error:
        raise BookBuildError("MathJax is missing: install the book's HTML tools with `make venv`") from error
    folder = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    if not (folder / MATHJAX_SCRIPT).is_file():
        raise BookBuildError(f"{folder / MATHJAX_SCRIPT} not found: is django-static-mathjax installed intact?")
    return folder


def chapters(root: Path) -> list[Path]:
    """The executed chapter notebooks, in order (the same glob the Makefile uses for the sources)."""
    return sorted((root / "chapters").glob("[0-9][0-9]_*.ipynb"))


def chapter_title(notebook: Path) -> str:
    """The first heading of the notebook's first markdown cell ("Chapter 3: Factorized embedding ...")."""
    cells = json.loads(notebook.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return notebook.stem


def readme_topics(root: Path) -> dict[str, str]:
    """Chapter number -> topic, from the README's chapter table (empty when the README has no such row)."""
    readme = root / "README.md"
    topics = {}
    if readme.exists():
        for match in re.finditer(r"^\| (\d\d) \| (.+?) \|", readme.read_text(), flags=re.MULTILINE):
            topics[match.group(1)] = match.group(2).strip()
    return topics


def index_page(root: Path, notebooks: list[Path]) -> str:
    """The contents page: what the book is, the chapter table, the teacher guide, and the navigation tree."""
    topics = readme_topics(root)
    rows = []
    for notebook in notebooks:
        number = notebook.name[:2]
        topic = topics.get(number, "").replace("|", "\\|")
        rows.append(f"| {number} | [{chapter_title(notebook)}](chapters/{notebook.stem}) | {topic} |")
    toctree = "\n".join(f"chapters/{notebook.stem}" for notebook in notebooks)
    guide = (root / "chapters" / GUIDE).exists()
    notes = (root / "chapters" / NOTES).exists()
    results = (root / RESULTS).exists()
    results_doc = RESULTS.with_suffix("").as_posix()
    return "\n".join([
        f"# {TITLE}",
        "",
        "A textbook in runnable notebooks that teaches **ALBERT** (\"A Lite BERT\", Lan et al., ICLR 2020) by",
        "building it, on top of `albert_mini`, a compact PyTorch package. These pages show each chapter as it was",
        "last executed (`make book`), with its outputs and figures. To run a chapter yourself, open its `.py` file",
        "from `make lab`.",
        "",
        "## Chapters",
        "",
        "| chapter | title | topic |",
        "|---|---|---|",
        *rows,
        "",
        *([f"The [results page]({results_doc}) sets each of the paper's claims the book tests beside what it",
           "found at mini scale, with a link to the chapter that shows it, then every committed result.", ""]
          if results else []),
        *([f"Teachers: the [teacher guide](chapters/{Path(GUIDE).stem}) gives each chapter's goals, timing,",
           "exercises and discussion questions with answers.", ""] if guide else []),
        *([f"The [notes on the reference code](chapters/{Path(NOTES).stem}) say, file by file, what the chapters",
           "rely on in google-research/albert and the Hugging Face port.", ""] if notes else []),
        "```{toctree}",
        ":hidden:",
        ":caption: Chapters",
        "",
        toctree,
        "```",
        "",
        *(["```{toctree}", ":hidden:", ":caption: Results", "", results_doc, "```", ""] if results else []),
        *(["```{toctree}", ":hidden:", ":caption: For teachers", "", f"chapters/{Path(GUIDE).stem}", "```", ""]
          if guide else []),
        *(["```{toctree}", ":hidden:", ":caption: Reference", "", f"chapters/{Path(NOTES).stem}", "```", ""]
          if notes else []),
    ])


def stage(root: Path, staging: Path) -> list[Path]:
    """Lay out the Sphinx source folder: chapters/, figures/, _static/mathjax/, index.md and conf.py."""
    notebooks = chapters(root)
    if not notebooks:
        raise BookBuildError(f"no executed chapters (chapters/NN_*.ipynb) under {root}")
    (staging / "chapters").mkdir(parents=True)
    for notebook in notebooks:
        copy_with_solutions(notebook, staging / "chapters" / notebook.name)  # each solution folded under its exercise
    for page in (GUIDE, NOTES):  # markdown pages beside the chapters, which their text links
        if (root / "chapters" / page).exists():
            shutil.copy2(root / "chapters" / page, staging / "chapters" / page)
    if (root / RESULTS).exists():  # at its place in the checkout, so its links to chapters/ resolve as on GitHub
        (staging / RESULTS).parent.mkdir(parents=True)
        shutil.copy2(root / RESULTS, staging / RESULTS)
    shutil.copytree(root / "figures", staging / "figures")
    mathjax = mathjax_source()
    target = staging / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        if (mathjax / part).is_dir():
            shutil.copytree(mathjax / part, target / part)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(mathjax / part, target / part)
    (staging / "_static" / OUTPUT_CSS_FILE).write_text(OUTPUT_CSS)
    (staging / "_static" / f"{ZOOM}.js").write_text(ZOOM_JS)
    (staging / "_static" / f"{ZOOM}.css").write_text(ZOOM_CSS)
    (staging / "index.md").write_text(index_page(root, notebooks))
    year, author = copyright_line(root)
    (staging / "conf.py").write_text(CONF.format(project=TITLE, author=author, copyright=f"{year}, {author}",
                                                 script=MATHJAX_SCRIPT, css=OUTPUT_CSS_FILE, zoom=ZOOM))
    return notebooks


def build(out: Path, root: Path | None = None, quiet: bool = True, writes: Writes | None = None) -> Path:
    """Build the whole book into `out` from scratch (warnings are errors) and return the index page.

    The write rule (albert_mini.safe_files, as `writes` declares it): `out` is absent, empty, or a book this command
    built (every file in it listed, unchanged, in its record of outputs). The new book is built in a temp folder;
    only then are the old book's recorded files deleted and the new ones copied in, so a failed build leaves the
    old book whole, and no file the command did not write is ever deleted.
    """
    from sphinx.cmd.build import build_main

    root = root or repo_root()
    out = Path(out).resolve()
    check = writes.check if writes is not None else functools.partial(check_writes, "html")
    inputs = [root / "chapters", root / "figures", *[p for p in [root / RESULTS] if p.exists()]]
    check(folders=[("--out", out)], inputs=inputs)
    record = check_out_dir(out)
    with tempfile.TemporaryDirectory(prefix="albert-mini-html-") as scratch:
        staging, built = Path(scratch) / "src", Path(scratch) / "html"
        stage(root, staging)
        args = ["-b", "html", "-W", "--keep-going", "-E", "-d", str(Path(scratch) / "doctrees"),
                str(staging), str(built)]
        if quiet:
            args.insert(0, "-q")
        status = build_main(args)
        if status != 0:
            raise BookBuildError(f"sphinx-build failed (exit {status}); its messages are above")
        replace_book(out, built, record)
    return out / "index.html"


def replace_book(out: Path, built: Path, record: OutputRecord) -> None:
    """Replace the book in `out` by the one in `built`: list every new file in `record` (saved first, with the
    sha256 it will have), delete the temp files of an earlier, killed write and the old book's files that the new
    one does not have (and the folders they leave empty), then write each new file atomically.

    A kill at any point leaves only files the record recognises as this command's (the old book's, the new one's,
    or temp files of its writes), so the same command run again rebuilds the folder; nothing else is deleted."""
    new = {out / source.relative_to(built): source for source in sorted(built.rglob("*")) if source.is_file()}
    old = record.own()  # before `expect` forgets what is gone or changed
    kept = {path: sha256_file(path) for path in old if path in new}  # a page the new book has as it is: not rewritten
    out.mkdir(parents=True, exist_ok=True)
    digests = {target: sha256_file(source) for target, source in new.items()}
    record.expect(digests)
    try:
        for leftover in record.leftovers():
            leftover.unlink()
        emptied = set()
        for path in old:
            if path not in new:
                path.unlink()
                record.forget(path)
                emptied.update(p for p in path.parents if p.is_relative_to(out) and p != out)
        for folder in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        for target, source in new.items():
            if kept.get(target) != digests[target]:
                atomic_write_bytes(target, source.read_bytes())
            record.add(target)
    finally:
        record.save()


def check_out_dir(out: Path) -> OutputRecord:
    """The record of the book in `out`, once a rebuild may replace it: `out` is absent, empty, or holds only files
    that an earlier build wrote and nobody changed since. A build deletes only those, so anything else (your files,
    a book edited by hand, a Sphinx build of something else) is refused, naming the files.
    """
    if out.exists() and not out.is_dir():
        raise BookBuildError(f"--out {out} is a file, not a folder; give a folder path (it is created if absent)")
    record = OutputRecord(out, "html")
    foreign = record.foreign() if out.is_dir() else []
    if foreign:
        shown = ", ".join(p.relative_to(out).as_posix() for p in foreign[:5])
        raise BookBuildError(f"--out {out} holds files that no book build wrote ({shown}), or that were changed since; "
                             "a build deletes its old book, so choose a new or empty --out, or move those files away")
    return record
