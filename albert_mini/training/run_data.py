"""What a pretraining run trains and evaluates on: its text read once, its datasets built once, then checked.

A named corpus (austen: the committed splits; synthetic: random ids to test the machinery) or the user's own
UTF-8 text (`--corpus PATH...`: files, folders, glob patterns) with a SentencePiece model trained on it. Your
own text goes through the token cache (albert_mini.text.token_cache): prepared once by all cores, then mapped
from disk by every later run, resume and DDP rank, with the same tokens `tokenize_documents` would give. The
held-out text is `--validation PATH...`, or else a fixed fraction of the documents (`--holdout-fraction`):
the documents whose text has the smallest sha256, so the choice depends on the text only, not on file order
or the seed. Each phase's dataset is built once and its size checked after: settings that cannot give a
training batch or the asked-for evaluation batches are refused before training, naming the flags and values
that work (computed only then, by counting examples at other settings).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..model.config import AlbertConfig
from ..paths import DATA_ROOT, sha256_file
from ..text.batch_source import BatchSource, PhasedBatches
from ..text.batches import (
    DataSettings,
    PretrainingBatches,
    build_pretraining_dataset,
    count_examples,
    tokenize_documents,
)
from ..text.corpus import Document, expand_text_paths, fingerprint_files, load_corpus
from ..text.instances import TokenDocuments, sentence_task
from ..text.synthetic import MAX_HELD_TOKENS, SyntheticBatches, max_take
from ..text.tokenizer import Tokenizer
from .distributed import DistInfo
from .setup import DEFAULT_HOLDOUT, SPLIT_BY, Phase, PretrainingSetup

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["phase_batches", "validation_batches"]

SEQ_LEN_CANDIDATES = (8, 16, 32, 64, 128, 256, 512)  # what a suggested --seq-len is picked from


@dataclass
class RunData:
    """The batch sources of one process, and what the run records about its data."""

    train: object  # a batch source (PretrainingBatches or SyntheticBatches shard)
    validation: list[dict]  # the evaluation batches, the same at every evaluation
    train_documents: TokenDocuments | None  # the tokenized training text, for the unigram prior
    corpus: dict | None  # fingerprint of the text files (None for synthetic data)


@dataclass(frozen=True)
class DataPlan:
    """What the datasets of a run take from its setup, resolved once into plain values before any text is read:
    the schedule's phases, and the options of `build_pretraining_dataset` for a training set (all but its length,
    which is its phase's) and for the held-out set (static masking, at --seq-len)."""

    phases: tuple[Phase, ...]
    training: dict
    held_out: dict

    @classmethod
    def of(cls, setup: PretrainingSetup, seed: int | None = None, task: str | None = None) -> DataPlan:
        """The setup's; `seed` and `task` replace the held-out set's (the experiments score every model they
        compare on the same masked tokens)."""
        masking = setup.masking_options()
        return cls(setup.phases(),
                   training=dict(task=setup.task, seed=setup.seed, dynamic=setup.masking == "dynamic",
                                 dupe_factor=setup.dupe_factor, **masking),
                   held_out=dict(task=task or setup.task, max_seq_len=setup.seq_len,
                                 seed=setup.seed if seed is None else seed, dynamic=False, **masking))


# ---------------------------------------------------------------------- documents
def load_documents(args: PretrainingSetup, tokenizer: Tokenizer, say=print) -> tuple[TokenDocuments,
                                                                                       TokenDocuments, dict]:
    """(training documents, held-out documents, fingerprint of every file read), tokenized."""
    if args.corpus == "austen":  # read and recorded, then tokenized
        files = [DATA_ROOT / "austen" / f"{split}.txt" for split in ("train", "validation")]
        train, held = load_corpus("austen", "train"), load_corpus("austen", "validation")
        fingerprint = fingerprint_files(files)
        return tokenize_documents(train, tokenizer), tokenize_documents(held, tokenizer), fingerprint
    from ..text.token_cache import prepare  # your own text only: the named corpora never load the cache

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


# ---------------------------------------------------------------------- datasets and batches
def training_dataset(setup: PretrainingSetup, documents, tokenizer, seq_len: int):
    """Training examples of one length, masked as the setup says (dynamic or static)."""
    return build_pretraining_dataset(documents, tokenizer, max_seq_len=seq_len, **DataPlan.of(setup).training)


