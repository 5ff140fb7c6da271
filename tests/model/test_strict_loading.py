"""Model folders from outside are read strictly: only safetensors, every weight present and
shaped as the config says, float32, the config's fields checked; and the attention-mask rule."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")  # a test/interop dependency, installed by `make test`

from safetensors.torch import load_file, save_file  # noqa: E402

from albert_mini import AlbertConfig, AlbertForPreTraining, AlbertModel  # noqa: E402
from albert_mini.model import albert  # noqa: E402
from albert_mini.model.config import ConfigError  # noqa: E402
from albert_mini.model.hf import HF_DEFAULTS, HFModelError, config_to_hf, from_hf  # noqa: E402
from albert_mini.paths import PRETRAINED_MODEL, sha256_file  # noqa: E402
from albert_mini.training.checkpoint import CheckpointError, load_pretrained  # noqa: E402

TINY = dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=32)


@pytest.fixture
def hf_dir(tmp_path):
    """A save_pretrained folder of a tiny HF AlbertForPreTraining, and the model."""
    torch.manual_seed(0)
    model = transformers.AlbertForPreTraining(config_to_hf(AlbertConfig(**TINY))).eval()
    folder = tmp_path / "hf"
    model.save_pretrained(folder)
    return folder, model


def edit_config(folder, **fields):
    config = json.loads((folder / "config.json").read_text())
    config.update(fields)
    (folder / "config.json").write_text(json.dumps(config))


def edit_weights(folder, change):
    weights = {k: v.clone() for k, v in load_file(folder / "model.safetensors").items()}  # not backed by the file
    change(weights)
    save_file(weights, folder / "model.safetensors")


def never_unpickle(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a pickle was read")
    monkeypatch.setattr(torch, "load", refuse)


def test_the_defaults_are_transformers_defaults():
    defaults = transformers.AlbertConfig()
    assert {name: getattr(defaults, name) for name in HF_DEFAULTS} == HF_DEFAULTS


def test_a_folder_loads_with_the_same_weights_without_unpickling(hf_dir, monkeypatch):
    folder, hf = hf_dir
    never_unpickle(monkeypatch)
    ours = from_hf(folder)
    assert isinstance(ours, AlbertForPreTraining) and not ours.training
    assert torch.equal(ours.albert.embeddings.word_embeddings.weight, hf.albert.embeddings.word_embeddings.weight)
    assert ours.predictions.decoder.weight is ours.albert.embeddings.word_embeddings.weight  # ties restored
    assert ours.predictions.bias is ours.predictions.decoder.bias


def test_a_decoy_safetensors_beside_a_pickle_is_refused(hf_dir, monkeypatch):
    folder, hf = hf_dir
    (folder / "model.safetensors").rename(folder / "decoy.safetensors")
    torch.save(hf.state_dict(), folder / "pytorch_model.bin")
    never_unpickle(monkeypatch)
    with pytest.raises(HFModelError) as err:
        from_hf(folder)
    message = str(err.value)
    assert "pytorch_model.bin" in message and "decoy.safetensors" in message and "convert them to safetensors" \
        in message and "\n" not in message


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "weights.ckpt", "model.pkl"])
def test_weights_in_another_format_are_refused_naming_the_conversion(hf_dir, name):
    folder, _ = hf_dir
    (folder / "model.safetensors").rename(folder / name)
    with pytest.raises(HFModelError, match=f"no .safetensors weights.*only {name}.*save_pretrained"):
        from_hf(folder)


def test_safetensors_beside_a_pickle_reads_the_safetensors(hf_dir, monkeypatch):
    folder, hf = hf_dir
    torch.save({"not": "read"}, folder / "pytorch_model.bin")
    never_unpickle(monkeypatch)
    assert torch.equal(from_hf(folder).albert.pooler.weight, hf.albert.pooler.weight)


@pytest.mark.parametrize("change,phrase", [
    (lambda w: w.pop("albert.pooler.weight"), "missing: albert.pooler.weight"),
    (lambda w: w.update(extra=torch.zeros(3)), "unexpected: extra"),
    (lambda w: w.update({"albert.pooler.bias": torch.zeros(5)}), "mis-shaped: albert.pooler.bias (5,) where the "
                                                                 "config needs (16,)"),
    (lambda w: w.update({"albert.pooler.bias": torch.zeros(16, dtype=torch.int64)}), "not floating-point: "
                                                                                     "albert.pooler.bias"),
    (lambda w: w.update({"predictions.decoder.weight": torch.ones(60, 8)}), "differ, but the model ties them"),
])
def test_missing_unexpected_or_misshaped_weights_are_refused_by_name(hf_dir, change, phrase):
    folder, _ = hf_dir
    edit_weights(folder, change)
    with pytest.raises(HFModelError) as err:
        from_hf(folder)
    assert phrase in str(err.value) and "model.safetensors" in str(err.value)


def poison(name, value, count=1):
    def change(weights):
        flat = weights[name].view(-1)
        flat[:count] = value
    return change


@pytest.mark.parametrize("change,phrase", [
    (poison("albert.pooler.weight", float("nan")), "albert.pooler.weight (1 NaN)"),
    (poison("albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.bias", float("inf"), 3),
     "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.bias (3 inf)"),
    (poison("predictions.bias", float("-inf")), "predictions.bias (1 inf)"),
], ids=["nan", "inf", "minus-inf"])
def test_weights_that_are_not_finite_are_refused_naming_the_tensor(hf_dir, change, phrase):
    """Checking every weight reads its values too; a folder saved after its training diverged is refused."""
    folder, _ = hf_dir
    edit_weights(folder, change)
    with pytest.raises(HFModelError) as err:
        from_hf(folder)
    message = str(err.value)
    assert "holds weights that are not finite numbers (in float32)" in message and phrase in message, message
    assert "model.safetensors" in message and "\n" not in message


def test_a_float64_weight_too_large_for_float32_is_refused(hf_dir):
    """Finite in the file, infinite once in float32: the model would hold an infinity all the same."""
    folder, _ = hf_dir
    edit_weights(folder, lambda w: w.update({"albert.pooler.bias": torch.full((16,), 1e300, dtype=torch.float64)}))
    with pytest.raises(HFModelError, match=re.escape("albert.pooler.bias (16 inf)")):
        from_hf(folder)
    assert from_hf(folder, dtype=torch.float64).albert.pooler.bias[0] == 1e300  # in float64 it is a number


def test_a_checkpoint_with_nan_weights_is_refused_like_a_folder(tmp_path):
    """load_pretrained reads a run's checkpoint as strictly (the trainer never writes one with NaN, but a hand
    edit or an older version could)."""
    model = shutil.copytree(PRETRAINED_MODEL, tmp_path / "model")
    edit_weights(model, poison("albert.pooler.bias", float("nan")))
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["sha256"]["model.safetensors"] = sha256_file(model / "model.safetensors")
    (model / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=re.escape("albert.pooler.bias (1 NaN)")):
        load_pretrained(model)


def test_a_float16_folder_gives_a_float32_model_unless_asked(hf_dir):
    folder, hf = hf_dir
    edit_config(folder, dtype="float16", torch_dtype="float16")
    edit_weights(folder, lambda w: w.update({k: v.half() for k, v in w.items()}))
    ours = from_hf(folder)
    assert {p.dtype for p in ours.parameters()} == {torch.float32}
    assert torch.equal(ours.albert.pooler.weight, hf.albert.pooler.weight.half().float())
    assert {p.dtype for p in from_hf(folder, dtype=torch.float16).parameters()} == {torch.float16}


@pytest.mark.parametrize("field,value,phrase", [
    ("hidden_act", "swish", "HF hidden_act 'swish' has no albert_mini equivalent"),
    ("hidden_act", ["gelu"], "has no albert_mini equivalent"),
    ("hidden_dropout_prob", "0.1", "hidden_dropout_prob must be in [0, 1)"),
    ("initializer_range", -0.02, "initializer_range must be in (0, 1)"),
    ("layer_norm_eps", float("nan"), "layer_norm_eps must be in (0, 1)"),
    ("num_hidden_layers", "2", "num_hidden_layers must be a positive integer"),
])
def test_bad_config_fields_are_one_config_error(hf_dir, field, value, phrase):
    folder, _ = hf_dir
    edit_config(folder, **{field: value})
    with pytest.raises(ConfigError) as err:
        from_hf(folder)
    assert phrase in str(err.value) and str(folder / "config.json") in str(err.value)


@pytest.mark.parametrize("damage", ["truncated", "pickled"])
def test_a_damaged_safetensors_file_is_one_error(hf_dir, damage, monkeypatch):
    folder, hf = hf_dir
    weights = folder / "model.safetensors"
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:-100])
    else:
        torch.save(hf.state_dict(), weights)
    never_unpickle(monkeypatch)
    with pytest.raises(HFModelError, match="is not a readable safetensors file"):
        from_hf(folder)


def test_sharded_weights_load_and_a_shard_outside_the_folder_is_refused(tmp_path, hf_dir):
    """Shards as save_pretrained writes them for a large model: model-0000N-of-0000M.safetensors and an index."""
    folder, hf = hf_dir
    sharded = shutil.copytree(folder, tmp_path / "sharded")
    weights = {k: v.clone() for k, v in load_file(sharded / "model.safetensors").items()}
    (sharded / "model.safetensors").unlink()
    names = sorted(weights)
    weight_map = {}
    for i, part in enumerate((names[:10], names[10:])):
        shard = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file({n: weights[n] for n in part}, sharded / shard)
        weight_map.update({n: shard for n in part})
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert torch.equal(from_hf(sharded).albert.pooler.weight, hf.albert.pooler.weight)
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    name = next(iter(index["weight_map"]))
    index["weight_map"][name] = "../elsewhere.safetensors"
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(HFModelError, match="only files beside the index are read"):
        from_hf(sharded)


def test_the_classifier_label_count_comes_from_the_folder(tmp_path):
    hf = transformers.AlbertForSequenceClassification(config_to_hf(AlbertConfig(**TINY), num_labels=3))
    hf.save_pretrained(tmp_path / "cls")
    assert from_hf(tmp_path / "cls").num_labels == 3


def test_our_checkpoints_are_read_as_strictly(tmp_path):
    model = shutil.copytree(PRETRAINED_MODEL, tmp_path / "model")
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["sha256"] = ["not", "a", "map"]
    (model / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="is missing or unreadable"):
        load_pretrained(model)


def test_a_checkpoint_missing_a_weight_names_it(tmp_path):
    """A model.safetensors whose manifest was rewritten to match still has to hold every weight."""
    from albert_mini.paths import sha256_file

    model = shutil.copytree(PRETRAINED_MODEL, tmp_path / "model")
    weights = {k: v.clone() for k, v in load_file(model / "model.safetensors").items()}  # not backed by the file
    weights.pop("albert.pooler.bias")
    save_file(weights, model / "model.safetensors")
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["sha256"]["model.safetensors"] = sha256_file(model / "model.safetensors")
    (model / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="missing: albert.pooler.bias"):
        load_pretrained(model)


# ------------------------------------------------------------------------------ the attention-mask rule
def mask_outputs(mask):
    config = AlbertConfig(**TINY)
    torch.manual_seed(0)
    model = AlbertModel(config).eval()
    ids = torch.randint(5, 60, (3, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return model(ids, attention_mask=mask).last_hidden_state


def keep_mask():
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 5:] = mask[2, 3:] = 0
    return mask


@pytest.mark.parametrize("form", [
    lambda m: m.bool(), lambda m: m.float(), lambda m: (1.0 - m.float()) * -10000.0,
    lambda m: (1.0 - m.float()) * torch.finfo(torch.float32).min, lambda m: (m.float() - 1).masked_fill(m == 0, -1e9),
], ids=["bool", "float-0-1", "hf-additive-10000", "hf-additive-min", "additive-1e9"])
def test_every_mask_form_gives_the_keep_masks_outputs(form):
    """An additive float mask (0 keeps, a large negative number drops) is converted, never read inverted."""
    assert torch.equal(mask_outputs(form(keep_mask())), mask_outputs(keep_mask()))


def test_an_all_zero_float_mask_is_additive_and_keeps_everything():
    torch.testing.assert_close(mask_outputs(torch.zeros(3, 9)), mask_outputs(None))


@pytest.mark.parametrize("form", [
    lambda m: m[:, None, None, :], lambda m: m[:, None, None, :].expand(3, 1, 9, 9),
    lambda m: (1.0 - m.float())[:, None, None, :] * torch.finfo(torch.float32).min,
], ids=["B11T", "B1TT", "hf-additive-B11T"])
def test_an_extended_mask_gives_the_keep_masks_outputs(form):
    """(B, 1, 1, T) and (B, 1, T, T) are read by the rule of the (B, T) mask."""
    assert torch.equal(mask_outputs(form(keep_mask())), mask_outputs(keep_mask()))


def test_a_per_query_mask_masks_each_row_on_its_own():
    causal = torch.tril(torch.ones(9, 9, dtype=torch.long)).expand(3, 1, 9, 9)
    out = mask_outputs(causal)
    assert not torch.equal(out, mask_outputs(None))
    torch.testing.assert_close(out[:, 0], mask_outputs(torch.tensor([[1] + [0] * 8] * 3))[:, 0])  # sees itself only


@pytest.mark.parametrize("shape", [(3, 1), (1, 9), (3, 8), (3, 10), (9,), (3, 9, 9), (3, 2, 1, 9), (1, 1, 1, 9),
                                   (3, 1, 1, 8), (3, 1, 9, 1), (3, 1, 9, 9, 1)])
def test_a_mask_of_another_shape_is_a_value_error_naming_both_shapes(shape):
    """Broadcasting would take a (B, 1) mask silently, spreading its one value over every token."""
    with pytest.raises(ValueError, match=re.escape(f"attention_mask has shape {shape}; for input_ids of shape (3, 9) "
                                                   "it must be (3, 9)")) as raised:
        mask_outputs(torch.ones(shape, dtype=torch.long))
    assert "(3, 1, 1, 9) or (3, 1, 9, 9)" in str(raised.value)


def test_the_rule_is_decided_without_reading_the_mask_on_the_host():
    # Meta tensors have no values: any host read (bool, item) of the mask would raise here.
    bias = albert.extended_attention_mask(torch.zeros(2, 5, device="meta"), torch.float32)
    assert bias.shape == (2, 1, 1, 5) and bias.device.type == "meta"
    assert "additive" in AlbertModel.forward.__doc__


@pytest.mark.slow  # a subprocess or a retrain: make test runs it, test-fast does not
def test_a_loaded_model_survives_its_file_being_rewritten(hf_dir):
    """safetensors maps the file: the weights are copied out, so rewriting the folder in place (a second process
    saving again) cannot crash this one with SIGBUS. In a subprocess, as a crash would end the test run."""
    import subprocess
    import sys

    folder, _ = hf_dir
    code = ("import sys, torch; from albert_mini.model.hf import from_hf; m = from_hf(sys.argv[1]); "
            "open(sys.argv[1] + '/model.safetensors', 'wb').close(); "
            "print(float(sum(p.double().sum() for p in m.parameters())))")
    result = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_hub_name_downloads_only_config_safetensors_and_the_tokenizer(hf_dir, monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    folder, hf = hf_dir
    asked = {}

    def snapshot_download(name, allow_patterns):
        asked.update(name=name, patterns=allow_patterns)
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    assert torch.equal(from_hf("albert/tiny").albert.pooler.weight, hf.albert.pooler.weight)
    assert asked["name"] == "albert/tiny" and not any(p.endswith((".bin", ".pt")) for p in asked["patterns"])

    def offline(name, allow_patterns):
        raise OSError("no network\nsecond line")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(HFModelError, match="cannot download 'albert/tiny' from the Hugging Face hub \\(no network\\)"):
        from_hf("albert/tiny")
