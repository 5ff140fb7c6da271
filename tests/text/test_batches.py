"""Dataset, collate and batch source: model-ready batches, static vs dynamic epochs, exact resume, sharding."""

import shutil

import numpy as np
import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.specials import IGNORE_INDEX, PAD_ID
from albert_mini.text.batches import (
    DataSettings,
    PretrainingBatches,
    PretrainingDataset,
    build_pretraining_dataset,
    collate,
    tokenize_documents,
)
from albert_mini.text.masking import Masker
from pretraining_helpers import austen_documents, austen_token_documents, austen_token_documents_head, tokenizer


def dataset(head: bool = False, **settings):
    """A dataset over the Austen training chapters (head=True: the first 40 only, for walks over whole epochs)."""
    documents = austen_token_documents_head() if head else austen_token_documents()
    return PretrainingDataset(documents, Masker.from_tokenizer(tokenizer()), DataSettings(**settings))


def same_batch(x, y):
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


def rows(batch):
    """Each row of a batch, padding removed, as a hashable tuple (input ids and labels)."""
    lengths = batch["attention_mask"].sum(1).tolist()
    return {tuple(i[:n].tolist()) + tuple(lab[:n].tolist())
            for i, lab, n in zip(batch["input_ids"], batch["labels"], lengths)}


# ---------------------------------------------------------------------------------------------- batches
@pytest.mark.parametrize("task", ["sop", "nsp", "none"])
def test_batches_feed_albert_for_pretraining(task):
    source = PretrainingBatches(dataset(task=task, max_seq_len=64), batch_size=4)
    batch = next(source)
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "labels"} | (
        set() if task == "none" else {"sentence_order_label"})
    assert all(v.dtype == torch.long for v in batch.values())
    B, T = batch["input_ids"].shape
    assert B == 4 and T <= 64
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano", vocab_size=tokenizer().vocab_size))
    out = model(**batch)
    assert torch.isfinite(out.loss)
    assert (out.sentence_loss is None) == (task == "none")
    masked = batch["labels"] != IGNORE_INDEX
    assert out.mlm_logits.shape[:2] == (B, int(masked.sum(1).max()))
    assert torch.equal(out.mlm_labels[out.mlm_labels != IGNORE_INDEX], batch["labels"][masked])


def test_collate_pads_to_the_longest_or_to_pad_to():
    examples = [
        {"input_ids": np.array([2, 10, 4, 3, 11, 3]), "token_type_ids": np.array([0, 0, 0, 1, 1, 1]),
         "labels": np.array([-100, -100, 12, -100, -100, -100]), "sentence_order_label": 1},
        {"input_ids": np.array([2, 13, 3, 14, 3]), "token_type_ids": np.array([0, 0, 0, 1, 1]),
         "labels": np.array([-100, 4, -100, -100, -100]), "sentence_order_label": 0},
    ]
    batch = collate(examples)
    assert batch["input_ids"].tolist() == [[2, 10, 4, 3, 11, 3], [2, 13, 3, 14, 3, PAD_ID]]
    assert batch["attention_mask"].tolist() == [[1] * 6, [1] * 5 + [0]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]]
    assert batch["labels"][1].tolist() == [-100, 4, -100, -100, -100, -100]
    assert batch["sentence_order_label"].tolist() == [1, 0]
    assert collate(examples, pad_to=8)["input_ids"].shape == (2, 8)
    with pytest.raises(ValueError, match="pad_to=5"):
        collate(examples, pad_to=5)
    del examples[1]["sentence_order_label"]
    with pytest.raises(ValueError, match="mixes tasks"):
        collate(examples)
    with pytest.raises(ValueError, match="empty"):
        collate([])


def test_pad_to_max_seq_len_option():
    source = PretrainingBatches(dataset(max_seq_len=128), batch_size=3, pad_to=128)
    assert next(source)["input_ids"].shape == (3, 128)


# ---------------------------------------------------------------------------------------------- seeds and epochs
def test_same_seed_same_batch_different_seed_different():
    first = PretrainingBatches(dataset(seed=3), 8).batch(0, 5)
    again = PretrainingBatches(dataset(seed=3), 8).batch(0, 5)
    other = PretrainingBatches(dataset(seed=4), 8).batch(0, 5)
    assert same_batch(first, again)
    assert not torch.equal(first["input_ids"], other["input_ids"])


