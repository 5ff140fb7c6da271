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
# # Chapter 9: Scaling up
#
# Everything so far ran on a laptop-sized model. The paper's models are much larger: BERT-xlarge has 1.27 billion
# parameters, and ALBERT-xxlarge, the model behind the paper's best results, is a transformer 4096 units wide. This
# chapter looks at those models without training them. We build every configuration of the paper's Table 1 for
# free, account for what training them costs (parameters, memory, compute), read the paper's Speedup column in the
# light of those costs, and end with the two practical routes to a large ALBERT: loading official weights, and
# pretraining on many GPUs.
#
# ## Learning goals
#
# - Build the paper's seven configurations on PyTorch's `meta` device and check their parameter counts against
#   Table 1.
# - Keep three budgets apart: parameters, training memory, and compute per token; explain why ALBERT-xxlarge has
#   fewer parameters than BERT-large but about 7.5 times its compute.
# - Compare the paper's Speedup column (Table 2) with the speed that FLOPs alone predict, and explain the gap.
# - Load Hugging Face ALBERT weights into `albert_mini` and verify the conversion on a local model.
# - Launch data-parallel pretraining with `torchrun` and work out the effective batch size.

# %%
import time

import matplotlib.pyplot as plt
import torch

from albert_mini import AlbertConfig, AlbertModel, count_parameters
from albert_mini.settings import pick
from albert_mini.study.paper import (
    KNOWN_DISAGREEMENTS,
    TABLE1,
    TABLE2_SPEEDUP,
    paper_convention_count,
)

PAPER_MODELS = [
    "bert-base",
    "bert-large",
    "bert-xlarge",
    "albert-base",
    "albert-large",
    "albert-xlarge",
    "albert-xxlarge",
]

# %% [markdown]
# ## Every paper model, built on the meta device
#
# BERT-xlarge in fp32 needs 5 GB just for its weights. To inspect a model of that size we do not need its weights
# at all: PyTorch's **meta device** creates tensors that carry a shape and a dtype but no storage. Building a
# module inside `with torch.device("meta"):` runs all of its Python code (so the structure, names and
# parameter count are exactly those of the real model), allocates nothing, and takes milliseconds.

# %%
start = time.perf_counter()
with torch.device("meta"):
    meta_models = {
        name: AlbertModel(AlbertConfig.from_preset(name)) for name in PAPER_MODELS
    }
print(
    f"built {len(meta_models)} models on the meta device in "
    f"{time.perf_counter() - start:.1f} s"
)
from albert_mini.devices import cpu_model

print(f"timed on {cpu_model()} with {torch.get_num_threads()} threads")

# %% tags=["nbval-check-output"]
xlarge_weight = (
    meta_models["bert-xlarge"]
    .encoder.albert_layer_groups[0]
    .albert_layers[0]
    .ffn.weight
)
print(
    "an FFN weight of BERT-xlarge:",
    tuple(xlarge_weight.shape),
    xlarge_weight.dtype,
    xlarge_weight.device,
)
print("is meta (no storage):", xlarge_weight.is_meta)

# %% [markdown]
# Now the counts. "Exact" counts the tensors of the built `AlbertModel` (embeddings, E→H projection, encoder,
# pooler; no pretraining heads). "Paper convention" is the rule that reproduces the paper's printed numbers
# (Chapter 4): the pooler is counted for shared models only, and there is no projection when E = H.

# %% tags=["nbval-check-output"]
print(
    f"{'model':15s} {'L':>3s} {'H':>5s} {'E':>5s} {'heads':>5s} {'exact':>14s} "
    f"{'convention (M)':>14s} "
    f"{'Table 1 (M)':>11s}"
)
exact_counts = {}
for name, model in meta_models.items():
    c = model.config
    exact_counts[name] = count_parameters(model)
    # the built module agrees with the closed form
    assert exact_counts[name] == count_parameters(c)
    print(
        f"{name:15s} {c.num_hidden_layers:3d} {c.hidden_size:5d} {c.embedding_size:5d} "
        f"{c.num_attention_heads:5d} "
        f"{exact_counts[name]:14,d} {paper_convention_count(c) / 1e6:14.1f} "
        f"{TABLE1[name]:11d}"
    )
