# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (albert-mini)
#     language: python
#     name: albert-mini
# ---

# %% [markdown]
# # Chapter 5: Sentence-order prediction
#
# BERT is pretrained with two losses: masked language modelling, and **next-sentence prediction** (NSP), which
# shows the model two segments of text and asks whether the second really follows the first. Later work (XLNet,
# RoBERTa) found that dropping NSP did no harm. ALBERT's third idea is that the trouble lies in NSP's
# *negatives*: a segment drawn from another document is usually about something else, so "is this the next
# sentence?" can be answered by asking the much easier "is this the same topic?". **Sentence-order prediction**
# (SOP) shows two consecutive segments either in order or swapped. Both orders have exactly the same words, so
# topic says nothing; only the flow of the text does.
#
# This chapter builds both tasks from the Austen corpus, shows the topic shortcut with word counts and a logistic
# regression, reads the paper's Table 5, names a label leak to avoid, and ends with what SOP does at mini scale.
#
# ## Learning goals
#
# - Define NSP and SOP instances and their labels (SOP: 0 = in order, 1 = swapped), and build both from text.
# - Show, without a network, that bag-of-words features solve a good part of NSP and none of SOP, and that
#   NSP negatives from another novel are the easy ones.
# - Read Table 5: an NSP model is at chance on SOP, an SOP model solves much of NSP.
# - Explain how truncating after the swap leaks the SOP label, and how our instance builder avoids it.
# - Read the mini-scale results: SOP at chance after 1,200 steps, above chance in one model trained on 5.9
#   times the tokens, and a pre-registered Table 5 that stopped at its go/no-go rule.

# %% [markdown]
# ## Two tasks, one layout
#
# Both tasks feed the model the same layout, `[CLS] A [SEP] B [SEP]`, with token-type ids 0 for `[CLS] A [SEP]`
# and 1 for `B [SEP]`, and both put a two-way classifier on the pooled `[CLS]` output. Only the way A, B and the
# label are chosen differs:
#
# | task | label 0 | label 1 |
# |---|---|---|
# | NSP (BERT) | B is the text that follows A in the same document | B is text from another, random document |
# | SOP (ALBERT) | A then B, two consecutive segments in text order | the same two segments swapped: B then A |
#
# A *segment* is a run of whole sentences. `albert_mini.text.instances.build_instances` builds one pass of either
# task over tokenized documents, every random choice drawn from its `seed`. Each `Instance` keeps the token ids,
# the two lengths, the label, and where each segment came from: `source_a = (document, first token, end token)`,
# and the same for B. We use the 25 held-out (validation) chapters, tokenized with the book's 8,000-piece model.

# %% tags=["nbval-check-output"]
import textwrap
from collections import Counter

import numpy as np

from albert_mini.text.batches import tokenize_documents
from albert_mini.text.corpus import load_corpus
from albert_mini.text.instances import build_instances
from albert_mini.text.tokenizer import Tokenizer

tokenizer = Tokenizer.default()
val_chapters = load_corpus("austen", "validation")
val_docs = tokenize_documents(val_chapters, tokenizer)
val_novel = [chapter.novel for chapter in val_chapters]
sop_val = build_instances(val_docs, task="sop", max_seq_len=128, seed=0)
nsp_val = build_instances(val_docs, task="nsp", max_seq_len=128, seed=0)
print(f"{len(val_chapters)} validation chapters from {len(set(val_novel))} novels")
for name, instances in (("SOP", sop_val), ("NSP", nsp_val)):
    labels = Counter(inst.label for inst in instances)
    print(
        f"{name}: {len(instances)} instances of at most 128 tokens; label 0: "
        f"{labels[0]}, label 1: {labels[1]}"
    )

# %% [markdown]
# The table as a picture, with real text: A and B are the first two pairs of sentences of the first validation
# chapter, and NSP's negative takes its second segment from a chapter of another novel
# (`albert_mini.book.diagrams.sentence_pair_diagram`).

# %%
import matplotlib.pyplot as plt

from albert_mini.book.diagrams import sentence_pair_diagram
from albert_mini.paths import save_figure

