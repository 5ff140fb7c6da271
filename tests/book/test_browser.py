"""The learner's path in a real browser: JupyterLab started as `make lab` starts it, and the HTML book as `make html`
builds it, both driven in headless Chromium by Selenium.

The browser is Debian's `chromium` with its `chromedriver` (`make browser-deps`); Selenium is pointed at both and
downloads nothing. Without them this module skips with that hint, except under CI=true, where it fails. Chromium
resolves no host name here (127.0.0.1 only), so a page that reaches for the network fails even on a machine that
is online. Every wait polls the page or the server with a time limit; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_book_files import image_targets

pytestmark = pytest.mark.browser  # chromium through selenium; `make test-fast` leaves these out

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
GUIDE = CHAPTERS / "TEACHER_GUIDE.md"
NOTES = CHAPTERS / "REFERENCE_NOTES.md"  # linked from the chapters' text: a page of the book too
RESULTS = ROOT / "data" / "results" / "README.md"  # the results page: the paper's claims at a glance
PACKAGES = "chromium chromium-driver"
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
    "--window-size=1400,1000",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
WAIT = 60         # seconds any one page state may take to appear on a loaded 2-core machine
RUN_WAIT = 180    # the first code cell imports torch in a fresh kernel
POLL = 0.15
# Where Jupyter would write into the home directory; the tests point them at a scratch folder.
JUPYTER_DIRS = {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data", "JUPYTER_RUNTIME_DIR": "runtime",
                "JUPYTERLAB_SETTINGS_DIR": "lab-settings", "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
                "IPYTHONDIR": "ipython"}
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception)\b.*:", re.MULTILINE)
HTTP_404 = re.compile(r"\s404\s+(GET|POST|PUT|PATCH|DELETE|HEAD)\s")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def poll(predicate, what: str, timeout: float = WAIT):
    """Call `predicate` until it returns something truthy (and return that), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:  # a page mid-update: stale elements, a script before its globals exist
            last_error = error
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}{detail}", pytrace=False)
        time.sleep(POLL)


