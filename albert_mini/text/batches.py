"""From documents to model-ready batches: tokenize once, build instances, mask, pad, batch, resume, shard.

Two modes, both fully determined by `seed`:
- static (`dynamic=False`): the reference's offline recipe. `dupe_factor` passes over the corpus, each with
  its own instances and masks, are built once; every epoch visits all of them, in a new order.
- dynamic (`dynamic=True`): every epoch builds new instances and draws new masks, from (seed, epoch).
Example i of epoch e depends only on (seed, e, i): any batch can be regenerated exactly, which is what
resuming a run needs (`PretrainingBatches.state_dict()` records the epoch and the batch index).

`PretrainingBatches` is the source the trainer pulls from (`next(batches)` gives a dict of LongTensors
ready for `AlbertForPreTraining(**batch)`). With `group_by_length=True` (opt-in) it batches sequences of similar
length together, so little of each batch is padding; the instances themselves do not change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset

from .batch_source import BatchSource
from .instances import (
    TokenDocuments,
    as_token_documents,
    check_build_arguments,
    instance_at,
    instance_rows,
    row_length,
    sentence_task,
)
from .masking import Masker
from .padding import pad_batch

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["PretrainingBatches", "build_pretraining_dataset", "tokenize_documents", "unigram_log_prior"]

# Separate random streams, so that e.g. drawing masks never shifts which instances are built.
INSTANCE_STREAM, MASK_STREAM, ORDER_STREAM, GROUP_STREAM = 0, 1, 2, 3
DEFAULT_GROUP_WINDOW = 32  # batches sorted together; on Austen at 128 tokens 32 leave ~1% padding, 1 leave ~16%


def stream_rng(seed: int, stream: int, *keys: int) -> np.random.Generator:
    """A numpy Generator for one purpose (stream) and position (keys), independent of every other."""
    return np.random.default_rng([seed, stream, *keys])


def stream_seed(seed: int, stream: int, *keys: int) -> int:
    """An integer seed (for random.Random) drawn the same way as stream_rng."""
    return int(np.random.SeedSequence([seed, stream, *keys]).generate_state(1)[0])


# ---------------------------------------------------------------------------------------------- tokenizing
def tokenize_documents(documents, tokenizer) -> TokenDocuments:
    """Tokenize every sentence once (repeated sentences are encoded once) into TokenDocuments.

    A document is either an object with `.sentences()` (albert_mini.text.corpus.Document) or a list of sentences.
    """
    cache: dict[str, list[int]] = {}
    tokenized = []
    for doc in documents:
        sentences = doc.sentences() if hasattr(doc, "sentences") else doc
        if isinstance(sentences, str):
            raise TypeError("a document must be a list of sentences (or a corpus Document), not one string; "
                            "split it, e.g. with albert_mini.text.corpus.split_sentences")
        ids = []
        for sentence in sentences:
            if sentence not in cache:
                cache[sentence] = tokenizer.encode(sentence)
            ids.append(cache[sentence])
        tokenized.append(ids)
    return TokenDocuments(tokenized)


def unigram_log_prior(documents, vocab_size: int, smoothing: float = 1.0) -> torch.Tensor:
    """log p(token) over a tokenized corpus with add-`smoothing` counts: a starting point for the MLM output bias.

    An MLM head first learns how frequent each token is, which takes the output bias hundreds of steps at the
    learning rates a small model trains with; starting the bias at the log frequencies skips that phase.
    (The reference starts it at zero.)
    """
    docs = as_token_documents(documents)
    counts = docs.token_counts(vocab_size).astype(np.float64)
    if not counts.sum():
        raise ValueError("unigram_log_prior needs at least one token")
    counts += smoothing
    return torch.from_numpy(np.log(counts / counts.sum())).float()


# ---------------------------------------------------------------------------------------------- the dataset
@dataclass(frozen=True)
class DataSettings:
    """How instances are built and how often; with the Masker's settings, all that decides the examples."""

    task: str = "sop"
    max_seq_len: int = 128
    seed: int = 0
    dynamic: bool = True
    dupe_factor: int = 1  # static mode only: how many differently built and masked copies of the corpus
    short_seq_prob: float = 0.1


