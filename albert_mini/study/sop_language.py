"""A language built for Table 5: topic and sentence order as two separate signals, and a model trained on it.

On Austen, topic and order come tangled together and SOP barely leaves chance at this book's scale. Here a
generator writes diaries in which each signal has one carrier:

- topic: a document draws its content words from one topic of its own (12 topics, disjoint; the plan's language
  gives each topic a single word, so a document about the sea says "ship" wherever it names its subject);
- order: a narrative clock, the twelve months, runs through the document, one month a sentence (the sentence's
  first word, like a diary's date), starting at a random month and going round the year (December is followed by
  January). A pair is in order when B's months come just after A's. The clock is cyclic and every start is equally
  likely, so the months of one segment alone say nothing about which segment came first: only comparing A's
  months with B's does;
- function words ("the", "and", ...) are shared by every topic and carry neither signal.

Pairs come from the book's own instance builder (`albert_mini.text.instances`): an NSP negative's B is another
document's (so almost always another topic and another clock), an SOP negative is the same two neighbours swapped
(same topic, the clock running backwards). Rules that need no network bound what each task offers: the topic rule
(do A and B share a topic?) and the clock rule (do B's months follow A's?) at the top, and a linear regression on
which tokens each segment holds (no single token reveals either label) at the bottom.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from ..model.albert import AlbertForPreTraining
from ..model.config import AlbertConfig
from ..specials import FIRST_ORDINARY_ID, MASK_ID, SPECIAL_IDS, SPECIAL_PIECES
from ..text.batches import DataSettings, PretrainingBatches, PretrainingDataset, unigram_log_prior
from ..text.instances import Instance, TokenDocuments, build_instances
from ..text.masking import Masker
from ..text.padding import pad_batch
from ..training.loop import pretraining_loop
from ..training.optim import WarmupPolyDecay, build_optimizer
from ..training.pretraining_model import train_sentence_head
from .leak_probe import fit_logistic_regression
from .probes import linear_probe, pair_features
from .stats import wilson_interval

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["Language", "Recipe", "clock_rule", "pair_set", "score_row", "token_regression",
           "topic_rule", "train_row"]

FULL_STOP = "."
FUNCTION_WORDS = ("the", "a", "and", "of", "in", "was", "to", "then")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
TOPICS = {
    "sea": "ship sail harbour wave captain anchor storm deck tide crew",
    "farm": "field plough barn harvest cow wheat hay farmer orchard fence",
    "war": "soldier cannon siege general musket fort rifle banner trench retreat",
    "church": "vicar sermon pew bell altar hymn choir parish prayer steeple",
    "music": "piano sonata violin concert song melody duet harp score tune",
    "school": "teacher lesson slate pupil chalk desk grammar sum satchel recess",
    "kitchen": "cook oven bread kettle pantry soup butter flour ladle supper",
    "garden": "rose hedge lawn tulip gardener path bench ivy fountain bloom",
    "law": "judge court lawyer verdict witness trial clerk deed jury appeal",
    "travel": "coach inn road horse journey luggage map turnpike stable traveller",
    "illness": "doctor fever cough remedy nurse bed pill tonic surgeon pulse",
    "trade": "merchant ledger coin market cargo warehouse price bargain shop debt",
}
ROWS = ("none", "nsp", "sop")  # Table 5's rows: the sentence task a model trains on besides MLM
TASKS = ("nsp", "sop")  # what every row is scored on


@dataclass(frozen=True)
class Language:
    """The generator's settings; the same settings and seed always write the same documents."""

    topics: int = 12  # at most len(TOPICS)
    words_per_topic: int = 1  # a topic's content words (the calibration's choice: one, its topic's first word)
    sentences: tuple[int, int] = (6, 10)  # sentences in a document, both ends included
    words: tuple[int, int] = (3, 3)  # words in a sentence besides its month and full stop, both ends included
    function_share: float = 0.2  # the chance that a word is a function word rather than a content word
    month_first: bool = True  # the month opens its sentence, as a diary's date (False: anywhere in it)
    next_month: bool = False  # the sentence also names the next month, as its last word before the full stop
    train_documents: int = 2000
    held_out_documents: int = 1000
    seed: int = 0  # the documents' seed: fixed, so that every run of every row reads the same text

    def __post_init__(self):
        if not 1 <= self.topics <= len(TOPICS) or not 1 <= self.words_per_topic <= 10:
            raise ValueError(f"topics must be in 1..{len(TOPICS)} and words_per_topic in 1..10")
        if not 2 <= self.sentences[0] <= self.sentences[1] or not 1 <= self.words[0] <= self.words[1]:
            raise ValueError("a document needs at least 2 sentences and a sentence at least 1 word")

    # ------------------------------------------------------------------ the vocabulary
    def vocabulary(self) -> list[str]:
        """Every piece by id: ALBERT's specials (ids 0-4), the full stop, function words, months, topic words."""
        specials = sorted(SPECIAL_PIECES, key=SPECIAL_PIECES.get)
        content = [w for topic in list(TOPICS.values())[:self.topics] for w in topic.split()[:self.words_per_topic]]
        return [*specials, FULL_STOP, *FUNCTION_WORDS, *MONTHS, *content]

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary())

    @property
    def first_month_id(self) -> int:
        return FIRST_ORDINARY_ID + 1 + len(FUNCTION_WORDS)

    @property
    def first_content_id(self) -> int:
        return self.first_month_id + len(MONTHS)

    def month_of(self, ids: np.ndarray) -> np.ndarray:
        """The month (0-11) of each id, -1 where the id is not a month."""
        ids = np.asarray(ids)
        month = ids - self.first_month_id
        return np.where((month >= 0) & (month < len(MONTHS)), month, -1)

    def topic_of(self, ids: np.ndarray) -> np.ndarray:
        """The topic of each id, -1 where the id is not a content word."""
        ids = np.asarray(ids)
        offset = ids - self.first_content_id
        return np.where(offset >= 0, offset // self.words_per_topic, -1)

    def decode(self, ids) -> str:
        """Ids as words (a sentence ends with its full stop)."""
        words = self.vocabulary()
        return " ".join(words[int(i)] for i in ids)

    # ------------------------------------------------------------------ the documents
    def documents(self, split: str) -> TokenDocuments:
        """The "train" or "held_out" documents (disjoint draws from the same language)."""
        count = {"train": self.train_documents, "held_out": self.held_out_documents}[split]
        rng = np.random.default_rng([self.seed, 0 if split == "train" else 1])
        return TokenDocuments([self._document(rng) for _ in range(count)])

    def _document(self, rng: np.random.Generator) -> list[list[int]]:
        topic = int(rng.integers(self.topics))
        start = int(rng.integers(len(MONTHS)))  # every month equally likely: no segment's months give it away
        n = int(rng.integers(self.sentences[0], self.sentences[1] + 1))
        return [self._sentence(rng, topic, (start + i) % len(MONTHS)) for i in range(n)]

    def _sentence(self, rng: np.random.Generator, topic: int, month: int) -> list[int]:
        length = int(rng.integers(self.words[0], self.words[1] + 1))
        function = rng.random(length) < self.function_share
        words = np.where(function, FIRST_ORDINARY_ID + 1 + rng.integers(len(FUNCTION_WORDS), size=length),
                         self.first_content_id + topic * self.words_per_topic
                         + rng.integers(self.words_per_topic, size=length))
        at = 0 if self.month_first else int(rng.integers(length + 1))
        after = [self.first_month_id + (month + 1) % len(MONTHS)] if self.next_month else []
        return [*words[:at].tolist(), self.first_month_id + month, *words[at:].tolist(), *after, FIRST_ORDINARY_ID]

    def masker(self, max_predictions: int) -> Masker:
        """ALBERT's n-gram masking over this vocabulary: every piece is a whole word."""
        return Masker(np.ones(self.vocab_size, dtype=bool), SPECIAL_IDS, MASK_ID, max_predictions=max_predictions)

    def settings(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------- rules without a network
def topic_rule(language: Language, instance: Instance) -> int:
    """NSP by topic alone: 0 (B continues A) when A's and B's content words share their most common topic."""
    a, b = (language.topic_of(s) for s in instance.segments())
    a, b = a[a >= 0], b[b >= 0]
    if not len(a) or not len(b):
        return 0
    return int(np.bincount(a).argmax() != np.bincount(b).argmax())


def clock_rule(language: Language, instance: Instance) -> int:
    """SOP by the clock alone: 0 (in order) when the months, read from A on through B, never step back."""
    months = language.month_of(np.concatenate(instance.segments()))
    months = months[months >= 0]
    steps = np.diff(months) % len(MONTHS)
    return int(not np.isin(steps, (0, 1)).all())


def token_counts(language: Language, instances: list[Instance]) -> np.ndarray:
    """(N, 2V): how often each piece occurs in A, then in B."""
    V = language.vocab_size
    out = np.zeros((len(instances), 2 * V))
    for i, instance in enumerate(instances):
        a, b = instance.segments()
        np.add.at(out[i], a, 1.0)
        np.add.at(out[i], V + b, 1.0)
    return out


def token_regression(language: Language, train: list[Instance], test: list[Instance]) -> np.ndarray:
    """A logistic regression on which pieces each segment holds, fitted on `train`: its predictions on `test`."""
    x = token_counts(language, train)
    used = x.std(0) > 0  # pieces never seen in training carry no weight
    predict = fit_logistic_regression(x[:, used], np.array([t.label for t in train], dtype=float))
    return predict(token_counts(language, test)[:, used])


# ---------------------------------------------------------------------------------------------- pairs and training
def pair_set(language: Language, task: str, split: str, seq_len: int, count: int, seed: int):
    """`count` pairs of `task` from a split (drawn without replacement from one pass of the book's instance
    builder, seeded): (padded inputs, labels, instances)."""
    instances = build_instances(language.documents(split), task, seq_len, seed=seed)
    if count > len(instances):
        raise ValueError(f"{split} holds {len(instances)} {task.upper()} pairs at {seq_len} tokens, fewer than "
                         f"{count}; generate more documents or ask for fewer pairs")
    chosen = np.sort(np.random.default_rng(seed).choice(len(instances), count, replace=False))
    instances = [instances[i] for i in chosen]
    inputs = pad_batch({"input_ids": [x.tokens for x in instances],
                        "token_type_ids": [x.token_type_ids for x in instances]})
    return inputs, torch.tensor([x.label for x in instances]), instances


@dataclass(frozen=True)
class Recipe:
    """The model and how long it trains: small enough for a CPU-minute a run."""

    hidden_size: int = 64
    embedding_size: int = 32
    num_hidden_layers: int = 4  # one shared layer applied 4 times (ALBERT's all-shared)
    num_attention_heads: int = 4
    seq_len: int = 32
    batch_size: int = 32
    steps: int = 2000
    lr: float = 2e-3
    warmup: int = 100
    max_predictions: int = 5
    optimizer: str = "adamw"  # the calibration's choice: LAMB at 5e-3 and 2e-2 stayed on the MLM plateau

    def config(self, language: Language) -> AlbertConfig:
        return AlbertConfig(vocab_size=language.vocab_size, embedding_size=self.embedding_size,
                            hidden_size=self.hidden_size, num_hidden_layers=self.num_hidden_layers,
                            num_attention_heads=self.num_attention_heads, intermediate_size=4 * self.hidden_size,
                            max_position_embeddings=self.seq_len)

    def settings(self) -> dict:
        return dataclasses.asdict(self)


def train_row(language: Language, recipe: Recipe, row: str, seed: int) -> tuple[AlbertForPreTraining, list[float]]:
    """A model trained from scratch on MLM plus the row's sentence task (MLM only for "none", on SOP-layout pairs
    with the pooler and sentence head frozen); everything random is drawn from `seed`. Returns it and its losses."""
    if row not in ROWS:
        raise ValueError(f"row must be one of {', '.join(ROWS)}, got {row!r}")
    documents = language.documents("train")
    settings = DataSettings(task="sop" if row == "none" else row, max_seq_len=recipe.seq_len, seed=seed)
    dataset = PretrainingDataset(documents, language.masker(recipe.max_predictions), settings)
    batches = PretrainingBatches(dataset, recipe.batch_size)
    torch.manual_seed(seed)
    model = AlbertForPreTraining(recipe.config(language))
    model.init_output_bias(unigram_log_prior(documents, language.vocab_size))
    train_sentence_head(model, row != "none")
    optimizer = build_optimizer(model, recipe.optimizer, lr=recipe.lr)
    schedule = WarmupPolyDecay(recipe.lr, recipe.steps, recipe.warmup)
    stream = batches if row != "none" else ({k: v for k, v in b.items() if k != "sentence_order_label"}
                                            for b in batches)
    losses = pretraining_loop(model, stream, optimizer, schedule, recipe.steps)
    return model, losses


def score_row(model: AlbertForPreTraining, language: Language, recipe: Recipe, row: str, pairs: dict,
              probe_steps: int = 300, seed: int = 0) -> dict:
    """One row on both tasks, on the held-out pairs in `pairs` ({task: {"train": ..., "held_out": ...}}): the
    book's probe (a linear classifier on the frozen pooled [CLS] output, fitted on the probe-training pairs) and,
    on the task it trained on, the row's own head. Accuracies as fractions, with per-pair correctness."""
    model.eval()
    out = {}
    for task in TASKS:
        train_x, train_y, _ = pairs[task]["train"]
        test_x, test_y, _ = pairs[task]["held_out"]
        train, test = pair_features(model, train_x), pair_features(model, test_x)
        predicted = linear_probe(train["pooled"], train_y, test["pooled"], probe_steps, seed=seed)
        out[task] = graded(predicted, test_y)
        if task == row:
            out[f"{task}_head"] = graded(test["logits"].argmax(-1), test_y)
    return out


def graded(predictions: torch.Tensor, labels: torch.Tensor) -> dict:
    """Accuracy with its 95% Wilson interval, the answers given (one answer: a constant), per-pair correctness."""
    correct = (predictions == labels).to(torch.int64)
    right, n = int(correct.sum()), len(correct)
    return {"accuracy": right / n, "wilson": list(wilson_interval(right, n)), "n": n,
            "answers": sorted(set(predictions.tolist())), "correct": "".join(map(str, correct.tolist()))}
