"""`albert-mini tokenizer train ...`: train ALBERT's SentencePiece tokenizer (albert_mini.text.tokenizer).

    albert-mini tokenizer train --vocab-size 8000 --out data/austen/spiece.model --overwrite   # the Austen model
    albert-mini tokenizer train --text 'texts/*.txt' --vocab-size 8000 --out runs/texts.model  # your own text
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..cli import positive_int
from ..cli import run as run_cli
from ..cli import seed as seed_type
from ..errors import UsageError
from ..paths import DATA_ROOT
from ..safe_files import Writes
from ..specials import SPECIAL_PIECES
from ..text.corpus import SPLITS, expand_text_paths, load_corpus
from . import command_parser

WRITES = Writes("tokenizer", outputs="--out FILE.model and FILE.vocab beside it (--overwrite to replace them); the "
                "folder's SHA256SUMS only for the shipped Austen tokenizer, its own two lines",
                inputs="--text files (default: --corpus's train split)",
                regenerates="data/austen/spiece.model, spiece.vocab and their SHA256SUMS lines, with --overwrite")


def main(argv: list[str] | None = None) -> None:
    """Command line: `albert-mini tokenizer train ...`; bad input ends with one error line, status 2."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    parser = command_parser("tokenizer", description="Train ALBERT's SentencePiece tokenizer.")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train a unigram model on the training split (or your files)")
    train.add_argument("--vocab-size", type=positive_int, default=8000,
                       help="pieces in the model, 5 special ones included")
    train.add_argument("--out", type=Path, required=True,
                       help="the .model file to write (a .vocab file goes beside it); an existing file is replaced "
                            "only with --overwrite, and never one of the input texts")
    train.add_argument("--overwrite", action="store_true",
                       help="replace an existing --out (and its .vocab), e.g. to rebuild data/austen/spiece.model")
    train.add_argument("--corpus", default="austen", help="committed corpus whose train split is used")
    train.add_argument("--text", nargs="+", help="your own UTF-8 text instead: files, folders (their *.txt files) "
                                                 "or glob patterns; then pretrain with --corpus and the same paths")
    train.add_argument("--seed", type=seed_type, default=0, help="seed of SentencePiece's training")
    args = parser.parse_args(argv)
    from ..text.tokenizer import (  # SentencePiece, once the flags are read
        DEFAULT_DIR,
        Tokenizer,
        destinations,
        save_model,
        train_sentencepiece,
        training_texts,
        vocab_path,
    )

    if args.vocab_size <= len(SPECIAL_PIECES):
        raise UsageError(f"--vocab-size must be more than the {len(SPECIAL_PIECES)} special pieces, got "
                         f"{args.vocab_size}; e.g. --vocab-size 8000")
    inputs = expand_text_paths(args.text) if args.text else [DATA_ROOT / args.corpus / "train.txt"]
    shipped = DEFAULT_DIR / "spiece.model"
    WRITES.check(files=destinations(args.out), inputs=inputs, overwrite=args.overwrite,  # before the training
                 regenerates=[shipped, vocab_path(shipped), DEFAULT_DIR / "SHA256SUMS"])

    texts = training_texts(args.corpus, args.text)
    start = time.perf_counter()
    model = train_sentencepiece(texts, args.vocab_size, args.seed)
    seconds = time.perf_counter() - start
    save_model(model, args.out)
    tokenizer = Tokenizer.from_bytes(model)
    print(f"trained {args.out} ({args.vocab_size} pieces) on {len(texts)} sentences in {seconds:.1f} s")
    if not args.text:
        for split in SPLITS:
            documents = load_corpus(args.corpus, split)
            tokens = sum(len(tokenizer.encode(p)) for d in documents for p in d.paragraphs)
            words = sum(len(p.split()) for d in documents for p in d.paragraphs)
            counts = {"split": split, "tokens": tokens, "words": words, "tokens_per_word": round(tokens / words, 3)}
            print(json.dumps(counts))
