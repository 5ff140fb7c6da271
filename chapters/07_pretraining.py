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
# # Chapter 7: Pretraining ALBERT-mini
#
# The previous chapters built the model and its inputs; this one trains it. ALBERT's recipe (Section 4.1 of the
# paper) is batch 4096, the LAMB optimizer, peak learning rate 0.00176, 125k steps, sequences of 512 tokens.
# Behind it sit an optimizer that scales each tensor's step by its own size, a warmup schedule and a limit on the
# gradient norm. We write each in a few lines, check them against `albert_mini.training.optim`, then train
# albert-mini on Jane Austen and read what the classroom model learned. How the recipe was found is chapter 11's
# story.
#
# ## Learning goals
#
# - Write one LAMB step and say which of albert-mini's parameters skip the weight decay and the trust ratio.
# - Compute the reference schedule (linear warmup, then linear decay to 0) and its small jump.
# - Explain global gradient clipping and the unigram prior we give the MLM output bias.
# - Train albert-mini with the plain loop, `albert_mini.train` and the command line, and read what the classroom
#   model learned.
# - Compare ALBERT with bert-mini (nothing shared, E = H) on parameters, training memory and speed.

# %% [markdown]
# ## LAMB: a step sized by the weight it changes
#
# Adam gives every coordinate a step of about the learning rate, whatever the size of its weight. With large
# batches the learning rate has to grow, and a step that suits one tensor is far too large for another. LAMB
# (You et al., 2019) rescales Adam's step per tensor to a fixed fraction of the tensor's norm. For a weight tensor
# $w$ with gradient $g$, the reference code (`lamb_optimizer.py`; [REFERENCE_NOTES.md](REFERENCE_NOTES.md), section 2) does, with
# $\beta_1 = 0.9$, $\beta_2 = 0.999$,
# $\epsilon = 10^{-6}$ and weight decay $\lambda = 0.01$:
#
# $$m \leftarrow \beta_1 m + (1-\beta_1)\,g, \qquad v \leftarrow \beta_2 v + (1-\beta_2)\,g^2$$
# $$u = \frac{m}{\sqrt{v} + \epsilon} + \lambda\,w, \qquad
#   r = \frac{\lVert w \rVert_2}{\lVert u \rVert_2}\ \ (r = 1 \text{ if either norm is } 0), \qquad
#   w \leftarrow w - \eta\, r\, u$$
#
# Three details matter: **no bias correction** (Adam divides $m$ by $1-\beta_1^t$ and $v$ by $1-\beta_2^t$), so
# early steps are *larger* than Adam's, about 3.2 per coordinate at step 1 instead of 1; the weight decay sits
# **inside** $u$, so the trust ratio scales it too; and the norms are of **whole tensors**. Exercises 1 and 2 ask
# for this step.

# %% [markdown]
# ### Exercise 1: the trust ratio
#
# Write `trust_ratio(w, u)`: $\lVert w \rVert_2 / \lVert u \rVert_2$ over whole tensors, and `1.0` when either
# norm is zero.

# %% nbgrader={"grade": false, "grade_id": "trust_ratio", "locked": false, "schema_version": 3, "solution": true, "task": false}
def trust_ratio(w, u):
    """||w|| / ||u|| for one tensor, or 1.0 when either norm is 0."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_trust_ratio", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_trust_ratio

check_trust_ratio(trust_ratio);

# %% [markdown]
# ### Exercise 2: one LAMB update, both groups
#
# Write `lamb_update(w, g, m, v, lr, weight_decay, adapt)` that returns the new `(w, m, v)` without changing its
# inputs. With `adapt=False` (a LayerNorm or bias tensor, called with `weight_decay=0.0`) the ratio is 1. Two
# tempting mistakes: Adam's bias correction, and adding the weight decay after the trust ratio.

# %% nbgrader={"grade": false, "grade_id": "lamb_update", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lamb_update(
    w, g, m, v, lr, weight_decay=0.01, adapt=True, beta1=0.9, beta2=0.999, eps=1e-6
):
    """(new w, new m, new v) after one LAMB step of one tensor."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_lamb_update", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_lamb_update

check_lamb_update(lamb_update);

# %% [markdown]
# Five steps of `albert_mini.Lamb` on one tensor (the chapter's solutions run the same five steps with the
# functions of Exercises 1 and 2 beside it and compare them step by step):