def severe_console_entries(driver) -> list[str]:
    """SEVERE browser-console entries since the last call (reading the log empties it)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def expected_images(notebook: Path) -> int:
    """Images a notebook shows: one per image output, plus every image its markdown cells link."""
    count = 0
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            count += len(image_targets(source))
        for output in cell.get("outputs", []):
            count += any(mime.startswith("image/") for mime in output.get("data", {}))
    return count


# --------------------------------------------------------------------------------------------------- the browser

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if not (chromium and chromedriver and webdriver):
        missing = ", ".join(name for name, found in [("chromium", chromium), ("chromedriver", chromedriver),
                                                      ("selenium", webdriver)] if not found)
        message = (f"browser tests need {missing}: run `make browser-deps` (Debian packages: {PACKAGES}); "
                   "selenium comes with `make venv`")
        if in_ci():
            pytest.fail(f"CI=true and {message}", pytrace=False)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager is never asked to find (or download) anything.
    service = Service(executable_path=chromedriver,
                      log_output=str(tmp_path_factory.mktemp("chromedriver") / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    yield driver
    driver.quit()


# ------------------------------------------------------------------------------------------------------ JupyterLab

class Lab:
    """A running `albert-mini lab` (what `make lab` runs) and its log."""

    def __init__(self, process: subprocess.Popen, url: str, log: Path):
        self.process, self.url, self.log = process, url, log
        parts = urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = re.search(r"token=([0-9a-f]+)", parts.query).group(1)
        self._log_offset = 0

    def request(self, method: str, path: str, token: bool = True):
        headers = {"Authorization": f"token {self.token}"} if token else {}
        request = urllib.request.Request(self.base + path, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as response:
                body = response.read()
                return response.status, json.loads(body) if body else None
        except urllib.error.HTTPError as error:
            return error.code, None

    def new_404s(self) -> list[str]:
        """Requests the server answered with 404 since the last call."""
        text = self.log.read_text(errors="replace")
        new, self._log_offset = text[self._log_offset:], len(text)
        return [line for line in new.splitlines() if HTTP_404.search(line)]

    def shut_down_sessions(self, path: str):
        """End the kernels JupyterLab started for `path` (closing a tab leaves them running)."""
        status, sessions = self.request("GET", "/api/sessions")
        assert status == 200
        for session in sessions:
            if session["path"] == path:
                assert self.request("DELETE", f"/api/sessions/{session['id']}")[0] == 204


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (Linux /proc; empty elsewhere)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.fixture(scope="module")
def chapter_files():
    """Every file in chapters/ as it was before JupyterLab opened any; put back (and reported) if it changed."""
    checkpoints = CHAPTERS / ".ipynb_checkpoints"
    had_checkpoints = set(checkpoints.iterdir()) if checkpoints.exists() else None
    before = {path: path.read_bytes() for path in CHAPTERS.iterdir() if path.is_file()}
    yield before
    changed = [path for path, data in before.items() if not path.exists() or path.read_bytes() != data]
    created = [path for path in CHAPTERS.iterdir() if path.is_file() and path not in before]
    for path in changed:
        path.write_bytes(before[path])
    for path in created:
        path.unlink()
    if had_checkpoints is None:
        shutil.rmtree(checkpoints, ignore_errors=True)
    elif checkpoints.exists():
        for path in set(checkpoints.iterdir()) - had_checkpoints:
            path.unlink()
    assert not changed and not created, (
        f"JupyterLab changed {[p.name for p in changed]} and created {[p.name for p in created]} (now undone)")


@pytest.fixture(scope="module")
def lab(browser, chapter_files, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("jupyter")
    env = {**os.environ, "ALBERT_MINI_FAST": "1", **{name: str(scratch / sub) for name, sub in JUPYTER_DIRS.items()}}
    log = scratch / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "albert_mini", "lab", "--no-browser"], cwd=ROOT, env=env,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        def announced():
            assert process.poll() is None, f"the launcher exited ({process.returncode}):\n{log.read_text()}"
            match = re.search(r"JupyterLab at (http://\S+)", log.read_text())
            return match and match.group(1)

        server = Lab(process, poll(announced, "the launcher to print its address"), log)
        poll(lambda: server.request("GET", "/api/status")[0] == 200, "the server to answer")
        yield server
    finally:
        kernels = child_pids(process.pid)
        os.kill(process.pid, signal.SIGTERM)  # by PID: the launcher exec'd into the server
        try:
            process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in kernels) and time.monotonic() < deadline:
            time.sleep(POLL)
        for pid in filter(alive, kernels):
            os.kill(pid, signal.SIGKILL)


class LabPage:
    """The JupyterLab tab in the browser, driven as a learner would: the file browser, tabs, toolbar buttons."""

    def __init__(self, driver, lab: Lab):
        self.driver, self.lab = driver, lab

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def listing(self) -> list[str]:
        return self.js("return [...document.querySelectorAll('.jp-DirListing-item .jp-DirListing-itemText')]"
                       ".map(e => e.textContent)")

    def current(self) -> dict | None:
        """The current main-area tab: its label, unsaved mark and what kind of widget it shows."""
        return self.js("""
            const tab = document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current');
            if (!tab) return null;
            const widget = document.getElementById(tab.dataset.id);
            return {id: tab.dataset.id, label: tab.querySelector('.lm-TabBar-tabLabel').textContent,
                    dirty: tab.classList.contains('jp-mod-dirty'),
                    notebook: !!widget && widget.classList.contains('jp-NotebookPanel'),
                    editor: !!widget && !!widget.querySelector('.jp-FileEditor'),
                    cells: widget ? widget.querySelectorAll('.jp-Notebook .jp-Cell').length : 0};""")

    def open(self, name: str, cells: int) -> dict:
        """Double-click `name` in the file browser; wait for its notebook with all `cells` cells."""
        from selenium.webdriver.common.action_chains import ActionChains

        element = poll(lambda: self.js("return [...document.querySelectorAll('.jp-DirListing-item')].find((e) =>"
                                       " e.querySelector('.jp-DirListing-itemText').textContent === arguments[0])",
                                       name), f"{name} in the file browser")
        self.js("arguments[0].scrollIntoView({block: 'center'})", element)
        ActionChains(self.driver).double_click(element).perform()
        tab = poll(lambda: (c := self.current()) and c["label"] == name and (c["notebook"] or c["editor"]) and c,
                   f"a tab for {name}")
        assert tab["notebook"] and not tab["editor"], f"{name} opened in the text editor, not as a notebook"
        return poll(lambda: (c := self.current()) and c["cells"] == cells and c,
                    f"{name}'s {cells} cells (the notebook shows {self.current()['cells']})")

    def kernel_ready(self, widget: str, display_name: str) -> bool:
        """The notebook's kernel is named in its toolbar and idle: JupyterLab has written the kernel's spec into the
        notebook's metadata by then, so an unsaved mark caused by opening would show."""
        return self.js("""
            const widget = document.getElementById(arguments[0]);
            const name = widget.querySelector('.jp-KernelName');
            const state = widget.querySelector('.jp-Notebook-ExecutionIndicator');
            return !!name && name.textContent.trim() === arguments[1] && !!state && state.dataset.status === 'idle';""",
                       widget, display_name)

    def debugger_known(self, widget: str) -> bool:
        """JupyterLab has asked the kernel whether it can debug (the toolbar's bug button turns on): a tab closed
        before that cancels the question, and JupyterLab logs a console error."""
        return self.js("""
            const bug = document.getElementById(arguments[0]).querySelector('.jp-DebuggerBugButton');
            return !!bug && !bug.hasAttribute('disabled') && bug.getAttribute('aria-disabled') === 'false';""", widget)

    def click_toolbar(self, widget: str, command: str):
        from selenium.webdriver.common.by import By

        button = self.driver.find_element(By.CSS_SELECTOR, f'[id="{widget}"] jp-button[data-command="{command}"]')
        button.click()

    def close(self, widget: str, discard: bool = False):
        """Close the tab; with `discard`, answer JupyterLab's unsaved-changes dialog with Discard."""
        from selenium.webdriver.common.by import By

        tab = self.driver.find_element(By.CSS_SELECTOR, f'.lm-TabBar-tab[data-id="{widget}"] .lm-TabBar-tabCloseIcon')
        tab.click()
        if discard:
            button = poll(lambda: [b for b in self.driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog-button")
                                   if b.text.strip() == "Discard"], "the unsaved-changes dialog")[0]
            button.click()
        poll(lambda: self.js("return document.getElementById(arguments[0]) === null", widget), "the tab to close")

    def scroll_through(self, widget: str) -> dict:
        """Scroll the notebook from top to bottom; at every step wait for the images in view to finish loading.
        Returns every image seen (keyed by cell and position) and every stderr-style output's text."""
        images, stderr = {}, {}
        self.js("document.getElementById(arguments[0]).querySelector('.jp-WindowedPanel-outer').scrollTop = 0",
                widget)
        for _ in range(2000):
            state = poll(lambda: (s := self.js(VISIBLE_STATE, widget)) and all(i["complete"] for i in s["images"])
                         and s, "the images in view to load")
            for image in state["images"]:
                images[image["key"]] = image
            for output in state["stderr"]:
                stderr[output["key"]] = output["text"]
            if state["top"] + state["height"] >= state["scrollHeight"] - 2:
                return {"images": images, "stderr": stderr}
            moved = self.js("const s = document.getElementById(arguments[0]).querySelector('.jp-WindowedPanel-outer');"
                            "const before = s.scrollTop; s.scrollTop = before + Math.max(50, s.clientHeight - 20);"
                            "return s.scrollTop > before;", widget)
            assert moved, f"the notebook stopped scrolling at {state['top']} of {state['scrollHeight']} px"
        pytest.fail("the notebook never reached its bottom")


