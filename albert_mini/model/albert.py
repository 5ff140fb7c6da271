"""ALBERT in one file: factorized embeddings, a post-LN encoder whose layers share weights, pooler and heads.

Module and parameter names follow Hugging Face's port (`albert.encoder.albert_layer_groups.0...`), so a
state dict moves between the two without renaming (see `albert_mini.model.hf`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..specials import IGNORE_INDEX
from .config import AlbertConfig

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["AlbertLayer", "AlbertTransformer"]


def activation_fn(name: str):
    """The FFN non-linearity; ALBERT's "gelu" is the tanh approximation, HF calls it gelu_new."""
    if name == "gelu_new":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu":
        return F.gelu
    if name == "relu":
        return F.relu
    raise ValueError(f"unknown activation {name!r}")


def attention_math(q, k, v, mask_bias=None, dropout_p: float = 0.0, training: bool = False):
    """Scaled dot-product attention spelled out: softmax(q k^T / sqrt(d) + mask) v, returning the weights too."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, nh, T, T)
    if mask_bias is not None:
        scores = scores + mask_bias  # (B, 1, 1, T) broadcasts over heads and queries, (B, 1, T, T) over heads
    weights = scores.softmax(dim=-1)
    context = F.dropout(weights, p=dropout_p, training=training) @ v  # (B, nh, T, d)
    return context, weights


def check_mask_shape(attention_mask: torch.Tensor | None, batch: int, tokens: int,
                     device: torch.device | None = None) -> None:
    """ValueError naming both shapes unless the mask is (B, T), (B, 1, 1, T) or (B, 1, T, T) for B sequences of T
    tokens. Broadcasting would take others silently: a (B, 1) mask would spread its one value over every token,
    so a row of 0 would attend to nothing. And unless it is on `device` (the input ids'), when given: a mask on
    the meta device was read as no mask at all."""
    if attention_mask is None:
        return
    if device is not None and attention_mask.device != device:
        raise ValueError(f"attention_mask is on {attention_mask.device} and input_ids on {device}; move the mask "
                         "with attention_mask.to(input_ids.device)")
    B, T = batch, tokens
    accepted = ((B, T), (B, 1, 1, T), (B, 1, T, T))
    if tuple(attention_mask.shape) not in accepted:
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)}; for input_ids of shape {(B, T)} it "
                         f"must be {accepted[0]} (1 to attend, 0 for padding), or the extended {accepted[1]} or "
                         f"{accepted[2]} (one row of keys per query)")


def extended_attention_mask(attention_mask: torch.Tensor | None, dtype: torch.dtype):
    """Turn an attention mask into an additive bias: 0 to keep, the dtype's minimum to drop. A (B, T) mask becomes
    (B, 1, 1, T); an extended (B, 1, 1, T) or (B, 1, T, T) mask keeps its shape and is read by the same rule.

    The rule (AlbertModel.forward states it too). An integer or bool mask is a keep-mask: nonzero/True = attend,
    0/False = padding, as tokenizers return it. A floating mask is read by its values: when some value is negative
    or none is positive it is an additive mask (Hugging Face's extended form: 0 = attend, a large negative number =
    padding) and attends where it is 0; otherwise it is a keep-mask as above, so a float 0/1 mask means what the
    integer one does. (An additive mask read as a keep-mask would attend to exactly the padding.) The choice is
    made on the mask's device, without reading it on the host. A mask of another rank, or a 4-d one whose second
    dimension is not 1, is a ValueError (AlbertModel.forward also checks B and T against its input, see
    `check_mask_shape`).

    A mask that keeps everything gives no bias, so SDPA takes its unmasked fast path, but only where asking is
    free: on the CPU in eager mode. On a GPU, reading the mask would stall every forward pass until the GPU
    catches up, so there it always becomes a bias (the outputs are the same).
    """
    if attention_mask is None:
        return None
    if not (attention_mask.dim() == 2 or (attention_mask.dim() == 4 and attention_mask.size(1) == 1)):
        raise ValueError(f"attention_mask must be (batch, tokens), 1 to attend and 0 for padding, or the extended "
                         f"(batch, 1, 1, tokens) or (batch, 1, tokens, tokens); got {tuple(attention_mask.shape)}")
    if attention_mask.device.type == "cpu" and not torch.compiler.is_compiling() and bool(attention_mask.all()):
        return None
    if attention_mask.dim() == 2:
        attention_mask = attention_mask[:, None, None, :]  # (B, 1, 1, T)
    if attention_mask.is_floating_point():
        additive = (attention_mask < 0).any() | ~(attention_mask > 0).any()  # a 0-d tensor on the mask's device
        keep = torch.where(additive, attention_mask == 0, attention_mask != 0)
    else:
        keep = attention_mask.to(torch.bool)
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


class AlbertEmbeddings(nn.Module):
    """Word + position + token-type embeddings at width E, then LayerNorm and dropout."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        E = config.embedding_size
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, E)
        self.LayerNorm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        B, T = input_ids.shape
        if T > self.position_embeddings.num_embeddings:
            raise ValueError(
                f"sequence length {T} exceeds max_position_embeddings {self.position_embeddings.num_embeddings}; "
                "truncate the input or build the config with a larger max_position_embeddings"
            )
        if position_ids is None:
            position_ids = torch.arange(T, device=input_ids.device)[None, :]  # (1, T)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (B, T, E)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class AlbertAttention(nn.Module):
    """Multi-head self-attention with its residual connection and post-LayerNorm."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        H = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.dense = nn.Linear(H, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.attention_dropout_p = config.attention_probs_dropout_prob
        self.output_dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, h, mask_bias=None, output_attentions: bool = False):
        B, T, H = h.shape
        # (B, T, nh, d) viewed as (B, nh, T, d): the layout CPU attention kernels read and write without copies
        q, k, v = (proj(h).view(B, T, self.num_heads, H // self.num_heads).transpose(1, 2)
                   for proj in (self.query, self.key, self.value))
        p = self.attention_dropout_p if self.training else 0.0
        if output_attentions:
            context, weights = attention_math(q, k, v, mask_bias, p, self.training)
        else:
            context, weights = F.scaled_dot_product_attention(q, k, v, attn_mask=mask_bias, dropout_p=p), None
        context = context.transpose(1, 2).reshape(B, T, H)  # (B, nh, T, d) -> (B, T, nh * d = H)
        out = self.LayerNorm(h + self.output_dropout(self.dense(context)))
        return out, weights


class AlbertLayer(nn.Module):
    """One post-LN transformer layer: attention block, then FFN block, each with residual and LayerNorm."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        H, I = config.hidden_size, config.intermediate_size
        self.attention = AlbertAttention(config)
        self.ffn = nn.Linear(H, I)
        self.ffn_output = nn.Linear(I, H)
        self.full_layer_layer_norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.activation = activation_fn(config.hidden_act)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, h, mask_bias=None, output_attentions: bool = False):
        a, weights = self.attention(h, mask_bias, output_attentions)
        ffn = self.dropout(self.ffn_output(self.activation(self.ffn(a))))  # (B, T, H) -> (B, T, I) -> (B, T, H)
        return self.full_layer_layer_norm(a + ffn), weights