def count_examples(documents, settings: DataSettings) -> int:
    """How many examples epoch 0 of a PretrainingDataset with these settings holds, without masking any.

    Dynamic mode builds epoch 0 from the same seed stream as static mode's first pass, so this is exact for
    both; 0 when no instance fits.
    """
    s = settings
    passes = 1 if s.dynamic else s.dupe_factor
    return sum(len(instance_rows(documents, s.task, s.max_seq_len, s.short_seq_prob,
                                 stream_seed(s.seed, INSTANCE_STREAM, k), allow_empty=True))
               for k in range(passes))


class PretrainingDataset(Dataset):
    """Masked pretraining examples of one epoch; call `set_epoch(e)` to move to epoch e.

    `dataset[i]` is a dict of numpy arrays: input_ids, token_type_ids, labels (IGNORE_INDEX where not
    predicted) and, when the sentence task is labelled (not "none"), the int sentence_order_label.
    """

    def __init__(self, documents, masker: Masker, settings: DataSettings = DataSettings(), epoch: int = 0):
        self.documents = as_token_documents(documents)
        self.masker, self.settings = masker, settings
        s = settings
        check_build_arguments(self.documents, s.task, s.max_seq_len, s.short_seq_prob)
        if isinstance(s.seed, bool) or not isinstance(s.seed, int) or s.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {s.seed!r}")
        if s.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be >= 1, got {s.dupe_factor}")
        if s.dynamic and s.dupe_factor != 1:
            raise ValueError("dupe_factor is for static mode (dynamic=False); dynamic mode builds new instances "
                             "every epoch, so leave dupe_factor=1")
        # Static mode: the rows of its dupe_factor passes, one after another; example i of pass k is masked from
        # (seed, k, i) whenever it is read, so the masks are fixed without keeping every masked example in memory.
        passes = [] if s.dynamic else [self._pass_rows(k) for k in range(s.dupe_factor)]
        self.static_rows = np.concatenate(passes) if passes else None
        self.static_starts = np.cumsum([0] + [len(rows) for rows in passes]) if passes else None
        self.epoch = None
        self.set_epoch(epoch)

    def _pass_rows(self, k: int) -> np.ndarray:
        """The rows of instance pass k (static: dupe k; dynamic: epoch k)."""
        s = self.settings
        return instance_rows(self.documents, s.task, s.max_seq_len, s.short_seq_prob,
                             stream_seed(s.seed, INSTANCE_STREAM, k))

    def _mask(self, instance, rng: np.random.Generator) -> dict:
        masked = self.masker(instance.tokens, rng)
        example = {"input_ids": masked.input_ids, "token_type_ids": instance.token_type_ids, "labels": masked.labels}
        if sentence_task(self.settings.task).labelled:
            example["sentence_order_label"] = instance.label
        return example

    def set_epoch(self, epoch: int) -> None:
        """Build (dynamic) and order the examples of `epoch`; a no-op when already there."""
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        if epoch == self.epoch:
            return
        s = self.settings
        self.rows = self._pass_rows(epoch) if s.dynamic else self.static_rows
        self.order = stream_rng(s.seed, ORDER_STREAM, epoch).permutation(len(self.rows))
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: int) -> dict:
        if not 0 <= index < len(self.order):
            raise IndexError(f"example {index} outside 0..{len(self.order) - 1} of epoch {self.epoch}")
        j = int(self.order[index])
        instance = instance_at(self.documents, self.rows[j])
        if self.settings.dynamic:
            return self._mask(instance, stream_rng(self.settings.seed, MASK_STREAM, self.epoch, j))
        dupe = int(np.searchsorted(self.static_starts, j, side="right")) - 1
        within = j - int(self.static_starts[dupe])
        return self._mask(instance, stream_rng(self.settings.seed, MASK_STREAM, dupe, within))

    def sequence_length(self, index: int) -> int:
        """Tokens in example `index` of the current epoch, found without building or masking it."""
        return row_length(self.rows[int(self.order[index])])

    def describe(self) -> dict:
        """Plain values of everything that decides the examples (stored with a run's data position)."""
        return {**dataclasses.asdict(self.settings), "masking": self.masker.describe(),
                "documents": len(self.documents), "tokens": self.documents.num_tokens()}

    def shard(self, rank: int, world_size: int) -> DatasetShard:
        """Examples rank, rank + world_size, ...: disjoint across ranks, the same count on every rank."""
        return DatasetShard(self, rank, world_size)


