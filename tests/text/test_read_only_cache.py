"""`prepare` on a token cache it may not write to uses the texts prepared there already (it refused them), and
still refuses a text that is not, naming the folder."""

import tempfile

from albert_mini.commands.prepare import main
from albert_mini.text.tokenizer import DEFAULT_DIR
from cli_helpers import cli_error


def read_only(monkeypatch, folder) -> None:
    """Writes into `folder` fail as on a read-only mount (root may write anywhere, so the test cannot chmod)."""
    real = tempfile.TemporaryFile

    def temporary_file(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(folder)):
            raise PermissionError(13, "Read-only file system")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", temporary_file)


def test_a_complete_read_only_cache_is_used_and_a_missing_text_is_still_refused(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ALBERT_MINI_CACHE", str(cache))
    prepared, other = tmp_path / "a.txt", tmp_path / "b.txt"
    prepared.write_text("One sentence. Another one here.\n\nA second document. With two sentences.\n")
    other.write_text("Text that was never prepared. It has two sentences.\n")
    tokenizer = str(DEFAULT_DIR / "spiece.model")
    main(["--corpus", str(prepared), "--tokenizer", tokenizer, "--quiet"])
    first = capsys.readouterr().out
    before = sorted(p.name for p in cache.rglob("*"))
    read_only(monkeypatch, cache)
    main(["--corpus", str(prepared), "--tokenizer", tokenizer, "--quiet"])
    assert capsys.readouterr().out == first  # the same cache, used as it is
    assert sorted(p.name for p in cache.rglob("*")) == before
    err = cli_error(main, ["--corpus", str(other), "--tokenizer", tokenizer, "--quiet"], capsys)
    assert f"nothing can be written in {cache}" in err