# %% tags=["nbval-check-output"]
import torch

from albert_mini import Lamb

torch.manual_seed(0)
w0 = 0.02 * torch.randn(64, 32)  # a weight matrix at albert's init scale
weight = torch.nn.Parameter(w0.clone())
package_lamb = Lamb([weight], lr=1e-3)  # one group: decay 0.01, trust ratio on
for step in range(5):
    weight.grad = torch.randn(w0.shape, generator=torch.Generator().manual_seed(step))
    package_lamb.step()
moved = (weight.detach() - w0).norm() / w0.norm() / 5
print(f"relative change of w per step: {moved:.2e} (the learning rate: 1e-3)")

# %% [markdown]
# The last line is the point of LAMB: after the trust ratio, each step moves a tensor by about $\eta$ times its
# own norm, here 0.1% per step, whatever the scale of its gradient (a little under: 5 random steps partly cancel).
#
# **Which tensors are adapted.** LayerNorm gains and biases (the MLM `output_bias` included) get neither weight
# decay nor the trust ratio: a bias starts at zero, and decaying a LayerNorm gain towards zero is not what
# regularization intends. The reference picks them by name (`LayerNorm`, `layer_norm`, `bias`), as does
# `albert_mini.training.optim.param_groups`.

# %% tags=["nbval-check-output"]
from albert_mini import AlbertConfig, AlbertForPreTraining, param_groups

torch.manual_seed(0)
mini_config = AlbertConfig.from_preset("albert-mini")
model = AlbertForPreTraining(mini_config)
decayed, excluded = param_groups(model, weight_decay=0.01)
for label, group in (
    ("decay + trust ratio", decayed),
    ("neither (LayerNorm, bias)", excluded),
):
    sizes = [p.numel() for _, p in group["params"]]
    print(
        f"{label:26s} {len(sizes):3d} tensors, {sum(sizes):>9,} parameters, "
        f"weight_decay={group['weight_decay']}, adapt={group['adapt']}"
    )
for label, group in (("excluded", excluded), ("adapted", decayed)):
    print(f"{label}, e.g.:")
    for name, _ in group["params"][:3]:
        print("   ", name)

# %% [markdown]
# > **Differs from BERT.** BERT was pretrained with Adam (with decoupled weight decay, no bias correction) at
# > batch 256 for 1M steps. ALBERT uses LAMB at batch 4096 for 125k steps: 8 times fewer steps, on batches 16
# > times larger, at a learning rate that stays stable only because every tensor's step is tied to its own
# > norm.

# %% [markdown]
# ## The learning-rate schedule
#
# The reference (`optimization.py`) warms the rate up linearly from 0 over the first $W$ steps, then decays it
# polynomially (power 1: linearly) to 0 at the last step $T$. The decay is counted from step 0, not from the end
# of the warmup, and the rate at step 0 is 0, so the first update only fills LAMB's moments.

# %% [markdown]
# ### Exercise 3: the schedule
#
# Write `warmup_poly_lr(step, peak_lr, total_steps, warmup_steps, power=1.0)`, the rate of update `step`.
# Forgetting the warmup is the classic mistake; decaying over the steps after the warmup is another (it is not
# what the reference does).

# %% nbgrader={"grade": false, "grade_id": "warmup_poly_lr", "locked": false, "schema_version": 3, "solution": true, "task": false}
def warmup_poly_lr(step, peak_lr, total_steps, warmup_steps, power=1.0):
    """The learning rate of optimizer update number `step` (from 0)."""
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_warmup_poly_lr", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_warmup_poly_lr

check_warmup_poly_lr(warmup_poly_lr);

# %% [markdown]
# The package's `WarmupPolyDecay` is this schedule:
#
# $$\eta(t) = \begin{cases} \eta_{\text{peak}}\ t / W & t < W \\
#   \eta_{\text{peak}}\,(1 - \min(t, T)/T)^{p} & t \ge W \end{cases}$$
#
# As the decay counts from step 0, at $t = W$ the rate drops from $\eta_{\text{peak}}(W-1)/W$ to
# $\eta_{\text{peak}}(1 - W/T)$: with the paper's setting ($T$ = 125,000, $W$ = 3,125,
# $\eta_{\text{peak}}$ = 0.00176), 0.00176 to 0.001716, a 2.5% step we keep, as the reference does.