class AlbertLayerGroup(nn.Module):
    """K layers that run one after another every time the group is applied."""

    def __init__(self, layers: list[AlbertLayer]):
        super().__init__()
        self.albert_layers = nn.ModuleList(layers)

    def forward(self, h, mask_bias=None, output_attentions: bool = False):
        attentions = []
        for layer in self.albert_layers:
            h, weights = layer(h, mask_bias, output_attentions)
            attentions.append(weights)
        return h, attentions


def build_layer_groups(config: AlbertConfig) -> nn.ModuleList:
    """The distinct modules behind the L layer applications, as the config's sharing strategy says.

    Whole-layer strategies ("all", "none"): G groups of K layers (ALBERT: G = 1; BERT: G = L, K = 1).
    Tied blocks ("attention", "ffn"): L layers that hold the very same module objects for the tied block.
    """
    strategy = config.sharing_strategy
    if strategy.whole_layers:
        return nn.ModuleList(
            AlbertLayerGroup([AlbertLayer(config) for _ in range(config.inner_group_num)])
            for _ in range(config.num_hidden_groups)
        )
    first = AlbertLayer(config)
    layers = [first]
    for _ in range(config.num_hidden_layers - 1):
        layer = AlbertLayer(config)  # built whole, then tied: the random draws stay in the same order
        for name in strategy.tied_modules:
            setattr(layer, name, getattr(first, name))
        layers.append(layer)
    return nn.ModuleList(AlbertLayerGroup([layer]) for layer in layers)


