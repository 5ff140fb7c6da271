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
# # Chapter 4: Cross-layer parameter sharing
#
# BERT-base stacks twelve transformer layers, each with about seven million parameters. ALBERT keeps the twelve
# *applications* but builds only **one** layer, applied twelve times in a row. This chapter takes the idea apart:
# what is shared, what it saves, what it does to gradients, what it does *not* save (compute), and what the
# paper's Figure 1 says it does to a token's path through the network.
#
# ## Learning goals
#
# - Describe the four sharing strategies of Table 4 and recognise them in a built model.
# - Map a layer application to its weights with groups and inner groups, in exact integer arithmetic.
# - Reproduce Table 4's parameter counts and the convention behind them.
# - Show that a shared weight receives the *sum* of its applications' gradients, and that sharing leaves the
#   compute per token unchanged.
# - Measure Figure 1's layer-to-layer "smoothness", and say what a measurement at initialisation can tell.

# %%
import statistics
import time

import matplotlib.pyplot as plt
import torch

from albert_mini import AlbertConfig, AlbertModel, count_parameters
from albert_mini.settings import pick

# %% [markdown]
# ## The idea: one layer, applied L times
#
# A BERT encoder with L layers computes $h_l = f_{\theta_l}(h_{l-1})$ for $l = 1, \dots, L$, with a separate
# parameter set $\theta_l$ per layer. ALBERT's default is
#
# $$h_l = f_{\theta}(h_{l-1}), \qquad l = 1, \dots, L,$$
#
# the *same* $\theta$ at every step. The network is still L layers deep: the input passes through L
# attention blocks and L feed-forward blocks. Only the number of distinct weight tensors shrinks, by a factor of
# L for the encoder.
#
# In `albert_mini` the encoder keeps its distinct layers in `albert_layer_groups` and, when it is built, asks the
# config which one each of the L steps runs; `layer_plan()` returns that plan. The whole loop is a few lines;
# Exercise 1 asks for the schedule it follows, and the chapter's solutions print the package's code.

# %% [markdown]
# For the classroom model `albert-mini` (L = 6) there is one group, so the plan runs group 0 six times:

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
mini = AlbertModel(AlbertConfig.from_preset("albert-mini"))
print("layer plan:", mini.encoder.layer_plan())
print("distinct layer groups held:", len(mini.encoder.albert_layer_groups))

# %% [markdown]
# ## Four ways to share (the paper's Table 4)
#
# A transformer layer has two blocks: multi-head attention and the feed-forward network (FFN), each closed by a
# residual connection and a LayerNorm. The paper's ablation (Table 4, on ALBERT-base) tries four choices:
#
# | `sharing=` | paper's name | attention blocks | FFN blocks |
# |---|---|---|---|
# | `"all"` | all-shared (ALBERT's default) | 1 | 1 |
# | `"attention"` | shared-attention | 1 | L |
# | `"ffn"` | shared-FFN | L | 1 |
# | `"none"` | not-shared (BERT-style) | L | L |
#
# The config field `sharing` selects the strategy. To *see* which weights a layer application uses, we build
# each strategy on a small model with L = 4 and label every attention and FFN module by the order in which we
# first meet it. Two applications that show the same label hold the very same Python object, hence the same
# tensors.

# %%
def block_usage(model: AlbertModel) -> list[tuple[int, int, int, int]]:
    """Per layer step: (application, group, attention label, FFN label)."""
    attention_ids, ffn_ids, rows = {}, {}, []
    for application, group in enumerate(model.encoder.layer_plan()):
        for layer in model.encoder.albert_layer_groups[group].albert_layers:
            attention = attention_ids.setdefault(
                id(layer.attention), len(attention_ids)
            )
            ffn = ffn_ids.setdefault(id(layer.ffn), len(ffn_ids))
            rows.append((application, group, attention, ffn))
    return rows


def small_config(sharing: str, layers: int = 4, **changes) -> AlbertConfig:
    """albert-nano widths with a sharing strategy (groups as the strategy needs)."""
    fields = dict(
        num_hidden_layers=layers,
        sharing=sharing,
        num_hidden_groups=layers if sharing == "none" else 1,
    )
    return AlbertConfig.from_preset("albert-nano", **{**fields, **changes})


# %% tags=["nbval-check-output"]
for sharing in ("all", "attention", "ffn", "none"):
    torch.manual_seed(0)
    model = AlbertModel(small_config(sharing))
    uses = "  ".join(f"L{i + 1}:A{a}/F{f}" for i, _, a, f in block_usage(model))
    n_attention, n_ffn = model.config.num_distinct_blocks()
    parts = count_parameters(model, breakdown=True)
    print(f"{sharing:9s} {uses}")
    print(
        f"{'':9s} distinct blocks: {n_attention} attention, {n_ffn} FFN; "
        f"layer parameters {parts['attention'] + parts['ffn']:,}"
    )