chapter = val_chapters[0]
elsewhere = next(c for c in val_chapters if c.novel != chapter.novel)
sentences, other = chapter.sentences(), elsewhere.sentences()
fig = sentence_pair_diagram(
    " ".join(sentences[0:2]),
    " ".join(sentences[2:4]),
    " ".join(other[0:2]),
    {
        "A": f"{chapter.title}, chapter {chapter.chapter}",
        "B": "the text after A",
        "C": f"{elsewhere.title}, chapter {elsewhere.chapter}",
    },
)
save_figure(fig, "05_sop_vs_nsp_diagram.png")
plt.show()

# %% [markdown]
# Let us read one of each. `Instance.segments()` gives the token ids of A and B without the special tokens; the
# helper below cuts a decoded segment to a few lines (the text is lower-cased, as Chapter 2 showed).


# %%
def show(title, ids, width=110, max_chars=330):
    """Print a decoded segment, wrapped and cut to max_chars."""
    text = tokenizer.decode(ids.tolist())
    text = (
        text
        if len(text) <= max_chars
        else text[:max_chars].rsplit(" ", 1)[0] + " [...]"
    )
    print(f"{title} ({len(ids)} tokens):")
    print(textwrap.indent(textwrap.fill(text, width), "    "))


SOP_MEANING = {0: "in text order", 1: "swapped: B comes first in the book"}
NSP_MEANING = {0: "B is the true next segment", 1: "B comes from another document"}

# %% tags=["nbval-check-output"]
swapped = next(inst for inst in sop_val if inst.label == 1)
a, b = swapped.segments()
print(
    f"SOP instance, label {swapped.label} ({SOP_MEANING[swapped.label]}); "
    f"A = tokens {swapped.source_a[1:]} and B = tokens {swapped.source_b[1:]} of "
    f"chapter {swapped.source_a[0]}"
)
show("A", a)
show("B", b)

# %% [markdown]
# B's tokens end where A's begin: in the book, B comes first, hence label 1. The label answers "is this pair
# swapped?"; the reference code keeps BERT's name for it (`next_sentence_labels`), so it is easy to read the wrong
# way round. Exercise 1 makes you write it down.
#
# An NSP negative looks like this:

# %% tags=["nbval-check-output"]
negative = next(
    inst
    for inst in nsp_val
    if inst.label == 1
    and min(inst.len_a, inst.len_b) >= 40
    # a long enough one to read
    and val_novel[inst.source_a[0]] != val_novel[inst.source_b[0]]
)
a, b = negative.segments()
print(f"NSP instance, label {negative.label} ({NSP_MEANING[negative.label]})")
show(f"A, from {val_novel[negative.source_a[0]]}", a)
show(f"B, from {val_novel[negative.source_b[0]]}", b)

# %% [markdown]
# A is about Sir John's guest at Barton; B is at Netherfield, with Mr. Hurst, Mr. Bingley, Elizabeth and Darcy.
# You do not need the flow of the text to say that B does not continue A: the names alone tell you.
#
# > **Differs from BERT.** The model is unchanged: the same pooled `[CLS]` output, the same two-way classifier
# > (`AlbertForPreTraining.sop_classifier`), the same cross-entropy loss added to the MLM loss. Only the data
# > changes: BERT's negatives are segments from another document, ALBERT's are the positives swapped. ALBERT's
# > positives are exactly BERT's.

# %% [markdown]
# ### Exercise 1: an SOP pair
#
# Write `sop_pair(segment_a, segment_b, swap)`. `segment_a` and `segment_b` are two consecutive segments in
# text order (lists of token ids). Return `(first, second, label)`: the two segments in the order the model
# will see them and the SOP label, an `int` with 1 meaning "swapped".

# %% nbgrader={"grade": false, "grade_id": "sop_pair", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sop_pair(segment_a, segment_b, swap):
    """(first, second, label) for two consecutive segments; label 1 = swapped."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_sop_pair", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_sop_pair

check_sop_pair(sop_pair);

# %% [markdown]
# ### Exercise 2: the NSP label from where the segments came from
#
# Write `nsp_label_from_sources(source_a, source_b)`, where each source is `(document, first token, end token)`
# as stored in `Instance.source_a` and `Instance.source_b`. Return the int 0 when B is the true continuation of
# A and the int 1 otherwise. Careful: two segments of the same document are not automatically "next".

# %% nbgrader={"grade": false, "grade_id": "nsp_label_from_sources", "locked": false, "schema_version": 3, "solution": true, "task": false}
def nsp_label_from_sources(source_a, source_b):
    """0 when B starts exactly where A ends in the same document, else 1."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_nsp_label_from_sources", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_nsp_label_from_sources

