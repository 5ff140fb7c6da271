"""Parameter counts: a closed form from the config, and the real count of a built module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from torch import nn

from .config import AlbertConfig

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["closed_form_breakdown", "format_parameter_table"]

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


# ---------------------------------------------------------------------------------------------- tables
SHAPE_COLUMNS = ("V", "E", "H", "L", "A", "I", "sharing")
_HEADERS = {
    "name": "model", "V": "V", "E": "E", "H": "H", "L": "L", "A": "heads", "I": "FFN I", "sharing": "sharing",
    "embeddings": "embeddings", "projection": "projection", "attention": "attention", "ffn": "FFN",
    "pooler": "pooler", "mlm_head": "MLM head", "sentence_head": "sentence head", "total": "total",
    "paper_convention": "total, paper's rules",
}


def parameter_table(configs: Mapping[str, AlbertConfig] | Iterable[str], pooler: bool = True,
                    heads: bool = False) -> list[dict]:
    """One row per config: its shape, the closed-form count of every component, and the total.

    `configs` is {name: AlbertConfig} or a list of preset names. Row keys: name, V, E, H, L, A (attention heads),
    I (FFN width), sharing, the COMPONENTS, total. (albert_mini.study.paper.paper_parameter_table adds the total
    counted as the paper's tables count it.)
    """
    named = _named_configs(configs)
    rows = []
    for name, config in named.items():
        parts = closed_form_breakdown(config, pooler=pooler, heads=heads)
        rows.append({"name": name, "V": config.vocab_size, "E": config.embedding_size, "H": config.hidden_size,
                     "L": config.num_hidden_layers, "A": config.num_attention_heads, "I": config.intermediate_size,
                     "sharing": config.sharing, **parts, "total": sum(parts.values())})
    return rows


def _named_configs(configs) -> dict[str, AlbertConfig]:
    if isinstance(configs, str):
        raise TypeError(f"parameter_table takes a list of preset names, not one string; write [{configs!r}]")
    if isinstance(configs, Mapping):
        for name, config in configs.items():
            if not isinstance(config, AlbertConfig):
                raise TypeError(f"parameter_table: entry {name!r} is a {type(config).__name__}, not an AlbertConfig; "
                                f"build it with AlbertConfig.from_preset(...) or pass preset names as a list")
        named = dict(configs)
    elif isinstance(configs, Iterable):
        names = list(configs)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"parameter_table: {name!r} is not a preset name; pass a list of preset names "
                                f"or a {{name: AlbertConfig}} dict")
        named = {name: AlbertConfig.from_preset(name) for name in names}  # unknown names raise ConfigError
    else:
        raise TypeError(f"parameter_table takes {{name: AlbertConfig}} or a list of preset names, "
                        f"not {type(configs).__name__}")
    if not named:
        raise ValueError("parameter_table got no configs; pass at least one preset name or config")
    return named


def format_parameter_table(rows: list[dict], unit: str = "M") -> str:
    """A markdown table of parameter_table rows; counts in millions ("M", 2 decimals) or exact ("exact", 1,234).

    With unit="M", counts under 10,000 are printed exactly (2,112, not 0.00M). Component columns that are zero
    in every row (e.g. the heads when they were not counted) are left out. A "paper_convention" count present in
    every row (albert_mini.study.paper.paper_parameter_table adds it) becomes the last column.
    """
    if unit not in ("M", "exact"):
        raise ValueError(f"format_parameter_table: unknown unit {unit!r}; use 'M' (millions) or 'exact'")
    if not rows:
        raise ValueError("format_parameter_table got no rows; build them with parameter_table(...)")
    needed = ("name", *SHAPE_COLUMNS, *COMPONENTS, "total")
    for number, row in enumerate(rows, start=1):
        missing = [key for key in needed if key not in row]
        if missing:
            raise KeyError(f"format_parameter_table: row {number} ({row.get('name', '?')}) lacks {missing}; "
                           f"build rows with parameter_table(...)")
    components = [c for c in COMPONENTS if any(row[c] for row in rows)]
    counts = [*components, "total"] + (["paper_convention"] if all("paper_convention" in r for r in rows) else [])
    columns = ["name", *SHAPE_COLUMNS, *counts]

    def cell(key: str, value) -> str:
        if key in counts:
            return _format_count(value, unit)
        return f"{value:,}" if isinstance(value, int) else str(value)

    align = ["---" if key in ("name", "sharing") else "---:" for key in columns]
    lines = ["| " + " | ".join(_HEADERS[key] for key in columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell(key, row[key]) for key in columns) + " |" for row in rows]
    return "\n".join(lines)


def _format_count(count: int, unit: str) -> str:
    if unit == "exact" or count < 10_000:  # below 0.01M two decimals would print a misleading 0.00M
        return f"{count:,}"
    return f"{count / 1e6:,.2f}M"