# %% [markdown]
# Read the rows as "layer application 3 runs attention block A0 and FFN block F2". With `"all"` every application
# shows A0/F0; with `"none"` every application has its own pair. The partial strategies point each layer's
# `attention` (or FFN) attribute at the first layer's module, so `named_parameters()` counts a shared tensor once.
#
# > **Differs from the reference code.** Neither the TensorFlow code nor Hugging Face's port has the two partial
# > strategies, so `to_hf` refuses to export them; which LayerNorm `"ffn"` shares is in the
# > [appendix](10_appendix.ipynb#part-d-cross-layer-sharing-in-detail).

# %% [markdown]
# ## Groups and inner groups
#
# The official code generalises "one shared layer" with two numbers:
#
# - `num_hidden_groups` = G distinct **groups**; the L layer applications are cut into G runs of equal length,
#   one run per group in order, so consecutive applications share a group: with L = 6 and G = 3 the plan is
#   0, 0, 1, 1, 2, 2.
# - `inner_group_num` = K layers **inside** each group. Every time a group is called, all K of its layers run one
#   after another.
#
# So the network computes L·K layer steps with only G·K distinct layers. Every released ALBERT uses G = K = 1;
# BERT is G = L, K = 1. Here is a mixed case, L = 6, G = 3, K = 2:

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
grouped = AlbertModel(
    small_config("all", layers=6, num_hidden_groups=3, inner_group_num=2)
)
print("layer plan (group per application):", grouped.encoder.layer_plan())
for application, group, attention, ffn in block_usage(grouped):
    print(
        f"application {application}: group {group}, attention A{attention}, FFN F{ffn}"
    )
steps = len(block_usage(grouped))
print(
    f"layer steps computed: {steps} (= L*K), distinct layers: "
    f"{grouped.config.num_distinct_blocks()[0]} (= G*K)"
)

# %% [markdown]
# The figure draws the same bookkeeping for three models of six layer applications: BERT's (every application
# has its own layer), ALBERT's (one stored layer, run six times) and the mixed case above. Each box is one layer
# step, coloured by the stored layer whose weights it uses (`albert_mini.book.diagrams.sharing_diagram`, drawn
# from the configs):

# %%
from albert_mini.book.diagrams import sharing_diagram
from albert_mini.paths import save_figure

mini_config = AlbertConfig.from_preset("albert-mini")
fig = sharing_diagram(
    {
        "BERT-style: nothing shared (G = L)": mini_config.replace(num_hidden_groups=6),
        "ALBERT: all shared (G = 1)": mini_config,
        "groups and inner groups": mini_config.replace(
            num_hidden_groups=3, inner_group_num=2
        ),
    }
)
save_figure(fig, "04_sharing_diagram.png")
plt.show()

# %% [markdown]
# The TensorFlow code computes an application's group in floating point, and rounding can push it into the
# previous group for unusual shapes (one group per layer with L = 22, for instance); no released model is
# affected. `albert_mini` stays in the integers, and its config refuses any G that does not divide L. Exercise 1
# at the end of the chapter asks for the whole schedule; the two formulas follow it, and the appendix finds
# every shape where they disagree:
# [the floating-point quirk](10_appendix.ipynb#part-d-cross-layer-sharing-in-detail).

# %% [markdown]
# ## How many parameters does each strategy keep? (Table 4)
#
# Table 4 of the paper ablates the four strategies on ALBERT-base (L = 12, H = 768) at two embedding sizes. The
# printed parameter counts (millions) are in `albert_mini.study.paper.TABLE4`. We compare them with two counts of our
# own:
#
# - **exact**: every tensor of `AlbertModel` (embeddings, E→H projection, encoder, pooler), from the closed form
#   in `albert_mini.model.counting`;
# - **paper convention**: `paper_convention_count`, the rule that reproduces the printed numbers. The tables count
#   the pooler ($H^2 + H$) for models with any sharing but not for unshared ones, and there is no E→H projection
#   when E = H (as in the original TensorFlow code).

# %% tags=["nbval-check-output"]
from albert_mini.study.paper import TABLE4, albert_base_variant, paper_convention_count

STRATEGIES = ("all", "attention", "ffn", "none")
print(
    f"{'E':>4s} {'strategy':10s} {'paper (M)':>9s} {'convention (M)':>14s} "
    f"{'exact':>12s}  avg score"
)
for E in (768, 128):
    for sharing in STRATEGIES:
        config = albert_base_variant(E, sharing)
        printed, score = TABLE4[(E, sharing)]
        convention = paper_convention_count(config)
        print(
            f"{E:4d} {sharing:10s} {printed:9d} {convention / 1e6:14.1f} "
            f"{count_parameters(config):12,d}  {score}"
        )

# %% [markdown]
# All eight printed numbers are the paper-convention counts rounded to millions. At H = 768 one attention block
# has $4(H^2 + H) + 2H \approx 2.4$M parameters and one FFN block $8H^2 + 7H \approx 4.7$M, so sharing attention
# saves 11 × 2.4 ≈ 26M, sharing the FFN 11 × 4.7 ≈ 52M, and both ≈ 78M. The paper's scores tell the other half:
# with E = 128, sharing attention costs almost nothing (Avg 81.7 vs 81.6 not-shared), sharing the FFN hurts
# (80.2), and sharing everything lands at 80.1 with 12M parameters instead of 89M. ALBERT takes the all-shared
# point and spends the saved parameters on a much wider layer (Chapter 9).
#
# The bar chart breaks each exact count into its parts. The black marks are the paper's printed numbers.

