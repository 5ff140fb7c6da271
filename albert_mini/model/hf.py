"""Move weights between albert_mini and Hugging Face transformers (imported only when called).

A Hugging Face folder from outside is read strictly, without transformers: its config.json must describe an
ALBERT class albert_mini has (HF_TO_OURS) with valid fields (AlbertConfig's checks, hidden_act one albert_mini
runs); only safetensors are read (model.safetensors, or model.safetensors.index.json and its shards), and a
folder whose weights come in another format (pytorch_model.bin, .pt, a pickle) is refused, naming the
conversion; every weight the model needs must be there with its shape, and nothing else (tied weights, stored
once, are filled in); every value is finite (a NaN or an infinity, from a model that diverged or a damaged
file, is refused naming the tensor: "every weight checked" means values, not only names, shapes and dtype);
the model is float32 whatever `dtype`/`torch_dtype` the config names (from_hf's `dtype` asks for another). Each
refusal is one HFModelError or ConfigError naming the file and the weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import MissingFileError, UserError
from .albert import AlbertForPreTraining, AlbertModel
from .config import AlbertConfig, ConfigError
from .heads import AlbertForMultipleChoice, AlbertForQuestionAnswering, AlbertForSequenceClassification
from .sharing import STRATEGIES, whole_layer_sharing

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["config_to_hf", "from_hf", "to_hf"]

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


# transformers.AlbertConfig's defaults (the albert-xxlarge shape): what a config.json that leaves a field out means.
HF_DEFAULTS = {
    "vocab_size": 30000, "embedding_size": 128, "hidden_size": 4096, "num_hidden_layers": 12,
    "num_attention_heads": 64, "intermediate_size": 16384, "num_hidden_groups": 1, "inner_group_num": 1,
    "hidden_act": "gelu_new", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
    "classifier_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
    "layer_norm_eps": 1e-12, "initializer_range": 0.02, "pad_token_id": 0,
}


def config_from_hf(hf_config) -> AlbertConfig:
    """Translate a transformers.AlbertConfig (or the dict of its config.json) into ours; ConfigError naming the
    field when it has no albert_mini equivalent or fails AlbertConfig's checks (a string dropout, a negative
    initializer_range, ...)."""
    if isinstance(hf_config, dict):
        fields = {name: hf_config.get(name, HF_DEFAULTS[name]) for name in (*_SHARED_FIELDS, "hidden_act")}
    else:
        fields = {name: getattr(hf_config, name, HF_DEFAULTS[name]) for name in (*_SHARED_FIELDS, "hidden_act")}
    act = fields.pop("hidden_act")
    if not isinstance(act, str) or act not in _ACTIVATION_FROM_HF:
        supported = ", ".join(sorted(_ACTIVATION_FROM_HF))
        raise ConfigError(f"HF hidden_act {act!r} has no albert_mini equivalent; albert_mini runs {supported}")
    fields["classifier_dropout_prob"] = fields["classifier_dropout_prob"] or 0.0
    layout = (fields["num_hidden_layers"], fields["num_hidden_groups"], fields["inner_group_num"])
    try:
        sharing = whole_layer_sharing(*layout)
    except (TypeError, ValueError, ZeroDivisionError):  # not whole numbers: AlbertConfig names the field
        sharing = "all"
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
    """A Hugging Face folder that cannot be read: bad config.json, not ALBERT, weights missing, extra, mis-shaped,
    or in a format other than safetensors."""


WEIGHTS_FILE = "model.safetensors"  # what save_pretrained writes (safe_serialization, the default since 4.35)
WEIGHTS_INDEX = "model.safetensors.index.json"  # ... for a model cut into shards
# Weights in other formats, never read: a pickle (pytorch_model.bin, .pt, .ckpt, .pkl) runs code when loaded.
OTHER_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib", ".h5", ".msgpack", ".npz")
CONVERT = ("convert them to safetensors on a machine where you trust the files: load the folder with transformers "
           "(AlbertForPreTraining.from_pretrained(DIR)) and save_pretrained(NEW_DIR, safe_serialization=True), "
           "then pass NEW_DIR")
_BUFFERS = ("position_ids", "token_type_ids")  # HF's index buffers, which older versions saved with the weights


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


@dataclass(frozen=True)
class HFFolder:
    """What a Hugging Face folder holds, checked without reading its weights (`inspect_hf_dir`)."""

    path: Path
    kind: str  # the HF class, a key of HF_TO_OURS
    config: AlbertConfig
    num_labels: int
    weights: tuple[Path, ...]  # the safetensors files


def inspect_hf_dir(path: str | Path) -> HFFolder:
    """Check a save_pretrained folder without reading its tensors: config.json describes an ALBERT class
    albert_mini has, with valid fields, and the weights are safetensors. HFModelError or ConfigError otherwise."""
    path = Path(path)
    config_file = path / "config.json"
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise HFModelError(f"{config_file} is not valid JSON ({_first_line(err)}); it is not a Hugging Face config: "
                           "write the folder again with save_pretrained") from None
    if not isinstance(raw, dict):
        raise HFModelError(f"{config_file} holds a JSON {type(raw).__name__}, not a Hugging Face config object; "
                           "write the folder again with save_pretrained")
    architectures = raw.get("architectures") or ["AlbertModel"]
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise HFModelError(f"{config_file}: architectures must be a list of class names, got {architectures!r}")
    names = [n for n in architectures if n in HF_TO_OURS]
    model_type = raw.get("model_type", "albert")
    if model_type != "albert":
        raise HFModelError(f"{path} holds {architectures} (model_type {model_type!r}), not ALBERT; albert_mini reads "
                           f"{', '.join(sorted(HF_TO_OURS))}")
    if not names:
        raise HFModelError(f"{path} holds {architectures}, an ALBERT class albert_mini does not have; it reads "
                           f"{', '.join(sorted(HF_TO_OURS))}")
    try:
        config = config_from_hf(raw)
    except ConfigError as err:
        raise ConfigError(f"{config_file}: {err}; fix that field, or write the folder again with save_pretrained") \
            from None
    labels = raw.get("id2label")
    num_labels = len(labels) if isinstance(labels, dict) and labels else raw.get("num_labels", 2)
    if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
        raise ConfigError(f"{config_file}: num_labels must be a positive integer, got {num_labels!r}")
    return HFFolder(path, names[0], config, num_labels, tuple(_weight_files(path)))


def _weight_files(path: Path) -> list[Path]:
    """The safetensors files of a folder: model.safetensors, or the shards its index names."""
    single, index = path / WEIGHTS_FILE, path / WEIGHTS_INDEX
    if single.is_file():
        return [single]
    if index.is_file():
        return _shards(path, index)
    others = sorted(p.name for p in path.iterdir() if p.name.endswith(OTHER_WEIGHT_SUFFIXES))
    stray = sorted(p.name for p in path.glob("*.safetensors"))
    # Another .safetensors name is not taken for the weights: transformers would pass it over for a pickle.
    besides = f" ({', '.join(stray)} is not a name save_pretrained writes, so it is not read either)" if stray else ""
    if others:
        raise HFModelError(f"{path} holds no .safetensors weights ({WEIGHTS_FILE}), only {', '.join(others)}"
                           f"{besides}: weights in another format are never loaded (a pickle such as "
                           f"pytorch_model.bin runs code when read); {CONVERT}")
    raise HFModelError(f"{path} holds no .safetensors weights ({WEIGHTS_FILE} or {WEIGHTS_INDEX}){besides}; write "
                       "the folder with save_pretrained(..., safe_serialization=True)")


def _shards(path: Path, index: Path) -> list[Path]:
    """The shard files named by a model.safetensors.index.json, each a file in the same folder."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
    except (ValueError, UnicodeDecodeError, AttributeError) as err:
        raise HFModelError(f"{index} is not a safetensors index ({_first_line(err)}); write the folder again with "
                           "save_pretrained") from None
    if not isinstance(weight_map, dict) or not weight_map:
        raise HFModelError(f"{index} has no weight_map of tensor names to shard files; write the folder again "
                           "with save_pretrained")
    shards = []
    for name in sorted({str(v) for v in weight_map.values()}):
        if Path(name).name != name or name.startswith(".") or not name.endswith(".safetensors"):
            raise HFModelError(f"{index} names the shard {name!r}, not a .safetensors file of the folder; only "
                               "files beside the index are read")
        if not (path / name).is_file():
            raise HFModelError(f"{path / name} is missing: {index} names it as a shard; copy the whole folder")
        shards.append(path / name)
    return shards