check_nsp_label_from_sources(nsp_label_from_sources);

# %% [markdown]
# ## Why NSP is easy: it mixes topic with coherence
#
# The paper's diagnosis (Section 3, "inter-sentence coherence loss") is that NSP merges *topic prediction* (are A
# and B about the same things?) with *coherence prediction* (does B continue A?). Topic is far easier, and it
# overlaps with what MLM already learns, so a model can score well on NSP while learning little about coherence.
#
# We can test this without any network. Three features describe how much A and B have in common, and none of
# them looks at order:
#
# 1. **overlap**: the fraction of B's distinct tokens that also occur in A;
# 2. **tf-idf cosine**: the cosine between A's and B's token counts, each token weighted by its inverse
#    document frequency over the training chapters, $\log(N_\text{chapters} / (1 + \text{df}))$, so that
#    rare tokens (names, places) count and "the", "of" do not;
# 3. **same-novel probability**: a unigram model of each of the six novels, fitted on the training chapters,
#    gives $p(\text{novel} \mid \text{segment})$ for A and for B (naive Bayes with add-one smoothing);
#    the feature is $\sum_n p(n \mid A)\, p(n \mid B)$, the probability that both come from the same novel.
#
# A logistic regression on these three numbers (the Newton-method fit of `albert_mini.study.leak_probe`) is fitted
# on one pass of the 220 *training* chapters and scored on five passes (seeds 0-4) of the validation chapters.

# %% [markdown]
# ### Exercise 3: the overlap feature
#
# Write `overlap_feature(tokens_a, tokens_b)`: the fraction of B's *distinct* tokens (its word types) that also
# occur in A, as a float, and 0.0 when B is empty. It is the first of the three features above. The segments
# come as lists or NumPy arrays of token ids (`Instance.segments()` gives arrays); leave them unchanged.

# %% nbgrader={"grade": false, "grade_id": "overlap_feature", "locked": false, "schema_version": 3, "solution": true, "task": false}
def overlap_feature(tokens_a, tokens_b):
    """The fraction of B's distinct tokens that also occur in A."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_overlap_feature", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_overlap_feature

check_overlap_feature(overlap_feature);

# %% [markdown]
# The three features of every instance, with the package's version of the overlap
# (`albert_mini.study.leak_probe.type_overlap`):

# %%
from albert_mini.study.leak_probe import type_overlap

train_chapters = load_corpus("austen", "train")
train_docs = tokenize_documents(train_chapters, tokenizer)
novels = sorted({chapter.novel for chapter in train_chapters})
V = tokenizer.vocab_size

doc_freq = np.zeros(V)
for stream in train_docs.streams:
    doc_freq[np.unique(stream)] += 1
idf = np.log(len(train_docs) / (1 + doc_freq))  # (V,)

counts = np.ones((len(novels), V))  # add-one smoothing
for chapter, stream in zip(train_chapters, train_docs.streams):
    counts[novels.index(chapter.novel)] += np.bincount(stream, minlength=V)
log_p_token = np.log(counts / counts.sum(1, keepdims=True))  # (novels, V)


def novel_posterior(ids):
    """p(novel | segment) under the per-novel unigram models, uniform prior."""
    log_likelihood = log_p_token[:, ids].sum(1)  # (novels,)
    p = np.exp(log_likelihood - log_likelihood.max())
    return p / p.sum()


def topic_features(instances):
    """(N, 3): B's type overlap with A, tf-idf cosine, P(A and B share a novel)."""
    rows = []
    for inst in instances:
        a, b = inst.segments()
        overlap = type_overlap(a, b)  # Exercise 3's feature
        weighted_a, weighted_b = (
            np.bincount(a, minlength=V) * idf,
            np.bincount(b, minlength=V) * idf,
        )
        cosine = (
            weighted_a
            @ weighted_b
            / (np.linalg.norm(weighted_a) * np.linalg.norm(weighted_b))
        )
        rows.append((overlap, cosine, novel_posterior(a) @ novel_posterior(b)))
    return np.array(rows)