# %%
from albert_mini.model.counting import closed_form_breakdown

PARTS = {
    "embeddings + projection": ("embeddings", "projection"),
    "attention blocks": ("attention",),
    "FFN blocks": ("ffn",),
    "pooler": ("pooler",),
}
fig, axes = plt.subplots(2, 1, figsize=(6.8, 8), sharey=True, dpi=110)
for ax, E in zip(axes, (128, 768)):
    bottom = [0.0] * len(STRATEGIES)
    for label, keys in PARTS.items():
        heights = [
            sum(closed_form_breakdown(albert_base_variant(E, s))[k] for k in keys) / 1e6
            for s in STRATEGIES
        ]
        ax.bar(STRATEGIES, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.scatter(
        STRATEGIES,
        [TABLE4[(E, s)][0] for s in STRATEGIES],
        color="black",
        marker="_",
        s=400,
        linewidths=3,
        zorder=3,
        label="paper, Table 4",
    )
    ax.set(
        title=f"ALBERT-base shape, E = {E}",
        xlabel="sharing strategy",
        ylabel="parameters (millions)",
    )
    ax.grid(axis="y", alpha=0.3)
axes[0].legend(loc="upper left")
fig.suptitle("Parameters per sharing strategy (L = 12, H = 768, V = 30000)")
fig.tight_layout()
from albert_mini.paths import save_figure

save_figure(fig, "04_params_by_strategy.png")
plt.show()

# %% [markdown]
# At E = 768 the black marks sit about 0.6M under the all/attention/FFN bars: that is the E→H projection the
# paper's convention leaves out when E = H. Under "none" the mark drops by another 0.6M, the pooler the
# convention leaves out of unshared models.
#
# > **Differs from BERT.** BERT's encoder parameters grow linearly with depth. An all-shared ALBERT's do not
# > depend on L: a 24-layer ALBERT-large has as many layer weights as a 1-layer model of the same width.

# %% [markdown]
# ## Gradients: a shared weight collects the sum
#
# If a weight $W$ is used at L places in the graph, the chain rule adds up the contributions of every use:
#
# $$\frac{\partial \mathcal{L}}{\partial W} = \sum_{l=1}^{L} \frac{\partial \mathcal{L}}{\partial W^{(l)}},$$
#
# where $W^{(l)}$ stands for "W as used by application l". We can check this with autograd. Build a small
# all-shared model, then an **unshared twin** whose L layers are copies of the shared layer. The two compute the
# same function; the twin simply keeps a separate gradient for every copy. The shared model's gradient should be
# the sum of the twin's per-layer gradients.

# %%
def untied_twin(shared: AlbertModel) -> AlbertModel:
    """An unshared model (G = L), every layer a copy of the shared model's one layer."""
    config = shared.config
    if (
        config.sharing != "all"
        or config.num_hidden_groups != 1
        or config.inner_group_num != 1
    ):
        raise ValueError(
            "untied_twin expects one shared layer: sharing='all', G = 1, K = 1"
        )
    L = config.num_hidden_layers
    twin = AlbertModel(config.replace(sharing="none", num_hidden_groups=L))
    state = {}
    for name, tensor in shared.state_dict().items():
        if name.startswith("encoder.albert_layer_groups.0."):
            # the one layer's tensors, copied into every group of the twin
            for group in range(L):
                state[name.replace("groups.0.", f"groups.{group}.", 1)] = tensor.clone()
        else:
            state[name] = tensor.clone()
    twin.load_state_dict(state)
    return twin


torch.manual_seed(0)
shared = AlbertModel(small_config("all", layers=3))
twin = untied_twin(shared)
ids = torch.randint(
    5, shared.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(1)
)
probe = torch.randn(
    2, 16, shared.config.hidden_size, generator=torch.Generator().manual_seed(2)
)
# any scalar of the output works as a loss; a fixed random projection will do
for model in (shared, twin):
    (model(ids).last_hidden_state * probe).sum().backward()

# %% tags=["nbval-check-output"]
same_output = torch.allclose(
    shared(ids).last_hidden_state, twin(ids).last_hidden_state, atol=1e-6
)
print("shared model and untied twin compute the same output:", same_output)
shared_layer = shared.encoder.albert_layer_groups[0].albert_layers[0]
twin_layers = [group.albert_layers[0] for group in twin.encoder.albert_layer_groups]
shared_grad = shared_layer.attention.query.weight.grad
per_application = [layer.attention.query.weight.grad for layer in twin_layers]
print(
    "gradient norm of attention.query.weight, per application:",
    [f"{g.norm():.3g}" for g in per_application],
)
print(
    "gradient norm of the shared attention.query.weight:        "
    f"{shared_grad.norm():.3g}"
)
print(
    "shared gradient == sum over applications:",
    torch.allclose(shared_grad, sum(per_application), atol=1e-7),
)
every_tensor = all(
    torch.allclose(
        param.grad,
        sum(layer.get_parameter(name).grad for layer in twin_layers),
        atol=1e-7,
    )
    for name, param in shared_layer.named_parameters()
)
print("the same holds for every tensor of the shared layer:", every_tensor)

# %% [markdown]
# Two consequences are worth remembering:
#
# - **The optimizer sees one tensor.** Adam's moments and, in LAMB (the optimizer ALBERT pretrains with, chapter
#   7), the trust ratio $\lVert w \rVert / \lVert u \rVert$ that scales each tensor's step $u$ to the size of
#   its weight $w$ are computed once for the shared weight, from the summed gradient.
# - **Gradient scale grows with depth.** Summing L contributions makes the shared gradient up to L times larger
#   than one application's when they point the same way. Above, the first application contributes almost
#   nothing and the other two point nearly the same way: 0.248 and 0.247 add up to 0.498. Clipping and the
#   learning rate see that larger norm.

# %% [markdown]
# ## What sharing does *not* save: compute
#
# Each application still multiplies every token by the layer's matrices, so the floating-point work per token
# is that of an unshared model of the same L and H. The compute parameters, the weights a token is multiplied
# by on its way through, count a shared layer L times:

# %% tags=["nbval-check-output"]
def matmul_parameters_per_token(config: AlbertConfig) -> int:
    """Matrices a token meets: the E->H projection, then L*K layer applications."""
    H, I = config.hidden_size, config.intermediate_size
    projection = config.embedding_size * H if config.embedding_projection else 0
    return projection + config.num_hidden_layers * config.inner_group_num * (
        4 * H * H + 2 * H * I
    )


for preset in ("albert-mini", "bert-mini"):
    config = AlbertConfig.from_preset(preset)
    print(
        f"{preset:12s} stored parameters {count_parameters(config):>10,}   "
        f"weights applied per token {matmul_parameters_per_token(config):>10,}"
    )

# %% [markdown]
# `albert-mini` stores about a fifth of `bert-mini`'s parameters (mostly because of the factorized embedding and
# the single layer) but multiplies each token by slightly *more* weights (its E→H projection). Timing a forward
# pass agrees. The ratio below is measured on your machine at run time, so it varies from run to run; on a quiet
# machine it stays close to 1.

# %%
torch.manual_seed(0)
albert_model = AlbertModel(AlbertConfig.from_preset("albert-mini")).eval()
bert_model = AlbertModel(AlbertConfig.from_preset("bert-mini")).eval()
batch = torch.randint(
    5, 8000, (pick(fast=4, full=16), 128), generator=torch.Generator().manual_seed(0)
)
seconds = {"albert-mini": [], "bert-mini": []}
with torch.no_grad():
    for model in (albert_model, bert_model):
        model(batch)  # warm-up
    # alternate the two so a noisy neighbour hits both alike
    for _ in range(pick(fast=3, full=9)):
        for name, model in (("albert-mini", albert_model), ("bert-mini", bert_model)):
            start = time.perf_counter()
            model(batch)
            seconds[name].append(time.perf_counter() - start)
median = {name: statistics.median(times) for name, times in seconds.items()}
for name, value in median.items():
    print(
        f"{name:12s} median forward time {value * 1000:.0f} ms for {batch.numel()} "
        "tokens"
    )
print(
    "time ratio albert-mini / bert-mini: "
    f"{median['albert-mini'] / median['bert-mini']:.2f}"
)
from albert_mini.devices import cpu_model

print(f"timed on {cpu_model()} with {torch.get_num_threads()} threads")

# %% [markdown]
# This is the most common surprise with ALBERT: ALBERT-base (12M parameters) does as much arithmetic per token as
# BERT-base, and ALBERT-xxlarge (H = 4096) far more than BERT-large. Sharing saves memory for weights, gradients
# and optimizer states, and bandwidth between machines; not arithmetic, and not activations. Chapter 9 measures
# this for the paper's models.

# %% [markdown]
# ## Figure 1: smoother transitions between layers
#
# The paper's Figure 1 plots, for every layer of BERT-large and ALBERT-large (24 layers), the L2 distance and the
# angle between the layer's input and output. ALBERT's curves are smoother (small, steadily shrinking changes),
# BERT's jump around; neither goes to 0, so ALBERT's embeddings do not converge to a fixed point.
#
# For every non-pad token, `albert_mini.study.smoothness.layer_smoothness` measures the L2 distance and the angle
# between a layer's input and output, starting after the E→H projection, and averages over tokens; the paper
# does not say how it averages, and the appendix lists these choices with the code:
# [how the smoothness is measured](10_appendix.ipynb#part-d-cross-layer-sharing-in-detail).

# %% [markdown]
# ### A control: the same measurement at initialisation
#
# Figure 1 is about **trained** models, and training takes longer than a cell, so first a control: what does the
# architecture alone do before any learning? Three untrained 24-layer models of `albert-mini` width (H = 256),
# seed 0, on random token ids (some padded): **ALBERT, shared** (E = 128, one layer applied 24 times), its
# **unshared twin** (24 independent layers, only sharing differs) and a **BERT-style** model (E = H = 256, no
# projection, nothing shared).

# %%
L_DEEP = 24
deep_configs = {
    "ALBERT (shared)": AlbertConfig.from_preset(
        "albert-mini", num_hidden_layers=L_DEEP
    ),
    "unshared twin": AlbertConfig.from_preset(
        "albert-mini",
        num_hidden_layers=L_DEEP,
        sharing="none",
        num_hidden_groups=L_DEEP,
    ),
    "BERT-style": AlbertConfig.from_preset(
        "bert-mini", num_hidden_layers=L_DEEP, num_hidden_groups=L_DEEP
    ),
}
generator = torch.Generator().manual_seed(0)
# ids 0-4 are <pad>, <unk> and specials
random_ids = torch.randint(5, 8000, (8, 128), generator=generator)
attention_mask = torch.ones_like(random_ids)
attention_mask[4:, 96:] = 0  # the last four sequences end in 32 pad positions
random_ids[attention_mask == 0] = 0
smoothness_batches = [{"input_ids": random_ids, "attention_mask": attention_mask}]

# %% tags=["nbval-check-output"]
from albert_mini.study.smoothness import layer_smoothness, plot_smoothness

at_init = {}
for label, config in deep_configs.items():
    torch.manual_seed(0)
    at_init[label] = layer_smoothness(AlbertModel(config), smoothness_batches)
print(f"averaged over {at_init['ALBERT (shared)'].tokens} non-pad tokens")
print(
    f"{'model':16s} {'L2 at layer 1, 2, 12, 24':>28s}   "
    f"{'angle (deg) at layer 1, 2, 12, 24':>34s}"
)
for label, result in at_init.items():
    l2 = ", ".join(f"{result.l2[l - 1]:.2f}" for l in (1, 2, 12, 24))
    degrees = ", ".join(f"{result.degrees[l - 1]:.2f}" for l in (1, 2, 12, 24))
    print(f"{label:16s} {l2:>28s}   {degrees:>34s}")

# %%
fig = plot_smoothness(
    at_init,
    title="Layer input vs output at initialisation (24 layers, H = 256, random ids)",
)
# layer 1 of the projected models is an order of magnitude above the rest
fig.axes[0].set_yscale("log")
save_figure(fig, "04_smoothness_init.png")
plt.show()

# %% [markdown]
# What the control shows:
#
# - **Layer 1 of the two projected models** moves its input a long way in L2 (about 12) but only by about 8°:
#   the projection's output is small, and the layer's LayerNorm rescales it to norm about $\sqrt{H} = 16$, a
#   change of length, not of direction. The BERT-style model has no such jump.
# - **After layer 1, the unshared models are flat**: each fresh random layer turns the representation by about
#   7°, at every depth.
# - **The shared model's changes shrink with depth** before any training: from about 7° at layer 2 to under 3° at
#   layer 24. A plausible reading: one map applied again and again settles into directions it changes less.
#
# So part of Figure 1's smoothness comes with weight sharing itself. Whether it survives training only trained
# models can say.

# %% [markdown]
# ### The trained comparison
#
# `make experiment-smoothness` pretrains `albert-mini` and its twin with nothing shared (same E = 128 and
# H = 256: sharing is the only difference) on 2.1M tokens of Austen, three seeds each, with `bert-mini` (E = H,
# not shared) as a third line, and measures each on held-out text after training and at initialisation, and
# the classroom model too (`data/results/smoothness.json`). Bands are the mean ± std over seeds. Read the twin:
# `bert-mini` changes E as well as sharing.

# %%
import numpy as np

from albert_mini.study import results

curves = results.smoothness_curves()
fig, axes = plt.subplots(2, 1, figsize=(6.8, 8), dpi=110)
for (label, states), colour in zip(
    curves.items(), ("tab:blue", "tab:orange", "tab:grey")
):
    for ax, metric in zip(axes, ("l2", "degrees")):
        for state, style in (("trained", "o-"), ("init", ":")):
            entry = states[state][metric]
            layers = np.arange(1, len(entry["mean"]) + 1)
            ax.plot(
                layers, entry["mean"], style, color=colour, label=f"{label}, {state}"
            )
            if entry["std"] is not None:
                low = np.array(entry["mean"]) - np.array(entry["std"])
                ax.fill_between(
                    layers,
                    low,
                    low + 2 * np.array(entry["std"]),
                    color=colour,
                    alpha=0.2,
                    lw=0,
                )
axes[0].set(
    xlabel="layer", ylabel="L2 distance (mean over tokens)", title="L2 distance"
)
axes[1].set(
    xlabel="layer",
    ylabel="angle (degrees, mean over tokens)",
    title="Cosine similarity as an angle",
)
for ax in axes:
    ax.grid(alpha=0.3)
axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18))
classroom = results.load("smoothness")["classroom_model"]
for ax, metric in zip(axes, ("l2", "degrees")):
    ax.plot(
        np.arange(1, 7), classroom[metric], "s--", color="black",
        label="classroom model (28.7M tokens)",
    )
axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18))
fig.suptitle("Layer input vs output after pretraining (data/results/smoothness.json)")
fig.tight_layout()
save_figure(fig, "04_smoothness_trained.png")
plt.show()

# %% tags=["nbval-check-output"]
print(results.setting(results.load("smoothness")))
for label, reading in results.smoothness_reading(curves).items():
    shape = (
        "falls at every layer"
        if reading["falls_every_layer"]
        else f"rises somewhere (by up to {reading['largest_rise']:.1f} degrees)"
    )
    print(
        f"{label}: {reading['first']:.1f} degrees at layer 1, {reading['last']:.1f} at "
        f"the last layer; {shape}; "
        f"wobble: {reading['degrees_wobble']:.1f} degrees, L2 "
        f"{reading['l2_wobble']:.2f}; falls at every layer in "
        f"{reading['seeds_falling_every_layer']} of {reading['seeds']} seeds"
    )
angles = ", ".join(f"{a:.1f}" for a in classroom["degrees"])
l2 = classroom["l2"]
print(
    f"classroom model: {angles} degrees; L2 falls at every layer: "
    f"{all(b < a for a, b in zip(l2, l2[1:]))}"
)

# %% [markdown]
# **Reading it.** The paper's Figure 1 shows 24-layer models; ours have 6, so only the shape compares: in the
# paper the shared model's changes are smaller and smoother, the unshared model's jump around, and neither
# reaches 0. "Wobble" is the total change from layer to layer minus the net change from first to last layer (a
# curve that only falls has none). Here the shared model's angle falls at every layer in every seed, while its
# unshared twin falls and then rises again in its last layers in every seed, as does `bert-mini`: the paper's
# shape. The dotted lines show part of it at initialisation. The claim holds as "smoother", not "falls at every
# layer": the classroom model, trained on 14 times the tokens, rises from layer 1 to 2 before it falls.
#
# ### Table 4 at mini scale
#
# `make experiment-sharing` pretrains the four strategies at E = 128 on 2.1M tokens of Austen, three seeds each,
# and scores each on the same masked held-out tokens; the main measure is the MLM loss (lower is better). Each
# row stands next to the paper's row with the same strategy at E = 128; the paper's column is the average of five
# fine-tuned benchmarks, so compare orderings, not values.
#
# How to read the intervals, p-values and verdicts below:
# [reading the statistics](10_appendix.ipynb#part-c-reading-the-statistics), in the appendix.