# %% tags=["nbval-check-output"]
import matplotlib.pyplot as plt
import numpy as np

from albert_mini import WarmupPolyDecay
from albert_mini.paths import save_figure

paper_schedule = WarmupPolyDecay(
    peak_lr=0.00176, total_steps=125_000, warmup_steps=3125
)
ours_schedule = WarmupPolyDecay(peak_lr=5e-3, total_steps=1200, warmup_steps=50)
for name, s in (("paper", paper_schedule), ("ours", ours_schedule)):
    W = s.warmup_steps
    print(
        f"{name:5s}: lr(0) = {s(0):g}, lr(W-1) = {s(W - 1):.6f}, lr(W) = {s(W):.6f}, "
        f"lr(T/2) = {s(s.total_steps // 2):.6f}, lr(T) = {s(s.total_steps):g}"
    )

fig, axes = plt.subplots(2, 1, figsize=(6.8, 8), dpi=110)
for ax, (name, s) in zip(
    axes,
    (
        ("paper: 125k steps, warmup 3,125, peak 0.00176", paper_schedule),
        ("ours: 1,200 steps, warmup 50, peak 5e-3", ours_schedule),
    ),
):
    steps = np.arange(s.total_steps + 1)
    ax.plot(steps, [s(int(t)) for t in steps], label="WarmupPolyDecay")
    inset = ax.inset_axes([0.5, 0.5, 0.45, 0.4])
    near = np.arange(int(s.warmup_steps * 0.9), int(s.warmup_steps * 1.1) + 1)
    inset.plot(near, [s(int(t)) for t in near], ".-", markersize=2)
    inset.axvline(s.warmup_steps, color="grey", linewidth=0.8, linestyle=":")
    inset.set_title("end of warmup")
    ax.set(xlabel="optimizer step", ylabel="learning rate", title=name)
    ax.legend(loc="lower left")
fig.suptitle(
    "Linear warmup, then linear decay to 0\n(the decay is counted from step 0: a small "
    "drop at W)"
)
fig.tight_layout()
save_figure(fig, "07_schedule.png")
plt.show()

# %% [markdown]
# ### How many warm-up steps?
#
# A warm-up is usually quoted as a fraction of the run (the paper's 3,125 steps are 2.5% of 125,000), which
# leaves a short run almost nothing: with 4 or 16 warm-up steps every model we trained stayed at the unigram
# answer; forty let it leave. Count a short run's warm-up in steps
# ([chapter 11, the research log](11_research_log.ipynb) has the runs).

# %% [markdown]
# ## Global gradient clipping
#
# Before each update the reference rescales all gradients together so that their joint norm
# $\sqrt{\sum_i \lVert g_i \rVert^2}$ is at most 1.0 (`tf.clip_by_global_norm`), keeping its direction: a rare
# huge gradient cannot throw the weights far. `clip_grad_global_norm` does this and returns the norm before
# clipping (logged as `grad_norm`).

# %% tags=["nbval-check-output"]
from albert_mini import clip_grad_global_norm

a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(3))
# global norm 5
a.grad, b.grad = torch.tensor([3.0, 0.0]), torch.tensor([0.0, 4.0, 0.0])
norm = clip_grad_global_norm([a, b], max_norm=1.0)
print(f"norm before: {norm:g}; after: {torch.cat([a.grad, b.grad]).norm():.4f}")
print(f"a.grad = {a.grad.tolist()}, b.grad = {b.grad.tolist()}")

# %% [markdown]
# ## Where the MLM loss starts: the unigram prior
#
# A freshly initialized model gives each of our 8,000 pieces about the same probability, so its MLM loss starts
# at $\ln 8000 = 8.99$ nats. It first learns how often each piece occurs, which only needs the MLM output bias
# to become the log frequencies; at small learning rates that is slow, and meanwhile it predicts "the" and ","
# everywhere.
#
# > **Differs from the reference code.** The reference starts the MLM `output_bias` at zero. We start it at the
# > log unigram frequencies of the training text (`unigram_log_prior`, add-one smoothed; CLI `--output-bias
# > unigram`, the default, or `zeros` for the reference). Without it, a development probe stayed at 6.8% MLM
# > accuracy (the most frequent pieces) until step 250, a fifth of our 1,200.
#
# We measure the prior's entropy and the untrained model's held-out MLM loss with and without it.