class DatasetShard(Dataset):
    """Every world_size-th example of a PretrainingDataset, from `rank`; the tail that would not split evenly
    is left out, so every rank sees the same number of examples (DDP steps in lock-step)."""

    def __init__(self, dataset: PretrainingDataset, rank: int, world_size: int):
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"need world_size >= 1 and 0 <= rank < world_size, got rank {rank} of {world_size}")
        self.dataset, self.rank, self.world_size = dataset, rank, world_size

    @property
    def epoch(self) -> int:
        return self.dataset.epoch

    @property
    def settings(self) -> DataSettings:
        return self.dataset.settings

    def sequence_length(self, index: int) -> int:
        return self.dataset.sequence_length(index * self.world_size + self.rank)

    def describe(self) -> dict:
        return self.dataset.describe()

    def set_epoch(self, epoch: int) -> None:
        self.dataset.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.dataset) // self.world_size

    def __getitem__(self, index: int) -> dict:
        if not 0 <= index < len(self):
            raise IndexError(f"example {index} outside 0..{len(self) - 1} of shard {self.rank}/{self.world_size}")
        return self.dataset[index * self.world_size + self.rank]


# ---------------------------------------------------------------------------------------------- batching
def collate(examples: Sequence[dict], pad_to: int | None = None) -> dict[str, torch.Tensor]:
    """Pad examples to the longest (or to `pad_to`) and stack them into LongTensors for AlbertForPreTraining."""
    if not examples:
        raise ValueError("cannot collate an empty list of examples")
    batch = pad_batch({key: [e[key] for e in examples] for key in ("input_ids", "token_type_ids", "labels")}, pad_to)
    B = len(examples)
    with_label = sum("sentence_order_label" in e for e in examples)
    if with_label == B:
        batch["sentence_order_label"] = torch.tensor([e["sentence_order_label"] for e in examples], dtype=torch.long)
    elif with_label:
        raise ValueError(f"{with_label} of {B} examples have a sentence_order_label; a batch mixes tasks")
    return batch