for name, note in KNOWN_DISAGREEMENTS.items():
    print(f"note on {name}: {note}")

# %% [markdown]
# Five of the seven printed numbers are the convention counts rounded to millions. The two largest ALBERTs are
# not: no way of counting the architecture gives Table 1's 60M for ALBERT-xlarge or 235M for ALBERT-xxlarge.
#
# > **Differs from the paper / reference code.** We trust the architecture: ALBERT-xxlarge has 222,595,584
# > parameters as `AlbertModel` (223.2M with the pretraining heads), which is also what Hugging Face's model card
# > reports (223M). The 235M printed in the paper cannot be derived from the configuration it describes.
#
# Notice the shapes. BERT grows by stacking more and wider layers, so its parameters grow with L·H². ALBERT's
# parameters grow only with H² (one layer) plus the fixed V·E embedding table, so it can afford H = 4096. The
# xxlarge model also goes back to 12 layers: the paper found 24 layers no better than 12 for it (same average
# score), and with a shared layer the extra 12 would only have cost compute.

# %% [markdown]
# ## Three budgets: parameters, memory, compute
#
# ### Training memory for weights, gradients and optimizer states
#
# Training keeps more than the weights: for every parameter also its gradient, and the optimizer's state, for
# AdamW and LAMB two moment estimates $m$ and $v$. In fp32 each of these numbers takes 4 bytes.
#
# ### Exercise 1: training memory for any optimizer
#
# Write `training_memory_bytes(n_params, optimizer="adamw")`: the bytes of fp32 weights, gradients and optimizer
# states for a model with `n_params` parameters. Plain `"sgd"` keeps no state, `"momentum"` (SGD with momentum)
# keeps one tensor per parameter, `"adamw"` and `"lamb"` keep two.

# %% nbgrader={"grade": false, "grade_id": "training_memory_bytes", "locked": false, "schema_version": 3, "solution": true, "task": false}
def training_memory_bytes(n_params: int, optimizer: str = "adamw") -> int:
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_training_memory_bytes", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_training_memory_bytes

check_training_memory_bytes(training_memory_bytes);

# %% [markdown]
# For AdamW that is 4 + 4 + 8 = 16 bytes per parameter (`albert_mini.study.memory.parameter_bytes`):

# %% tags=["nbval-check-output"]
# fp32 weight, fp32 gradient, and the optimizer's states
from albert_mini.study.memory import parameter_bytes

print(
    f"{'model':15s} {'parameters':>14s} {'weights (GB)':>13s} "
    f"{'+ grads + AdamW (GB)':>21s}"
)
for name in PAPER_MODELS:
    n = exact_counts[name]
    print(
        f"{name:15s} {n:14,d} {4 * n / 1e9:13.2f} "
        f"{parameter_bytes(n, 'adamw') / 1e9:21.2f}"
    )

# %% [markdown]
# These are the costs that parameter sharing cuts. ALBERT-large needs 0.28 GB where BERT-large needs 5.35 GB, and
# even ALBERT-xxlarge (3.56 GB) fits where BERT-large (5.35 GB) does. In data-parallel training, the same
# parameter count also sets how many bytes every worker must exchange per step (one gradient per parameter).
#
# > **Differs from BERT.** BERT scales by adding parameters everywhere: more layers, each wider. ALBERT decouples
# > the two: its parameter count (and with it the memory for weights and optimizer states, and the gradient traffic)
# > barely depends on depth, so the paper spends that budget on width instead. The price is paid in the next
# > two budgets, which sharing does not touch.

# %% [markdown]
# ### Activations do not shrink
#
# For the backward pass every layer *application* keeps its own intermediate results (inputs of matrix products,
# q, k and v, LayerNorm statistics), whether its weights are shared or not. We can measure this directly:
# `albert_mini.study.memory.measure_activation_bytes` hooks `torch.autograd.graph.saved_tensors_hooks`, sees every
# tensor autograd saves during a forward pass, and adds up their storage, skipping the parameters themselves
# (which are saved too, but are not activations).

# %%
from albert_mini.study.memory import (
    measure_activation_bytes,
    training_memory,
)