# %% [markdown]
# First the average of each feature per label. On NSP, true next segments share more rare words and look more
# like the same novel than random ones. On SOP both labels come out the same, as they must: swapping A and B does
# not change their words (only the overlap moves a little, since its denominator is B's vocabulary).

# %% tags=["nbval-check-output"]
from albert_mini.study.leak_probe import fit_logistic_regression

FEATURES = ("overlap", "tf-idf cosine", "same-novel prob.")
data = {}
for task in ("nsp", "sop"):
    train = build_instances(train_docs, task=task, max_seq_len=128, seed=0)
    test = [
        inst
        for seed in range(5)
        for inst in build_instances(val_docs, task=task, max_seq_len=128, seed=seed)
    ]
    data[task] = (
        topic_features(train),
        np.array([i.label for i in train]),
        topic_features(test),
        np.array([i.label for i in test]),
        test,
    )
    x, y = data[task][2], data[task][3]
    print(
        f"{task.upper()} validation ({len(y)} instances)  "
        + "  ".join(
            f"{f}: {x[y == 0, k].mean():.3f} vs {x[y == 1, k].mean():.3f}"
            for k, f in enumerate(FEATURES)
        )
        + "   (label 0 vs label 1)"
    )

# %% [markdown]
# Now the classifier, scored on held-out instances. For NSP we also split the score by kind of instance:
# true next segments (label 0), negatives whose B comes from another novel, and negatives whose B comes from
# another chapter of the *same* novel (`Document.novel`; `Instance.source_b[0]` is B's document).

# %% tags=["nbval-check-output"]
accuracy = {}
for task in ("nsp", "sop"):
    x_train, y_train, x_test, y_test, test = data[task]
    predict = fit_logistic_regression(x_train, y_train)
    correct = predict(x_test) == y_test
    accuracy[f"{task.upper()}, all"] = correct.mean()
    if task == "nsp":
        other_novel = np.array(
            [
                i.label == 1 and val_novel[i.source_a[0]] != val_novel[i.source_b[0]]
                for i in test
            ]
        )
        same_novel = np.array(
            [
                i.label == 1 and val_novel[i.source_a[0]] == val_novel[i.source_b[0]]
                for i in test
            ]
        )
        for name, rows in (
            ("NSP, true next", y_test == 0),
            ("NSP, negative from another novel", other_novel),
            ("NSP, negative from the same novel", same_novel),
        ):
            accuracy[name] = correct[rows].mean()
            print(f"{name:36s} {rows.sum():5d} instances")
for name, value in accuracy.items():
    print(f"{name:36s} accuracy {value:.3f}")

# %% [markdown]
# Word counts alone get about 70% on NSP and nothing on SOP. (True next segments are only 55% right: consecutive
# lines of dialogue often share few rare words.) Negatives from another novel are caught more than nine times in
# ten, because the names and the household change with the novel; negatives from the same novel share the cast
# and are caught little more often than a coin would. A model that has such a shortcut has little reason to learn
# coherence; on SOP no such shortcut exists.

# %%
import matplotlib.pyplot as plt

from albert_mini.paths import save_figure

fig, ax = plt.subplots(figsize=(6.8, 4.6), dpi=110)
names = list(accuracy)
colors = ["tab:blue", "tab:cyan", "tab:green", "tab:olive", "tab:red"]
bars = ax.bar(range(len(names)), [100 * accuracy[n] for n in names], color=colors)
ax.bar_label(bars, fmt="%.1f")
ax.axhline(50, color="gray", ls="--", label="chance (50%)")
ax.set_xticks(
    range(len(names)),
    [n.replace(", ", ",\n").replace(" from ", "\nfrom\n") for n in names],
)
ax.set_ylabel("held-out accuracy (%)")
ax.set_ylim(0, 105)
ax.set_title(
    "Bag-of-words logistic regression (3 topic features, no network)\n"
    "fitted on training chapters, scored on 5 passes of the validation chapters"
)
ax.legend(loc="upper right")
fig.tight_layout()
save_figure(fig, "05_topic_shortcut.png")
plt.show()