# %% tags=["nbval-check-output"]
from IPython.display import Markdown, display

from albert_mini.study.glance import seed_table, verdict

table4_rows = results.variant_table("sharing")
print(results.setting(results.load("sharing")))
display(Markdown(results.variant_markdown(table4_rows)))
loss = results.variant_differences(table4_rows) + [
    results.contrast(table4_rows, "E=128 attention", "E=128 ffn")
]
display(Markdown(seed_table(loss)))
print(verdict(loss))
print("MLM accuracy:", verdict(results.variant_differences(table4_rows, "mlm")))

# %% [markdown]
# **Reading it.** Each row of the second table is one strategy minus another, trained from the same seeds on the
# same batches, with a t interval over the three seeds. Every strategy that shares less has a lower loss than
# all-shared in every seed: **sharing costs quality**, as in the paper, and the cost is resolved. The paper's
# finer point, that sharing the FFN costs more than sharing attention, is only the direction here: attention-only
# sharing has the lower loss in each seed, but its interval, -0.014 [-0.032, +0.003], includes zero, so at this
# scale we **cannot say** which costs more. At a short budget more stored parameters may also just learn faster
# per step: read these as early-training differences.

# %% [markdown]
# ## Exercises
#
# ### Exercise 1: the layer schedule of a grouped model
#
# Write `layer_schedule(L, G, K)`. A model with L layer applications, G groups (G divides L) and K inner layers
# per group stores G·K distinct layers, numbered `g * K + k` for inner layer k of group g (the order of
# `albert_layer_groups`). Return the list of the L·K distinct-layer numbers the forward pass runs, in order.
# For L = 4, G = 2, K = 2 it is `[0, 1, 0, 1, 2, 3, 2, 3]`. Use exact integer arithmetic: the checker includes
# the shapes where the original floating-point formula picks the wrong group, and compares with built models.