ids = torch.randint(
    5, 8000, (pick(fast=2, full=8), 128), generator=torch.Generator().manual_seed(0)
)
for name in ("albert-mini", "bert-mini"):
    torch.manual_seed(0)
    model = AlbertModel(AlbertConfig.from_preset(name))
    print(
        f"{name:12s} parameters {count_parameters(model):>10,}   "
        "activations saved for backward: "
        f"{measure_activation_bytes(model, {'input_ids': ids}) / 2**20:.1f} MiB "
        f"for {ids.numel()} tokens"
    )

# %% [markdown]
# `albert-mini` has 28% of `bert-mini`'s parameters, yet it stores the same activations: six applications of a
# 256-wide layer either way. The same module has the closed form of what our implementation keeps, exact for
# `AlbertForPreTraining` (a test compares it with the measurement): per token and layer application
# 8H + 2I + heads + 4 floats. For the paper's models, with a batch of 8 sequences of 512 tokens and 20 masked
# positions each, in fp32:

# %% tags=["nbval-check-output"]
for name in ("bert-large", "albert-large", "albert-xxlarge"):
    report = training_memory(
        AlbertConfig.from_preset(name),
        batch_size=8,
        seq_len=512,
        masked_per_sequence=20,
    )
    state = report.parameters + report.gradients + report.optimizer_states
    print(
        f"{name:15s} weights+grads+LAMB {state / 2**30:6.2f} GiB"
        f"   activations {report.activations / 2**30:6.2f} GiB"
    )

# %% [markdown]
# ALBERT-large keeps as many activations as BERT-large (6.0 GiB here) with a twentieth of the memory for weights,
# gradients and optimizer states; ALBERT-xxlarge keeps about **twice** BERT-large's activations (12.1 GiB). That
# is why users of the released checkpoints found that ALBERT-xxlarge needs far more accelerator memory than
# BERT-large, even though its weights are smaller.

# %% [markdown]
# ### Compute per token
#
# A forward pass multiplies every token by every weight matrix it meets, once per application: a shared layer
# counts L times. A multiply-add is 2 FLOPs, so the dense layers cost 2 × (the weights a token meets). Attention
# adds the work that depends on sequence length T: for each token, its query meets T keys ($T \cdot H$
# multiply-adds over all heads) and its output mixes T values (another $T \cdot H$). `albert_mini.study.throughput`
# has this estimate:

# %%
import inspect

from albert_mini.study.throughput import flops_per_token

print(inspect.getsource(flops_per_token))

# %% [markdown]
# It leaves out what is small at these sizes: biases, LayerNorms, softmax, the embedding lookups (no
# multiplications) and the MLM head, which the original code evaluates only at the at most 20 masked positions of
# each 512-token sequence (Exercise 2 counts its cost). Training costs about three forward passes (the backward pass
# computes two products per forward product), which changes no ratio below.

# %% tags=["nbval-check-output"]
SEQ_LEN = 512
flops = {
    name: flops_per_token(AlbertConfig.from_preset(name), SEQ_LEN)
    for name in PAPER_MODELS
}
print(
    f"{'model':15s} {'parameters (M)':>14s} {'forward GFLOPs/token':>21s} "
    f"{'x BERT-large':>12s}"
)
for name in PAPER_MODELS:
    print(
        f"{name:15s} {exact_counts[name] / 1e6:14.1f} {flops[name] / 1e9:21.3f} "
        f"{flops[name] / flops['bert-large']:12.2f}"
    )

# %% [markdown]
# Each ALBERT has the compute of the BERT with the same L and H (its E→H projection adds a little), regardless of
# sharing. ALBERT-xxlarge has **two thirds** of BERT-large's parameters but **7.5 times** its compute per token:
# 12 applications of a layer with $12H^2 \approx 201$M weights, against 24 applications of a layer with
# $12H^2 \approx 12.6$M.

# %% [markdown]
# ## The Speedup column of Table 2
#
# Table 2 of the paper reports training speed relative to BERT-large, measured on the same hardware for the same
# number of steps. If speed were set by arithmetic alone, the speedup of a model would be the FLOP ratio
# (BERT-large FLOPs per token) / (the model's FLOPs per token). Side by side:

