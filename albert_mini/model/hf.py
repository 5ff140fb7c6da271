"""Move weights between albert_mini and Hugging Face transformers (imported only when called)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ..errors import MissingFileError, UserError
from .albert import AlbertForPreTraining, AlbertModel
from .config import AlbertConfig
from .heads import AlbertForMultipleChoice, AlbertForQuestionAnswering, AlbertForSequenceClassification
from .sharing import STRATEGIES, whole_layer_sharing

# HF class name -> albert_mini class (the HF class of the same name has the same parameter names).
HF_TO_OURS: dict[str, type[nn.Module]] = {
    "AlbertModel": AlbertModel,
    "AlbertForPreTraining": AlbertForPreTraining,
    "AlbertForSequenceClassification": AlbertForSequenceClassification,
    "AlbertForMultipleChoice": AlbertForMultipleChoice,
    "AlbertForQuestionAnswering": AlbertForQuestionAnswering,
}
# HF spellings of the tanh-approximated GELU all mean our gelu_new.
_ACTIVATION_FROM_HF = {"gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new", "gelu_fast": "gelu_new",
                       "gelu": "gelu", "relu": "relu"}
_SHARED_FIELDS = (
    "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "num_hidden_groups", "inner_group_num", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "classifier_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "layer_norm_eps", "initializer_range", "pad_token_id",
)


def _transformers():
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - exercised only without the extra installed
        raise ImportError(
            "albert_mini.model.hf needs Hugging Face transformers: pip install 'albert-mini[test]' "
            "(or pip install transformers sentencepiece protobuf)"
        ) from error
    return transformers


def config_from_hf(hf_config) -> AlbertConfig:
    """Translate a transformers.AlbertConfig into ours."""
    act = hf_config.hidden_act
    if act not in _ACTIVATION_FROM_HF:
        supported = sorted(_ACTIVATION_FROM_HF)
        raise ValueError(f"HF hidden_act {act!r} has no albert_mini equivalent; supported: {supported}")
    fields = {name: getattr(hf_config, name) for name in _SHARED_FIELDS}
    fields["classifier_dropout_prob"] = fields["classifier_dropout_prob"] or 0.0
    layout = (fields["num_hidden_layers"], fields["num_hidden_groups"], fields["inner_group_num"])
    sharing = whole_layer_sharing(*layout)
    return AlbertConfig(**fields, hidden_act=_ACTIVATION_FROM_HF[act], sharing=sharing)


def config_to_hf(config: AlbertConfig, **extra):
    """Translate our config into a transformers.AlbertConfig; only all-shared and unshared models fit HF."""
    if not config.sharing_strategy.whole_layers:
        exportable = [name for name, strategy in STRATEGIES.items() if strategy.whole_layers]
        raise ValueError(
            f"sharing={config.sharing!r} cannot be expressed by HF's AlbertConfig, which shares whole layers "
            f"only (groups); export models with sharing {' or '.join(repr(name) for name in exportable)}"
        )
    fields = {name: getattr(config, name) for name in _SHARED_FIELDS}
    return _transformers().AlbertConfig(**fields, hidden_act=config.hidden_act, **extra)


class HFModelError(UserError, ValueError):
    """A Hugging Face folder that cannot be read: bad config.json, not ALBERT, or no safetensors weights."""


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def _load_hf_model(source):
    """An HF model object from an object, a local directory or (with internet) a hub name."""
    if isinstance(source, nn.Module):
        return source
    transformers = _transformers()
    path = Path(source)
    if path.is_dir():
        try:
            config = transformers.AutoConfig.from_pretrained(path)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise HFModelError(f"{path / 'config.json'} is not a valid Hugging Face config ({_first_line(err)}); "
                               "write the folder again with save_pretrained") from None
        names = [n for n in (config.architectures or ["AlbertModel"]) if n in HF_TO_OURS]
        if not names or getattr(config, "model_type", "albert") != "albert":
            raise HFModelError(f"{path} holds {config.architectures or config.model_type}, not ALBERT; albert_mini "
                               f"reads {', '.join(sorted(HF_TO_OURS))}")
        if not any(path.glob("*.safetensors")):
            raise HFModelError(f"{path} holds no .safetensors weights (pickled ones such as pytorch_model.bin are "
                               "never loaded: unpickling can run code); save the model again with "
                               "save_pretrained(..., safe_serialization=True)")
        try:
            return getattr(transformers, names[0]).from_pretrained(path)
        except (OSError, ValueError, RuntimeError) as err:
            raise HFModelError(f"{path} cannot be loaded ({_first_line(err)}); write it again with save_pretrained") \
                from None
    if path.exists() or str(source).startswith((".", "/")):
        raise MissingFileError(f"{source} is not a directory written by save_pretrained")
    # A hub name such as "albert/albert-base-v2": needs internet, which this project never assumes.
    return transformers.AlbertForPreTraining.from_pretrained(str(source))


def from_hf(hf_model_or_dir) -> nn.Module:
    """albert_mini copy of an HF ALBERT model, a save_pretrained directory or a hub name (same weights)."""
    hf_model = _load_hf_model(hf_model_or_dir)
    kind = type(hf_model).__name__
    if kind not in HF_TO_OURS:
        raise ValueError(f"cannot convert {kind}; albert_mini reads {sorted(HF_TO_OURS)}")
    config = config_from_hf(hf_model.config)
    # The label count lives in HF's config and in our classifier's constructor.
    extra = {"num_labels": hf_model.config.num_labels} if kind == "AlbertForSequenceClassification" else {}
    with torch.device("meta"):
        model = HF_TO_OURS[kind](config, **extra)
    state = {k: v for k, v in hf_model.state_dict().items() if not k.endswith(("position_ids", "token_type_ids"))}
    _check_keys(model, state, kind)
    model.load_state_dict(state, strict=False, assign=True)
    _retie(model)
    return model.train(hf_model.training)


def to_hf(model: nn.Module):
    """The HF transformers model with the same weights as an albert_mini model."""
    transformers = _transformers()
    kind = next((name for name, cls in HF_TO_OURS.items() if type(model) is cls), None)
    if kind is None:
        convertible = [c.__name__ for c in HF_TO_OURS.values()]
        raise ValueError(f"no HF class for {type(model).__name__}; convertible: {convertible}")
    config = model.config
    extra = {"num_labels": model.num_labels} if hasattr(model, "num_labels") else {}
    hf_model = getattr(transformers, kind)(config_to_hf(config, **extra))
    state = dict(model.state_dict())
    if not config.embedding_projection:  # BERT-style E == H: HF always has the projection, so make it exact
        prefix = "albert." if kind != "AlbertModel" else ""
        weight = state[f"{prefix}embeddings.word_embeddings.weight"]
        state[f"{prefix}encoder.embedding_hidden_mapping_in.weight"] = torch.eye(config.hidden_size, dtype=weight.dtype)
        state[f"{prefix}encoder.embedding_hidden_mapping_in.bias"] = torch.zeros(config.hidden_size, dtype=weight.dtype)
    missing, unexpected = hf_model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith(("position_ids", "token_type_ids"))]
    if missing or unexpected:
        raise RuntimeError(f"weights do not line up with HF {kind}: missing {missing}, unexpected {unexpected}")
    hf_model.tie_weights()
    return hf_model.train(model.training)


def _check_keys(model: nn.Module, state: dict, kind: str) -> None:
    ours = set(model.state_dict())
    missing = sorted(ours - set(state))
    unexpected = sorted(set(state) - ours)
    if missing or unexpected:
        raise RuntimeError(f"HF {kind} weights do not line up: missing {missing[:5]}, unexpected {unexpected[:5]}")


def _retie(model: nn.Module) -> None:
    """Loading with assign=True replaces tensors one name at a time; restore the ties by object identity."""
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    heads = [m for m in model.modules() if hasattr(m, "decoder") and hasattr(m, "bias")]
    for head in heads:
        head.bias = head.decoder.bias
