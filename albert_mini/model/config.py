"""One config dataclass for every ALBERT and BERT model in the paper, with named presets."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError, lookup
from ..specials import PAD_ID
from .sharing import STRATEGIES, SharingStrategy

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["embedding_variant"]

ACTIVATIONS = ("gelu_new", "gelu", "relu")
# The float fields and their ranges: (low, high, low allowed, the rule as error messages state it). A float
# field of the config that is missing here is a bug: test_config checks that the table covers them all.
FLOAT_RANGES = {
    "hidden_dropout_prob": (0.0, 1.0, True, "in [0, 1)"),
    "attention_probs_dropout_prob": (0.0, 1.0, True, "in [0, 1)"),
    "classifier_dropout_prob": (0.0, 1.0, True, "in [0, 1)"),
    "layer_norm_eps": (0.0, 1.0, False, "in (0, 1)"),
    "initializer_range": (0.0, 1.0, False, "in (0, 1)"),
}


class ConfigError(UserError, ValueError):
    """A config that cannot describe a model; the message says which field to change."""


def strategy_named(name: str) -> SharingStrategy:
    """The row of the sharing table called `name`; an unknown name raises UnknownNameError listing the known ones."""
    return lookup(STRATEGIES, name, "sharing")


@dataclass
class AlbertConfig:
    """Hyper-parameters of an ALBERT (or BERT-style, unshared) encoder.

    Field names follow Hugging Face's ``AlbertConfig`` so configs translate one to one.
    """

    vocab_size: int = 30000
    embedding_size: int = 128  # E: width of the token embeddings
    hidden_size: int = 768  # H: width of every transformer layer
    num_hidden_layers: int = 12  # L: how many times a layer is applied
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # FFN width, 4H in every paper config
    num_hidden_groups: int = 1  # G: distinct layer groups ("all" sharing); layer i uses group i*G//L
    inner_group_num: int = 1  # K: layers inside one group, all run at every layer application
    sharing: str = "all"  # which parameters the L layer applications share (paper Table 4)
    embedding_projection: bool = True  # the E->H matrix; False only for BERT-style models with E == H
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    classifier_dropout_prob: float = 0.1  # fine-tuning heads only
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02
    pad_token_id: int = PAD_ID

    def __post_init__(self):
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise ConfigError naming the field and the fix when the config describes no valid model."""
        self._check_field_types()
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                f"{self.num_attention_heads}; pick a head count that divides it (e.g. "
                f"{_divisors_hint(self.hidden_size, self.num_attention_heads)})"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(f"unknown hidden_act {self.hidden_act!r}; choose one of {', '.join(ACTIVATIONS)}")
        strategy = strategy_named(self.sharing)
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ConfigError(
                f"num_hidden_layers {self.num_hidden_layers} is not divisible by num_hidden_groups "
                f"{self.num_hidden_groups}; every group must serve the same number of layers"
            )
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ConfigError(f"pad_token_id {self.pad_token_id} is outside the vocabulary of {self.vocab_size}")
        L, G, K = self.num_hidden_layers, self.num_hidden_groups, self.inner_group_num
        required = strategy.required_groups(L)
        if required is not None and (G, K) != required:
            raise ConfigError(
                f"sharing={self.sharing!r} means {strategy.description}, so it needs "
                f"num_hidden_groups={required[0]} and inner_group_num={required[1]} (got {G} and {K})"
            )
        if not self.embedding_projection and self.embedding_size != self.hidden_size:
            raise ConfigError(
                f"embedding_projection=False needs embedding_size == hidden_size (got {self.embedding_size} "
                f"and {self.hidden_size}); keep the projection to factorize the embeddings"
            )

    def _check_field_types(self) -> None:
        """Each field of its type and range: counts positive, floats finite and in range, names strings."""
        positive = (
            "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "intermediate_size", "num_hidden_groups", "inner_group_num", "max_position_embeddings",
            "type_vocab_size",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        # Every float field: a real number (not a string, not a bool), finite, and in its range. NaN fails every
        # comparison, so a test of the form `not low <= value < high` is what refuses it.
        for name, (low, high, closed_low, rule) in FLOAT_RANGES.items():
            value = getattr(self, name)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not numeric or not math.isfinite(value) or not (low <= value if closed_low else low < value) \
                    or not value < high:
                raise ConfigError(f"{name} must be {rule} (a finite number), got {value!r}")
        for name in ("sharing", "hidden_act"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.embedding_projection, bool):
            raise ConfigError(f"embedding_projection must be true or false, got {self.embedding_projection!r}")
        if isinstance(self.pad_token_id, bool) or not isinstance(self.pad_token_id, int):
            raise ConfigError(f"pad_token_id must be an integer, got {self.pad_token_id!r}")

    # ------------------------------------------------------------------ derived facts
    @property
    def sharing_strategy(self) -> SharingStrategy:
        """The row of the sharing table (albert_mini.model.sharing) this config names."""
        return strategy_named(self.sharing)

    @property
    def num_layer_modules(self) -> int:
        """Layer-group modules the encoder holds: G, or one per layer when only attention or the FFN is shared."""
        return self.sharing_strategy.num_layer_modules(self.num_hidden_layers, self.num_hidden_groups)

    def layer_to_group(self, layer: int) -> int:
        """Index of the layer-group module that layer application `layer` runs; exact integer form of HF's rule."""
        if not 0 <= layer < self.num_hidden_layers:
            raise IndexError(f"layer {layer} outside 0..{self.num_hidden_layers - 1}")
        return layer * self.num_layer_modules // self.num_hidden_layers

    def num_distinct_blocks(self) -> tuple[int, int]:
        """How many distinct (attention, FFN) blocks hold parameters under this sharing strategy."""
        return self.sharing_strategy.distinct_blocks(self.num_hidden_layers, self.num_hidden_groups,
                                                     self.inner_group_num)

    # ------------------------------------------------------------------ presets and I/O
    @classmethod
    def from_preset(cls, name: str, **overrides) -> AlbertConfig:
        """Build a named preset, e.g. ``AlbertConfig.from_preset("albert-base", hidden_dropout_prob=0.1)``."""
        preset = lookup(PRESETS, name, "preset")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown}; valid fields: {', '.join(sorted(fields))}")
        return cls(**{**preset, **overrides})

    def replace(self, **changes) -> AlbertConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> AlbertConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"config data must be an object of AlbertConfig fields, got {type(data).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(f"unknown config field(s) {unknown} in config data")
        return cls(**data)

    def to_json(self, path: str | Path | None = None) -> str:
        """The config as JSON text; also written to `path` when given."""
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> AlbertConfig:
        """Read a config from JSON text or from a .json file."""
        path = Path(text_or_path) if not str(text_or_path).lstrip().startswith("{") else None
        text = path.read_text() if path is not None else str(text_or_path)
        return cls.from_dict(json.loads(text))