# %% tags=["nbval-check-output"]
print(
    f"{'model':15s} {'parameters (M)':>14s} {'FLOP ratio':>10s} {'paper':>6s} "
    f"{'paper / FLOP ratio':>18s}"
)
for name in PAPER_MODELS:
    predicted = flops["bert-large"] / flops[name]
    if name in TABLE2_SPEEDUP:
        paper = TABLE2_SPEEDUP[name]
        print(
            f"{name:15s} {exact_counts[name] / 1e6:14.1f} {predicted:10.2f} "
            f"{paper:6.1f} {paper / predicted:18.2f}"
        )
    else:
        print(
            f"{name:15s} {exact_counts[name] / 1e6:14.1f} {predicted:10.2f} {'-':>6s} "
            f"{'-':>18s}"
        )

# %% [markdown]
# Every model trains faster than its FLOPs predict, and the fewer parameters it has, the larger the bonus. The
# cleanest case is ALBERT-large: exactly BERT-large's arithmetic (ratio 1.00), yet 1.7 times faster. Something
# other than FLOPs makes up the difference, and it scales with parameters:
#
# - **Communication.** The paper trains with a batch of 4096 sequences spread over many TPU cores. After every
#   step the cores must combine their gradients: one number per parameter crosses the interconnect. BERT-large
#   exchanges 334M gradients per step, ALBERT-large 18M.
# - **Memory traffic.** The optimizer update (LAMB) reads and writes the weight, the gradient and two moments of
#   every parameter each step, a purely memory-bound cost proportional to the parameter count; large embedding
#   tables (V × H for BERT, V × 128 for ALBERT) add gradient and update traffic of their own.
# - **Efficiency of wide matrices.** At H = 4096 the matrix products are large enough to keep the hardware busy;
#   together with its smaller parameter count this probably explains how ALBERT-xxlarge reaches 0.3 where its
#   FLOPs predict 0.13.
#
# An earlier version of the paper measured speed relative to BERT-xlarge instead; the pattern is the same there:
# ALBERT-xlarge, with BERT-xlarge's arithmetic, was 2.4 times faster, while BERT-large against BERT-xlarge came out
# at 3.8, close to its FLOP ratio of 3.85 (both models have hundreds of millions of parameters).
#
# So the speedups are real, but they come from parameters, not from arithmetic, and they shrink on a single
# device where no gradients travel: chapter 4 found `albert-mini` and `bert-mini` (same L and H) about equally
# fast on one CPU.

# %% [markdown]
# ### The Speedup column measured on one CPU
#
# `make experiment-throughput` times forward and backward passes of the seven configurations on one CPU process
# (`albert_mini.study.throughput.relative_throughput`, best run on a quiet machine) and divides by BERT-large's
# speed. `albert_mini.study.results.speedup_table` reads the committed `data/results/throughput.json` with what
# it records about the machine: this file predates the CPU field, so its thread count and torch build (a new run
# records the CPU too).

# %% tags=["nbval-check-output"]
from albert_mini.study import results

speed_rows, speed_meta = results.speedup_table()
# Older files predate the CPU field: say what the file does record.
threads, version = speed_meta["threads"], speed_meta["torch"]
print(
    f"measured on {speed_meta['cpu']}"
    if "cpu" in speed_meta
    else f"measured with {threads} threads and torch {version} (a file from before "
    "result files named their CPU)"
)
print(
    f"{'model':15s} {'tokens/s':>9s} {'measured':>9s} {'FLOP ratio':>10s} {'paper':>6s}"
)
for row in speed_rows:
    paper = (
        f"{row['paper_speedup']:6.1f}"
        if row["paper_speedup"] is not None
        else f"{'-':>6s}"
    )
    print(
        f"{row['model']:15s} {row['tokens_per_second']:9.0f} {row['speedup']:9.2f} "
        f"{row['flop_ratio']:10.2f} {paper}"
    )
