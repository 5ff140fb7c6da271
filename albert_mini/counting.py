"""Parameter counts: a closed form from the config, and the real count of a built module."""

from __future__ import annotations

from torch import nn

from .config import AlbertConfig

COMPONENTS = ("embeddings", "projection", "attention", "ffn", "pooler", "mlm_head", "sentence_head")


def closed_form_breakdown(config: AlbertConfig, pooler: bool = True, heads: bool = False) -> dict[str, int]:
    """Parameters per component, from the config alone (no tensors are allocated)."""
    V, E, H, I = config.vocab_size, config.embedding_size, config.hidden_size, config.intermediate_size
    P, T = config.max_position_embeddings, config.type_vocab_size
    n_attention, n_ffn = config.num_distinct_blocks()
    attention_block = 4 * (H * H + H) + 2 * H  # q, k, v, output dense + LayerNorm
    ffn_block = (H * I + I) + (I * H + H) + 2 * H  # two matrices + LayerNorm
    return {
        "embeddings": (V + P + T) * E + 2 * E,  # three tables + LayerNorm
        "projection": E * H + H if config.embedding_projection else 0,
        "attention": n_attention * attention_block,
        "ffn": n_ffn * ffn_block,
        "pooler": H * H + H if pooler else 0,
        "mlm_head": H * E + E + 2 * E + V if heads else 0,  # decoder weight tied to the word embeddings
        "sentence_head": 2 * H + 2 if heads else 0,
    }


def module_breakdown(model: nn.Module) -> dict[str, int]:
    """Parameters per component of a built model; each shared tensor is counted once."""
    counts = dict.fromkeys(COMPONENTS, 0)
    for name, param in model.named_parameters():  # named_parameters skips tensors seen under another name
        component = _component(name)
        counts[component] = counts.get(component, 0) + param.numel()
    return counts


def _component(name: str) -> str:
    rules = (
        ("embeddings.", "embeddings"), ("embedding_hidden_mapping_in", "projection"),
        (".attention.", "attention"), ("pooler", "pooler"), ("predictions.", "mlm_head"),
        ("sop_classifier", "sentence_head"), ("albert_layers.", "ffn"),
    )
    for key, component in rules:
        if key in name:
            return component
    return "heads"


def count_parameters(config_or_model, breakdown: bool = False, pooler: bool = True, heads: bool = False):
    """Total parameters of a config (closed form) or a model (its tensors); per component with breakdown=True.

    For a config, `pooler` and `heads` choose what is counted (the paper's tables differ on the pooler);
    a model is counted as built.
    """
    if isinstance(config_or_model, AlbertConfig):
        counts = closed_form_breakdown(config_or_model, pooler=pooler, heads=heads)
    elif isinstance(config_or_model, nn.Module):
        counts = module_breakdown(config_or_model)
    else:
        raise TypeError(f"count_parameters takes an AlbertConfig or an nn.Module, not {type(config_or_model).__name__}")
    return counts if breakdown else sum(counts.values())