class AlbertTransformer(nn.Module):
    """Project E -> H, then apply L layers; layer i runs group config.layer_to_group(i)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        if config.embedding_projection:
            self.embedding_hidden_mapping_in = nn.Linear(config.embedding_size, config.hidden_size)
        else:
            self.embedding_hidden_mapping_in = nn.Identity()
        self.albert_layer_groups = build_layer_groups(config)
        self.plan = [config.layer_to_group(i) for i in range(config.num_hidden_layers)]

    def layer_plan(self) -> list[int]:
        """Which layer group each of the L layer applications runs."""
        return list(self.plan)

    def forward(self, embeddings, mask_bias=None, output_hidden_states=False, output_attentions=False):
        h = self.embedding_hidden_mapping_in(embeddings)  # (B, T, E) -> (B, T, H)
        hidden_states, attentions = [h], []
        for group_index in self.plan:
            h, weights = self.albert_layer_groups[group_index](h, mask_bias, output_attentions)
            if output_hidden_states:
                hidden_states.append(h)
            attentions.extend(weights)
        return (
            h,
            tuple(hidden_states) if output_hidden_states else None,
            tuple(attentions) if output_attentions else None,
        )


@dataclass
class AlbertOutput:
    """What the encoder returns; hidden_states[l] is the input of layer l+1 and the output of layer l."""

    last_hidden_state: torch.Tensor  # (B, T, H)
    pooler_output: torch.Tensor | None  # (B, H)
    hidden_states: tuple[torch.Tensor, ...] | None = None  # L + 1 tensors (B, T, H), h_0 after E -> H
    attentions: tuple[torch.Tensor, ...] | None = None  # L * K tensors (B, nh, T, T)


class AlbertPreTrainedModel(nn.Module):
    """Shared initialisation and config handling for every ALBERT model class."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        config.validate()
        self.config = config

    @torch.no_grad()
    def init_weights(self) -> None:
        """Normal(0, initializer_range) for matrices and embeddings, zero biases, LayerNorm (1, 0), pad row 0.

        Each tensor is drawn once: a model built inside this one (the encoder of a head) initialised its own
        tensors when it was constructed, so they are left as they are, the tied MLM decoder weight included.
        """
        std = self.config.initializer_range
        done = {id(p) for child in self.children() if isinstance(child, AlbertPreTrainedModel)
                for p in child.parameters()}
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)) and id(module.weight) not in done:
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                    module.weight[module.padding_idx].zero_()
            if isinstance(module, nn.Linear) and module.bias is not None and id(module.bias) not in done:
                nn.init.zeros_(module.bias)  # the MLM output bias too (the reference starts it at zero)
            if isinstance(module, nn.LayerNorm) and id(module.weight) not in done:
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)


class AlbertModel(AlbertPreTrainedModel):
    """Embeddings, shared-weight encoder and the tanh pooler over the [CLS] position."""

    def __init__(self, config: AlbertConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = AlbertEmbeddings(config)
        self.encoder = AlbertTransformer(config)
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size) if add_pooling_layer else None
        self.init_weights()

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
        output_hidden_states: bool = False, output_attentions: bool = False,
    ) -> AlbertOutput:
        """The encoder's outputs for `input_ids` (B, T).

        `attention_mask` (B, T): an integer or bool keep-mask, 1/True for a token to attend to and 0/False for
        padding; None attends to every token. The extended (B, 1, 1, T), or (B, 1, T, T) with one row of keys per
        query, are read the same way; any other shape is a ValueError naming it. A floating mask is a keep-mask
        too (a float 0/1 mask means what the integer one does) unless some value is negative or none is positive:
        then it is an additive mask, Hugging Face's 0 / large-negative form, and attends where it is 0 (converted,
        never read inverted). See `extended_attention_mask`."""
        check_mask_shape(attention_mask, *input_ids.shape, device=input_ids.device)
        x = self.embeddings(input_ids, token_type_ids, position_ids)  # (B, T, E)
        mask_bias = extended_attention_mask(attention_mask, x.dtype)
        h, hidden_states, attentions = self.encoder(x, mask_bias, output_hidden_states, output_attentions)
        pooled = torch.tanh(self.pooler(h[:, 0])) if self.pooler is not None else None  # (B, H)
        return AlbertOutput(h, pooled, hidden_states, attentions)