# What a notebook panel shows right now: scroll position, attached images (with their load state) and outputs in the
# stderr style, where JupyterLab renders tracebacks. Keys use the cell's index, so re-attached cells count once.
VISIBLE_STATE = """
const widget = document.getElementById(arguments[0]);
const scroller = widget.querySelector('.jp-WindowedPanel-outer');
const cellKey = (element) => {
  const cell = element.closest('.jp-Cell');
  const index = cell && cell.dataset.windowedListIndex;
  return index !== undefined ? index : [...widget.querySelectorAll('.jp-Cell')].indexOf(cell);
};
const images = [...widget.querySelectorAll('.jp-Cell img')].map((img) => {
  const cell = img.closest('.jp-Cell');
  return {key: cellKey(img) + ':' + [...cell.querySelectorAll('img')].indexOf(img), complete: img.complete,
          width: img.naturalWidth, src: img.getAttribute('src').slice(0, 120), alt: img.alt};
});
const stderr = [...widget.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
  .map((output) => ({key: cellKey(output) + ':' + [...output.closest('.jp-Cell').querySelectorAll(
    '.jp-OutputArea-output')].indexOf(output), text: output.textContent}));
return {top: scroller.scrollTop, height: scroller.clientHeight, scrollHeight: scroller.scrollHeight,
        images: images, stderr: stderr};
"""