def test_static_mode_keeps_masks_and_reorders_dynamic_mode_redraws():
    static = dataset(head=True, dynamic=False, dupe_factor=2, seed=1)
    static.set_epoch(0)
    epoch0 = {tuple(static[i]["input_ids"].tolist()) for i in range(len(static))}
    n0 = len(static)
    first0 = static[0]["input_ids"].tolist()
    static.set_epoch(1)
    assert len(static) == n0 and {tuple(static[i]["input_ids"].tolist()) for i in range(n0)} == epoch0
    assert static[0]["input_ids"].tolist() != first0  # same examples, new order

    dynamic = dataset(head=True, dynamic=True, seed=1)
    dynamic.set_epoch(0)
    d0 = {tuple(dynamic[i]["input_ids"].tolist()) for i in range(len(dynamic))}
    dynamic.set_epoch(1)
    d1 = {tuple(dynamic[i]["input_ids"].tolist()) for i in range(len(dynamic))}
    assert len(d0 & d1) < 0.01 * len(d0)  # new instances and new masks


def test_dupe_factor_is_static_only_and_validated():
    with pytest.raises(ValueError, match="dupe_factor is for static mode"):
        dataset(dynamic=True, dupe_factor=3)
    with pytest.raises(ValueError, match="dupe_factor must be >= 1"):
        dataset(dynamic=False, dupe_factor=0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        dataset(seed=-1)


# ---------------------------------------------------------------------------------------------- resume
def test_resume_gives_exactly_the_batches_that_would_have_come_next():
    data = dataset(head=True, max_seq_len=64, seed=2)
    straight = PretrainingBatches(data, batch_size=64, num_epochs=2)
    per_epoch = straight.batches_per_epoch()
    expected = [next(straight) for _ in range(per_epoch + 3)]  # crosses into epoch 1

    for stop in (2, per_epoch - 1, per_epoch + 1):
        first = PretrainingBatches(dataset(head=True, max_seq_len=64, seed=2), batch_size=64, num_epochs=2)
        for _ in range(stop):
            next(first)
        state = first.state_dict()
        resumed = PretrainingBatches(dataset(head=True, max_seq_len=64, seed=2), batch_size=64, num_epochs=2)
        resumed.load_state_dict(state)
        for k in range(stop, min(stop + 2, len(expected))):
            assert same_batch(next(resumed), expected[k])


def test_batch_source_stops_after_num_epochs():
    source = PretrainingBatches(dataset(head=True, dynamic=False), batch_size=128, num_epochs=1)
    n = sum(1 for _ in source)
    assert n == source.batches_per_epoch() and n >= 1


def test_resume_refuses_a_different_data_setting():
    state = PretrainingBatches(dataset(seed=2), 16).state_dict()
    with pytest.raises(ValueError, match="rebuild the source with the saved settings"):
        PretrainingBatches(dataset(seed=5), 16).load_state_dict(state)
    with pytest.raises(ValueError, match="batch_size"):
        PretrainingBatches(dataset(seed=2), 32).load_state_dict(state)


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")  # a tiny model steps fastest on one thread (tests/conftest.py)
def test_trainer_resumed_from_a_checkpoint_ends_with_identical_weights(tmp_path):
    """End to end with albert_mini.training.trainer: 6 steps of 3 micro-batches over a 2-batch epoch, interrupted after
    step 4, resumed from its checkpoint: the data position restores exactly, so the weights match bit for bit."""
    from albert_mini.training.trainer import TrainConfig, train

    def source():
        return PretrainingBatches(build_pretraining_dataset(austen_documents()[:2], tokenizer(), "sop", 32), 8)

    assert source().batches_per_epoch() < 6  # the run crosses several epochs
    config = AlbertConfig.from_preset("albert-nano", num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                                      embedding_size=16, vocab_size=tokenizer().vocab_size)
    run = TrainConfig(max_steps=6, accumulate=3, out_dir=str(tmp_path), save_every=2, progress=False)
    torch.manual_seed(0)
    straight = AlbertForPreTraining(config)
    train(straight, source(), run)
    checkpoints = sorted(p for p in (tmp_path / "checkpoints").iterdir() if p.is_dir())
    shutil.rmtree(checkpoints[-1])  # as if the run had died after its previous checkpoint
    torch.manual_seed(1)
    resumed = AlbertForPreTraining(config)
    train(resumed, source(), run, resume=True)
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name


# ---------------------------------------------------------------------------------------------- sharding and loaders
def test_shards_are_disjoint_equal_and_cover_the_epoch():
    data = dataset(head=True, seed=6)
    shards = [data.shard(r, 3) for r in range(3)]
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) == len(data) // 3
    seen = [shards[r][i] for r in range(3) for i in range(len(shards[r]))]
    expected = [data[i] for i in range(3 * len(shards[0]))]
    key = lambda e: tuple(e["input_ids"].tolist()) + tuple(e["labels"].tolist())  # noqa: E731
    assert sorted(map(key, seen)) == sorted(map(key, expected))
    with pytest.raises(ValueError, match="rank"):
        data.shard(3, 3)


