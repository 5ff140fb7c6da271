"""Every test starts from the same random state, so no result depends on test order; shared fixtures."""

import os
import random
import signal

import numpy as np
import pytest
import torch

from albert_mini.settings import FAST_ENV
from albert_mini.text.token_cache import default_workers


def pytest_configure(config):
    """Under pytest-xdist (`make test` runs `-n auto`) each worker gets its share of the cores for torch: two
    workers each starting a thread per core would fight over the cores instead of using them.

    Ctrl-C as a terminal delivers it: a shell without job control starts a background command (`make test &`,
    many CI runners) with SIGINT ignored, and Python keeps that; the tests of Ctrl-C, in this process and in the
    commands it starts, need SIGINT to interrupt."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    share = max(1, default_workers() // workers) if workers > 1 else None
    if share:
        torch.set_num_threads(share)
    config.pluginmanager.register(ChapterKernels(share), "albert-mini-chapter-kernels")


class ChapterKernels:
    """`make test` runs the chapters under nbval (`--nbval-lax chapters/*.ipynb`) in the suite's own session, so
    that the two share the cores to the end. nbval starts a chapter's kernel when its first cell is set up, and the
    kernel inherits os.environ then: here it gets the environment the session started with (not what the suite's
    fixtures set since, such as ALBERT_MINI_CACHE), the chapters' fast mode (ALBERT_MINI_FAST=1, what the chapters
    ran with when they had a command of their own) and, under xdist, its worker's share of the cores
    (OMP_NUM_THREADS, unless set already): two kernels each starting a thread per core spin on each other's cores
    (on 2 cores the chapters took twice as long). The suite's own tests never see these values.

    Registered as a plugin, not written as a hook of this file: a conftest's run hooks apply to its own folder only."""

    def __init__(self, share: int | None):
        self.environ = dict(os.environ)
        self.environ[FAST_ENV] = "1"
        if share and "OMP_NUM_THREADS" not in self.environ:
            self.environ["OMP_NUM_THREADS"] = str(share)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        if type(item).__name__ != "IPyNbCell":  # nbval's cell items
            return (yield)
        before = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.environ)
        try:
            return (yield)
        finally:
            os.environ.clear()
            os.environ.update(before)


# The modules and chapters that take longest, longest first (each file's seconds in `make test` on 2 cores).
# `make test` hands each worker whole files (--dist loadfile: a module's fixtures are built once, a notebook's cells
# run in one kernel) in collection order (--no-loadscope-reorder), so these start first and no worker is left alone
# with one of them at the end. A file missing here only starts later; a name here that no longer exists changes
# nothing. One exception to the order: the grading modules and test_browser.py wait on kernels, servers and time
# limits for much of their time, and start beside modules that compute (the teacher's commands, the numerics
# guard, the fast trunk's two modules) rather than beside each other.
LONGEST_FIRST = (
    "tests/book/test_teacher_commands.py",
    "tests/book/test_grade.py",
    "tests/study/test_numerics_guard.py",
    "tests/book/test_browser.py",
    "tests/study/test_sop_escape.py",
    "tests/book/test_grade_hostile.py",
    "tests/study/test_levers.py",
    "tests/training/test_fault_injection.py",
    "tests/book/test_nbgrader.py",
    "chapters/07_pretraining.ipynb",
    "tests/training/test_two_nodes.py",
    "tests/book/test_exercises_ch06.py",
    "tests/test_cli_errors.py",
    "tests/training/test_rundir_recovery.py",
    "tests/test_cli_fuzz.py",
    "tests/book/test_exercises_ch04.py",
    "tests/text/test_token_cache.py",
    "tests/study/test_recipe_controls.py",
    "chapters/10_appendix.ipynb",
    "chapters/11_research_log.ipynb",
    "chapters/06_ngram_masking.ipynb",
    "chapters/04_cross_layer_sharing.ipynb",
    "chapters/08_fine_tuning.ipynb",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Collect the LONGEST_FIRST files first; each file's tests (a notebook's cells) stay together and in order."""
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(autouse=True, scope="session")
def _token_cache_in_a_temp_folder(tmp_path_factory):
    """Texts prepared by tests go to a folder of the session, never the checkout's cache/ (commands that tests
    run in subprocesses inherit the variable)."""
    before = os.environ.get("ALBERT_MINI_CACHE")
    os.environ["ALBERT_MINI_CACHE"] = str(tmp_path_factory.mktemp("token-cache"))
    yield
    if before is None:
        os.environ.pop("ALBERT_MINI_CACHE", None)
    else:
        os.environ["ALBERT_MINI_CACHE"] = before


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def model_file(tmp_path_factory):
    """A SentencePiece model trained on generated texts with the tokenizer CLI (step one of the two-step flow)."""
    from albert_mini.commands.tokenizer import main as tokenizer_cli
    from user_text import write_texts

    folder = write_texts(tmp_path_factory.mktemp("user-text") / "texts")
    out = folder.parent / "texts.model"
    tokenizer_cli(["train", "--text", str(folder), "--vocab-size", "100", "--out", str(out)])
    return out


@pytest.fixture
def one_thread():
    """Small models run fastest, and steadiest on a shared machine, on one thread; modules opt in with pytestmark."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def polarity_data():
    """Pang & Lee's sentences in cache/polarity; absent, the test skips naming the command (under CI it fails)."""
    from albert_mini.tasks.polarity import CACHE_DIR, SENTENCES_FILE

    path = CACHE_DIR / SENTENCES_FILE
    if not path.is_file():
        message = (f"needs the polarity sentences in {path}: run `make polarity` once "
                   "(or albert-mini polarity; make test does it first)")
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return path