# %% tags=["nbval-check-output"]
import math

from albert_mini import (
    PretrainingBatches,
    Tokenizer,
    build_pretraining_dataset,
    evaluate,
    load_corpus,
)
from albert_mini.text.batches import unigram_log_prior
from albert_mini.training.pretraining_model import build_pretraining_model

tokenizer = Tokenizer.default()
train_set = build_pretraining_dataset(
    load_corpus("austen", "train"), tokenizer, task="sop", max_seq_len=128, seed=0
)
val_set = build_pretraining_dataset(
    load_corpus("austen", "validation"),
    tokenizer,
    task="sop",
    max_seq_len=128,
    seed=0,
    dynamic=False,
)
prior = unigram_log_prior(train_set.documents, mini_config.vocab_size)
p = prior.double().exp()
print(
    f"ln V = {math.log(mini_config.vocab_size):.3f} nats; unigram entropy of the "
    "training text = "
    f"{-(p * p.log()).sum():.3f} nats"
)

# 64 held-out sequences, masked once
val_batches = PretrainingBatches(val_set, batch_size=16).take(4)
for label, output_bias in (
    ("zeros (reference)", "zeros"),
    ("unigram prior", "unigram"),
):
    fresh = build_pretraining_model(
        mini_config, "sop", log_prior=prior, seed=0, output_bias=output_bias
    )
    start = evaluate(fresh, val_batches)
    print(
        f"output bias = {label:18s}: starting MLM loss {start['mlm_loss']:.2f}, "
        f"accuracy {start['mlm_acc']:.1%}"
    )

# %% [markdown]
# Without the prior the untrained model scores a little above $\ln V$; with it, the loss starts at about the
# unigram entropy (not exactly: masking picks whole words), and the accuracy is that of guessing the most
# frequent pieces.
#
# ## The loop inside, in a few lines
#
# Everything so far meets in one loop: take a batch, set the learning rate, run the model, backpropagate the
# summed MLM and sentence-order loss, clip, step, clear the gradients.
# `albert_mini.training.loop` writes exactly that:

# %% tags=["nbval-check-output"]
import inspect

from albert_mini.training.loop import pretraining_loop

print(inspect.getsource(pretraining_loop))

# %% [markdown]
# Ten updates of albert-nano on batches of 8 Austen SOP pairs, with a two-step warm-up (losses not checked: their
# last digits depend on the machine). The `Trainer` behind `albert_mini.train` and the command line gives the same
# numbers and adds accumulation, several processes, logging, evaluation and exact resume.

# %%
from albert_mini import WarmupPolyDecay, build_optimizer

nano_config = AlbertConfig.from_preset("albert-nano").replace(
    vocab_size=mini_config.vocab_size
)
nano = build_pretraining_model(nano_config, "sop", log_prior=prior, seed=0)
losses = pretraining_loop(
    nano,
    PretrainingBatches(train_set, batch_size=8),
    build_optimizer(nano, "lamb", lr=5e-3),
    WarmupPolyDecay(peak_lr=5e-3, total_steps=10, warmup_steps=2),
    steps=10,
)
print("loss per update:", " ".join(f"{loss:.2f}" for loss in losses))

# %% [markdown]
# The losses go up and down around 7 with no trend: ten updates of a tiny model show that the loop runs, not
# that it learns.
#
# ## A short live run with `albert_mini.train`
#
# `albert_mini.train(model, batches, config, ...)` builds LAMB on the two parameter groups and the schedule, then
# runs the `Trainer`. `PretrainingBatches` draws SOP instances from the Austen training split with fresh n-gram
# masks every epoch. Sixty steps of 16 x 128 tokens show the API (not checked).

# %%
from albert_mini import TrainConfig, train
from albert_mini.settings import pick