gaps = {r["model"]: r["speedup"] / r["flop_ratio"] for r in speed_rows}
large = next(r for r in speed_rows if r["model"] == "albert-large")
print(
    f"measured / FLOP ratio: {min(gaps.values()):.2f} to {max(gaps.values()):.2f} over "
    f"the {len(gaps)} models; paper / FLOP ratio for ALBERT-large: "
    f"{large['paper_speedup'] / large['flop_ratio']:.2f}"
)

# %%
print(
    "a new run of the experiment here would time "
    f"{cpu_model()} with {torch.get_num_threads()} threads"
)

# %% [markdown]
# This table's FLOP ratios (3.54 for BERT-base) are for the experiment's 64-token sequences, the earlier table's
# (3.47) for the paper's 512: attention's work per token grows with the sequence length but only linearly with
# the width, so it weighs more in a narrow model, and longer sequences bring the models' costs closer.
#
# On one CPU process the measured speed follows the FLOP ratio (the ratio of the two stays near 1 for every
# model), while the paper's TPU speedups exceed it for the models with few parameters: what one process does not
# pay (gradient exchange between devices, optimizer traffic over many parameters, here left out of the timing
# altogether) is what the paper's Speedup column measures beyond arithmetic.

# %% [markdown]
# ## Parameters against compute
#
# One picture holds the chapter's point: for BERT, parameters and compute rise together; ALBERT slides each model
# far to the left (fewer parameters) at the same height (same compute), and ALBERT-xxlarge buys its accuracy with
# compute, not parameters.

# %%
from matplotlib.ticker import FormatStrFormatter

from albert_mini.paths import save_figure

fig, ax = plt.subplots(figsize=(6.8, 5.2), dpi=110)
for family, marker, color in (("bert", "s", "tab:orange"), ("albert", "o", "tab:blue")):
    names = [n for n in PAPER_MODELS if n.startswith(family + "-")]
    ax.scatter(
        [exact_counts[n] / 1e6 for n in names],
        [flops[n] / 1e9 for n in names],
        marker=marker,
        s=70,
        color=color,
        label=family.upper(),
        zorder=3,
    )
    for n in names:
        ax.annotate(
            n,
            (exact_counts[n] / 1e6, flops[n] / 1e9),
            textcoords="offset points",
            xytext=(6, 6),
        )
# same L and H: same compute, far fewer parameters
for size in ("base", "large", "xlarge"):
    pair = [f"bert-{size}", f"albert-{size}"]
    ax.plot(
        [exact_counts[n] / 1e6 for n in pair],
        [flops[n] / 1e9 for n in pair],
        color="grey",
        ls="--",
        lw=1,
        zorder=1,
    )
ax.set(
    xscale="log",
    yscale="log",
    xlabel="parameters (millions, log scale)",
    ylabel=f"forward GFLOPs per token (T = {SEQ_LEN}, log scale)",
    title="Parameters vs compute of the paper's models (dashed: same L and H)",
)
ax.set_ylim(0.15, 8)
for axis in (ax.xaxis, ax.yaxis):  # plain numbers instead of powers of ten
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(FormatStrFormatter(""))
ax.set_yticks([0.2, 0.5, 1, 2, 5])
ax.grid(alpha=0.3, which="both")
ax.legend(loc="lower right")
save_figure(fig, "09_params_vs_flops.png")
plt.show()

# %% [markdown]
# ## Official weights through Hugging Face
#
# Pretraining ALBERT-base the way the paper did (125,000 steps with a batch of 4096 sequences of 512 tokens) is far
# beyond a CPU. The released checkpoints are on the Hugging Face hub, and `albert_mini.model.hf.from_hf` turns any of
# them into an `albert_mini` model with identical weights. With an internet connection:
#
# ```python
# from albert_mini.model.hf import from_hf
#
# # downloads the HF checkpoint and returns albert_mini's AlbertForPreTraining
# model = from_hf("albert/albert-base-v2")
# print(model.config.hidden_size, model.config.num_hidden_layers)   # 768 12
# ```
#
# This book never assumes internet access, so the cell below shows the same function on a local directory
# instead: a tiny, randomly initialised HF `AlbertForPreTraining` written by `save_pretrained`, exactly the
# format of a downloaded checkpoint. `from_hf` reads the directory, translates the config, copies every tensor
# (their names already agree, see `albert_mini/model/albert.py`), and re-ties the decoder to the word embeddings. The
# two models must then produce the same logits.
#
# > **Differs from Hugging Face.** HF's pretraining output calls the logits `prediction_logits` and
# > `sop_logits`; ours are `mlm_logits` and `sentence_logits`, since our two-way head also trains NSP or
# > nothing (chapter 5). The cell compares them name against name.