# %% [markdown]
# ## What the paper measured: Table 5
#
# The paper pretrains ALBERT-base with no sentence loss, with NSP and with SOP, and scores every model on all
# three pretraining tasks (held-out "intrinsic" accuracies) and downstream (the average over SQuAD, MNLI, SST-2
# and RACE). The table is `albert_mini.study.paper.TABLE5`.

# %% tags=["nbval-check-output"]
from albert_mini.study.paper import TABLE5

print(
    f"{'sentence loss':14s} {'MLM acc':>8s} {'NSP acc':>8s} {'SOP acc':>8s} "
    f"{'downstream Avg':>15s}"
)
for task, row in TABLE5.items():
    print(
        f"{task.upper() if task != 'none' else 'None':14s} {row['mlm']:8.1f} "
        f"{row['nsp']:8.1f} "
        f"{row['sop']:8.1f} {row['avg']:15.1f}"
    )

# %% [markdown]
# - **NSP accuracy.** The NSP model reaches 90.5%. The SOP model, never trained on NSP, still gets 78.9%:
#   knowing coherence covers most of what NSP asks.
# - **SOP accuracy.** The NSP model gets 52.0%, no better than no sentence loss (53.3%): chance. It learned
#   topic, which is useless when both orders have the same words; our bag-of-words classifier imitates this.
# - **MLM accuracy** hardly moves (54.9, 54.5, 54.0): the sentence loss is not what teaches words.
# - **Downstream**, SOP gives the best average, 80.1 against 79.2 (NSP) and 79.0 (none), with the largest gains
#   on multi-sentence reasoning (RACE 64.0 vs 62.3, SQuAD2.0 80.0/77.1 vs 77.2/74.6).

# %% [markdown]
# ## A label leak to check for
#
# SOP removes the topic shortcut, but a sloppy pipeline can open another. The reference data script decides the
# order of A and B *before* truncating the pair, so the later segment tends to be the longer one, the one trimmed,
# the one that loses its final full stop; after a swap it comes first, and lengths predict the label. Our
# `build_instances` never truncates: a chunk holds whole sentences. The measurement is in
# [chapter 11, the research log](11_research_log.ipynb).

# %% [markdown]
# ## At mini scale: Table 5 from a trunk at the edge of SOP's escape
#
# A first 15-minute run of albert-mini with MLM and SOP (1,200 steps of 32 sequences of 128 tokens) learned words,
# held-out MLM accuracy rising from 7% to 15%, but not sentence order: its SOP loss stayed at $\ln 2$, a coin's
# ([chapter 11, the research log](11_research_log.ipynb)). The classroom model below did leave chance: its SOP
# loss fell away from $\ln 2$ near step 3,600 of its 5,000-step recipe.
#
# So our Table 5 starts from that recipe. A **trunk** runs it with MLM and SOP (64 sequences of 64 tokens a step,
# LAMB, seed 0) and stops at step 3,000, before SOP leaves chance, keeping the whole checkpoint: weights, LAMB's
# moments, the step. Three **branches** per seed would then continue the trunk's optimizer and learning-rate
# schedule with one sentence task each (SOP, NSP, or none: MLM on the same pairs with the sentence loss off),
# each with a fresh sentence classifier. Every model is scored the same way: a linear **probe** fitted on its
# frozen pooled output, on the same training pairs, scored on every validation and test pair. A probe reads
# what the encoder offers, whatever head the model trained; the model's own head is shown beside it.
#
# The rules were written down before any run (they are in `sentence_task.json`, under `plan`): branch from step
# 3,000 if the trunk's SOP is still at chance there; run the seed-0 SOP branch first; if after 1,250 more steps
# its SOP is below 55%, lengthen every branch to 1,750 steps; if it is then still at chance, stop and record why.
# Here is what happened, computed from the committed runs (made on a GPU).

# %% tags=["nbval-check-output"]
from IPython.display import Markdown, display

from albert_mini.study import results as committed