def held_out_dataset(setup: PretrainingSetup, documents, tokenizer, seed: int | None = None,
                     task: str | None = None):
    """Held-out examples at the setup's length, masked once (static) so every evaluation scores the same tokens."""
    return build_pretraining_dataset(documents, tokenizer, **DataPlan.of(setup, seed, task).held_out)


def phase_batches(setup: PretrainingSetup, documents, tokenizer, seq_len: int, batch_size: int,
                  rank: int = 0, world_size: int = 1, dataset=None) -> PretrainingBatches:
    """Training batches of one length (of `dataset`, when it is already built): this process's shard."""
    dataset = dataset if dataset is not None else training_dataset(setup, documents, tokenizer, seq_len)
    return PretrainingBatches(dataset, batch_size, group_by_length=setup.group_by_length).shard(rank, world_size)


def training_batches(setup: PretrainingSetup, documents, tokenizer, rank: int = 0, world_size: int = 1,
                     phases: tuple[Phase, ...] | None = None, datasets: list | None = None) -> BatchSource:
    """The training source: every phase of the schedule in turn (short sequences first under the curriculum).

    `phases` replaces the setup's own for a run that continues another one part-way through its schedule (a
    Table 5 branch: the trunk's optimizer and schedule, phases of its own); `datasets`, one per phase, are
    used as built instead of being built here."""
    phases = phases or setup.phases()
    datasets = datasets or [None] * len(phases)
    sources = [phase_batches(setup, documents, tokenizer, p.seq_len, p.batch_size, rank, world_size, dataset)
               for p, dataset in zip(phases, datasets)]
    if len(sources) == 1:
        return sources[0]
    return PhasedBatches(sources[0], sources[1], switch_after=phases[0].steps * setup.accumulate)


def validation_batches(setup: PretrainingSetup, documents, tokenizer, seed: int | None = None,
                       task: str | None = None, count: int | None = None, rank: int = 0,
                       world_size: int = 1, dataset=None) -> list[dict]:
    """Held-out batches at the setup's length, masked once (static) so every evaluation scores the same tokens.

    By default: the setup's task and seed, --eval-batches of them; the experiments fix the seed (and
    the task) so that every model they compare is scored on the same masked tokens."""
    dataset = dataset if dataset is not None else held_out_dataset(setup, documents, tokenizer, seed, task)
    source = PretrainingBatches(dataset, setup.batch_size).shard(rank, world_size)
    return source.take(setup.eval_batches if count is None else count)


def load_run_data(setup: PretrainingSetup, config: AlbertConfig, tokenizer: Tokenizer | None, info: DistInfo,
                  say=print, plan: DataPlan | None = None) -> RunData:
    """This rank's training source and validation batches: the text read once, each dataset built once (one call
    of text.batches.build_pretraining_dataset, with the plain options of `plan`, the setup's DataPlan) and then
    checked for enough examples (a refusal names the values that work)."""
    if setup.corpus == "synthetic":
        return synthetic_data(setup, config, info)
    plan = plan or DataPlan.of(setup)
    train_docs, held_docs, fingerprint = load_documents(setup, tokenizer, say)
    splits = {"training": train_docs, "validation": held_docs}
    check_task_fits(splits, setup.task, setup.split_by)
    # A text with no instance at a length builds no dataset (None, 0 examples): the batch check below then says
    # why in one line, with the values that work, instead of the builder's ValueError.
    held = fitting_dataset(held_docs, tokenizer, **plan.held_out)
    datasets = []  # one per phase
    for phase in plan.phases:
        datasets.append(fitting_dataset(train_docs, tokenizer, max_seq_len=phase.seq_len, **plan.training))
    world = info.world_size
    for phase, dataset in reversed(list(zip(plan.phases, datasets))):  # the --seq-len phase first
        # A short phase only trains (evaluation stays at --seq-len), so only its training batch is checked.
        evals = setup.eval_batches if phase.seq_len == setup.seq_len else 0
        counts = size(dataset) // world, size(held) // world if evals else 0
        if counts[0] < phase.batch_size or counts[1] < phase.batch_size * evals:
            raise UsageError(batch_problem(setup, config, splits, world, phase.seq_len, phase.batch_size, evals,
                                           counts))
    shard = dict(rank=info.rank, world_size=world)
    train = training_batches(setup, train_docs, tokenizer, **shard, phases=plan.phases, datasets=datasets)
    val = validation_batches(setup, held_docs, tokenizer, **shard, dataset=held)
    return RunData(train, val, train_docs, fingerprint)


