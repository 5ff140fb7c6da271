"""A write past `ulimit -f` (EFBIG, which names no file) while a text is prepared is one line naming the file
being written and the limit, and leaves no partial cache folder."""

import os
import random
import resource
import subprocess
import sys

import pytest

from albert_mini.text.tokenizer import DEFAULT_DIR
from cli_helpers import REPO, run_command


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE as Linux applies it")
def test_a_file_size_limit_while_preparing_is_one_line_naming_the_file(tmp_path):
    rng = random.Random(0)
    words = "the of and to a in that was her it his with as had for she not be he you".split()
    text = tmp_path / "big.txt"
    text.write_text("\n".join(" ".join(rng.choice(words) for _ in range(12)) + "." for _ in range(30000)))
    limit = 100 * 1024  # bytes: the text (1.3 MB) is read, its tokens (over 300 KB) cannot be written
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "albert_mini", "prepare", "--corpus", str(text), "--tokenizer",
               str(DEFAULT_DIR / "spiece.model"), "--quiet"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ALBERT_MINI_CACHE": str(cache), "OMP_NUM_THREADS": "1"},
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {cache}/"), done.stderr
    assert "tokens.bin: the file grew past the largest size this process may write (`ulimit -f`" in lines[0]
    assert not list(cache.glob("*.partial-*"))
    assert run_command("prepare", "--corpus", text, "--tokenizer", DEFAULT_DIR / "spiece.model", "--quiet",
                       cwd=REPO, env={"ALBERT_MINI_CACHE": str(cache)}).returncode == 0  # without the limit