table5 = committed.load("sentence_task")
for line in committed.table5_decisions(table5):
    print(line)
display(Markdown(committed.table5_glance(table5)))

# %% [markdown]
# The rule stopped the experiment. The SOP branch trained 112,000 more SOP pairs (1,750 steps of 64) on top of
# the trunk's 192,000, and its probe still scored 49.4%, inside a coin's interval; its own head did no better.
# So the pre-registered Table 5 has no rows: with no model that orders sentences, the paper's asymmetry (an SOP
# model solves much of NSP, an NSP model fails SOP) has nothing to show it here. The last row is the no-network
# baseline on the same pairs: word overlap alone scores 60.3% on NSP, where the probes on these models' pooled
# outputs stay near 50%. Trained with SOP, these pooled outputs do not carry that topic cue.
#
# Why did the recipe that made the classroom model not get there? The third row answers part of it. It is the
# trunk itself, continued from step 3,000 on its own data and with its own head, the classroom recipe with
# nothing changed, but computed on a GPU. It stayed at chance to step 4,500, where the classroom run on a CPU had
# ordered 63% of its training pairs. Same settings, same seed, other arithmetic, and no escape: one run escaped
# and one did not, so the escape near step 3,600 is a property of that run, not yet of the recipe. Two runs
# cannot say how often it happens.

# %% [markdown]
# ![SOP along the trunk, and the exploratory branches](../figures/experiment_sentence_task.png)
#
# **Exploratory, not a finding.** On the GPU all nine branches of the first plan ran side by side with the seed-0
# SOP branch, to save machine time; the rule read the seed-0 branch alone. They are shown as they are, in the
# lower panel and below: none of their numbers was part of the plan, so read them as leads.

# %% tags=["nbval-check-output"]
explore = table5["exploratory"]
for line in committed.table5_reading(explore) + committed.contrast_lines(explore):
    print(line)

# %% [markdown]
# The surprise is the NSP row: after 1,250 steps of NSP, a probe on its pooled output orders about 62% of the
# pairs, in every seed, while the SOP row does not leave 50-54%. One reading: an NSP negative is a B that does not
# continue A, and a swapped pair is such a pair too, so a model that learned "B continues A" partly detects a
# swap. The paper found the opposite at full scale (its NSP model scores 52.0% on SOP). With one trunk, three
# seeds and no pre-registration for this contrast, it stays a lead. The SOP row's probe is not better than the
# MLM-only row's on NSP either (-0.4 points, interval [-0.9, +0.1]).

# %% [markdown]
# ## Longer: the classroom model orders sentences
#
# The classroom model, `data/pretrained/albert-mini-austen`, is albert-mini trained with MLM and SOP from its first
# step: 5,000 steps of 4,096 tokens (20.5M tokens), the first 90% on 64-token sequences and the last 10% on 128,
# then 2,000 more steps at 128 tokens (8.2M tokens). Its card scores it on every SOP pair of the validation and
# test chapters at both lengths; here they are beside the no-network baseline, with 95% Wilson intervals. The
# card's pairs have 15% of their tokens masked, as in training; chapter 7 scores unmasked pairs, as a reader
# applies the head, and there the same model orders 65.9% at 128 tokens, against 62.5% here.
#
# How to read the intervals, p-values and verdicts below:
# [reading the statistics](10_appendix.ipynb#part-c-reading-the-statistics), in the appendix.

# %% tags=["nbval-check-output"]
import json

from albert_mini.paths import PRETRAINED_MODEL, repo_root
from albert_mini.study.stats import wilson_interval

card = json.loads((PRETRAINED_MODEL / "scores.json").read_text())
# The bag-of-tokens probe of chapter 11, on the same pairs.
lexical = json.loads((repo_root() / "data/results/lexical_sop.json").read_text())
# k = 0: every token
bag = next(r for r in lexical["rows"] if r["seq_len"] == 128 and not r["k"])
rows = [
    (
        "classroom model, 64 tokens",
        card["at_64"]["sop_correct"],
        card["at_64"]["sop_pairs"],
    ),
    ("classroom model, 128 tokens", card["sop_correct"], card["sop_pairs"]),
    (
        "bag of every token (no network)",
        round(bag["held_out_acc"] * bag["held_out_pairs"]),
        bag["held_out_pairs"],
    ),
]
print(
    f"{'held-out pairs':34s} {'accuracy':>8s} {'95% interval':>16s} "
    f"{'pairs':>6s}"
)
for name, correct, total in rows:
    low, high = wilson_interval(correct, total)
    print(f"{name:34s} {correct / total:8.1%}   [{low:.1%}, {high:.1%}] {total:6,d}")