# %%
import tempfile

try:
    import transformers

    from albert_mini.model.hf import from_hf

    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    hf_config = transformers.AlbertConfig(
        vocab_size=120,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_act="gelu_new",
    )
    hf_model = transformers.AlbertForPreTraining(hf_config).eval()
    with tempfile.TemporaryDirectory() as checkpoint_dir:
        hf_model.save_pretrained(checkpoint_dir)
        ours = from_hf(checkpoint_dir).eval()
    token_ids = torch.randint(
        5, 120, (2, 12), generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        hf_out, our_out = hf_model(token_ids), ours(token_ids)
    mlm_gap = (hf_out.prediction_logits - our_out.mlm_logits).abs().max().item()
    sop_gap = (hf_out.sop_logits - our_out.sentence_logits).abs().max().item()
    print(
        f"loaded {type(ours).__module__}.{type(ours).__name__} with "
        f"{count_parameters(ours):,} parameters"
    )
    print(f"largest logit difference: MLM {mlm_gap:.1e}, sentence order {sop_gap:.1e}")
    assert mlm_gap < 1e-5 and sop_gap < 1e-5, (
        "the converted model disagrees with the HF model"
    )
    print("logits match")
except ImportError:
    print(
        "transformers is not installed: this optional cell needs it (pip install "
        "transformers)"
    )

# %% [markdown]
# ## Pretraining on many GPUs with `torchrun`
#
# The other route is to pretrain yourself on several GPUs. `albert-mini pretrain` is the pretraining command
# line (its documented interface: `albert-mini pretrain --help` lists every option). Launched
# through PyTorch's `torchrun`, the same command runs one process per GPU with `DistributedDataParallel`:
#
# ```sh
# torchrun --standalone --nproc_per_node 8 -m albert_mini pretrain \
#     --preset albert-base --tokenizer spiece-30k.model --corpus austen --steps 10000 \
#     --batch-size 64 --accumulate 8 --out runs/albert-base-8gpu
# ```
#
# (The model's vocabulary is the tokenizer's: with a 30,000-piece SentencePiece model this is `albert-base` as
# in the paper; the committed 8,000-piece Austen tokenizer fits `albert-mini`. On this book's 2-core CPU the same
# launcher runs
# `torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain --preset albert-mini --corpus austen
# --steps 600 --out runs/mini-ddp`.)
#
# - **One process per device.** Each rank holds a full copy of the model, reads its own shard of the data and
#   computes gradients on it; DDP averages the gradients across ranks during the backward pass, so every copy
#   takes the same optimizer step. This all-reduce is the communication cost of the previous section, and it is
#   where ALBERT's small parameter count pays off.
# - **Backends.** The processes talk through NCCL on GPUs and through gloo on CPUs (so the same command works,
#   slowly, on a laptop: `--nproc_per_node 2` on a 2-core machine).
# - **Files.** Rank 0 alone writes the run directory (config, metrics, checkpoints) and shows progress.
# - **Effective batch.** One optimizer step sees (per-rank batch) × (world size) × (accumulation steps) sequences.

# %% tags=["nbval-check-output"]
def effective_batch(per_rank_batch: int, world_size: int, accumulate: int) -> int:
    """Sequences per optimizer step: data-parallel with gradient accumulation."""
    return per_rank_batch * world_size * accumulate


print(
    "the command above:",
    effective_batch(64, 8, 8),
    "sequences per step (the paper's batch is 4096)",
)
print("two CPU processes, 32 each, no accumulation:", effective_batch(32, 2, 1))

# %% [markdown]
# Accumulation lets a small machine reach a large batch at the cost of time: the command above reaches the
# paper's 4096 with 8 GPUs by summing the gradients of 8 micro-batches of 64 before each step.

# %% [markdown]
# ## Exercise 2: the compute of the MLM head
#
# Write `mlm_head_flops_per_token(config)`: the forward FLOPs of the MLM head for one predicted position. The head
# maps the H-wide hidden state to width E with a dense layer, then to V vocabulary logits through the decoder
# (tied to the word embeddings). Count 2 FLOPs per multiply-add; ignore biases, the activation and the LayerNorm.
# (For a BERT config, E = H.) Then compare ALBERT-base with BERT-base: what does the factorized embedding save
# here, and why does the original code's choice to predict only the masked positions matter more for BERT?

# %% nbgrader={"grade": false, "grade_id": "mlm_head_flops_per_token", "locked": false, "schema_version": 3, "solution": true, "task": false}
def mlm_head_flops_per_token(config: AlbertConfig) -> int:
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_mlm_head_flops_per_token", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_mlm_head_flops_per_token

check_mlm_head_flops_per_token(mlm_head_flops_per_token);

# %% [markdown]
# With the package's version of that function (`albert_mini.study.throughput`), the head's cost next to the
# encoder's, when the logits are computed at every position (as the Hugging Face port does) and at 20 of 512
# positions (as the original code does):

# %% tags=["nbval-check-output"]
from albert_mini.study.throughput import mlm_head_flops_per_token as head_flops

for name in ("albert-base", "bert-base"):
    config = AlbertConfig.from_preset(name)
    head, encoder = head_flops(config), flops_per_token(config, SEQ_LEN)
    print(
        f"{name:12s} head {head / 1e6:5.1f} MFLOPs per predicted position = "
        f"{head / encoder:6.1%} of the encoder "
        f"at every position, {20 / SEQ_LEN * head / encoder:6.2%} at 20 of {SEQ_LEN}"
    )

# %% [markdown]
# The factorized embedding makes ALBERT's head six times cheaper than BERT's, because the decoder works at width
# E = 128 instead of H = 768. Predicting only the masked positions makes the head negligible for both models; a
# trainer that computes logits at every position spends a quarter of BERT-base's forward compute on them.

# %% [markdown]
# ## Explore: parameters and memory of any shape
#
# Everything this chapter counted follows from five numbers: V, E, H, L and what the L layer applications share.
# The function below builds the config (H/64 attention heads and an FFN of width 4H, as in all the paper's
# models) and prints where its parameters sit and what one fp32 training step needs for weights, gradients and
# LAMB's two moments (`albert_mini.study.memory.parameter_bytes`, 16 bytes per parameter). First as a table, for
# the paper's models and two variants of ALBERT-base:

# %% tags=["nbval-check-output"]
from albert_mini.model.counting import closed_form_breakdown
from albert_mini.study.memory import parameter_bytes

SHARING = ("all", "attention", "ffn", "none")


def shape_config(V: int, E: int, H: int, L: int, sharing: str) -> AlbertConfig:
    """A paper-style config: H/64 heads, FFN 4H, one group unless nothing is shared."""
    return AlbertConfig(
        vocab_size=V,
        embedding_size=E,
        hidden_size=H,
        num_hidden_layers=L,
        num_attention_heads=max(1, H // 64),
        intermediate_size=4 * H,
        sharing=sharing,
        num_hidden_groups=L if sharing == "none" else 1,
        embedding_projection=E != H,
    )


def breakdown_row(V: int, E: int, H: int, L: int, sharing: str) -> str:
    """One line: the shape, parameters per component (M), training-state memory."""
    parts = closed_form_breakdown(shape_config(V, E, H, L, sharing))
    total = sum(parts.values())
    cells = " ".join(
        f"{parts[k] / 1e6:7.2f}"
        for k in ("embeddings", "projection", "attention", "ffn", "pooler")
    )
    return (
        f"{V:6d} {E:5d} {H:5d} {L:3d} {sharing:>9s} {cells} {total / 1e6:7.2f} "
        f"{parameter_bytes(total, 'lamb') / 1e9:6.2f}"
    )


# Parameters in millions per component; "train GB": weights, gradients and LAMB state.
HEADER = (
    f"{'V':>6s} {'E':>5s} {'H':>5s} {'L':>3s} {'sharing':>9s} {'embed':>7s} "
    f"{'proj':>7s} {'attn':>7s} {'FFN':>7s} {'pooler':>7s} {'total':>7s} {'GB':>6s}"
)
print(HEADER)
for name in (
    "bert-base",
    "bert-large",
    "albert-base",
    "albert-large",
    "albert-xlarge",
    "albert-xxlarge",
):
    c = AlbertConfig.from_preset(name)
    print(
        breakdown_row(
            c.vocab_size,
            c.embedding_size,
            c.hidden_size,
            c.num_hidden_layers,
            "none" if c.sharing == "none" else "all",
        )
    )
# ALBERT-base without the factorization
print(breakdown_row(30000, 768, 768, 12, "all"))
print(breakdown_row(30000, 128, 768, 12, "none"))  # ALBERT-base without the sharing

# %% [markdown]
# In JupyterLab the next cell shows sliders for the five numbers and updates the line as you move them (it needs
# `ipywidgets`, installed with the book's dependencies). Elsewhere it prints only a note: a widget keeps no output
# that a page or a test could show. Try it: how large can H get at L = 12 before an all-shared model has more
# parameters than BERT-base? What does E buy at V = 30,000, and at V = 250,000 (a multilingual vocabulary)?

# %%
from albert_mini.settings import static_output

try:
    import ipywidgets as widgets
except ImportError:
    widgets = None
if static_output() or widgets is None:
    print("(the interactive explorer runs in JupyterLab with ipywidgets installed;")
    print(" the table above is its static form)")
else:

    def show(V, E, H, L, sharing):
        print(HEADER)
        print(breakdown_row(V, E, H, L, sharing))

    widgets.interact(
        show,
        V=widgets.IntSlider(value=30000, min=1000, max=250000, step=1000),
        E=widgets.IntSlider(value=128, min=16, max=2048, step=16),
        H=widgets.IntSlider(value=768, min=64, max=4096, step=64),
        L=widgets.IntSlider(value=12, min=1, max=48),
        sharing=widgets.Dropdown(options=SHARING),
    )

# %% [markdown]
# ## Summary
#
# - The meta device builds any configuration for free: the paper's seven models have exactly the parameter counts
#   of Table 1 under one counting convention, except ALBERT-xlarge (58.7M, printed 60M) and ALBERT-xxlarge (222.6M,
#   printed 235M).
# - Training memory for weights, gradients and AdamW states is 16 bytes per fp32 parameter: 5.35 GB for BERT-large,
#   0.28 GB for ALBERT-large, 3.56 GB for ALBERT-xxlarge.
# - Sharing reduces none of the compute and none of the activations: ALBERT-xxlarge needs 7.5 times BERT-large's
#   FLOPs per token and about twice its activation memory.
# - The paper's speedups exceed the FLOP ratios by a factor that grows as parameters shrink: they come from less
#   gradient communication and optimizer memory traffic, not from less arithmetic.
# - `albert_mini.model.hf.from_hf` loads official checkpoints (hub name, or a local `save_pretrained` directory) with
#   identical outputs; `torchrun ... -m albert_mini pretrain` trains data-parallel with an effective batch of
#   per-rank batch × world size × accumulation.
#
# ## Further reading / pointers
#
# - The paper: Table 1 (configurations), Table 2 (the Speedup column) and Table 7, the same-training-time
#   comparison: BERT-large ran 400k steps in 34 h and ALBERT-xxlarge 125k steps in 32 h, so a step of
#   ALBERT-xxlarge took about 3 times as long as one of BERT-large, not the 7.5 times its FLOPs predict.
# - `albert_mini/study/throughput.py` (FLOPs and measured throughput), `albert_mini/model/hf.py` (weight conversion),
#   `albert_mini/training/distributed.py` and `albert_mini/commands/pretrain.py` (the data-parallel pretraining
#   command).
# - PyTorch's documentation of the meta device, of `torchrun` and of `DistributedDataParallel`.
# - Kaplan et al., "Scaling Laws for Neural Language Models" (2020), for the rule of thumb "training compute is
#   about 6 × parameters × tokens"; for a shared model, read "parameters" as the weights a token meets, counted
#   once per application as in this chapter.