class PretrainingBatches(BatchSource):
    """Batches over epochs from a dataset (or a shard of it): the trainer's batch source.

    Batch i of epoch e holds examples [i * batch_size, (i + 1) * batch_size) of that epoch; an incomplete
    last batch is dropped. `next(batches)` moves on, into the next epoch when one ends, and raises
    StopIteration after `num_epochs` epochs (None: never). `state_dict()` is the exact position.

    `group_by_length=True` (off by default) takes the same examples a window of `group_window` batches at a time,
    sorts them by length, cuts them into batches and shuffles those batches (seeded by the epoch and window),
    so each batch is padded only to its own longest sequence and hardly any compute goes to padding.
    """

    def __init__(self, dataset: PretrainingDataset | DatasetShard, batch_size: int, num_epochs: int | None = None,
                 pad_to: int | None = None, group_by_length: bool = False, group_window: int = DEFAULT_GROUP_WINDOW):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if num_epochs is not None and num_epochs < 1:
            raise ValueError(f"num_epochs must be >= 1 or None, got {num_epochs}")
        if group_by_length and pad_to is not None:
            raise ValueError(f"group_by_length trims each batch to its longest sequence and pad_to={pad_to} pads "
                             "every batch to one width; leave pad_to out or group_by_length off")
        if isinstance(group_window, bool) or not isinstance(group_window, int) or group_window < 1:
            raise ValueError(f"group_window must be an integer >= 1 (batches sorted together), got {group_window!r}")
        super().__init__(epoch=dataset.epoch)
        self.dataset, self.batch_size, self.num_epochs, self.pad_to = dataset, batch_size, num_epochs, pad_to
        self.group_by_length, self.group_window = bool(group_by_length), group_window
        self._window_cache: tuple[int, int, np.ndarray] | None = None
        if self.batches_per_epoch() == 0:
            raise ValueError(f"epoch {self.epoch} has {len(dataset)} examples, fewer than one batch of "
                             f"{batch_size}; lower batch_size or use more text")

    @property
    def max_predictions(self) -> int:
        """The most masked tokens of any sequence (the masker's cap): the trainer's MLM head runs at that many."""
        dataset = self.dataset.dataset if isinstance(self.dataset, DatasetShard) else self.dataset
        return dataset.masker.max_predictions

    def batches_in_epoch(self, epoch: int) -> int:
        """Full batches in `epoch` (dynamic epochs differ slightly in size)."""
        self.dataset.set_epoch(epoch)
        return len(self.dataset) // self.batch_size

    def batches_per_epoch(self) -> int:
        """Full batches in the current epoch."""
        return self.batches_in_epoch(self.epoch)

    def batch(self, epoch: int, index: int) -> dict[str, torch.Tensor]:
        """Batch `index` of `epoch`, regenerated from the seed."""
        count = self.batches_in_epoch(epoch)
        if not 0 <= index < count:
            raise IndexError(f"batch {index} outside 0..{count - 1} of epoch {epoch}")
        if self.group_by_length:
            window, k = divmod(index, self.group_window)
            return collate([self.dataset[int(i)] for i in self.window_batches(epoch, window)[k]])
        start = index * self.batch_size
        return collate([self.dataset[i] for i in range(start, start + self.batch_size)], self.pad_to)

    def window_batches(self, epoch: int, window: int) -> np.ndarray:
        """(batches, batch_size) example indices of one window of a grouped epoch, in the order they are served."""
        if self._window_cache is not None and self._window_cache[:2] == (epoch, window):
            return self._window_cache[2]
        count, B = self.batches_in_epoch(epoch), self.batch_size
        first, last = window * self.group_window, min((window + 1) * self.group_window, count)
        if not 0 <= first < count:
            raise IndexError(f"window {window} outside 0..{(count - 1) // self.group_window} of epoch {epoch}")
        positions = np.arange(first * B, last * B)
        lengths = np.array([self.dataset.sequence_length(int(i)) for i in positions])
        # Stable, so ties keep the epoch's seeded order whatever sort numpy picks: batches depend on the seed only.
        batches = positions[np.argsort(lengths, kind="stable")].reshape(-1, B)
        # Served in a shuffled order, or every window would run from short batches to long ones.
        batches = batches[stream_rng(self.dataset.settings.seed, GROUP_STREAM, epoch, window).permutation(len(batches))]
        self._window_cache = (epoch, window, batches)
        return batches

    def settings(self) -> dict:
        grouping = {"group_by_length": True, "group_window": self.group_window} if self.group_by_length else {}
        return {"batch_size": self.batch_size, "data": self.dataset.describe(), **grouping}

    def load_state_dict(self, state: dict) -> None:
        """As BatchSource's, and also refuse a grouped position in an ungrouped source (and the reverse)."""
        if bool(state.get("group_by_length")) != self.group_by_length:
            saved = "grouped by length" if state.get("group_by_length") else "not grouped by length"
            raise ValueError(f"the saved data position was made with batches {saved}, this source has "
                             f"group_by_length={self.group_by_length}; rebuild the source with the saved settings "
                             "to resume exactly")
        super().load_state_dict(state)

    def shard(self, rank: int, world_size: int) -> PretrainingBatches:
        """The batches of `rank` of `world_size` processes (batch_size stays per rank), from the start."""
        dataset = self.dataset.dataset if isinstance(self.dataset, DatasetShard) else self.dataset
        return PretrainingBatches(dataset.shard(rank, world_size), self.batch_size, self.num_epochs, self.pad_to,
                                  self.group_by_length, self.group_window)


# ---------------------------------------------------------------------------------------------- one call
def build_pretraining_dataset(documents, tokenizer, task: str = "sop", max_seq_len: int = 128, seed: int = 0,
                              dynamic: bool = True, dupe_factor: int = 1, short_seq_prob: float = 0.1,
                              **masking) -> PretrainingDataset:
    """Tokenize `documents` once and wrap them in a PretrainingDataset.

    `documents`: corpus Documents, lists of sentence strings, or TokenDocuments (already tokenized).
    `short_seq_prob`: see DataSettings; `masking`: options of Masker (masked_lm_prob=0.15, max_predictions=20,
    ngram=3, whole_word=True, favor_shorter_ngram=True).
    """
    sentence_task(task)  # an unknown name fails before the corpus is tokenized
    settings = DataSettings(task=task, max_seq_len=max_seq_len, seed=seed, dynamic=dynamic, dupe_factor=dupe_factor,
                            short_seq_prob=short_seq_prob)
    docs = documents if isinstance(documents, TokenDocuments) else tokenize_documents(documents, tokenizer)
    return PretrainingDataset(docs, Masker.from_tokenizer(tokenizer, **masking), settings)
