"""--group-by-length on the pretraining CLI: opt-in, recorded in run.json and in every checkpoint's data position."""

from __future__ import annotations

import json

import torch

from albert_mini.commands.pretrain import build_parser
from albert_mini.commands.pretrain import main as pretrain_main


def test_grouping_is_off_by_default():
    assert build_parser().get_default("group_by_length") is False


def test_the_cli_trains_on_grouped_batches_and_records_the_setting(tmp_path):
    out = tmp_path / "r"
    result = pretrain_main(["--preset", "albert-nano", "--steps", "2", "--batch-size", "4", "--seq-len", "32",
                            "--eval-every", "0", "--eval-batches", "1", "--save-every", "2", "--out", str(out),
                            "--quiet", "--group-by-length"])
    assert result.step == 2
    assert json.loads((out / "run.json").read_text())["settings"]["group_by_length"] is True
    state = torch.load(next((out / "checkpoints").iterdir()) / "trainer_state.pt", weights_only=False)
    position = state["data"][0]
    assert position["group_by_length"] is True and position["index"] == 2