def config_differences(saved: dict, current: dict) -> list[str]:
    """Human-readable `field: saved -> current` lines for every field that differs."""
    keys = sorted(set(saved) | set(current))
    return [f"{k}: {saved.get(k, '<absent>')!r} -> {current.get(k, '<absent>')!r}"
            for k in keys if saved.get(k, "<absent>") != current.get(k, "<absent>")]


def as_config(base: str | AlbertConfig) -> AlbertConfig:
    """A preset name or a config, as a config (an unknown name raises ConfigError listing the presets)."""
    if isinstance(base, AlbertConfig):
        return base
    if isinstance(base, str):
        return AlbertConfig.from_preset(base)
    raise TypeError(f"base must be a preset name or an AlbertConfig, not {type(base).__name__}")


def embedding_variant(base: str | AlbertConfig, embedding_size: int, sharing: str) -> AlbertConfig:
    """The base shape with embedding size E and a sharing strategy ('none' gets one group per layer)."""
    config = as_config(base)
    groups, inner = strategy_named(sharing).default_groups(config.num_hidden_layers)
    # A BERT-style base (no projection) needs the E -> H matrix as soon as E differs from H.
    projection = config.embedding_projection or embedding_size != config.hidden_size
    return config.replace(embedding_size=embedding_size, sharing=sharing, num_hidden_groups=groups,
                          inner_group_num=inner, embedding_projection=projection)


def _divisors_hint(hidden: int, heads: int) -> str:
    options = [d for d in range(1, min(hidden, 128) + 1) if hidden % d == 0 and hidden // d >= 8]
    return ", ".join(str(d) for d in sorted(options, key=lambda d: abs(d - heads))[:3]) or "1"


def _bert(hidden: int, layers: int, heads: int) -> dict:
    """The paper's BERT baselines: E = H, no projection, nothing shared, BERT's dropout."""
    return dict(
        vocab_size=30000, embedding_size=hidden, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * hidden, num_hidden_groups=layers, sharing="none",
        embedding_projection=False, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
    )


def _albert(hidden: int, layers: int, heads: int) -> dict:
    """ALBERT v2: E = 128, one layer shared by all L applications, no dropout."""
    return dict(
        vocab_size=30000, embedding_size=128, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * hidden,
    )


PRESETS: dict[str, dict] = {
    # The paper's Table 1 (ALBERT as released in v2; heads as in the v2 configs).
    "albert-base": _albert(768, 12, 12),
    "albert-large": _albert(1024, 24, 16),
    "albert-xlarge": _albert(2048, 24, 16),
    "albert-xxlarge": _albert(4096, 12, 64),
    "bert-base": _bert(768, 12, 12),
    "bert-large": _bert(1024, 24, 16),
    "bert-xlarge": _bert(2048, 24, 16),
    # CPU sizes. nano is for tests; mini is the classroom model, bert-mini its unshared E = H twin.
    "albert-nano": dict(
        vocab_size=8000, embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=128,
    ),
    "albert-mini": dict(
        vocab_size=8000, embedding_size=128, hidden_size=256, num_hidden_layers=6, num_attention_heads=4,
        intermediate_size=1024, max_position_embeddings=512,
    ),
    "bert-mini": dict(
        vocab_size=8000, embedding_size=256, hidden_size=256, num_hidden_layers=6, num_attention_heads=4,
        intermediate_size=1024, max_position_embeddings=512, num_hidden_groups=6, sharing="none",
        embedding_projection=False,
    ),
}
