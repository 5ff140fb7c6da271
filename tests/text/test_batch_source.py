"""The walk every batch source shares: epochs, an end, take, and a position that resumes exactly."""

import pytest

from albert_mini.text.batch_source import BatchSource


class Counting(BatchSource):
    """Epoch e has e + 2 batches; batch (e, i) is just its coordinates."""

    def __init__(self, num_epochs=None, tag="a"):
        super().__init__()
        self.num_epochs, self.tag = num_epochs, tag

    def batches_in_epoch(self, epoch):
        return epoch + 2

    def batch(self, epoch, index):
        return {"at": (epoch, index)}

    def settings(self):
        return {"tag": self.tag}


def test_the_walk_crosses_epochs_and_stops_after_num_epochs():
    assert [b["at"] for b in Counting(num_epochs=2)] == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]


def test_take_reads_the_current_epoch_without_moving():
    source = Counting()
    next(source), next(source), next(source)
    assert [b["at"] for b in source.take(2)] == [(1, 0), (1, 1)] and source.index == 1


def test_a_saved_position_resumes_exactly_and_only_with_the_same_settings():
    source = Counting()
    for _ in range(3):
        next(source)
    state = source.state_dict()
    assert state == {"epoch": 1, "index": 1, "tag": "a"}
    again = Counting()
    again.load_state_dict(state)
    assert [next(again)["at"] for _ in range(3)] == [next(source)["at"] for _ in range(3)]
    with pytest.raises(ValueError, match="made with tag=a, this source has tag=b"):
        Counting(tag="b").load_state_dict(state)