NO_INSTANCE = "instance fits in max_seq_len"  # text.instances' error when not one instance fits


def fitting_dataset(documents, tokenizer, **options):
    """build_pretraining_dataset's dataset, or None when no instance of the task fits its max_seq_len (the
    builder's ValueError for that case, which names the library's argument, not the flag)."""
    try:
        return build_pretraining_dataset(documents, tokenizer, **options)
    except ValueError as error:
        if NO_INSTANCE not in str(error):
            raise
        return None


def size(dataset) -> int:
    return 0 if dataset is None else len(dataset)


def synthetic_data(setup: PretrainingSetup, config: AlbertConfig, info: DistInfo) -> RunData:
    """This rank's share of the synthetic stream (random ids of the model's vocabulary), and its held-out batches
    from the next seed."""
    check_synthetic_eval_batches(setup)
    sentence = sentence_task(setup.task).labelled
    train = SyntheticBatches(config.vocab_size, setup.batch_size, setup.seq_len, seed=setup.seed,
                             sentence_labels=sentence).shard(info.rank, info.world_size)
    val = SyntheticBatches(config.vocab_size, setup.batch_size, setup.seq_len, seed=setup.seed + 1,
                           sentence_labels=sentence).shard(info.rank, info.world_size).take(setup.eval_batches)
    return RunData(train, val, None, None)


def check_synthetic_eval_batches(setup: PretrainingSetup) -> None:
    """Refuse more --eval-batches than the synthetic corpus keeps in memory (its stream never runs out, so the
    evaluation set, kept as a list, is bounded by synthetic.max_take instead of by the data)."""
    most = max_take(setup.batch_size, setup.seq_len)
    if setup.eval_batches > most:
        raise UsageError(f"--eval-batches {setup.eval_batches} x --batch-size {setup.batch_size} x --seq-len "
                         f"{setup.seq_len} is more held-out tokens than --corpus synthetic keeps in memory "
                         f"({MAX_HELD_TOKENS:,}); use --eval-batches {min(most, 8)} (at most {most:,})")


def check_task_fits(splits: dict, task: str, split_by: str | None) -> None:
    """Refuse a sentence task that the documents of a split ({name: tokens}, in turn) cannot give a single instance
    of."""
    kind = sentence_task(task)
    for split, tokens in splits.items():
        sentences = tokens.sentence_counts()
        if kind.pairs and (sentences.max() if len(sentences) else 0) < 2:
            hint = ", or --split-by file so that each file is one document" if split_by == "blank-line" else ""
            raise UsageError(f"--task {task} pairs consecutive sentences of a document, but no document of the "
                             f"{split} text has two sentences; use --task none (MLM only){hint}")
        documents = int((sentences > 0).sum())
        if documents < kind.min_documents:
            raise UsageError(f"--task {task} needs {kind.min_documents} documents with text, but the {split} text "
                             f"has {documents} ({task}: {kind.description}); use --task sop, or give more documents")


def batch_problem(args: PretrainingSetup, config: AlbertConfig, splits: dict, world_size: int, length: int,
                  batch: int, evals: int, counts: tuple[int, int]) -> str:
    """Why a process gets no full training batch of `batch` sequences of `length` tokens, or fewer than `evals`
    evaluation batches (`counts`: the examples per process the built datasets hold), with the flags and values
    that work, found by counting the examples other settings would give (epoch 0; later dynamic epochs differ by
    a few examples)."""
    longest = config.max_position_embeddings  # the preset's, or --config's

    def per_process(seq_len: int) -> tuple[int, int]:
        found = []
        for split, tokens in splits.items():
            dynamic = split == "training" and args.masking == "dynamic"
            dupes = args.dupe_factor if split == "training" else 1
            settings = DataSettings(task=args.task, max_seq_len=seq_len, seed=args.seed, dynamic=dynamic,
                                    dupe_factor=dupes)
            found.append(count_examples(tokens, settings) // world_size)
        return found[0], found[1]

    def fits(train: int, held: int) -> bool:
        return train >= batch and held >= batch * evals

    train, held = counts
    if length != args.seq_len:  # the curriculum's short phase, which only trains (evals is 0)
        return _short_phase_problem(args, length, batch, train, lambda n: per_process(n)[0])
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
    return f"--seq-len {length} with --task {args.task}: {'; '.join(problems)}; {remedy}"


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