def read_safetensors(file: Path, error: type[Exception] = HFModelError) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file; `error` naming the file when it is truncated or not safetensors.

    Each tensor is copied out of the file: safetensors maps the file into memory, and a tensor still backed by it
    would crash the process (SIGBUS) once the file is rewritten or truncated in place."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return {name: tensor.clone() for name, tensor in load_file(file).items()}
    except (SafetensorError, ValueError, RuntimeError, TypeError, OverflowError) as err:
        raise error(f"{file} is not a readable safetensors file ({_first_line(err)}): it is truncated or damaged, "
                    "or holds another format (such as a pickle) under a .safetensors name; copy or write it again "
                    "with safetensors") from None


def fit_state(model: nn.Module, state: dict[str, torch.Tensor], where: str, dtype: torch.dtype = torch.float32,
              error: type[Exception] = HFModelError) -> dict[str, torch.Tensor]:
    """`state` as the state dict of `model`: tied weights stored once filled in, every tensor in `dtype`.

    Refused with one `error` naming them: a weight the model needs that `state` lacks (it would otherwise keep a
    random initialisation), one the model has no place for, one of another shape, one that is not floating-point,
    and tied weights (the MLM decoder and the word embeddings) that differ; then, in one more message, weights
    holding NaN or infinity in `dtype` (a value too large for it included). HF's index buffers are ignored."""
    state = {k: v for k, v in state.items() if not k.endswith(_BUFFERS)}
    expected = model.state_dict()  # names and shapes (meta tensors are fine)
    filled, problems = {}, []
    not_float = [f"{k} ({v.dtype})" for k, v in state.items() if not v.is_floating_point()]
    if not_float:
        problems.append(f"not floating-point: {_some(not_float)}")
    state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    for names in _tie_groups(model):
        present = [n for n in names if n in state]
        for other in present[1:]:
            a, b = state[present[0]], state[other]
            if a.shape != b.shape or not torch.equal(a, b):
                problems.append(f"{present[0]} and {other} differ, but the model ties them (one tensor)")
        if present:
            filled.update({n: state[present[0]] for n in names})
    filled.update(state)
    missing = [n for n in expected if n not in filled]
    unexpected = [n for n in state if n not in expected]
    misshaped = [f"{n} {tuple(filled[n].shape)} where the config needs {tuple(expected[n].shape)}"
                 for n in expected if n in filled and filled[n].shape != expected[n].shape]
    for label, items in (("missing", missing), ("unexpected", unexpected), ("mis-shaped", misshaped)):
        if items:
            problems.append(f"{label}: {_some(items)}")
    if problems:
        raise error(f"{where} does not fit the {type(model).__name__} its config describes: {'; '.join(problems)}; "
                    "give the folder its own config.json and complete weights (nothing is initialised at random)")
    non_finite = non_finite_tensors(state)
    if non_finite:
        raise error(f"{where} holds weights that are not finite numbers (in {str(dtype).removeprefix('torch.')}): "
                    f"{_some(non_finite)}; the model was saved after its training diverged, or the file is damaged: "
                    "save it again from a model whose weights are finite (nothing is loaded)")
    return {n: filled[n] for n in expected}