class AlbertMLMHead(nn.Module):
    """H -> E transform, activation, LayerNorm, then E -> V through the (tied) word embeddings."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.embedding_size)
        self.activation = activation_fn(config.hidden_act)
        self.LayerNorm = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.embedding_size, config.vocab_size)
        self.bias = self.decoder.bias  # HF's name for the output bias; one tensor under both names

    def forward(self, h):
        return self.decoder(self.LayerNorm(self.activation(self.dense(h))))  # (..., V)


class AlbertSentenceHead(nn.Module):
    """The 2-way sentence task (SOP or NSP) on the pooled output; module name kept from HF."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, pooled):
        return self.classifier(pooled)  # (B, 2)


@dataclass
class PreTrainingOutput:
    """Losses and logits of the pretraining model.

    The losses are means, as in HF (loss = mlm_loss + sentence_loss). The sums and counts behind them are there
    too, for a trainer that averages over a batch split across micro-batches and processes (see
    albert_mini.training.objectives).

    `mlm_logits` has one shape, (B, P, V): the P positions of each sequence that the MLM head scored. Without
    `labels` it scores every position (P = T, as HF's `prediction_logits`). With `labels` it scores the masked ones
    in order, then padding whose `mlm_labels` are IGNORE_INDEX, up to P = `max_predictions` (a shape known before
    the data: see `masked_positions`) or, without it, the batch's largest count. So
    `mlm_logits[mlm_labels != IGNORE_INDEX]` gives the N masked positions in row-major order of the batch, as the
    original gathers them.

    Differs from HF: `AlbertForPreTrainingOutput` calls these `prediction_logits` and `sop_logits`. We say
    `mlm_logits` because the HF name hides which task the logits are for, and `sentence_logits` because the same
    two-way head serves SOP, NSP (BERT's task, for the Table 5 comparison) or nothing (MLM only). The tensors are
    the same: tests/model/test_hf_parity.py compares them name against name.
    """

    loss: torch.Tensor | None
    mlm_loss: torch.Tensor | None
    sentence_loss: torch.Tensor | None
    mlm_logits: torch.Tensor  # (B, P, V): P = T without labels, else max_predictions or the largest masked count
    sentence_logits: torch.Tensor  # (B, 2)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    mlm_loss_sum: torch.Tensor | None = None  # cross-entropy summed over the N masked positions
    mlm_count: int | torch.Tensor = 0  # N as a 0-d tensor, never read on the host (0 without labels)
    sentence_loss_sum: torch.Tensor | None = None  # cross-entropy summed over the labelled sequences
    sentence_count: int = 0
    mlm_labels: torch.Tensor | None = None  # (B, P): the targets of mlm_logits, IGNORE_INDEX at padding