@pytest.fixture(scope="module")
def lab_page(browser, lab):
    browser.get(lab.url)
    page = LabPage(browser, lab)
    poll(lambda: set(page.listing()) >= {p.name for p in NOTEBOOKS},
         "the file browser to show chapters/ (the landing folder)")
    # One name per chapter: the paired sources are left out of the listing (truncated, both names look the same).
    assert not set(page.listing()) & {p.name for p in SOURCES}
    return page


def check_lab_logs(page: LabPage):
    assert severe_console_entries(page.driver) == []
    assert page.lab.new_404s() == [], "the server answered 404 (a missing file or figure)"


def kernel_display_name() -> str:
    from albert_mini.book.build import KERNELSPEC

    return KERNELSPEC["display_name"]


def test_lab_serves_the_checkout_on_loopback_with_a_token(lab):
    assert lab.base.startswith("http://127.0.0.1:")
    assert lab.url.endswith(f"/lab/tree/chapters?token={lab.token}") and len(lab.token) >= 32
    assert lab.request("GET", "/api/contents/chapters", token=False)[0] == 403
    status, figures = lab.request("GET", "/api/contents/figures")  # the root is the checkout, not chapters/
    assert status == 200 and figures["type"] == "directory"


def first_code_cell_with_output() -> tuple[Path, int]:
    """The first chapter whose first code cell printed something in the committed notebook, and that cell's index."""
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text())["cells"]
        index = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "code")
        if cells[index].get("outputs"):
            return notebook, index
    pytest.fail("no chapter's first code cell has an output to wait for")