def non_finite_tensors(state: dict[str, torch.Tensor]) -> list[str]:
    """`name (k NaN, m inf)` for every floating tensor of `state` holding NaN or infinity; one host read when all
    are finite."""
    floats = {name: t for name, t in state.items() if t.is_floating_point() and t.numel()}
    if not floats or bool(torch.stack([torch.isfinite(t).all() for t in floats.values()]).all()):
        return []
    found = []
    for name, t in floats.items():
        nan, inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
        if nan or inf:
            found.append(f"{name} ({', '.join(f'{n:,} {kind}' for n, kind in ((nan, 'NaN'), (inf, 'inf')) if n)})")
    return found


def _some(items: list[str], shown: int = 5) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _tie_groups(model: nn.Module) -> list[list[str]]:
    """The names of every parameter that is one tensor under several names (as tie_weights makes them)."""
    groups: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(param), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def _from_state(kind: str, config: AlbertConfig, num_labels: int, state: dict, where: str,
                dtype: torch.dtype) -> nn.Module:
    """Our model of HF class `kind`, holding exactly the weights of `state` (checked by `fit_state`)."""
    extra = {"num_labels": num_labels} if kind == "AlbertForSequenceClassification" else {}
    with torch.device("meta"):
        model = HF_TO_OURS[kind](config, **extra)
    model.load_state_dict(fit_state(model, state, where, dtype), strict=True, assign=True)
    _retie(model)
    return model