# the CLI's and experiments' recipe
model = build_pretraining_model(mini_config, "sop", log_prior=prior, seed=0)
live_steps = pick(fast=3, full=60)
live_config = TrainConfig(
    max_steps=live_steps,
    log_every=pick(fast=1, full=10),
    eval_batches=4,
    progress=False,
)
result = train(
    model,
    PretrainingBatches(train_set, batch_size=16),
    live_config,
    optimizer="lamb",
    lr=5e-3,
    warmup_steps=max(1, live_steps // 12),
    val_batches=val_batches,
)
print(" step   lr        loss   MLM loss  MLM acc  SOP acc  grad norm  tokens/s")
for line in result.history:
    if line["type"] == "train":
        print(
            f"{line['step']:5d}   {line['lr']:.2e}  {line['loss']:.3f}  "
            f"{line['mlm_loss']:.3f}     "
            f"{line['mlm_acc']:6.1%}   {line['sentence_acc']:6.1%}   "
            f"{line['grad_norm']:8.2f}  "
            f"{line['tokens_per_s']:8,.0f}"
        )
print(
    f"stopped at step {result.step} ({result.stop_reason}); held-out MLM accuracy "
    f"{result.eval['mlm_acc']:.1%}, "
    f"SOP accuracy {result.eval['sentence_acc']:.1%}"
)

# %% [markdown]
# `result.history` holds the lines the command line writes to `metrics.jsonl`. This run **learns nothing**: the
# MLM loss hovers where the unigram prior starts it, the accuracy stays near the 6.8% of always answering the most
# frequent tokens, and SOP sits at chance (50%). Sixty steps of 16 sequences are 123,000 tokens; the 15-minute
# run below left that plateau only after about 150 steps of twice the batch. Learning takes minutes, which the
# committed runs below supply.

# %% [markdown]
# ## Pretraining from the command line
#
# A 15-minute run's metrics are committed in `data/results/pretrain_albert_mini_sop_15min/` (albert-mini, SOP,
# seed 0, about 13.5 minutes on a 2-core Intel Xeon). This command reproduces it:
#
# ```
# albert-mini pretrain --preset albert-mini --corpus austen \
#     --task sop --steps 1200 --minutes 15 --lr 5e-3 --warmup 50 --eval-every 100 \
#     --eval-batches 16 --save-every 200 --out runs/mini-sop
# ```
#
# `--minutes 15` is only a safety budget; `--steps 1200` fixes the schedule. Every 200 steps a checkpoint holds
# the weights, LAMB's moments, the data position and every RNG state: after a kill, **run the same command
# again** and it resumes bit for bit on the same machine. Different settings are refused (use a new `--out`).
#
# > **Differs from the paper.** The recipe is the paper's (LAMB, warmup then linear decay, clipping at 1.0,
# > weight decay 0.01, SOP with n-gram masking); the sizes are not: 32 x 128 tokens per step instead of 4096 x 512,
# > 1,200 steps instead of 125k, and a peak rate of 5e-3 instead of 0.00176, which suits a short run of a small
# > model.
#
# That run learned words (held-out MLM accuracy from 6-7% to 14.8%) but not sentence order: its SOP accuracy
# stayed at 53.5%, the majority label's share ([chapter 11, the research log](11_research_log.ipynb)).

# %% [markdown]
# ## A recipe that learns faster: short sequences first
#
# A longer run (3,200 steps, 13.1M tokens) crept to 16.4% held-out MLM accuracy with SOP still at the majority
# rate. A recipe search found that the model learns words faster on shorter sequences: at 64 tokens a step holds
# twice as many sequences. Our classroom model uses `--short-seq-len 64 --short-fraction 0.9`: steps 1-4,500 on
# 64 x 64 tokens, steps 4,501-5,000 on 32 x 128, the same tokens per step throughout.
#
# > **Differs from the paper.** ALBERT's paper trains every step at 512 tokens (10% of the inputs shortened at
# > random, as BERT does); the short-then-long curriculum is BERT's (Devlin et al., 2019, Appendix A.2). We use it
# > because in our long runs it reached the same held-out accuracy with far fewer tokens
# > ([chapter 11, the research log](11_research_log.ipynb)), not because ALBERT did.

# %% [markdown]
# Every flag of the command line is a field of one frozen dataclass, `PretrainingSetup`
# (`albert_mini/training/setup.py`), checked once (a bad value is refused with the flag's name) and built into a
# run by `albert_mini/training/build.py`; the experiments of chapters 3-5 and 11 are the same setup with other
# values. The classroom model's run record holds its settings, so its schedule can be read back from them:

# %%
import json

from albert_mini.paths import PRETRAINED_MODEL
from albert_mini.training.setup import PretrainingSetup

settings = json.loads((PRETRAINED_MODEL / "run.json").read_text())["settings"]
recipe = PretrainingSetup(**settings)  # checked as the command line checks its flags
for phase in recipe.phases():
    print(phase, f"= {phase.tokens:,} tokens")
print("warm-up steps:", recipe.warmup_steps)
print("albert-mini pretrain \\")
print("   ", *recipe.to_argv(), "--out runs/classroom")

# %% [markdown]
# ## The classroom model fills in blanks
#
# Hide one word of an unseen sentence and read the guesses. The classroom model,
# `data/pretrained/albert-mini-austen`, is the curriculum run above (5,000 steps, 20.5M tokens), finished with
# 2,000 more steps at 128 tokens (8.2M tokens) because the curriculum had left positions 64-127 barely trained;
# its model card (`README.md` there) has the details. `held_out_clozes` hides one whole word in held-out sentences
# (seed 0); `fill_mask` returns the five most probable pieces for the gap.

# %% tags=["nbval-check-output"]
from albert_mini import load_pretrained
from albert_mini.paths import PRETRAINED_MODEL
from albert_mini.study.showcase import fill_mask, held_out_clozes

classroom = load_pretrained(PRETRAINED_MODEL)
for cloze in held_out_clozes(tokenizer, count=5, seed=0):
    guesses = fill_mask(classroom, tokenizer, cloze, top=5)
    print(cloze.text)
    print(
        f"    hidden: {cloze.answer!r}; top 5: "
        + ", ".join(f"{w or '(piece)'!r} {p:.0%}" for w, p in guesses)
    )

# %% [markdown]
# How often is the top guess right? The model card's score, on every masked token of the held-out chapters:

# %% tags=["nbval-check-output"]
card = json.loads((PRETRAINED_MODEL / "scores.json").read_text())
low, high = card["mlm_interval"]
print(
    f"held-out MLM accuracy at {card['seq_len']} tokens: {card['mlm_acc']:.1%} of "
    f"{card['masked_tokens']:,} masked tokens, 95% interval [{low:.1%}, {high:.1%}]"
)

# %% [markdown]
# Read the guesses as a portrait of 32% held-out accuracy. The model knows which *kind* of word a slot takes:
# after "i must" and "might" mostly verbs in their base form ("think", "see", "tell"; "be", "have", "make"),
# between two nouns a conjunction or a preposition. It finds frequent function words ("and", "you", "after", each
# in its top five) and misses rarer content words ("trouble", "occupy"), though with the right part of speech:
# the grammar a model learns first. The paper's ALBERT-base, at 54% (Table 5), has gone on to meaning.
#
# ## Does the classroom model know sentence order?
#
# The SOP head gives the probability that A comes before B. `held_out_pairs` builds every SOP pair of the
# validation and test chapters at 128 tokens (seed 1), over 1,000, so the 95% (Wilson) interval is about +-3 points;
# `held_out_pair_texts` decodes them for chapter 5's quote strata.
#
# How to read the intervals, p-values and verdicts below:
# [reading the statistics](10_appendix.ipynb#part-c-reading-the-statistics), in the appendix.

# %%
# Not checked by nbval: every probability is within a hair of 0.5, so the last bits
# of the arithmetic (thread
# count, CPU) can flip a prediction and move the accuracy by a pair.
from albert_mini.study.showcase import (
    held_out_pair_texts,
    held_out_pairs,
    p_in_order,
    pair_text,
    sop_accuracy,
    swapped,
)
from albert_mini.study.sop_strata import quote_strata, stratified

pairs = held_out_pairs(seq_len=128)
in_order = [x for x in pairs if x.label == 0][:4]
kept, flipped = (
    p_in_order(classroom, in_order),
    p_in_order(classroom, [swapped(x) for x in in_order]),
)
for x, p_kept, p_flipped in zip(in_order, kept, flipped):
    a, b = pair_text(tokenizer, x, width=60)
    print(
        f"A: {a}\nB: {b}\n    P(in order) as written {p_kept:.2f}, swapped "
        f"{p_flipped:.2f}"
    )
sop = sop_accuracy(classroom, pairs)
low, high = sop["interval"]
print(
    f"\nheld-out SOP accuracy {sop['accuracy']:.1%} on {sop['pairs']:,} pairs, 95% "
    "interval "
    f"[{low:.1%}, {high:.1%}]; the model says 'in order' for "
    f"{sop['says_in_order']:.0%} of the pairs "
    f"({sop['in_order_pairs']:.0%} are)"
)
split = stratified(sop["right"], quote_strata(held_out_pair_texts(seq_len=128)))
for stratum, name in (("quote", "with a quotation mark"), ("no_quote", "without one")):
    low, high = split[stratum]["wilson"]
    print(
        f"    pairs {name:22s} {split[stratum]['accuracy']:.1%} of "
        f"{split[stratum]['pairs']:,} [{low:.1%}, {high:.1%}]"
    )

# %% [markdown]
# Each probability stays close to 0.5, yet over more than a thousand held-out pairs the model is right about
# 66% of the time, and the whole 95% interval lies above 50% (it is not a constant answer): weak evidence on one
# pair, clear in aggregate. The split says where it comes from: about 76% on pairs with a quotation mark, 53%
# without, an interval that contains a coin. The model has learned chapter 5's quotation cue; that it orders
# plain narration, it has not shown.

# %% [markdown]
# On a control task (the sentence loss alone, one seed each), AdamW at a constant rate with global clipping
# learned the label and then collapsed, while LAMB held it; without clipping, or with a decaying rate, AdamW did
# not collapse. The runs are in [chapter 11, the research log](11_research_log.ipynb).

# %% [markdown]
# ## ALBERT and its BERT twin
#
# `bert-mini` is albert-mini without ALBERT's two savings: E = H = 256 and six separate layers. Sharing and
# factorization shrink what scales with the *distinct* parameters (weights, gradients, LAMB's two moments), not
# the activations each of the six layer applications keeps for the backward pass.
# `albert_mini.study.memory.training_memory` counts the four parts of one fp32 training step.

# %% tags=["nbval-check-output"]
from albert_mini import count_parameters
from albert_mini.study.memory import training_memory

bert_config = AlbertConfig.from_preset("bert-mini")
twins = {"albert-mini": mini_config, "bert-mini": bert_config}
MIB = 2**20
reports = {
    name: training_memory(c, batch_size=32, seq_len=128, optimizer="lamb")
    for name, c in twins.items()
}
print(f"{'':12s} {'parameters':>11s} {'with heads':>11s}")
for name, c in twins.items():
    print(
        f"{name:12s} {count_parameters(c):>11,} {count_parameters(c, heads=True):>11,}"
    )
print("\nMiB at batch 32 x 128:")
print(
    f"{'':12s} {'weights':>8s} {'grads':>6s} {'LAMB m,v':>8s} {'activations':>11s} "
    f"{'total':>6s}"
)
for name, r in reports.items():
    print(
        f"{name:12s} {r.parameters / MIB:8.1f} {r.gradients / MIB:6.1f} "
        f"{r.optimizer_states / MIB:8.1f} {r.activations / MIB:11.1f} "
        f"{r.total / MIB:6.1f}"
    )

fig, ax = plt.subplots(figsize=(6.8, 4.6), dpi=110)
parts = ("parameters", "gradients", "optimizer_states", "activations")
bottom = np.zeros(len(twins))
for part in parts:
    heights = np.array([getattr(reports[name], part) / MIB for name in twins])
    ax.bar(list(twins), heights, bottom=bottom, label=part.replace("_", " "))
    bottom += heights
ax.set(
    ylabel="memory of one training step (MiB, fp32)",
    ylim=(0, 1.3 * bottom.max()),
    title=(
        "Training memory at batch 32 x 128 with LAMB:\n"
        "sharing saves weights, not activations"
    ),
)
ax.legend()
fig.tight_layout()
save_figure(fig, "07_memory.png")
plt.show()

# %% [markdown]
# Weights, gradients and LAMB's moments together are 3.5 times smaller for ALBERT (31 against 108 MiB), but the
# activations, over 400 MiB for both, are the bulk of the step, so the total shrinks by only 15%. Sharing buys
# parameters, not activation memory; at billions of parameters (chapter 9) the parameter side decides what fits.
#
# **Speed.** Both models run six layers of the same width over the same tokens, so they cost about the same
# arithmetic; ALBERT adds a small E x H projection, BERT has 3.5 times more parameters for LAMB to update. We time
# a few steps of each, alternating, and keep each one's fastest (not checked: timings depend on the machine).

# %%
import time

from albert_mini import Trainer, WarmupPolyDecay, build_optimizer

rounds = pick(fast=2, full=4)
speed_batches = PretrainingBatches(train_set, batch_size=32)
micro = [next(speed_batches)]  # the same 32 x 128 batch for both models
trainers = {}
for name, c in twins.items():
    torch.manual_seed(0)
    twin = AlbertForPreTraining(c)
    trainers[name] = Trainer(
        twin,
        build_optimizer(twin, "lamb", lr=5e-3),
        WarmupPolyDecay(5e-3, 100),
        speed_batches,
        TrainConfig(max_steps=100, progress=False),
    )
fastest = {name: float("inf") for name in twins}
for _ in range(rounds):
    for name, trainer in trainers.items():
        started = time.perf_counter()
        trainer.train_step(micro)  # forward, backward, clipping and one LAMB update
        fastest[name] = min(fastest[name], time.perf_counter() - started)
for name, seconds in fastest.items():
    print(
        f"{name:12s}: {seconds:.2f} s per step of 32 x 128 tokens "
        f"({32 * 128 / seconds:,.0f} tokens/s)"
    )
from albert_mini.devices import cpu_model

print(f"timed on {cpu_model()} with {torch.get_num_threads()} threads")

# %% [markdown]
# The two times per step come out close, as the arithmetic predicts (a few percent either way is timing noise on
# a shared machine): fewer than a third of the parameters did not buy a faster step.
#
# ## Several processes
#
# With `--device auto`, the default, the same command trains on a CUDA GPU, else a Mac's, else the CPU; this
# book uses the CPU, which every reader has.
#
# The same command runs data-parallel under `torchrun` (DDP; gloo on CPUs, nccl on GPUs). Each process reads its
# own shard, gradients are summed before the update, and rank 0 writes the files:
#
# ```
# torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain \
#     --preset albert-mini --corpus austen --task sop --steps 1200 --lr 5e-3 --warmup 50 \
#     --batch-size 16 --out runs/mini-sop-ddp
# ```
#
# An optimizer step sees the **effective batch**: `--batch-size` x processes x `--accumulate` (micro-batches whose
# gradients are added before one update). The loss is the per-token mean over that whole batch, so 2 processes
# of 16, or 1 process accumulating 2 micro-batches of 16, compute the same update as 1 process with 32.
# With `--accumulate` one machine can reach the paper's 4096 sequences per step, slowly.

# %% tags=["nbval-check-output"]
for batch_size, world, accumulate in ((32, 1, 1), (16, 2, 1), (16, 1, 2), (32, 2, 64)):
    print(
        f"--batch-size {batch_size:2d} x {world} process(es) x --accumulate "
        f"{accumulate:2d} = "
        f"{batch_size * world * accumulate:5,} sequences per optimizer step"
    )

# %% [markdown]
# ## Summary
#
# - **LAMB** is Adam without bias correction, with the weight decay inside the update, and one trust ratio
#   $\lVert w \rVert / \lVert u \rVert$ per tensor, so each step moves a tensor by about $\eta$ times its own
#   norm; LayerNorm and bias tensors get neither decay nor the ratio.
# - **Schedule**: linear warmup from 0, then linear decay to 0 counted from step 0. **Clipping** to global norm 1.0.
#   **Unigram prior** (our departure): the MLM loss starts near the corpus's unigram entropy.
# - **At mini scale**, the classroom model (28.7M tokens) predicts 32% of held-out masked tokens and orders
#   65.9% of 1,346 held-out SOP pairs: 76.4% of the 749 with a quotation mark, 52.8% of the 597 without (a
#   coin's range). It learned a punctuation cue; order beyond it is not shown. The paper reports 86.5%.
# - **ALBERT vs BERT**: sharing and factorization cut weights, gradients and LAMB state 3.5-fold, but not the
#   activations or the arithmetic per step.
# - Effective batch = batch x processes x accumulation; the same command resumes a run and runs under `torchrun`.
#
# ## Further reading / pointers
#
# - The paper, Section 4.1 (experimental setup) and Table 5; You et al. (2019), *Large Batch Optimization for
#   Deep Learning: Training BERT in 76 minutes*, for LAMB.
# - Code: in `albert_mini/training/`, `optim.py`, `trainer.py` (exact resumption), `launch.py` (a run) and
#   `distributed.py` (the per-token mean over the effective batch); `albert_mini/study/memory.py`.
# - Chapter 5 for SOP versus NSP, chapter 6 for the masks these runs train on; chapter 9 takes the same machinery
#   to the paper's model sizes.