# %% nbgrader={"grade": false, "grade_id": "layer_schedule", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_schedule(L: int, G: int, K: int) -> list[int]:
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_layer_schedule", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_layer_schedule

check_layer_schedule(layer_schedule);

# %% [markdown]
# The group of application $i$ is $\lfloor iG/L \rfloor$. The TensorFlow code computes it as `int(i / L * G)`,
# in floating point; `albert_mini` (`AlbertConfig.layer_to_group`) as `i * G // L`, which is exact.
#
# ### Exercise 2: the sharing plan
#
# Write `sharing_plan(strategy, L)` for the four strategies of Table 4 with one group (G = K = 1 for the sharing
# strategies, G = L for `"none"`). It returns a list of L pairs `(attention_block, ffn_block)`: the indices of
# the distinct attention and FFN blocks that layer application `i` uses, numbered 0, 1, 2, ... in order of first
# use (the labels `A0`/`F0` of the table near the start of this chapter). For example,
# `sharing_plan("ffn", 3)` is `[(0, 0), (1, 0), (2, 0)]`. The checker compares with models built in every
# strategy.

# %% nbgrader={"grade": false, "grade_id": "sharing_plan", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sharing_plan(strategy: str, L: int) -> list[tuple[int, int]]:
    ### BEGIN SOLUTION
    raise NotImplementedError("write your solution here")
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "check_sharing_plan", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
from albert_mini.book.exercises import check_sharing_plan