# First among the notebook tests: JupyterLab autosaves an edited notebook two minutes after opening it, so the cell
# runs (and its output is discarded) long before that, in a tab opened for this test alone.
def test_lab_runs_first_code_cell_in_fast_mode(lab_page, chapter_files):
    import jupytext
    from selenium.webdriver.common.by import By

    notebook, index = first_code_cell_with_output()
    source = notebook.with_suffix(".py")
    tab = lab_page.open(notebook.name, len(jupytext.read(source).cells))
    poll(lambda: lab_page.kernel_ready(tab["id"], kernel_display_name()) and lab_page.debugger_known(tab["id"]),
         f"{notebook.name}'s kernel")
    cell = lab_page.driver.find_elements(By.CSS_SELECTOR, f'[id="{tab["id"]}"] .jp-Notebook .jp-Cell')[index]
    lab_page.js("arguments[0].scrollIntoView({block: 'center'})", cell)
    cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()  # selects the cell, as a learner would
    lab_page.click_toolbar(tab["id"], "notebook:run-cell-and-select-next")

    def finished():
        prompt = cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").text
        outputs = [o.text for o in cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output")]
        return re.fullmatch(r"\[\d+\]:", prompt.strip()) and any(text.strip() for text in outputs) and outputs

    outputs = poll(finished, f"the first code cell of {notebook.name} to run and print", timeout=RUN_WAIT)
    assert not any(TRACEBACK.search(text) for text in outputs), outputs
    # The kernel runs with the launcher's environment: ALBERT_MINI_FAST=1 as the tests started it.
    status, sessions = lab_page.lab.request("GET", "/api/sessions")
    kernel = next(s["kernel"]["id"] for s in sessions if s["path"] == f"chapters/{notebook.name}")
    if Path("/proc").is_dir():
        processes = [pid for pid in child_pids(lab_page.lab.process.pid)
                     if kernel in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")]
        assert len(processes) == 1
        environ = Path(f"/proc/{processes[0]}/environ").read_bytes().split(b"\0")
        assert b"ALBERT_MINI_FAST=1" in environ
    lab_page.close(tab["id"], discard=True)  # the run's output is not the committed one: do not save it
    lab_page.lab.shut_down_sessions(f"chapters/{notebook.name}")
    for path in (source, notebook):
        assert path.read_bytes() == chapter_files[path]
    check_lab_logs(lab_page)


# Tabs stay open, as a learner's do, and the kernels run until the server stops: closing a tab the moment its kernel
# is up cancels JupyterLab's question to the kernel about the debugger, which it logs as a console error.
# A chapter opens from its notebook, with its inputs from the paired source (the source of truth): saving writes both.
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_lab_opens_chapter_from_its_notebook_and_saves_both_unchanged(lab_page, chapter_files, source):
    import jupytext

    cells = len(jupytext.read(source).cells)
    notebook = source.with_suffix(".ipynb")
    tab = lab_page.open(notebook.name, cells)
    poll(lambda: lab_page.kernel_ready(tab["id"], kernel_display_name()), f"{notebook.name}'s kernel")
    assert not lab_page.current()["dirty"], f"{notebook.name} shows as unsaved right after opening"
    stamps = {path: path.stat().st_mtime_ns for path in (source, notebook)}
    lab_page.click_toolbar(tab["id"], "docmanager:save")
    poll(lambda: all(path.stat().st_mtime_ns != stamp for path, stamp in stamps.items()),
         f"{source.name} and {notebook.name} to be written")
    for path in stamps:
        assert path.read_bytes() == chapter_files[path], f"saving {notebook.name} changed {path.name} (see git diff)"
    check_lab_logs(lab_page)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_lab_shows_committed_notebook(lab_page, notebook):
    cells = json.loads(notebook.read_text())["cells"]
    tab = lab_page.open(notebook.name, len(cells))
    seen = lab_page.scroll_through(tab["id"])
    broken = [f"{i['alt'] or i['src']}" for i in seen["images"].values() if not i["width"]]
    assert broken == [], f"images that did not load in {notebook.name}"
    assert len(seen["images"]) == expected_images(notebook), f"{notebook.name}: images shown vs in the notebook"
    errors = [text[:300] for text in seen["stderr"].values() if TRACEBACK.search(text)]
    assert errors == [], f"{notebook.name} shows error output"
    check_lab_logs(lab_page)


def test_lab_no_open_chapter_is_marked_unsaved(lab_page):
    """Once every kernel has started (JupyterLab then rewrites the kernel spec in each notebook's metadata), none of
    the chapters opened above carries the unsaved mark."""
    tabs = lab_page.js("return [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')]"
                       ".map((t) => [t.dataset.id, t.querySelector('.lm-TabBar-tabLabel').textContent])")
    chapters = {name: widget for widget, name in tabs if name.endswith((".py", ".ipynb"))}
    assert sorted(chapters) == sorted(p.name for p in NOTEBOOKS)
    for name, widget in chapters.items():
        poll(lambda widget=widget: lab_page.kernel_ready(widget, kernel_display_name()), f"{name}'s kernel")
    dirty = lab_page.js("return [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-dirty')]"
                        ".map((t) => t.querySelector('.lm-TabBar-tabLabel').textContent)")
    assert dirty == [], "chapters marked unsaved without an edit"
    check_lab_logs(lab_page)


# ------------------------------------------------------------------------------------------------------ the book

def book_pages() -> list[str]:
    """Every page `make html` must produce, in reading order after the contents page."""
    pages = ["index.html"] + [f"chapters/{notebook.stem}.html" for notebook in NOTEBOOKS]
    pages += ["data/results/README.html"] if RESULTS.exists() else []  # the results page, after the chapters
    pages += [f"chapters/{page.stem}.html" for page in (GUIDE, NOTES) if page.exists()]
    return pages + ["genindex.html", "search.html"]


@pytest.fixture(scope="module")
def book(browser, tmp_path_factory):
    from albert_mini.book.html_book import build

    out = tmp_path_factory.mktemp("book") / "html"
    with warnings.catch_warnings():  # Sphinx's notices to extension authors about its next major version
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        build(out, ROOT)
    return out


class Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name in ("id", "name") and value)


_ANCHORS: dict[Path, set[str]] = {}


def anchors(page: Path, cache: dict[Path, set[str]] = _ANCHORS) -> set[str]:  # noqa: B006 (a deliberate cache)
    if page not in cache:
        parser = Ids()
        parser.feed(page.read_text())
        cache[page] = parser.ids
    return cache[page]


# What a book page shows once loaded: maths left untypeset, raw dollar maths in the text, images, links, and every
# resource the page asked for.
BOOK_STATE = """
const maths = [...document.querySelectorAll('.math')];
const body = document.body.cloneNode(true);
body.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight').forEach((e) => e.remove());
const text = body.textContent;
return {
  untypeset: maths.filter((m) => !m.querySelector('mjx-container')).map((m) => m.textContent.slice(0, 80)),
  raw: (text.match(/\\$[^$\\n]{0,200}\\$|\\\\\\(|\\\\\\[/g) || []).slice(0, 10),
  images: [...document.querySelectorAll('img')].map((i) => ({src: i.src, alt: i.alt, complete: i.complete,
                                                            width: i.naturalWidth, article: !!i.closest('article')})),
  links: [...document.querySelectorAll('a[href]')].map((a) => a.href),
  prev: (document.querySelector('a.left-prev') || {}).href || null,
  next: (document.querySelector('a.right-next') || {}).href || null,
  resources: performance.getEntriesByType('resource').map((r) => r.name)
    .concat([...document.querySelectorAll('script[src], link[href], img[src]')].map((e) => e.src || e.href)),
};
"""


def test_book_has_every_page_and_no_other(book):
    built = sorted(str(p.relative_to(book)) for p in book.rglob("*.html") if p.relative_to(book).parts[0] != "_static")
    assert built == sorted(book_pages())


def test_every_book_page_names_its_authors(book):
    pages = [book / page for page in book_pages()]
    assert [p.name for p in pages if "Author name not set" in p.read_text()] == []
    assert [p.name for p in pages if "the albert-mini authors" not in p.read_text()] == []


def test_a_book_figure_opens_full_size_on_click_and_closes_on_escape(browser, book):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get((book / "chapters/05_sentence_order_prediction.html").as_uri())
    poll(lambda: browser.execute_script("return document.readyState") == "complete", "chapter 5 to load")
    figure = poll(lambda: browser.find_elements(By.CSS_SELECTOR, "img.zoomable"), "a zoomable figure")[0]
    assert not browser.find_elements(By.CSS_SELECTOR, ".zoom-overlay img")  # nothing while closed
    browser.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", figure)
    big = poll(lambda: browser.find_elements(By.CSS_SELECTOR, ".zoom-overlay.open img"), "the full-size figure")[0]
    natural, shown = poll(lambda: browser.execute_script(
        "const i = arguments[0], f = arguments[1]; return i.complete && i.naturalWidth && "
        "[i.naturalWidth, f.getBoundingClientRect().width];", big, figure), "the full-size figure to load")
    assert big.get_attribute("src") == figure.get_attribute("src") and natural >= shown
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    poll(lambda: not browser.find_elements(By.CSS_SELECTOR, ".zoom-overlay img"), "the figure to close")


@pytest.mark.parametrize("page", book_pages())
def test_book_page(browser, book, page):
    severe_console_entries(browser)  # forget earlier pages
    path = book / page
    browser.get(path.as_uri())
    poll(lambda: browser.execute_script("return document.readyState") == "complete", f"{page} to load")
    if browser.execute_script("return document.querySelectorAll('.math').length"):
        poll(lambda: browser.execute_script("return !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"),
             "MathJax to start")
        result = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "MathJax.startup.promise.then(() => done('ok'), (e) => done(String(e)));")
        assert result == "ok", f"MathJax failed on {page}: {result}"
    browser.execute_script("document.querySelectorAll('img').forEach((i) => { i.loading = 'eager'; });")
    state = poll(lambda: (s := browser.execute_script(BOOK_STATE)) and all(i["complete"] for i in s["images"]) and s,
                 f"the images of {page} to load")
    assert state["untypeset"] == [], "maths MathJax did not typeset"
    assert state["raw"] == [], "raw TeX delimiters left in the text"
    assert [i["alt"] or i["src"] for i in state["images"] if not i["width"]] == [], "images that did not load"
    if page.startswith("chapters/") and page not in (f"chapters/{GUIDE.stem}.html", f"chapters/{NOTES.stem}.html"):
        notebook = CHAPTERS / Path(page).with_suffix(".ipynb").name
        assert sum(i["article"] for i in state["images"]) == expected_images(notebook), "images shown vs notebook"
    # Offline: everything the page loaded (or tried to) is a file of the book.
    remote = [url for url in state["resources"] if not url.startswith(book.as_uri() + "/")]
    assert remote == [], "the page loads something from outside the book"
    # Every link inside the book points at a page (and an anchor) that exists.
    broken = []
    for url in state["links"]:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "mailto"):
            continue
        target = Path(unquote(parts.path))
        if parts.scheme != "file" or book not in target.parents or not target.is_file():
            broken.append(url)
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in anchors(target):
            broken.append(url)
    assert broken == [], f"links on {page} that lead nowhere"
    # Reading order: the contents page, the chapters, the teacher guide, each linked to the next and back.
    order = [p for p in book_pages() if p not in ("genindex.html", "search.html")]
    if page in order:
        position = order.index(page)
        expected_next = (book / order[position + 1]).as_uri() if position + 1 < len(order) else None
        expected_prev = (book / order[position - 1]).as_uri() if position > 0 else None
        assert (state["next"], state["prev"]) == (expected_next, expected_prev), "previous/next links"
    if page == "index.html":
        linked = {Path(unquote(urlsplit(url).path)) for url in state["links"]}
        assert {book / p for p in order[1:]} <= linked, "the contents page links every chapter and the guide"
    assert severe_console_entries(browser) == []