def load_hf_dir(path: str | Path, dtype: torch.dtype = torch.float32) -> nn.Module:
    """albert_mini copy of a save_pretrained folder, read strictly (see the module's docstring), in eval mode."""
    folder = inspect_hf_dir(path)
    state: dict[str, torch.Tensor] = {}
    for file in folder.weights:
        tensors = read_safetensors(file)
        twice = sorted(set(tensors) & set(state))
        if twice:
            raise HFModelError(f"{file} repeats weights of another shard: {_some(twice)}; write the folder again")
        state.update(tensors)
    where = str(folder.weights[0] if len(folder.weights) == 1 else folder.path)
    return _from_state(folder.kind, folder.config, folder.num_labels, state, where, dtype).eval()


def _hub_folder(name: str) -> Path:
    """A hub model's config, safetensors and tokenizer, downloaded (internet, which this project never assumes)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, allow_patterns=["config.json", "*.safetensors",
                                                            "*.safetensors.index.json", "spiece.model"]))
    except Exception as err:  # no network, an unknown name, a private model: each its own type
        raise HFModelError(f"cannot download {name!r} from the Hugging Face hub ({_first_line(err)}); pass a local "
                           "save_pretrained folder instead") from None


def from_hf(hf_model_or_dir, dtype: torch.dtype = torch.float32) -> nn.Module:
    """albert_mini copy of an HF ALBERT model, a save_pretrained directory or a hub name (same weights, `dtype`).

    A folder is read strictly (the module's docstring): only safetensors, every weight present and shaped as its
    config says, float32 unless `dtype` asks otherwise."""
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point type, got {dtype}")
    if not isinstance(hf_model_or_dir, nn.Module):
        path = Path(hf_model_or_dir)
        if path.is_dir():
            return load_hf_dir(path, dtype)
        if path.exists() or str(hf_model_or_dir).startswith((".", "/")):
            raise MissingFileError(f"{hf_model_or_dir} is not a directory written by save_pretrained")
        return load_hf_dir(_hub_folder(str(hf_model_or_dir)), dtype)  # a hub name such as "albert/albert-base-v2"
    hf_model = hf_model_or_dir
    kind = type(hf_model).__name__
    if kind not in HF_TO_OURS:
        raise ValueError(f"cannot convert {kind}; albert_mini reads {sorted(HF_TO_OURS)}")
    config = config_from_hf(hf_model.config)
    # The label count lives in HF's config and in our classifier's constructor.
    model = _from_state(kind, config, hf_model.config.num_labels, hf_model.state_dict(), f"HF {kind}", dtype)
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


def _retie(model: nn.Module) -> None:
    """Loading with assign=True replaces tensors one name at a time; restore the ties by object identity."""
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    heads = [m for m in model.modules() if hasattr(m, "decoder") and hasattr(m, "bias")]
    for head in heads:
        head.bias = head.decoder.bias