check_sharing_plan(sharing_plan);

# %% [markdown]
# ## ALBERT in one cell
#
# All the pieces are now on the table: the factorized embeddings of chapter 3 (a $V \times E$ table, then one
# $E \times H$ projection), the post-LN layer of chapter 1, and this chapter's schedule that runs G·K stored
# layers L·K times. The cell below puts them together into a complete ALBERT encoder with the pooler, in plain
# PyTorch and nothing else; `load_from` copies the weights of an `albert_mini.AlbertModel` into it. The model is
# built with groups and inner groups (L = 4, G = 2, K = 2), so that every line of the schedule matters.

# %%
import math

import torch.nn.functional as F
from torch import nn


class OneCellAlbert(nn.Module):
    """ALBERT's encoder: factorized embeddings, one post-LN layer applied L times."""

    def __init__(
        self, V, E, H, L, heads, ffn, G=1, K=1, max_positions=512, types=2, eps=1e-12
    ):
        super().__init__()
        self.L, self.G, self.heads, self.eps = L, G, heads, eps
        # Chapter 3: a V x E word table, E-wide positions and token types, one
        # LayerNorm, then E -> H.
        self.word = nn.Embedding(V, E)
        self.position = nn.Embedding(max_positions, E)
        self.token_type = nn.Embedding(types, E)
        self.embedding_norm = nn.LayerNorm(E, eps=eps)
        self.project = nn.Linear(E, H)
        # Chapter 4: only G * K layers are stored; the L applications reuse them.
        self.layers = nn.ModuleList(self.layer(H, ffn) for _ in range(G * K))
        self.K = K
        self.pooler = nn.Linear(H, H)

    def layer(self, H, ffn):
        return nn.ModuleDict(
            dict(
                q=nn.Linear(H, H),
                k=nn.Linear(H, H),
                v=nn.Linear(H, H),
                out=nn.Linear(H, H),
                norm_1=nn.LayerNorm(H, eps=self.eps),
                up=nn.Linear(H, ffn),
                down=nn.Linear(ffn, H),
                norm_2=nn.LayerNorm(H, eps=self.eps),
            )
        )

    def attention(self, p, h, bias):
        B, T, H = h.shape
        def split(x):  # (B, T, H) -> (B, nh, T, dh)
            return x.view(B, T, self.heads, H // self.heads).transpose(1, 2)

        q, k, v = split(p["q"](h)), split(p["k"](h)), split(p["v"](h))
        # (B, nh, T, T)
        scores = q @ k.transpose(-1, -2) / math.sqrt(H // self.heads) + bias
        context = scores.softmax(-1) @ v  # (B, nh, T, dh)
        # heads side by side again: (B, T, H)
        return p["out"](context.transpose(1, 2).reshape(B, T, H))

    def post_ln_layer(self, p, h, bias):
        a = p["norm_1"](h + self.attention(p, h, bias))  # post-LN: add, then normalize
        return p["norm_2"](a + p["down"](F.gelu(p["up"](a), approximate="tanh")))

    def forward(self, ids, attention_mask=None, token_types=None):
        B, T = ids.shape
        attention_mask = (
            torch.ones_like(ids) if attention_mask is None else attention_mask
        )
        token_types = torch.zeros_like(ids) if token_types is None else token_types
        # (B, T, E)
        x = (
            self.word(ids)
            + self.position(torch.arange(T))
            + self.token_type(token_types)
        )
        h = self.project(self.embedding_norm(x))  # (B, T, H)
        # padding gets no weight
        bias = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(
            h.dtype
        ).min
        for i in range(self.L):
            # exact integers (chapter 4's floating-point quirk)
            group = i * self.G // self.L
            for k in range(self.K):
                h = self.post_ln_layer(self.layers[group * self.K + k], h, bias)
        return h, torch.tanh(self.pooler(h[:, 0]))


def load_from(model: AlbertModel, ours: OneCellAlbert) -> OneCellAlbert:
    """Copy an AlbertModel's weights into the one-cell model (other names)."""
    names = {
        "word": "embeddings.word_embeddings",
        "position": "embeddings.position_embeddings",
        "token_type": "embeddings.token_type_embeddings",
        "embedding_norm": "embeddings.LayerNorm",
        "project": "encoder.embedding_hidden_mapping_in",
        "pooler": "pooler",
    }
    inner = {
        "q": "attention.query",
        "k": "attention.key",
        "v": "attention.value",
        "out": "attention.dense",
        "norm_1": "attention.LayerNorm",
        "up": "ffn",
        "down": "ffn_output",
        "norm_2": "full_layer_layer_norm",
    }
    for g in range(ours.G):
        for k in range(ours.K):
            for short, long in inner.items():
                names[f"layers.{g * ours.K + k}.{short}"] = (
                    f"encoder.albert_layer_groups.{g}.albert_layers.{k}.{long}"
                )
    theirs = model.state_dict()
    state = {
        f"{short}.{kind}": theirs[f"{long}.{kind}"]
        for short, long in names.items()
        for kind in ("weight", "bias")
        if f"{long}.{kind}" in theirs
    }
    ours.load_state_dict(state, strict=True)
    return ours.eval()


# %% [markdown]
# Now the check: the same weights in three models, ours above, `albert_mini.AlbertModel` and Hugging Face's
# `AlbertModel` (built from its config by `albert_mini.model.hf.to_hf`, nothing downloaded), on a batch with
# padding and two token types.

# %% tags=["nbval-check-output"]
from albert_mini.model.hf import to_hf

config = AlbertConfig.from_preset("albert-mini").replace(
    num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2
)
torch.manual_seed(0)
reference = AlbertModel(config).eval()
one_cell = load_from(
    reference,
    OneCellAlbert(
        config.vocab_size,
        config.embedding_size,
        config.hidden_size,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.intermediate_size,
        config.num_hidden_groups,
        config.inner_group_num,
    ),
)
hf_model = to_hf(reference).eval()
ids = torch.randint(
    5, config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(1)
)
mask = torch.ones_like(ids)
mask[1, 8:] = 0  # the second sequence is 8 tokens and 4 padding positions
types = torch.zeros_like(ids)
types[:, 6:] = 1  # segment B from position 6
with torch.no_grad():
    h, pooled = one_cell(ids, mask, types)
    ours = reference(ids, attention_mask=mask, token_type_ids=types)
    theirs = hf_model(input_ids=ids, attention_mask=mask, token_type_ids=types)
print(
    f"parameters: one cell {count_parameters(one_cell):,}, albert_mini "
    f"{count_parameters(reference):,}"
)
for name, other in (
    ("albert_mini.AlbertModel", ours),
    ("transformers.AlbertModel", theirs),
):
    torch.testing.assert_close(h, other.last_hidden_state, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pooled, other.pooler_output, rtol=1e-5, atol=1e-5)
    print(f"one cell == {name}:")
    print(
        f"  hidden states {tuple(h.shape)} and pooled {tuple(pooled.shape)} within 1e-5"
    )

# %% [markdown]
# The cell leaves out dropout (0 in ALBERT's pretraining) and the heads of chapters 7 and 8. What makes ALBERT
# differ from BERT sits in three places: `self.word` is $V \times E$ and `self.project` is $E \times H$ (chapter
# 3), `self.layers` holds G·K layers while the loop runs L·K steps (this chapter), and the pairs it reads are
# built for SOP (chapter 5).
#
# > **Differs from BERT.** In BERT's version of this cell, `self.word` would be $V \times H$, `self.project` would
# > not exist, and `self.layers` would hold L layers, one per step.

# %% [markdown]
# ## Summary
#
# - ALBERT applies one layer L times: depth is kept, and the encoder's distinct parameters shrink by a factor of
#   L. Groups map application i to group $\lfloor iG/L \rfloor$, computed with integers.
# - Table 4's four strategies; our exact counts match the printed numbers under one stated convention.
# - In the paper sharing attention is almost free and sharing the FFN costs; at mini scale any sharing costs MLM
#   loss, and which partial strategy costs more is not resolved over three seeds.
# - A shared weight's gradient is the sum over its L uses. Sharing saves no compute and no activation memory.
# - The shared model's layer-to-layer changes shrink with depth already at initialisation, and after training
#   they fall at every layer where the unshared twin's rise again (6 layers, three seeds).
# - The whole encoder fits in one cell and equals `albert_mini.AlbertModel` and Hugging Face's on the same weights.
#
# ## Further reading / pointers
#
# - The paper, Section 3.1 ("Cross-layer parameter sharing"), Figure 1, and Section 4.5 with Table 4.
# - `albert_mini/model/albert.py`: `build_layer_groups` and `AlbertTransformer`; `albert_mini/study/smoothness.py` for
#   the smoothness measurement; `albert_mini/study/paper.py` for the tables and the counting convention.
# - Dehghani et al., "Universal Transformers" (2019), and Bai et al., "Deep Equilibrium Models" (2019): two other
#   takes on applying one layer repeatedly, which the paper contrasts with ALBERT's oscillating (non-converging)
#   embeddings.
# - Chapter 9 scales these ideas up to the paper's largest models; the next chapter continues with the next idea.