# Code and output blocks of a chapter page whose text is wider than their column (a horizontal scrollbar hides
# the rest): the longest line of each, shortened.
OVERFLOWING_BLOCKS = """
const blocks = new Set(document.querySelectorAll('article div.highlight pre, article div.cell_output pre'));
return [...blocks].filter((p) => p.scrollWidth > p.clientWidth + 1).map((p) =>
  p.textContent.split('\\n').reduce((a, l) => (l.length > a.length ? l : a), '').slice(0, 100));
"""


@pytest.mark.parametrize("page", [f"chapters/{notebook.stem}.html" for notebook in NOTEBOOKS])
def test_book_code_and_outputs_fit_their_column(browser, book, page):
    """Nothing in a chapter hides behind a scrollbar: code fits 88 columns, printed output wraps."""
    browser.get((book / page).as_uri())
    poll(lambda: browser.execute_script("return document.readyState") == "complete", f"{page} to load")
    assert browser.execute_script("return document.querySelectorAll('article div.highlight pre').length")
    assert browser.execute_script(OVERFLOWING_BLOCKS) == [], f"blocks on {page} wider than their column"


def test_book_search_finds_a_chapter(browser, book):
    """Search works from file://: a word of a chapter's title finds that chapter."""
    from albert_mini.book.html_book import chapter_title

    notebook = NOTEBOOKS[-1]
    word = max(re.findall(r"[A-Za-z]{4,}", chapter_title(notebook).split(":")[-1]), key=len)
    severe_console_entries(browser)
    browser.get((book / "search.html").as_uri() + f"?q={word}")
    target = (book / "chapters" / f"{notebook.stem}.html").as_uri()
    poll(lambda: browser.execute_script(
        "return [...document.querySelectorAll('#search-results li a')].map((a) => a.href.split('#')[0])"
        ".includes(arguments[0])", target), f"search results for {word!r} to list {notebook.stem}")
    assert severe_console_entries(browser) == []