class AlbertForPreTraining(AlbertPreTrainedModel):
    """ALBERT with the MLM head and the sentence-pair head; loss = MLM + sentence loss."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config)
        self.albert = AlbertModel(config)  # initialises itself
        self.predictions = AlbertMLMHead(config)
        self.sop_classifier = AlbertSentenceHead(config)
        self.tie_weights()  # before init_weights, which then leaves the shared table as the encoder drew it
        self.init_weights()

    def tie_weights(self) -> None:
        """The MLM decoder reuses the input word embeddings (one V x E table)."""
        self.predictions.decoder.weight = self.albert.embeddings.word_embeddings.weight

    @torch.no_grad()
    def init_output_bias(self, log_prior: torch.Tensor) -> None:
        """Start the MLM output bias at token log-frequencies (see albert_mini.text.batches.unigram_log_prior)."""
        if log_prior.shape != self.predictions.bias.shape:
            raise ValueError(f"log_prior has shape {tuple(log_prior.shape)}, the output bias "
                             f"{tuple(self.predictions.bias.shape)}")
        self.predictions.bias.copy_(log_prior)

    def forward(
        self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
        labels=None, sentence_order_label=None,
        output_hidden_states: bool = False, output_attentions: bool = False, max_predictions: int | None = None,
    ) -> PreTrainingOutput:
        """`max_predictions`: the most masked tokens any sequence holds (the masker's cap); with it, the MLM head
        runs at that many positions per sequence, a shape known before the data (see `masked_positions`). Without
        it, at the batch's largest count, which the host reads from the labels."""
        if (labels is not None or sentence_order_label is not None) and input_ids.shape[0] == 0:
            raise ValueError("an empty batch (0 sequences) has no loss to average; pass at least one sequence")
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states,
                          output_attentions)
        h = out.last_hidden_state  # (B, T, H)
        mlm_loss = sentence_loss = mlm_sum = sentence_sum = None
        mlm_count = sentence_count = 0
        targets = None
        if labels is None:
            mlm_logits = self.predictions(h)  # (B, T, V): every position
        else:
            selected = labels != IGNORE_INDEX  # (B, T)
            if max_predictions is None:
                max_predictions = int(selected.sum(1).max())  # the batch's largest count: the host waits for it
            positions, targets = masked_positions(labels, max_predictions)  # (B, P) each
            gathered = h.gather(1, positions[..., None].expand(-1, -1, h.size(-1)))  # (B, P, H)
            mlm_logits = self.predictions(gathered)  # (B, P, V): the masked positions, then padding
            # Padding has the target IGNORE_INDEX, so it adds exactly 0; nothing masked: a 0 in the graph.
            mlm_sum = F.cross_entropy(mlm_logits.flatten(0, 1), targets.flatten(), reduction="sum")
            mlm_count = selected.sum()  # a 0-d tensor: counting on the host would wait for it
            mlm_loss = mlm_sum / mlm_count.clamp(min=1)
        sentence_logits = self.sop_classifier(out.pooler_output)  # (B, 2)
        if sentence_order_label is not None:
            sentence_targets = sentence_order_label.view(-1)  # (B,)
            sentence_sum = F.cross_entropy(sentence_logits, sentence_targets, reduction="sum")
            sentence_count = sentence_targets.numel()
            sentence_loss = sentence_sum / sentence_count
        parts = [x for x in (mlm_loss, sentence_loss) if x is not None]
        loss = sum(parts) if parts else None
        return PreTrainingOutput(loss, mlm_loss, sentence_loss, mlm_logits, sentence_logits, out.hidden_states,
                                 out.attentions, mlm_sum, mlm_count, sentence_sum, sentence_count, targets)


def masked_positions(labels: torch.Tensor, max_predictions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, targets), each (B, P) with P = min(max_predictions, T): the masked positions of every sequence in
    order, then unmasked ones as padding, and their labels (IGNORE_INDEX at padding).

    `labels[labels != IGNORE_INDEX]` does the same work with a shape that depends on the data: the GPU must tell the
    host how many tokens were masked before the head can run (a sync every step), and torch.compile breaks its
    graph there. Padding to the masker's cap keeps every shape fixed, as the reference's `masked_lm_positions` do.
    A sequence with more masked tokens than `max_predictions` is an error (raised on the device, without a sync),
    never a silent drop.
    """
    selected = labels != IGNORE_INDEX  # (B, T)
    torch._assert_async(selected.sum(1).max() <= max_predictions,
                        "a sequence has more masked tokens than max_predictions; pass the masker's cap")
    # A stable sort of "not masked" puts the masked positions first, each group in its order along the sequence.
    # Contiguous: the gather keeps its index for backward, which then holds (B, P) positions, not the sort's (B, T).
    positions = torch.sort((~selected).to(torch.uint8), dim=1, stable=True).indices[:, :max_predictions].contiguous()
    return positions, labels.gather(1, positions)  # an unmasked position's label is IGNORE_INDEX already