# %%
from albert_mini.training.rundir import read_run

fig, ax = plt.subplots(figsize=(6.8, 4.2), dpi=110)
for label, folder in (
    ("curriculum (the classroom model's first 20.5M tokens)", PRETRAINED_MODEL),
    (
        "128 tokens throughout (the previous model)",
        repo_root() / "data/results/classroom-model-v1",
    ),
):
    curve = read_run(folder)[1]
    ax.plot(
        [p["tokens"] / 1e6 for p in curve],
        [100 * p["sentence_acc"] for p in curve],
        "o-",
        ms=3,
        label=label,
    )
ax.axhspan(
    50 - 100 * 1.96 * (0.25 / 512) ** 0.5,
    50 + 100 * 1.96 * (0.25 / 512) ** 0.5,
    color="grey",
    alpha=0.2,
    label="a coin on 512 pairs (95% range)",
)
ax.set(
    xlabel="training tokens (millions)",
    ylabel="held-out SOP accuracy (%)",
    title="Sentence order during pretraining (512 validation pairs per point)",
)
ax.grid(alpha=0.3)
ax.legend(loc="upper left")
fig.tight_layout()
save_figure(fig, "05_sop_long_run.png")
plt.show()

# %% [markdown]
# Scored at 128 tokens, the SOP head sat inside a coin's range for 18 million tokens, then rose in the last 500
# steps. Those were also the only steps at 128 tokens, and this one run cannot tell the two apart (at that point
# it ordered 63% of the 64-token pairs but 59% of the 128-token ones). After 8.2M more tokens at 128, every
# interval above is clear of 50% where the bag of tokens stays around 50%: the model orders held-out Austen
# passages better than chance from what it learned about the text, not from a surface cue. It is still far from
# the paper's 86.5% after some 9,000 times fewer tokens. And as the Table 5 runs showed, the same recipe rerun
# on a GPU had not left chance by step 4,500: this model's escape is one run's.

# %% [markdown]
# ## Summary
#
# - NSP pairs A with its true next segment (label 0) or with a segment from another document (label 1); SOP
#   pairs two consecutive segments in order (label 0) or swapped (label 1). The model and loss are the same.
# - NSP's negatives differ in topic: three order-blind word-count features score about 70% on held-out NSP and
#   50% on SOP, where both orders contain the same words.
# - Table 5: the NSP model scores 52.0% on SOP (chance); the SOP model scores 78.9% on NSP and gives the best
#   downstream average (80.1).
# - Deciding the order before truncating, as the reference recipe does, lets surface cues predict the SOP label;
#   our builder keeps whole sentences (chapter 11 measures both).
# - At mini scale the pre-registered Table 5 stopped at its go/no-go rule: from a trunk on the classroom recipe
#   at step 3,000, an SOP branch stayed at chance (49.4%) after 1,750 more steps, and so did the trunk continued
#   unchanged on a GPU. The classroom model, trained with SOP from the start for 28.7M tokens on a CPU, orders
#   62-67% of held-out pairs: a small, real signal from one run, far from the paper's 86.5%.
#
# ## Further reading / pointers
#
# - The paper, Section 3 ("inter-sentence coherence loss") and Section 4.6 with Table 5.
# - `albert_mini/text/instances.py`: the module docstring lists every departure from the reference builder;
#   `albert_mini/study/leak_probe.py` for the surface probe; [REFERENCE_NOTES.md](REFERENCE_NOTES.md), section 1, for the reference
#   algorithm and albert#234.
# - `albert_mini/harness/experiments/sentence_task.py` for the Table 5 analog at mini scale.
# - Next: Chapter 6, n-gram masking, the other half of the pretraining data.
