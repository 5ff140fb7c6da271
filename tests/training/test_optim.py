"""LAMB against a NumPy transcription of the reference equations; schedule and clipping against closed forms."""

import numpy as np
import pytest
import torch
from torch import nn

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.training.optim import (
    Lamb,
    WarmupPolyDecay,
    build_optimizer,
    clip_grad_global_norm,
    is_excluded,
    param_groups,
)


class Toy(nn.Module):
    """Decayed matrices (one all-zero), a bias and a LayerNorm: every branch of LAMB."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.dense = nn.Linear(3, 4)
        self.LayerNorm = nn.LayerNorm(4)
        self.zero_start = nn.Parameter(torch.zeros(2, 2))  # ||w|| = 0 at step 1: trust ratio 1
        self.always_zero = nn.Parameter(torch.zeros(3))  # zero weight and zero gradient: u = 0, ratio 1
        with torch.no_grad():
            for p in (self.dense.weight, self.dense.bias, self.LayerNorm.weight, self.LayerNorm.bias):
                p.copy_(torch.randn(p.shape, generator=g))


def numpy_lamb(weights: dict, grads_per_step: list[dict], lr: float, excluded: set, b1=0.9, b2=0.999, eps=1e-6,
               wd=0.01) -> dict:
    """The reference update, in float64, written out independently of albert_mini.training.optim."""
    w = {k: v.astype(np.float64).copy() for k, v in weights.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    for grads in grads_per_step:
        for k in w:
            g = grads[k].astype(np.float64)
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            u = m[k] / (np.sqrt(v[k]) + eps)
            if k not in excluded:
                u = u + wd * w[k]
            r = 1.0
            if k not in excluded:
                wn, un = np.linalg.norm(w[k]), np.linalg.norm(u)
                r = wn / un if wn > 0 and un > 0 else 1.0
            w[k] = w[k] - r * lr * u
    return w


def test_lamb_matches_numpy_reference_over_several_steps():
    model = Toy()
    start = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    rng = np.random.default_rng(1)
    grads = []
    for _ in range(5):
        step = {n: rng.normal(size=p.shape).astype(np.float32) for n, p in model.named_parameters()}
        step["always_zero"] = np.zeros(3, dtype=np.float32)
        grads.append(step)
    opt = Lamb(param_groups(model, 0.01), lr=0.05)
    for step in grads:
        for n, p in model.named_parameters():
            p.grad = torch.from_numpy(step[n])
        opt.step()
    expected = numpy_lamb(start, grads, 0.05, excluded={"dense.bias", "LayerNorm.weight", "LayerNorm.bias"})
    for n, p in model.named_parameters():
        np.testing.assert_allclose(p.detach().numpy(), expected[n], rtol=2e-5, atol=1e-7, err_msg=n)
    assert torch.equal(model.always_zero, torch.zeros(3))
    assert model.zero_start.abs().sum() > 0  # moved by lr * u with ratio 1 at step 1


def test_trust_ratio_scales_the_step_to_the_weight_norm():
    # With one step and a large weight the update norm is lr * ||w||: the point of layer-wise adaptation.
    w = nn.Parameter(torch.full((10,), 100.0))
    opt = Lamb([{"params": [w], "weight_decay": 0.0, "adapt": True}], lr=0.01)
    w.grad = torch.ones(10)
    before = w.detach().clone()
    opt.step()
    assert torch.allclose((before - w.detach()).norm(), 0.01 * before.norm(), rtol=1e-5)


def test_param_groups_split_by_name_and_count_tied_tensors_once():
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano"))
    decay, no_decay = param_groups(model, 0.01)
    decay_names = [n for n, _ in decay["params"]]
    no_decay_names = [n for n, _ in no_decay["params"]]
    assert all(("LayerNorm" in n or "layer_norm" in n or "bias" in n) for n in no_decay_names)
    assert not any(is_excluded(n) for n in decay_names)
    assert "albert.embeddings.word_embeddings.weight" in decay_names  # embeddings are adapted
    assert "predictions.decoder.weight" not in decay_names  # the tied copy is not a second parameter
    unique = {id(p) for p in model.parameters()}
    grouped = [id(p) for _, p in decay["params"] + no_decay["params"]]
    assert len(grouped) == len(set(grouped)) == len(unique)
    assert (decay["weight_decay"], decay["adapt"]) == (0.01, True)
    assert (no_decay["weight_decay"], no_decay["adapt"]) == (0.0, False)


def test_param_groups_reject_a_shared_tensor_with_conflicting_names():
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Module()
    model.b.bias = model.a.weight  # one tensor, named once as a weight and once as a bias
    with pytest.raises(ValueError, match="disagree"):
        param_groups(model, 0.01)


def test_build_optimizer_adamw_uses_the_same_groups_and_rejects_unknown_names():
    model = Toy()
    opt = build_optimizer(model, "adamw", lr=1e-3, weight_decay=0.01)
    assert isinstance(opt, torch.optim.AdamW)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.01, 0.0]
    assert opt.param_groups[1]["param_names"] == ["dense.bias", "LayerNorm.weight", "LayerNorm.bias"]
    with pytest.raises(ValueError, match="lamb, adamw"):
        build_optimizer(model, "sgd")


@pytest.mark.parametrize("step, expected", [
    (0, 0.0),
    (1562, 0.00176 * 1562 / 3125),
    (3124, 0.00176 * 3124 / 3125),
    (3125, 0.00176 * (1 - 3125 / 125000)),  # the small drop at the end of warmup: 0.00176 -> 0.001716
    (62500, 0.00088),
    (125000, 0.0),
    (200000, 0.0),
])
def test_schedule_matches_the_closed_form(step, expected):
    schedule = WarmupPolyDecay(0.00176, 125000, 3125)
    assert schedule(step) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_schedule_power_and_no_warmup_and_apply():
    schedule = WarmupPolyDecay(1.0, 100, 0, power=2.0)
    assert schedule(0) == 1.0 and schedule(50) == pytest.approx(0.25) and schedule(90) == pytest.approx(0.01)
    opt = build_optimizer(Toy(), "lamb", lr=123.0)
    assert WarmupPolyDecay(2.0, 10, 4).apply(opt, 2) == 1.0
    assert all(g["lr"] == 1.0 for g in opt.param_groups)
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupPolyDecay(1.0, 10, 11)


def test_clipping_scales_to_the_limit_and_leaves_small_gradients_alone():
    a, b = nn.Parameter(torch.zeros(3)), nn.Parameter(torch.zeros(4))
    a.grad, b.grad = torch.tensor([3.0, 0.0, 0.0]), torch.tensor([0.0, 4.0, 0.0, 0.0])  # global norm 5
    assert clip_grad_global_norm([a, b], 1.0) == pytest.approx(5.0)
    assert torch.allclose(a.grad, torch.tensor([0.6, 0, 0])) and torch.allclose(b.grad, torch.tensor([0, 0.8, 0, 0]))
    small = torch.tensor([0.1, -0.2, 0.3])
    a.grad, b.grad = small.clone(), None
    clip_grad_global_norm([a, b], 1.0)
    assert torch.equal(a.grad, small)


def test_clipping_agrees_with_torch_on_random_gradients():
    g = torch.Generator().manual_seed(3)
    ours = [nn.Parameter(torch.zeros(s)) for s in [(5, 7), (11,), (2, 3, 4)]]
    theirs = [nn.Parameter(torch.zeros(p.shape)) for p in ours]
    for p, q in zip(ours, theirs):
        p.grad = torch.randn(p.shape, generator=g)
        q.grad = p.grad.clone()
    norm = clip_grad_global_norm(ours, 1.0)
    torch_norm = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert norm == pytest.approx(torch_norm.item(), rel=1e-6)
    for p, q in zip(ours, theirs):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-7)


def test_clipping_refuses_a_non_finite_gradient():
    p = nn.Parameter(torch.zeros(2))
    p.grad = torch.tensor([float("nan"), 1.0])
    with pytest.raises(FloatingPointError, match="learning rate"):
        clip_grad_global_norm([p], 1.0)
