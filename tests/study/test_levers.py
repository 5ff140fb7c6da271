"""Stage A's levers (albert_mini/harness/experiments/levers.py) at a tiny size, the screen's rules on hand-made
scores, and the run keys: a lever enters only its own runs' keys."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from fast_branches import Killed, die_at_step, fast_trunk_checkpoint

from albert_mini.harness.experiments import levers, sop_levers
from albert_mini.harness.experiments import trunk as trunk_module
from albert_mini.harness.experiments.budget import FAST, FULL
from albert_mini.harness.experiments.data import token_documents
from albert_mini.harness.experiments.runs import RunCache, cache_dir, run_key
from albert_mini.harness.experiments.sentence_task import branch_spec, trunk_spec
from albert_mini.model.albert import AlbertForPreTraining
from albert_mini.text.tokenizer import Tokenizer
from albert_mini.training.optim import build_optimizer
from albert_mini.training.setup import Phase

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

SENTENCE_PATH = {"albert.pooler.weight", "albert.pooler.bias", "sop_classifier.classifier.weight",
                 "sop_classifier.classifier.bias"}


def stepped(lever: bool, lr=1e-2, weight_decay=0.01) -> tuple[dict, dict, dict]:
    """(weights before, gradients, weights after) of one LAMB step of a small model, with or without A1."""
    torch.manual_seed(0)
    model = AlbertForPreTraining(trunk_module.trunk_config())
    optimizer = build_optimizer(model, "lamb", lr=lr, weight_decay=weight_decay)
    if lever:
        assert set(levers.adam_sentence_path(model, optimizer)) == SENTENCE_PATH
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: torch.randn_like(p) for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.grad = grads[n].clone()
    optimizer.step()
    return before, grads, {n: p.detach().clone() for n, p in model.named_parameters()}


def adam_step(weight, grad, lr=1e-2, betas=(0.9, 0.999), eps=1e-6) -> torch.Tensor:
    """One step of torch's Adam with its bias correction undone (LAMB's moments have none): at step 1 the update is
    lr * m / (sqrt(v) + eps) with m = (1 - b1) g and v = (1 - b2) g^2."""
    w = weight.clone().requires_grad_()
    w.grad = grad.clone()
    bc1, bc2 = 1 - betas[0], 1 - betas[1]
    torch.optim.Adam([w], lr=lr * bc1 / math.sqrt(bc2), betas=betas, eps=eps / math.sqrt(bc2)).step()
    return w.detach()


def test_a1_moves_the_sentence_path_by_plain_adam_steps():
    before, grads, after = stepped(lever=True)
    for name in SENTENCE_PATH:  # no trust ratio, no weight decay
        assert torch.allclose(after[name], adam_step(before[name], grads[name]), rtol=1e-5, atol=1e-7), name
    # Everything else keeps LAMB's per-tensor trust ratio: its step is not Adam's.
    name = "albert.encoder.embedding_hidden_mapping_in.weight"
    assert not torch.allclose(after[name], adam_step(before[name], grads[name]), rtol=1e-3)
    # Without A1 the pooler's step is LAMB's (trust ratio and weight decay): the lever is what changed it.
    before, grads, plain = stepped(lever=False)
    assert not torch.allclose(plain["albert.pooler.weight"],
                              adam_step(before["albert.pooler.weight"], grads["albert.pooler.weight"]), rtol=1e-3)


def test_a1_keeps_every_tensor_in_exactly_one_group_and_its_moments():
    torch.manual_seed(0)
    model = AlbertForPreTraining(trunk_module.trunk_config())
    optimizer = build_optimizer(model, "lamb", lr=1e-2)
    pooler = model.albert.pooler.weight
    optimizer.state[pooler]["exp_avg"] = torch.ones_like(pooler)  # a moment carried over from the trunk
    levers.adam_sentence_path(model, optimizer)
    seen = [id(p) for group in optimizer.param_groups for p in group["params"]]
    assert len(seen) == len(set(seen)) == len({id(p) for p in model.parameters()})
    group = optimizer.param_groups[-1]
    assert (group["adapt"], group["weight_decay"]) == (False, 0.0) and set(group["param_names"]) == SENTENCE_PATH
    assert torch.equal(optimizer.state[pooler]["exp_avg"], torch.ones_like(pooler))


def test_a2_gives_nsp_batches_until_its_switch_step_then_the_sop_rows_batches():
    documents, tokenizer = token_documents("train", 6), Tokenizer.default()
    phases = (Phase(600, 64, 2), Phase(5, 128, 2))

    def source(task):  # the v3 row's batches of this task and seed, built afresh
        setup = trunk_module.FAST_TRUNK.setup(task, trunk_module.BRANCH_DATA_SEED + 0)
        return trunk_module.training_batches(setup, documents, tokenizer, phases=phases)

    # A2 switches after nsp_first = 500 steps; the same lever switching after 5 draws 100 times fewer batches.
    assert levers.A2.nsp_first == 500 and not levers.A1.nsp_first
    switch = 5
    lever = dataclasses.replace(levers.A2, nsp_first=switch)
    switched = lever.batches(trunk_module.FAST_TRUNK, 0, documents, tokenizer, phases)
    nsp, sop = source("nsp"), source("sop")
    drawn = [next(switched) for _ in range(switch + 2)]
    expected = [next(nsp) for _ in range(switch)] + [next(sop) for _ in range(switch + 2)][switch:]
    for i in (0, switch - 1, switch, switch + 1):
        assert torch.equal(drawn[i]["input_ids"], expected[i]["input_ids"]), i
        assert torch.equal(drawn[i]["sentence_order_label"], expected[i]["sentence_order_label"]), i
    assert not torch.equal(drawn[switch - 1]["sentence_order_label"], drawn[switch]["sentence_order_label"]) or \
        not torch.equal(drawn[switch - 1]["input_ids"], drawn[switch]["input_ids"])


@pytest.fixture(scope="module")
def trunk_checkpoint(tmp_path_factory):
    return fast_trunk_checkpoint(tmp_path_factory)


@pytest.mark.slow
def test_a2_draws_the_head_once_and_keeps_it_through_the_switch(trunk_checkpoint, monkeypatch):
    draws = []
    original = trunk_module.fresh_sentence_classifier
    monkeypatch.setattr(trunk_module, "fresh_sentence_classifier",
                        lambda *args: (draws.append(args[2]), original(*args)))
    lever = dataclasses.replace(levers.A2, nsp_first=1)  # the fast plan: 2 short steps, the switch after 1
    record = trunk_module.train_branch(trunk_checkpoint, "sop", 0, trunk_module.FAST_TRUNK, trunk_module.FAST_BRANCH,
                                       FAST, lever)
    assert draws == [0]  # one fresh head, at the branch start; nothing is redrawn at the switch
    assert record["lever"] == lever.settings() and "downstream" not in record  # the screen fine-tunes nothing
    assert record["steps"] == record["start_step"] + 4 and "head" in record["sentence_64"]["sop_unmasked"]


@pytest.mark.slow
def test_a_lever_branch_killed_mid_run_resumes_to_the_same_result(trunk_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setattr(trunk_module, "BRANCH_SAVE_EVERY", 1)
    args = (trunk_checkpoint, "sop", 0, trunk_module.FAST_TRUNK, trunk_module.FAST_BRANCH, FAST, levers.A1)
    whole = trunk_module.train_branch(*args, tmp_path / "whole")
    assert not (tmp_path / "whole").exists()  # the checkpoints go once the run has ended

    def prepare_then_die_at_the_fourth_step(self, model, optimizer):  # after 2 short steps and 1 long one
        levers.adam_sentence_path(model, optimizer)
        die_at_step(optimizer, 4)

    monkeypatch.setattr(levers.Lever, "prepare", prepare_then_die_at_the_fourth_step)
    with pytest.raises(Killed):
        trunk_module.train_branch(*args, tmp_path / "killed")
    monkeypatch.undo()
    monkeypatch.setattr(trunk_module, "BRANCH_SAVE_EVERY", 1)
    resumed = trunk_module.train_branch(*args, tmp_path / "killed")
    assert resumed["resumed_at"] == whole["start_step"] + 3
    for key in ("sentence_64", "sentence_128", "mlm_64", "mlm_128", "after_short"):
        assert resumed[key] == whole[key], key
    assert [p["loss"] for p in resumed["curve"]] == pytest.approx([p["loss"] for p in whole["curve"]])


# ---------------------------------------------------------------------------------------------- keys and rules
def test_a_lever_enters_only_its_own_runs_keys():
    trunk, branch = sop_levers.plans(FULL)
    key = run_key(trunk_spec(trunk))
    control = [branch_spec(key, 3000, "sop", seed, branch, FULL) for seed in (0, 1, 2)]
    assert all("lever" not in spec for spec in control)
    # v3's exploratory SOP branches are still found under their committed keys: the control is read, not rerun.
    assert all(RunCache(cache_dir()).load(spec) is not None for spec in control)
    keys = {run_key(sop_levers.lever_spec(key, 3000, 0, branch, lever)) for lever in (levers.A1, levers.A2)}
    assert len(keys) == 2 and not keys & {run_key(spec) for spec in control}


def score(sop: float) -> dict:
    correct = "1" * round(1000 * sop) + "0" * (1000 - round(1000 * sop))
    return {"sentence_64": {"sop_unmasked": {"probe_pooled": {"accuracy": sop, "correct": correct}}}}


def test_the_stop_rule_reads_seed_0_of_each_lever():
    assert sop_levers.seeds_to_run({"A1": score(0.54), "A2": score(0.549)}, FULL) == []
    assert sop_levers.seeds_to_run({"A1": score(0.54), "A2": score(0.55)}, FULL) == ["A2"]
    stop = sop_levers.stop_decision({"A1": score(0.50), "A2": score(0.52)}, FULL)
    assert stop["going_on"] == [] and "A3 and A4" in stop["decision"]
    assert sop_levers.seeds_to_run({"A1": score(0.40)}, FAST) == ["A1"]  # the fast plan always goes on (tests)


def test_a_lever_passes_only_with_60_percent_and_3_points_over_the_surface_in_every_seed():
    def seeds(*values):
        return {str(s): {"sop": v} for s, v in enumerate(values)}

    assert sop_levers.verdict(seeds(0.61, 0.62, 0.60), surface=0.57)["passes"]
    assert not sop_levers.verdict(seeds(0.61, 0.62, 0.599), surface=0.57)["passes"]  # one seed below 60%
    assert not sop_levers.verdict(seeds(0.61, 0.62, 0.60), surface=0.58)["passes"]  # 2 points over the surface
    undecided = sop_levers.verdict(seeds(0.61), surface=0.57)
    assert not undecided["passes"] and undecided["reading"].startswith("undecided")
    assert sop_levers.verdict(seeds(0.50), surface=0.57)["reading"] == "fails"
