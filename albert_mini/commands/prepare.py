"""`albert-mini prepare --corpus PATH... --tokenizer MODEL`: tokenize your text into the token cache ahead of time.

`pretrain --corpus` does the same on its first run; preparing first suits a cluster (prepare on one node, then
start every rank) or a text you will train on many times. The work is albert_mini.text.token_cache's (`prepare`).
"""

from __future__ import annotations

import argparse

from ..choices import default_workers
from ..cli import positive_int
from ..cli import run as run_cli
from ..paths import CACHE_ENV
from ..safe_files import Writes
from ..text.corpus import expand_text_paths
from ..training.setup import SPLIT_BY
from . import command_parser

WRITES = Writes("prepare", outputs=f"the token cache (${CACHE_ENV}, else cache/tokens): a new folder per text, named "
                "by its content", inputs="--corpus and --validation texts, --tokenizer")

EPILOG = f"""\
The cache folder is ${CACHE_ENV}, else cache/tokens in the checkout; each text gets a folder named by the sha256 of
its files' contents, the tokenizer and the reading rule, so a later `pretrain` with the same --corpus, --tokenizer
and --split-by (and --validation) maps it instead of reading the text. Deleting a folder there is always safe.

  albert-mini prepare --corpus 'texts/*.txt' --tokenizer runs/texts.model --split-by blank-line
  albert-mini pretrain --corpus 'texts/*.txt' --tokenizer runs/texts.model --split-by blank-line --out runs/t
"""


def main(argv: list[str] | None = None) -> None:
    """Command line: prepare the text; bad input ends with one error line and exit status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("prepare", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", required=True, metavar="PATH",
                        help="UTF-8 text: files, folders (their *.txt files) or glob patterns, as pretrain takes them")
    parser.add_argument("--validation", nargs="+", metavar="PATH", help="held-out text, prepared as well")
    parser.add_argument("--tokenizer", required=True, metavar="MODEL",
                        help="the SentencePiece .model file pretrain will use")
    parser.add_argument("--split-by", choices=list(SPLIT_BY), default="file",
                        help="one document per file (default) or per blank-line block, as pretrain's --split-by")
    parser.add_argument("--workers", type=positive_int, default=default_workers(),
                        help=f"worker processes (default: all cores, here {default_workers()}; more are capped at "
                             "the cores, and say so)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    from ..safe_files import UnsafeWriteError
    from ..text.token_cache import cache_root, prepare
    from ..text.tokenizer import Tokenizer

    texts = {flag: expand_text_paths(spec) for flag, spec in (("--corpus", args.corpus),
                                                              ("--validation", args.validation)) if spec}
    try:  # the write rule speaks first, before the tokenizer is read
        WRITES.check(folders=[(f"the token cache (${CACHE_ENV})", cache_root())],
                     inputs=[*texts.get("--corpus", []), *texts.get("--validation", []), args.tokenizer])
    except UnsafeWriteError:  # a cache this command may not write to: fine if every text is prepared there
        if not _prepared_already(texts, args.tokenizer, SPLIT_BY[args.split_by]):
            raise
    tokenizer = Tokenizer.from_file(args.tokenizer)
    say = (lambda *a, **k: None) if args.quiet else print
    for flag, paths in texts.items():
        cache = prepare(paths, tokenizer, SPLIT_BY[args.split_by],
                        workers=args.workers, progress=not args.quiet, say=say)
        m = cache.manifest
        print(f"{flag}: {m['documents']:,} documents, {m['sentences']:,} sentences, {m['tokens']:,} tokens from "
              f"{m['text_bytes'] / 1e6:,.1f} MB in {cache.folder}")
    if not args.quiet:
        print(f"cache root: {cache_root()}")


def _prepared_already(texts: dict, tokenizer_path, split_by) -> bool:
    """Whether every text is already in the token cache, so that a cache this command may not write to serves."""
    from ..errors import UserError
    from ..text.token_cache import prepared_cache
    from ..text.tokenizer import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(tokenizer_path)
    except UserError:
        return False  # the write rule's refusal stands; the tokenizer's own error comes once the cache is fixed
    return all(prepared_cache(paths, tokenizer, split_by) for paths in texts.values())
