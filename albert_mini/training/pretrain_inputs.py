"""What the pretraining CLI trains and evaluates on, checked before any training starts.

A named corpus (austen: the committed splits; synthetic: random ids to test the machinery) or the user's own
UTF-8 text (`--corpus PATH...`: files, folders, glob patterns) with a SentencePiece model trained on it. Your
own text goes through the token cache (albert_mini.text.token_cache): prepared once by all cores, then mapped
from disk by every later run, resume and DDP rank, with the same tokens `tokenize_documents` would give. The
held-out text is `--validation PATH...`, or else a fixed fraction of the documents (`--holdout-fraction`):
the documents whose text has the smallest sha256, so the choice depends on the text only, not on file order
or the seed. Every flag combination that cannot give a training batch or the asked-for evaluation batches is
refused up front, naming the flags and values that work.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..paths import DATA_ROOT, sha256_file
from ..text.batches import DataSettings, count_examples, tokenize_documents
from ..text.corpus import Document, expand_text_paths, fingerprint_files, load_corpus
from ..text.instances import TokenDocuments, sentence_task
from ..text.synthetic import MAX_HELD_TOKENS, SyntheticBatches, max_take
from ..text.token_cache import prepare
from ..text.tokenizer import Tokenizer
from .build import training_batches, validation_batches
from .distributed import DistInfo
from .setup import DEFAULT_HOLDOUT, SPLIT_BY, PretrainingSetup

SEQ_LEN_CANDIDATES = (8, 16, 32, 64, 128, 256, 512)  # what a suggested --seq-len is picked from


@dataclass
class Inputs:
    """The batch sources of one process, and what the run records about its data."""

    train: object  # a batch source (PretrainingBatches or SyntheticBatches shard)
    validation: list[dict]  # the evaluation batches, the same at every evaluation
    train_documents: TokenDocuments | None  # the tokenized training text, for the unigram prior
    corpus: dict | None  # fingerprint of the text files (None for synthetic data)


def load_tokenizer(setup: PretrainingSetup) -> Tokenizer | None:
    """The tokenizer of the run: --tokenizer, the committed Austen model for austen, None for synthetic data."""
    if setup.corpus == "synthetic":
        return None
    return Tokenizer.from_file(setup.tokenizer) if setup.tokenizer else Tokenizer.default()


# ---------------------------------------------------------------------- documents
def load_documents(args: PretrainingSetup, tokenizer: Tokenizer, say=print) -> tuple[TokenDocuments,
                                                                                       TokenDocuments, dict]:
    """(training documents, held-out documents, fingerprint of every file read), tokenized."""
    if args.corpus == "austen":
        files = [DATA_ROOT / "austen" / f"{split}.txt" for split in ("train", "validation")]
        return (tokenize_documents(load_corpus("austen", "train"), tokenizer),
                tokenize_documents(load_corpus("austen", "validation"), tokenizer), fingerprint_files(files))
    mode = SPLIT_BY[args.split_by or "file"]
    paths = expand_text_paths(args.corpus)
    held_paths = expand_text_paths(args.validation) if args.validation else []
    check_disjoint(paths, held_paths)
    digests = {path: sha256_file(path) for path in paths + held_paths}  # read once: the key and the record
    cache = prepare(paths, tokenizer, mode, [digests[p] for p in paths], say=say, progress=say is print)
    fingerprint = fingerprint_files(paths + held_paths, digests)
    if held_paths:
        held = prepare(held_paths, tokenizer, mode, [digests[p] for p in held_paths], say=say,
                       progress=say is print)
        return cache.documents_view(), held.documents_view(), fingerprint
    fraction = DEFAULT_HOLDOUT if args.holdout_fraction is None else args.holdout_fraction
    held = held_out_indices([cache.digest_hex(d) for d in range(len(cache))], fraction, args.split_by or "file")
    kept = np.setdiff1d(np.arange(len(cache)), held)
    return cache.documents_view(kept), cache.documents_view(held), fingerprint


def check_disjoint(paths: list, held_paths: list) -> None:
    """Refuse a file given both to --corpus and to --validation, by path or as the same file under another name:
    files are matched by (st_dev, st_ino), so a hard link (or a bind mount) of a training file is caught too."""
    trained = {_file_id(p): p for p in paths}
    both = sorted(f"{p} (the same file as {trained[_file_id(p)]})" if str(p) != str(trained[_file_id(p)])
                  else str(p) for p in held_paths if _file_id(p) in trained)
    if both:
        raise UsageError(f"{', '.join(both)} is in both --corpus and --validation; held-out text must not be "
                         "trained on")


def _file_id(path) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_dev, status.st_ino


def hold_out(documents: list[Document], fraction: float, split_by: str = "file") -> tuple[list, list]:
    """(kept, held out): ceil(fraction * n) documents, those whose text has the smallest sha256, in order."""
    digests = [hashlib.sha256(doc.text().encode("utf-8")).hexdigest() for doc in documents]
    held = set(held_out_indices(digests, fraction, split_by).tolist())
    return ([d for i, d in enumerate(documents) if i not in held], [d for i, d in enumerate(documents) if i in held])


def held_out_indices(digests: list[str], fraction: float, split_by: str = "file") -> np.ndarray:
    """The documents held out, in order: ceil(fraction * n) of them (at least 1, at most n - 1), those whose
    text has the smallest sha256 (hex `digests`), so the choice depends on the text only."""
    if len(digests) < 2:
        other = "blank-line" if split_by == "file" else "file"
        raise UsageError(
            f"--corpus gives {len(digests)} document (with --split-by {split_by}), so none can be held out for "
            f"validation: pass held-out text with --validation PATH..., or --split-by {other} if that cuts your "
            "text into several documents"
        )
    count = min(len(digests) - 1, math.ceil(fraction * len(digests)))
    return np.sort(sorted(range(len(digests)), key=lambda i: (digests[i], i))[:count]).astype(np.int64)


# ---------------------------------------------------------------------- batches
def build_inputs(setup: PretrainingSetup, vocab_size: int, tokenizer: Tokenizer | None, info: DistInfo) -> Inputs:
    """The training source and validation batches of this rank, after checking that both can be filled."""
    if setup.corpus == "synthetic":
        check_synthetic_eval_batches(setup)
        sentence = sentence_task(setup.task).labelled
        train = SyntheticBatches(vocab_size, setup.batch_size, setup.seq_len, seed=setup.seed,
                                 sentence_labels=sentence).shard(info.rank, info.world_size)
        val = SyntheticBatches(vocab_size, setup.batch_size, setup.seq_len, seed=setup.seed + 1,
                               sentence_labels=sentence).shard(info.rank, info.world_size).take(setup.eval_batches)
        return Inputs(train, val, None, None)
    say = print if info.is_main and not setup.quiet else (lambda *args, **kwargs: None)
    train_docs, held_docs, fingerprint = load_documents(setup, tokenizer, say)
    splits = {"training": train_docs, "validation": held_docs}
    for split, tokens in splits.items():
        check_task_fits(tokens, setup.task, split, setup.split_by)
    for phase in reversed(setup.phases()):  # the --seq-len phase first
        # A short phase only trains (evaluation stays at --seq-len), so only its training batch is checked.
        evals = setup.eval_batches if phase.seq_len == setup.seq_len else 0
        check_batches(setup, splits, info.world_size, phase.seq_len, phase.batch_size, evals)
    shard = dict(rank=info.rank, world_size=info.world_size)
    train = training_batches(setup, splits["training"], tokenizer, **shard)
    val = validation_batches(setup, splits["validation"], tokenizer, **shard)
    return Inputs(train, val, splits["training"], fingerprint)


def check_synthetic_eval_batches(setup: PretrainingSetup) -> None:
    """Refuse more --eval-batches than the synthetic corpus keeps in memory (its stream never runs out, so the
    evaluation set, kept as a list, is bounded by synthetic.max_take instead of by the data)."""
    most = max_take(setup.batch_size, setup.seq_len)
    if setup.eval_batches > most:
        raise UsageError(f"--eval-batches {setup.eval_batches} x --batch-size {setup.batch_size} x --seq-len "
                         f"{setup.seq_len} is more held-out tokens than --corpus synthetic keeps in memory "
                         f"({MAX_HELD_TOKENS:,}); use --eval-batches {min(most, 8)} (at most {most:,})")


def check_task_fits(tokens, task: str, split: str, split_by: str | None) -> None:
    """Refuse a sentence task that the documents of a split cannot give a single instance of."""
    kind = sentence_task(task)
    sentences = tokens.sentence_counts()
    if kind.pairs and (sentences.max() if len(sentences) else 0) < 2:
        hint = ", or --split-by file so that each file is one document" if split_by == "blank-line" else ""
        raise UsageError(f"--task {task} pairs consecutive sentences of a document, but no document of the {split} "
                         f"text has two sentences; use --task none (MLM only){hint}")
    documents = sum(n > 0 for n in sentences)
    if documents < kind.min_documents:
        raise UsageError(f"--task {task} needs {kind.min_documents} documents with text, but the {split} text has "
                         f"{documents} ({task}: {kind.description}); use --task sop, or give more documents")


def check_batches(args: PretrainingSetup, splits: dict, world_size: int, length: int, batch: int,
                  evals: int) -> None:
    """Refuse settings under which a process gets no full training batch of `batch` sequences of `length`
    tokens, or fewer than `evals` evaluation batches.

    The message names the flags and values that work, computed from the same example counts the datasets
    will have (epoch 0; later dynamic epochs differ by a few examples).
    """
    longest = args.model_config().max_position_embeddings  # the preset's, or --config's

    def per_process(seq_len: int) -> tuple[int, int]:
        counts = []
        for split, tokens in splits.items():
            dynamic = split == "training" and args.masking == "dynamic"
            dupes = args.dupe_factor if split == "training" else 1
            settings = DataSettings(task=args.task, max_seq_len=seq_len, seed=args.seed, dynamic=dynamic,
                                    dupe_factor=dupes)
            counts.append(count_examples(tokens, settings) // world_size)
        return counts[0], counts[1]

    def fits(train: int, held: int) -> bool:
        return train >= batch and held >= batch * evals

    train, held = per_process(length)
    if fits(train, held):
        return
    if length != args.seq_len:  # the curriculum's short phase, which only trains (evals is 0)
        raise UsageError(_short_phase_problem(args, length, batch, train, lambda n: per_process(n)[0]))
    problems = []
    if train < batch:
        problems.append(f"the training text gives {examples(train)} per process, fewer than one batch of "
                        f"--batch-size {batch}")
    if held < batch * evals:
        problems.append(f"the validation text gives {examples(held)} per process, fewer than --eval-batches "
                        f"{evals} x --batch-size {batch} = {batch * evals}")
    fixes = []
    if train >= batch and held >= batch:
        fixes.append(f"--eval-batches {held // batch}")
    smaller = min(train, held // evals)
    if smaller >= 1:
        fixes.append(f"--batch-size {smaller}")
    elif min(train, held) >= 1:
        smaller = min(train, held)
        fixes.append(f"--batch-size {smaller} --eval-batches {held // smaller}")
    nearest = sorted((n for n in SEQ_LEN_CANDIDATES if n != length and n <= longest),
                     key=lambda n: (abs(math.log(n / length)), n))
    for seq_len in nearest:
        if fits(*per_process(seq_len)):
            fixes.append(f"--seq-len {seq_len}")
            break
    remedy = f"values that work: {' or '.join(fixes)}" if fixes else "no nearby value works; give more text"
    raise UsageError(f"--seq-len {length} with --task {args.task}: {'; '.join(problems)}; {remedy}")


def _short_phase_problem(args: PretrainingSetup, length: int, batch: int, train: int, train_at) -> str:
    """Why the short phase (--short-seq-len) gets no full batch, and the flags that give it one: a smaller
    --batch-size (the short batch is --batch-size x --seq-len / --short-seq-len), another --short-seq-len, or
    none (the --seq-len phase was checked first, so one phase at --seq-len fits)."""
    derived = args.short_batch_size is None
    how = (f"--batch-size {args.batch_size} x --seq-len {args.seq_len} / --short-seq-len {length}" if derived
           else "short_batch_size")
    fixes = []
    most = train * length // args.seq_len  # the largest --batch-size whose short batch the text fills
    if derived and most >= 1:
        fixes.append(f"--batch-size {most}")
    candidates = sorted((n for n in SEQ_LEN_CANDIDATES if 8 <= n < args.seq_len and n != length
                         and (args.seq_len % n == 0 or not derived)), key=lambda n: (abs(math.log(n / length)), n))
    for n in candidates:
        if train_at(n) >= (args.batch_size * args.seq_len // n if derived else batch):
            fixes.append(f"--short-seq-len {n}")
            break
    fixes.append("no --short-seq-len (one phase at --seq-len)")
    return (f"--short-seq-len {length} with --task {args.task}: the training text gives {examples(train)} of "
            f"{length} tokens per process, fewer than one batch of the short phase ({batch} sequences: {how}); "
            f"values that work: {' or '.join(fixes)}")


def examples(count: int) -> str:
    return f"{count} example" + ("" if count == 1 else "s")
