"""Length-grouped batches (opt-in): the same instances, nearly no padding, an exact resume, the same loss."""

import hashlib

import numpy as np
import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining
from albert_mini.specials import FIRST_ORDINARY_ID, MASK_ID, SPECIAL_IDS
from albert_mini.text.batches import DataSettings, PretrainingBatches, PretrainingDataset, collate
from albert_mini.text.masking import Masker
from pretraining_helpers import austen_token_documents_head, tokenizer

# sha256 of every batch of two epochs of the default batching (dynamic and static) on a seeded synthetic corpus,
# recorded before length grouping existed: finished runs depend on these batches staying bit for bit the same.
DEFAULT_FINGERPRINT = "2b10df8bf47e9409ff485ad5f485ee2096074f76fb94c0d3745ed041250efebc"
PAD_TO_FINGERPRINT = "1c12fa681f009b7b010a42fd82273030f99bf37b7f24be485ce575f2f2356508"


def synthetic_documents(seed=0, docs=30, vocab=200):
    """Seeded random 'sentences' of ids: the batches then depend on the batching code only, not the tokenizer."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(FIRST_ORDINARY_ID, vocab, rng.integers(3, 25)).tolist() for _ in range(rng.integers(4, 40))]
            for _ in range(docs)]


def fingerprint(**batching) -> str:
    masker = Masker(np.arange(200) % 3 != 1, SPECIAL_IDS, MASK_ID)
    digest = hashlib.sha256()
    for dynamic in (True, False):
        settings = DataSettings(max_seq_len=64, seed=5, dynamic=dynamic, dupe_factor=1 if dynamic else 2)
        for batch in PretrainingBatches(PretrainingDataset(synthetic_documents(), masker, settings), 8, num_epochs=2,
                                        **batching):
            for key in sorted(batch):
                digest.update(key.encode())
                digest.update(batch[key].numpy().tobytes())
                digest.update(str(tuple(batch[key].shape)).encode())
    return digest.hexdigest()


def dataset(seed=2, max_seq_len=128, **settings):
    settings = DataSettings(seed=seed, max_seq_len=max_seq_len, **settings)
    return PretrainingDataset(austen_token_documents_head(), Masker.from_tokenizer(tokenizer()), settings)


def instances(batch) -> list[tuple]:
    """Each row of a batch with its padding removed: ids, token types, labels and sentence label."""
    out = []
    for b, n in enumerate(batch["attention_mask"].sum(1).tolist()):
        row = tuple(tuple(batch[key][b, :n].tolist()) for key in ("input_ids", "token_type_ids", "labels"))
        out.append(row + (int(batch["sentence_order_label"][b]),))
    return out


def same_batch(x, y):
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


# ---------------------------------------------------------------------------------------------- default unchanged
def test_default_batches_are_bit_identical_to_before_grouping_existed():
    assert fingerprint() == DEFAULT_FINGERPRINT
    assert fingerprint(pad_to=64) == PAD_TO_FINGERPRINT
    assert fingerprint(group_by_length=True) != DEFAULT_FINGERPRINT


def test_default_batch_is_the_collate_of_consecutive_examples_and_its_state_has_no_new_keys():
    data = dataset()
    source = PretrainingBatches(data, 16)
    for index in (0, 7):
        assert same_batch(source.batch(0, index), collate([data[i] for i in range(16 * index, 16 * index + 16)]))
    assert "group_by_length" not in source.state_dict() and "group_window" not in source.state_dict()


# ---------------------------------------------------------------------------------------------- grouped batches
@pytest.mark.parametrize("dynamic", [True, False])
def test_grouped_epoch_uses_every_instance_once_unchanged(dynamic):
    plain = PretrainingBatches(dataset(dynamic=dynamic), 16)
    grouped = PretrainingBatches(dataset(dynamic=dynamic), 16, group_by_length=True, group_window=5)
    count = plain.batches_per_epoch()
    assert count % 5 and grouped.batches_per_epoch() == count  # the last window is a partial one
    for epoch in (0, 1):
        expected = sorted(row for i in range(count) for row in instances(plain.batch(epoch, i)))
        seen = sorted(row for i in range(count) for row in instances(grouped.batch(epoch, i)))
        assert seen == expected and len(seen) == 16 * count


def test_grouped_batch_is_trimmed_to_its_longest_sequence_and_holds_little_padding():
    plain = PretrainingBatches(dataset(), 16)
    grouped = PretrainingBatches(dataset(), 16, group_by_length=True, group_window=8)
    widths = []
    for i in range(grouped.batches_per_epoch()):
        batch = grouped.batch(0, i)
        lengths = batch["attention_mask"].sum(1)
        assert batch["input_ids"].shape[1] == int(lengths.max())
        widths.append(batch["input_ids"].shape[1])
    assert len(set(widths)) > 5  # the widths differ from batch to batch, and are served shuffled
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)
    count = plain.batches_per_epoch()
    # the share of a batch's positions that hold real tokens; the rest is compute spent on padding
    share = lambda source: np.mean([source.batch(0, i)["attention_mask"].float().mean() for i in range(count)])  # noqa: E731
    assert share(grouped) > 0.95 > share(plain) + 0.05


def test_grouped_resume_mid_epoch_gives_exactly_the_batches_that_would_have_come_next():
    def source():
        return PretrainingBatches(dataset(), 16, num_epochs=2, group_by_length=True, group_window=4)

    straight = source()
    per_epoch = straight.batches_per_epoch()
    expected = [next(straight) for _ in range(per_epoch + 3)]
    for stop in (3, 4, 9, per_epoch - 1, per_epoch + 1):  # inside a window, at a window's start, across epochs
        first = source()
        for _ in range(stop):
            next(first)
        resumed = source()
        resumed.load_state_dict(first.state_dict())
        for k in range(stop, min(stop + 2, len(expected))):
            assert same_batch(next(resumed), expected[k])


def test_resume_refuses_a_grouping_mismatch():
    grouped = PretrainingBatches(dataset(), 16, group_by_length=True, group_window=4).state_dict()
    plain = PretrainingBatches(dataset(), 16).state_dict()
    assert grouped["group_by_length"] is True and grouped["group_window"] == 4
    with pytest.raises(ValueError, match="grouped by length, this source has group_by_length=False"):
        PretrainingBatches(dataset(), 16).load_state_dict(grouped)
    with pytest.raises(ValueError, match="not grouped by length, this source has group_by_length=True"):
        PretrainingBatches(dataset(), 16, group_by_length=True).load_state_dict(plain)
    with pytest.raises(ValueError, match="group_window=4, this source has group_window=8"):
        PretrainingBatches(dataset(), 16, group_by_length=True, group_window=8).load_state_dict(grouped)


def test_grouping_options_are_checked():
    with pytest.raises(ValueError, match="leave pad_to out or group_by_length off"):
        PretrainingBatches(dataset(), 16, pad_to=128, group_by_length=True)
    with pytest.raises(ValueError, match="group_window must be an integer >= 1"):
        PretrainingBatches(dataset(), 16, group_by_length=True, group_window=0)


def test_grouped_shards_split_each_grouped_batch_of_a_rank_from_its_own_examples():
    single = PretrainingBatches(dataset(), 8, group_by_length=True, group_window=4)
    ranks = [single.shard(r, 2) for r in range(2)]
    assert all(r.group_by_length and r.group_window == 4 for r in ranks)
    count = ranks[0].batches_per_epoch()
    rows = [{row for i in range(count) for row in instances(r.batch(0, i))} for r in ranks]
    assert not rows[0] & rows[1] and len(rows[0]) == len(rows[1]) == 8 * count


def test_the_loss_on_a_grouped_batch_equals_the_loss_on_the_same_instances_padded_to_full_length():
    data = dataset(max_seq_len=128)
    grouped = PretrainingBatches(data, 8, group_by_length=True, group_window=8)
    config = AlbertConfig.from_preset("albert-nano", vocab_size=tokenizer().vocab_size)
    torch.manual_seed(0)
    model = AlbertForPreTraining(config).eval()  # no dropout: the two forward passes must see the same network
    for window, k in ((0, 0), (1, 3)):
        index = window * grouped.group_window + k
        trimmed = grouped.batch(0, index)
        examples = [data[int(i)] for i in grouped.window_batches(0, window)[k]]
        full = collate(examples, pad_to=128)
        assert trimmed["input_ids"].shape[1] < 128 and full["input_ids"].shape[1] == 128
        with torch.no_grad():
            a, b = model(**trimmed), model(**full)
        assert torch.allclose(a.mlm_loss, b.mlm_loss, atol=1e-5)
        assert torch.allclose(a.sentence_loss, b.sentence_loss, atol=1e-5)
        assert torch.allclose(a.mlm_logits, b.mlm_logits, atol=1e-4)