def test_sharded_batches_together_make_the_global_batch():
    single = PretrainingBatches(dataset(seed=6), batch_size=16)
    ranks = [single.shard(r, 2) for r in range(2)]
    ranks_half = [PretrainingBatches(dataset(seed=6), batch_size=8).shard(r, 2) for r in range(2)]
    for i in range(3):
        together = rows(ranks_half[0].batch(0, i)) | rows(ranks_half[1].batch(0, i))
        assert together == rows(single.batch(0, i))
        assert not rows(ranks[0].batch(0, i)) & rows(ranks[1].batch(0, i))


# ---------------------------------------------------------------------------------------------- building
class CountingTokenizer:
    """Wraps the real tokenizer and counts encode calls."""

    def __init__(self, tok):
        self.tok, self.calls = tok, 0
        self.word_start, self.special_ids, self.vocab_size = tok.word_start, tok.special_ids, tok.vocab_size

    def encode(self, text):
        self.calls += 1
        return self.tok.encode(text)


def test_tokenize_documents_encodes_each_distinct_sentence_once():
    counting = CountingTokenizer(tokenizer())
    docs = [["Yes.", "It is so.", "Yes."], ["Yes.", "No, indeed."]]
    token_docs = tokenize_documents(docs, counting)
    assert counting.calls == 3
    assert token_docs.lengths[0][0] == token_docs.lengths[0][2] == token_docs.lengths[1][0]
    with pytest.raises(TypeError, match="not one string"):
        tokenize_documents(["It is a truth universally acknowledged."], counting)


def test_build_pretraining_dataset_from_corpus_documents():
    documents = austen_documents()[:20]
    data = build_pretraining_dataset(documents, tokenizer(), task="sop", max_seq_len=96, seed=0, ngram=2)
    assert data.masker.ngram == 2 and data.settings.max_seq_len == 96 and len(data) > 100
    example = data[0]
    assert len(example["input_ids"]) <= 96 and example["sentence_order_label"] in (0, 1)
    with pytest.raises(ValueError, match="unknown task"):
        build_pretraining_dataset(documents, tokenizer(), task="mlm")
    with pytest.raises(TypeError, match="unexpected keyword"):
        build_pretraining_dataset(documents, tokenizer(), masking_prob=0.2)


def test_unigram_log_prior_matches_counts():
    import math

    import torch

    from albert_mini import AlbertConfig, AlbertForPreTraining
    from albert_mini.text.batches import unigram_log_prior

    docs = [[[5, 6, 6], [7]], [[6, 5]]]  # token 5 twice, 6 three times, 7 once
    prior = unigram_log_prior(docs, vocab_size=10, smoothing=1.0)
    total = 6 + 10  # six tokens plus one pseudo-count per vocabulary entry
    assert prior.shape == (10,)
    assert math.isclose(prior[6].item(), math.log(4 / total), rel_tol=1e-6)
    assert math.isclose(prior[0].item(), math.log(1 / total), rel_tol=1e-6)
    assert math.isclose(prior.exp().sum().item(), 1.0, rel_tol=1e-5)
    model = AlbertForPreTraining(AlbertConfig.from_preset("albert-nano", vocab_size=10))
    model.init_output_bias(prior)
    assert torch.equal(model.predictions.decoder.bias, prior)  # one tensor under both names
    with pytest.raises(ValueError, match="outside a vocabulary of 4"):
        unigram_log_prior(docs, vocab_size=4)
    with pytest.raises(ValueError, match="log_prior has shape"):
        model.init_output_bias(prior[:5])
