"""Every test starts from the same random state, so no result depends on test order; shared fixtures."""

import os
import random
import signal

import numpy as np
import pytest
import torch

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
    if workers > 1:
        torch.set_num_threads(max(1, default_workers() // workers))


# The modules that take longest, longest first (pytest --durations per folder, 2 cores). `make test` hands each
# worker whole modules (--dist loadfile: a module's fixtures are built once) in collection order
# (--no-loadscope-reorder), so these start first and no worker is left alone with one of them at the end. A module
# missing here only starts later; a name here that no longer exists changes nothing.
LONGEST_FIRST = (
    "tests/study/test_experiments_scratch.py",
    "tests/study/test_experiments_trunk.py",
    "tests/study/test_experiments.py",
    "tests/book/test_grade.py",
    "tests/book/test_nbgrader.py",
    "tests/book/test_browser.py",
    "tests/training/test_fault_injection.py",
    "tests/training/test_multinode.py",
    "tests/study/test_levers.py",
    "tests/study/test_numerics_guard.py",
    "tests/training/test_rundir_recovery.py",
    "tests/test_cli_errors.py",
    "tests/test_cli_fuzz.py",
    "tests/tasks/test_finetune.py",
    "tests/training/test_ddp.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Collect the LONGEST_FIRST modules first; each module's tests stay together and in their order."""
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
