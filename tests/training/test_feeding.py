"""Fed like a GPU job: the MLM head on fixed-size masked positions, and batches through a DataLoader.

The static gather is checked against the data-dependent one it replaces (`labels[labels != -100]`): the same logits
at the real positions, the same loss, the same gradients. The DataLoader with worker processes must hand out the
same bits in the same order as the source alone, and a run fed by workers, killed and resumed, must end bit-identical
to one fed without them.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.model.albert import masked_positions
from albert_mini.specials import IGNORE_INDEX
from albert_mini.text.batch_source import LoadedBatches, PhasedBatches
from albert_mini.text.batches import PretrainingBatches, build_pretraining_dataset
from albert_mini.training.objectives import PretrainingObjective
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import TrainConfig, Trainer
from pretraining_helpers import austen_token_documents_head, tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

CONFIG = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def labelled_batch(B=4, T=24, cap=6, seed=0):
    """Random ids and labels: row 0 masks nothing, row 1 exactly `cap` tokens, the others fewer, scattered."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, CONFIG.vocab_size, (B, T), generator=g)
    labels = torch.full((B, T), IGNORE_INDEX)
    for row, count in zip(range(1, B), [cap] + [cap // 2] * B):
        where = torch.randperm(T - 1, generator=g)[:count] + 1
        labels[row, where] = ids[row, where]
    return {"input_ids": ids, "attention_mask": torch.ones(B, T, dtype=torch.long),
            "token_type_ids": torch.zeros(B, T, dtype=torch.long), "labels": labels,
            "sentence_order_label": torch.randint(0, 2, (B,), generator=g)}


def test_masked_positions_are_the_masked_tokens_in_order_then_padding():
    labels = torch.tensor([[-100, 7, -100, 9, -100], [-100, -100, -100, -100, -100]])
    positions, targets = masked_positions(labels, 3)
    assert positions[0, :2].tolist() == [1, 3] and targets.tolist() == [[7, 9, -100], [-100, -100, -100]]
    with pytest.raises(RuntimeError, match="more masked tokens than max_predictions"):
        masked_positions(labels, 1)


def n_position_mlm(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The data-dependent path the gather replaces: the head at `labels[labels != -100]`'s N positions, (N, V)
    logits in row-major order, and their summed cross-entropy."""
    h = model.albert(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).last_hidden_state
    selected = batch["labels"] != IGNORE_INDEX
    logits = model.predictions(h[selected])
    return logits, torch.nn.functional.cross_entropy(logits, batch["labels"][selected], reduction="sum")


def test_the_padded_gather_gives_the_n_position_logits_loss_and_gradients():
    """With max_predictions (8, above the batch's largest count 6) and without it (P = 6), mlm_logits is (B, P, V);
    its masked rows, loss and gradients are those of the head run at the N masked positions alone."""
    torch.manual_seed(0)
    model = AlbertForPreTraining(CONFIG)
    batch = labelled_batch()
    selected = batch["labels"] != IGNORE_INDEX
    objective = PretrainingObjective()

    def gradients():
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    model.zero_grad()
    logits_n, sum_n = n_position_mlm(model, batch)
    sum_n.backward()
    grads_n = gradients()
    for options, P in (({}, 6), ({"max_predictions": 8}, 8)):
        model.zero_grad()
        out = model(**batch, **options)
        out.mlm_loss_sum.backward()
        assert out.mlm_logits.shape == (4, P, CONFIG.vocab_size) and out.mlm_labels.shape == (4, P)
        real = out.mlm_labels != IGNORE_INDEX
        assert torch.equal(out.mlm_labels[real], batch["labels"][selected]) and int(out.mlm_count) == selected.sum()
        torch.testing.assert_close(out.mlm_logits[real], logits_n, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(out.mlm_loss_sum, sum_n, rtol=1e-6, atol=0)
        _, stats = objective(out, batch, objective.denominators(batch))
        right = (logits_n.argmax(-1) == batch["labels"][selected]).sum()
        want = [float(sum_n.detach()), float(right), float(selected.sum())]  # loss sum, correct, masked tokens
        got = [stats[k].item() for k in ("mlm_loss", "mlm_correct", "mlm_count")]
        assert got == pytest.approx(want, rel=1e-6)
        for name, grad in gradients().items():
            torch.testing.assert_close(grad, grads_n[name], rtol=1e-5, atol=1e-7, msg=name)


def test_the_static_gather_compiles_without_a_graph_break():
    model = AlbertForPreTraining(CONFIG).eval()
    batch = labelled_batch()
    explained = torch._dynamo.explain(model)(**batch, max_predictions=6)
    assert explained.graph_break_count == 0, explained.break_reasons


def pretraining_source(cap=20, seq_len=64, batch_size=4):
    dataset = build_pretraining_dataset(austen_token_documents_head(4), tokenizer(), "sop", seq_len, seed=3,
                                        max_predictions=cap)
    return PretrainingBatches(dataset, batch_size)


def test_a_source_says_its_cap_and_the_trainer_uses_it():
    source = pretraining_source(cap=7)
    assert source.max_predictions == 7 and LoadedBatches(source).max_predictions == 7
    assert PhasedBatches(pretraining_source(cap=5), source, 2).max_predictions == 7
    trainer = Trainer(AlbertForPreTraining(CONFIG), *optimization(AlbertForPreTraining(CONFIG)), source,
                      TrainConfig(max_steps=1))
    assert trainer._forward_options == {"max_predictions": 7}
    for i in range(20):  # and no sequence masks more than that
        assert (source.batch(0, i)["labels"] != IGNORE_INDEX).sum(1).max() <= 7


def optimization(model):
    return build_optimizer(model, "lamb", lr=2e-3), WarmupPolyDecay(2e-3, 6, 2)


def test_workers_hand_out_the_same_bits_in_the_same_order_and_resume_where_the_batches_ended():
    plain = PhasedBatches(pretraining_source(seq_len=32), pretraining_source(), switch_after=3)
    loaded = LoadedBatches(PhasedBatches(pretraining_source(seq_len=32), pretraining_source(), switch_after=3),
                           workers=2)
    for k in range(7):
        a, b = next(plain), next(loaded)
        assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a), k
    assert loaded.state_dict() == plain.state_dict()  # the workers read ahead; the position is what was handed out
    state = loaded.state_dict()
    expected = [next(plain) for _ in range(3)]
    next(loaded)
    loaded.load_state_dict(state)  # back, the batches read ahead dropped
    for want in expected:
        got = next(loaded)
        assert all(torch.equal(want[key], got[key]) for key in want)
    loaded.close()


def make_trainer(out_dir, workers, init_seed=0):
    torch.manual_seed(init_seed)
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.1,
                                                          attention_probs_dropout_prob=0.1))
    torch.manual_seed(1)
    cfg = TrainConfig(max_steps=6, accumulate=2, log_every=2, eval_every=3, save_every=3, out_dir=str(out_dir),
                      workers=workers)
    return Trainer(model, *optimization(model), pretraining_source(), cfg, val_batches=pretraining_source().take(1))


class Killed(Exception):
    """Stands in for the process dying."""


def test_a_run_fed_by_workers_resumes_to_the_bits_of_one_fed_without(tmp_path, monkeypatch):
    straight = make_trainer(tmp_path / "straight", workers=0)
    straight.train()

    doomed = make_trainer(tmp_path / "resumed", workers=2)
    real_log = Trainer._log_train

    def dies_at_step_4(self):
        if self.step == 4:
            raise Killed
        return real_log(self)

    monkeypatch.setattr(Trainer, "_log_train", dies_at_step_4)
    with pytest.raises(Killed):
        doomed.train()
    doomed.source.close()
    monkeypatch.undo()
    random.seed(99), np.random.seed(99), torch.manual_seed(99)  # a new process
    resumed = make_trainer(tmp_path / "resumed", workers=2, init_seed=1)
    assert isinstance(resumed.source, LoadedBatches) and resumed.resume() == 3
    resumed.train()
    resumed.source.close()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    last = [m for m in straight.history if m["type"] == "train"][-1]
    assert [m for m in resumed.history if m["type"] == "train"][-1]["loss"] == last["loss"]


def test_gpu_step_compares_ours_with_hf_doing_the_same_work(monkeypatch):
    """benchmarks/gpu_step.py's "hf_gathered" column: HF's modules, the MLM head only at the masked positions, give
    our model's loss on the same weights (so the columns time the same work), and every kind takes a step."""
    import importlib.util

    from cli_helpers import REPO

    spec = importlib.util.spec_from_file_location("gpu_step", REPO / "benchmarks" / "gpu_step.py")
    gpu_step = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_step", gpu_step)  # its dataclasses look their module up there
    spec.loader.exec_module(gpu_step)
    config = AlbertConfig.from_preset("albert-nano", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                      classifier_dropout_prob=0.0)
    ours, hf = gpu_step.build_pair(config, torch.device("cpu"))
    batch = gpu_step.make_batch(config, 3, 32, torch.device("cpu"))
    batch["max_predictions"] = int((batch["labels"] != IGNORE_INDEX).sum(1).max())
    gathered = gpu_step.HFGathered(hf)
    losses = {kind: gpu_step.step_loss(model, batch, kind).item()
              for kind, model in (("ours", ours), ("hf", hf), ("hf_gathered", gathered))}
    assert losses["hf_gathered"] == pytest.approx(losses["ours"], rel=1e-5)
    assert losses["hf"] == pytest.approx(losses["ours"], rel=1e-5)  # HF's own loss: every position, the same value
    for kind, model in (("ours", ours), ("hf_gathered", gathered)):
        before = [p.detach().clone() for p in model.parameters()]
        gpu_step.train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-3), batch, kind, False,
                            torch.device("cpu"))
        assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters())), kind
